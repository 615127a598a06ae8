//! What the tools read the world through.
//!
//! [`WorldBackend`] answers exactly the reads the tools make, each one
//! partition of the lake: a location stream for a day, a topic, a user, the
//! vectors of one bucket, the knowledge base. The production implementation
//! is DataFusion over the lake (`workers`); [`MemoryBackend`] holds rows in
//! maps for unit tests.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::NaiveDate;
use some_schemas::{KnowledgeRow, PostRow, PostSource, Timestamp, UserRow, buckets};

/// A backend read failed (I/O, a corrupt file): not the model's fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the world could not be read: {0}")]
pub struct BackendError(pub String);

/// One read of a location's stream: the posts of `location` on `day` with
/// `start <= t < end`.
#[derive(Debug, Clone, Copy)]
pub struct StreamWindow<'a> {
    pub location: &'a str,
    pub day: NaiveDate,
    pub start: Timestamp,
    pub end: Timestamp,
}

impl StreamWindow<'_> {
    /// The `posts` bucket the day's stream is stored in.
    pub fn bucket(&self) -> String {
        buckets::raw(&self.day.format("%Y-%m-%d").to_string(), self.location)
    }

    pub fn contains(&self, t: Timestamp) -> bool {
        t >= self.start && t < self.end
    }
}

/// A post's address for vector lookups: its `posts` bucket and id.
pub type PostKey = (String, String);

/// The knowledge base with its vectors, row `i` for report `i`.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeIndex {
    pub docs: Vec<KnowledgeRow>,
    pub dim: usize,
    pub vectors: Vec<f32>,
    /// The world it was read from, where it was read from a lake: a
    /// compute worker keeps one copy per world, so a replaced knowledge
    /// base is never searched in place of the one the caller read.
    pub world: Option<WorldVersion>,
}

/// One world of a lake: a lake version it can be read at, and what tells
/// it from every other world (a digest of the live files of the world
/// tables, the same for every version that holds the same world).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WorldVersion {
    pub version: u64,
    pub key: u64,
}

#[async_trait::async_trait]
pub trait WorldBackend: Send + Sync {
    /// The window's posts in file order (`ordinal`); `None` if the lake has
    /// no stream for that location and day.
    async fn stream_posts(&self, window: StreamWindow<'_>) -> Result<Option<Vec<PostRow>>, BackendError>;
    /// A topic's posts in file order; empty if there is no such topic.
    async fn topic_posts(&self, topic: &str) -> Result<Vec<PostRow>, BackendError>;
    async fn user(&self, uid: &str) -> Result<Option<UserRow>, BackendError>;
    /// A user's timeline in file order (a real timeline is newest first).
    async fn user_posts(&self, uid: &str) -> Result<Vec<PostRow>, BackendError>;
    /// Stored vectors of `model` for these posts (`None` where there is none).
    async fn post_vectors(&self, model: &str, keys: &[PostKey]) -> Result<Vec<Option<Vec<f32>>>, BackendError>;
    /// The knowledge base and its `model` vectors (empty vectors if none are stored).
    async fn knowledge(&self, model: &str) -> Result<Arc<KnowledgeIndex>, BackendError>;
    /// A post as the user-task queries show it (`ref_posts`), as JSON text.
    async fn ref_post(&self, post_id: &str) -> Result<Option<String>, BackendError>;
}

/// A world held in memory.
#[derive(Debug, Default)]
pub struct MemoryBackend {
    pub posts: Vec<PostRow>,
    pub users: Vec<UserRow>,
    pub knowledge: Arc<KnowledgeIndex>,
    /// `(model, post id) -> vector`.
    pub vectors: HashMap<(String, String), Vec<f32>>,
    /// `post id -> JSON`.
    pub ref_posts: HashMap<String, String>,
}

#[async_trait::async_trait]
impl WorldBackend for MemoryBackend {
    async fn stream_posts(&self, window: StreamWindow<'_>) -> Result<Option<Vec<PostRow>>, BackendError> {
        let bucket = window.bucket();
        let in_stream: Vec<&PostRow> = self
            .posts
            .iter()
            .filter(|p| p.source == PostSource::Raw.as_str() && p.bucket == bucket && p.area.as_deref() == Some(window.location))
            .collect();
        if in_stream.is_empty() {
            return Ok(None);
        }
        let mut out: Vec<PostRow> = in_stream.into_iter().filter(|p| p.published_at.is_some_and(|t| window.contains(t))).cloned().collect();
        out.sort_by(|a, b| (a.ordinal, &a.post_id).cmp(&(b.ordinal, &b.post_id)));
        Ok(Some(out))
    }

    async fn topic_posts(&self, topic: &str) -> Result<Vec<PostRow>, BackendError> {
        let mut out: Vec<PostRow> =
            self.posts.iter().filter(|p| p.source == PostSource::Topic.as_str() && p.topic.as_deref() == Some(topic)).cloned().collect();
        out.sort_by(|a, b| (a.ordinal, &a.post_id).cmp(&(b.ordinal, &b.post_id)));
        Ok(out)
    }

    async fn user(&self, uid: &str) -> Result<Option<UserRow>, BackendError> {
        Ok(self.users.iter().find(|u| u.uid == uid).cloned())
    }

    async fn user_posts(&self, uid: &str) -> Result<Vec<PostRow>, BackendError> {
        let mut out: Vec<PostRow> =
            self.posts.iter().filter(|p| p.source == PostSource::Weibo.as_str() && p.uid.as_deref() == Some(uid)).cloned().collect();
        out.sort_by(|a, b| (a.ordinal, &a.post_id).cmp(&(b.ordinal, &b.post_id)));
        Ok(out)
    }

    async fn post_vectors(&self, model: &str, keys: &[PostKey]) -> Result<Vec<Option<Vec<f32>>>, BackendError> {
        Ok(keys.iter().map(|(_, id)| self.vectors.get(&(model.to_string(), id.clone())).cloned()).collect())
    }

    async fn knowledge(&self, _model: &str) -> Result<Arc<KnowledgeIndex>, BackendError> {
        Ok(self.knowledge.clone())
    }

    async fn ref_post(&self, post_id: &str) -> Result<Option<String>, BackendError> {
        Ok(self.ref_posts.get(post_id).cloned())
    }
}
