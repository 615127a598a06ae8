//! The tools' world on the lake: each [`WorldBackend`] read is one
//! DataFusion scan of one partition (a stream day, a topic, a user bucket),
//! with the argument as a filter value, never as SQL text or a path.
//!
//! A [`LakeWorld`] is the world as of one lake version: every read of it
//! goes to that version, and it keeps the small, hot data it has read (the
//! user profiles, the referenced posts, the knowledge base with its
//! vectors, and the vectors of recently used buckets, bounded).
//! [`LakeBackend::world`] gives the latest one, kept while no commit
//! changes a world table (posts, users, ref_posts, knowledge, embeddings):
//! the runs' episodes commit without dropping the caches, and an
//! ingestion with `--replace` (or a new world, or new embeddings) makes
//! the next call build a new one. An episode takes one world when it
//! starts and reads only it, so it never mixes two worlds, whatever is
//! committed while it runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use datafusion::prelude::{Expr, SessionContext, col, lit};
use datafusion::scalar::ScalarValue;
use sha2::{Digest, Sha256};
use some_jobs::tools::{BackendError, KnowledgeIndex, PostKey, StreamWindow, WorldBackend, WorldVersion};
use some_schemas::{
    EmbeddingRow, KnowledgeRow, PostRow, PostSource, RefPostRow, Row, Timestamp, UserRow, buckets, embeddings, knowledge, posts,
};
use tokio::sync::OnceCell;

use super::WORLD_TABLES;
use crate::lake::{Lake, Snapshot};

/// Buckets whose vectors are kept in memory at once.
const CACHED_BUCKETS: usize = 32;

type Vectors = Arc<HashMap<String, Vec<f32>>>;

/// A use counter, and (model, bucket) -> (last use, vectors).
type VectorCache = (u64, HashMap<(String, String), (u64, Vectors)>);

/// What tells one world from another: the live files of the world tables
/// (each file is written once, under a name of its own), digested. The
/// same in every process and build, so that a compute worker keeps a
/// knowledge base per world for all the workers that read it.
fn world_key(snapshot: &Snapshot) -> u64 {
    let mut h = Sha256::new();
    for table in WORLD_TABLES {
        for file in snapshot.files_under(table) {
            h.update(file.path.as_bytes());
            h.update([0]);
        }
    }
    u64::from_le_bytes(h.finalize()[..8].try_into().expect("8 bytes of a digest"))
}

/// The tools' world of a lake: the latest [`LakeWorld`], made again when a
/// world table changes. Its own reads each go to the latest world.
pub struct LakeBackend {
    lake: Lake,
    current: Mutex<Option<Arc<LakeWorld>>>,
}

/// The world as of one lake version, with what has been read of it.
pub struct LakeWorld {
    key: u64,
    snapshot: Arc<Snapshot>,
    ctx: SessionContext,
    users: OnceCell<HashMap<String, UserRow>>,
    ref_posts: OnceCell<HashMap<String, String>>,
    knowledge: Mutex<HashMap<String, Arc<KnowledgeIndex>>>,
    /// (model, bucket) -> vectors, with a use counter for eviction.
    vectors: Mutex<VectorCache>,
}

fn err(e: impl std::fmt::Display) -> BackendError {
    BackendError(e.to_string())
}

fn ts(t: Timestamp) -> Expr {
    lit(ScalarValue::TimestampSecond(Some(t.0), None))
}

/// Posts in the order of their source file, as the reference lists them.
fn file_order() -> Vec<datafusion::logical_expr::SortExpr> {
    vec![col(posts::ordinal).sort(true, false), col(posts::post_id).sort(true, false)]
}

fn partition(source: PostSource, bucket: &str) -> Expr {
    col(posts::source).eq(lit(source.as_str())).and(col(posts::bucket).eq(lit(bucket.to_string())))
}

/// Decodes every vector of a batch of embedding rows into f32.
pub fn decode_vector(row: &EmbeddingRow) -> Result<Vec<f32>, BackendError> {
    let bytes = &row.vector;
    match row.dtype.as_str() {
        "f32" => Ok(bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
        "f16" => Ok(bytes.chunks_exact(2).map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
        other => Err(BackendError(format!("embedding {} has unknown dtype {other:?}", row.id))),
    }
}

impl LakeBackend {
    pub fn new(lake: Lake) -> crate::Result<LakeBackend> {
        Ok(LakeBackend { lake, current: Mutex::new(None) })
    }

    /// The world as of the lake's latest version (one probe of the log):
    /// the one kept, unless a world table changed since it was made.
    pub async fn world(&self) -> Result<Arc<LakeWorld>, BackendError> {
        let snapshot = self.lake.snapshot().await.map_err(err)?;
        let key = world_key(&snapshot);
        if let Some(world) = self.current.lock().map_err(err)?.as_ref().filter(|w| w.key == key) {
            return Ok(world.clone());
        }
        let ctx = self.lake.session_of(snapshot.clone()).map_err(err)?;
        let world = Arc::new(LakeWorld {
            key,
            snapshot,
            ctx,
            users: OnceCell::new(),
            ref_posts: OnceCell::new(),
            knowledge: Mutex::new(HashMap::new()),
            vectors: Mutex::new((0, HashMap::new())),
        });
        let mut current = self.current.lock().map_err(err)?;
        // Another call may have made a world meanwhile: the later lake
        // version's stays.
        if current.as_ref().is_none_or(|c| c.snapshot.version() <= world.snapshot.version()) {
            *current = Some(world.clone());
        }
        Ok(world)
    }
}

impl LakeWorld {
    /// The lake version this world is read at.
    pub fn version(&self) -> u64 {
        self.snapshot.version()
    }

    /// This world: its lake version and its key.
    pub fn world_version(&self) -> WorldVersion {
        WorldVersion { version: self.version(), key: self.key }
    }

    async fn rows<R: Row>(&self, filter: Expr, order: Vec<datafusion::logical_expr::SortExpr>) -> Result<Vec<R>, BackendError> {
        let mut df = self.ctx.table(R::TABLE).await.map_err(err)?.filter(filter).map_err(err)?;
        if !order.is_empty() {
            df = df.sort(order).map_err(err)?;
        }
        let mut out = Vec::new();
        for batch in df.collect().await.map_err(err)? {
            out.extend(R::from_batch(&batch).map_err(err)?);
        }
        Ok(out)
    }

    /// Whether a `posts` partition has any file (a stream exists that day):
    /// a look-up in the log's snapshot, held in memory.
    fn partition_exists(&self, source: PostSource, bucket: &str) -> bool {
        let folder = format!("{}/source={}/bucket={bucket}", PostRow::TABLE, source.as_str());
        self.snapshot.files_under(&folder).next().is_some()
    }

    async fn bucket_vectors(&self, model: &str, bucket: &str) -> Result<Vectors, BackendError> {
        let key = (model.to_string(), bucket.to_string());
        {
            let mut cache = self.vectors.lock().map_err(err)?;
            cache.0 += 1;
            let tick = cache.0;
            if let Some(entry) = cache.1.get_mut(&key) {
                entry.0 = tick;
                return Ok(entry.1.clone());
            }
        }
        let filter = col(embeddings::collection)
            .eq(lit(posts::TABLE))
            .and(col(embeddings::model).eq(lit(model.to_string())))
            .and(col(embeddings::bucket).eq(lit(bucket.to_string())));
        let rows: Vec<EmbeddingRow> = self.rows(filter, vec![]).await?;
        let map: HashMap<String, Vec<f32>> =
            rows.iter().map(|r| Ok((r.id.clone(), decode_vector(r)?))).collect::<Result<_, BackendError>>()?;
        let map = Arc::new(map);
        let mut cache = self.vectors.lock().map_err(err)?;
        let full = cache.1.len() >= CACHED_BUCKETS;
        if let Some(oldest) = cache.1.iter().min_by_key(|(_, (t, _))| *t).map(|(k, _)| k.clone()).filter(|_| full) {
            cache.1.remove(&oldest);
        }
        let tick = cache.0;
        cache.1.insert(key, (tick, map.clone()));
        Ok(map)
    }
}

#[async_trait]
impl WorldBackend for LakeWorld {
    async fn stream_posts(&self, window: StreamWindow<'_>) -> Result<Option<Vec<PostRow>>, BackendError> {
        let bucket = window.bucket();
        if !self.partition_exists(PostSource::Raw, &bucket) {
            return Ok(None);
        }
        let filter = partition(PostSource::Raw, &bucket)
            .and(col(posts::area).eq(lit(window.location.to_string())))
            .and(col(posts::published_at).gt_eq(ts(window.start)))
            .and(col(posts::published_at).lt(ts(window.end)));
        Ok(Some(self.rows(filter, file_order()).await?))
    }

    async fn topic_posts(&self, topic: &str) -> Result<Vec<PostRow>, BackendError> {
        let filter = partition(PostSource::Topic, &buckets::topic(topic)).and(col(posts::topic).eq(lit(topic.to_string())));
        self.rows(filter, file_order()).await
    }

    async fn user(&self, uid: &str) -> Result<Option<UserRow>, BackendError> {
        let users = self
            .users
            .get_or_try_init(|| async {
                let rows: Vec<UserRow> = self.rows(lit(true), vec![]).await?;
                Ok::<_, BackendError>(rows.into_iter().map(|u| (u.uid.clone(), u)).collect())
            })
            .await?;
        Ok(users.get(uid).cloned())
    }

    async fn user_posts(&self, uid: &str) -> Result<Vec<PostRow>, BackendError> {
        let filter = partition(PostSource::Weibo, &buckets::weibo(uid)).and(col(posts::uid).eq(lit(uid.to_string())));
        self.rows(filter, file_order()).await
    }

    async fn post_vectors(&self, model: &str, keys: &[PostKey]) -> Result<Vec<Option<Vec<f32>>>, BackendError> {
        let mut by_bucket: HashMap<&str, Vectors> = HashMap::new();
        let mut out = Vec::with_capacity(keys.len());
        for (bucket, id) in keys {
            if !by_bucket.contains_key(bucket.as_str()) {
                by_bucket.insert(bucket, self.bucket_vectors(model, bucket).await?);
            }
            out.push(by_bucket[bucket.as_str()].get(id).cloned());
        }
        Ok(out)
    }

    async fn knowledge(&self, model: &str) -> Result<Arc<KnowledgeIndex>, BackendError> {
        if let Some(index) = self.knowledge.lock().map_err(err)?.get(model) {
            return Ok(index.clone());
        }
        let docs: Vec<KnowledgeRow> = self.rows(lit(true), vec![col(knowledge::doc_index).sort(true, false)]).await?;
        let filter = col(embeddings::collection).eq(lit(knowledge::TABLE)).and(col(embeddings::model).eq(lit(model.to_string())));
        let rows: Vec<EmbeddingRow> = self.rows(filter, vec![]).await?;
        let mut by_index: HashMap<i64, Vec<f32>> = HashMap::new();
        for r in &rows {
            if let Ok(i) = r.id.parse() {
                by_index.insert(i, decode_vector(r)?);
            }
        }
        let dim = by_index.values().next().map_or(0, Vec::len);
        // Vectors only if every report has one: retrieval over part of a
        // knowledge base would silently miss evidence.
        let complete = docs.iter().all(|d| by_index.get(&d.doc_index).is_some_and(|v| v.len() == dim));
        let vectors =
            if complete && dim > 0 { docs.iter().flat_map(|d| by_index[&d.doc_index].iter().copied()).collect() } else { Vec::new() };
        let index = Arc::new(KnowledgeIndex { docs, dim: if complete { dim } else { 0 }, vectors, world: Some(self.world_version()) });
        self.knowledge.lock().map_err(err)?.insert(model.to_string(), index.clone());
        Ok(index)
    }

    async fn ref_post(&self, post_id: &str) -> Result<Option<String>, BackendError> {
        let posts = self
            .ref_posts
            .get_or_try_init(|| async {
                let rows: Vec<RefPostRow> = self.rows(lit(true), vec![]).await?;
                Ok::<_, BackendError>(rows.into_iter().map(|r| (r.post_id, r.json)).collect())
            })
            .await?;
        Ok(posts.get(post_id).cloned())
    }
}

#[async_trait]
impl WorldBackend for LakeBackend {
    async fn stream_posts(&self, window: StreamWindow<'_>) -> Result<Option<Vec<PostRow>>, BackendError> {
        self.world().await?.stream_posts(window).await
    }

    async fn topic_posts(&self, topic: &str) -> Result<Vec<PostRow>, BackendError> {
        self.world().await?.topic_posts(topic).await
    }

    async fn user(&self, uid: &str) -> Result<Option<UserRow>, BackendError> {
        self.world().await?.user(uid).await
    }

    async fn user_posts(&self, uid: &str) -> Result<Vec<PostRow>, BackendError> {
        self.world().await?.user_posts(uid).await
    }

    async fn post_vectors(&self, model: &str, keys: &[PostKey]) -> Result<Vec<Option<Vec<f32>>>, BackendError> {
        self.world().await?.post_vectors(model, keys).await
    }

    async fn knowledge(&self, model: &str) -> Result<Arc<KnowledgeIndex>, BackendError> {
        self.world().await?.knowledge(model).await
    }

    async fn ref_post(&self, post_id: &str) -> Result<Option<String>, BackendError> {
        self.world().await?.ref_post(post_id).await
    }
}

#[cfg(test)]
mod tests {
    use some_schemas::{QueryId, QueryRow, Task};

    use super::*;
    use crate::LakeLocation;

    fn user(uid: &str, name: &str) -> UserRow {
        UserRow {
            uid: uid.into(),
            name: Some(name.into()),
            followers_count: None,
            friends_count: None,
            total_rcl_count: None,
            verified_reason: None,
            description: None,
            location: None,
            extra: None,
        }
    }

    fn ref_post(json: &str) -> RefPostRow {
        RefPostRow { post_id: "p1".into(), json: json.into() }
    }

    async fn name(world: &dyn WorldBackend) -> Option<String> {
        world.user("u1").await.unwrap().and_then(|u| u.name)
    }

    /// An episode's world is the one it started with, whole, across a
    /// `--replace` that lands while it runs (what it read before and what
    /// it reads after); the next episode, and the backend's own reads, get
    /// the new world; a commit to other tables keeps the world and what it
    /// has read.
    #[tokio::test]
    async fn an_episode_reads_one_world_across_a_replace() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&LakeLocation::Local(dir.path().join("lake"))).await.unwrap();
        let mut txn = lake.txn();
        txn.write_rows(vec![user("u1", "old")]).await.unwrap();
        txn.write_rows(vec![ref_post("old post")]).await.unwrap();
        txn.commit().await.unwrap();
        let backend = LakeBackend::new(lake.clone()).unwrap();
        let episode = backend.world().await.unwrap();
        assert_eq!(name(episode.as_ref()).await.as_deref(), Some("old"));

        // A run's rows: the world, and its users read, stay.
        let mut txn = lake.txn();
        txn.write_rows(vec![QueryRow::blank(QueryId::from("q1"), Task::Mid)]).await.unwrap();
        txn.commit().await.unwrap();
        assert!(Arc::ptr_eq(&episode, &backend.world().await.unwrap()), "a commit to another table dropped the world");

        // The world replaced, as `some ingest release --replace` does.
        let mut txn = lake.txn();
        txn.replace_tables(&WORLD_TABLES);
        txn.write_rows(vec![user("u1", "new")]).await.unwrap();
        txn.write_rows(vec![ref_post("new post")]).await.unwrap();
        txn.commit().await.unwrap();

        assert_eq!(name(episode.as_ref()).await.as_deref(), Some("old"));
        assert_eq!(episode.ref_post("p1").await.unwrap().as_deref(), Some("old post"), "the episode read part of the new world");
        let next = backend.world().await.unwrap();
        assert!(next.version() > episode.version());
        assert_eq!(name(next.as_ref()).await.as_deref(), Some("new"), "the next episode read the replaced world's users");
        assert_eq!(next.ref_post("p1").await.unwrap().as_deref(), Some("new post"));
        assert_eq!(name(&backend).await.as_deref(), Some("new"));
    }
}
