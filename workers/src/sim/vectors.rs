//! The vectors the recency × similarity ranker compares: one per agent
//! (its persona) and one per post, computed where the coordinator ranks.
//!
//! They come from the run's relevance source, so a run that ranks persona
//! items with the built-in embedder ranks feeds with it too, and a TF-IDF
//! run needs no model ([`some_sim::agent::tfidf::hashed_vector`]). A post's
//! vector is computed once, the turn after it is written; a resumed
//! coordinator computes them again from the replayed state.

use std::collections::HashMap;
use std::sync::Arc;

use some_jobs::embed::{Embedder, Purpose};
use some_sim::feed::rankers::ContentVectors;
use some_sim::{AgentId, Platform, PostId, Turn, agent::tfidf};

use super::spec::{RelevanceSource, SimSpec};
use super::work::Agent;
use crate::error::{Error, Result};
use crate::llm::installed_embedder;

/// Dimensions of the model-free vectors.
const HASHED_DIM: usize = 512;

/// The run's ranking vectors, kept across turns.
pub struct RankVectors {
    embedder: Option<Arc<dyn Embedder>>,
    agents: Arc<HashMap<AgentId, Vec<f32>>>,
    posts: Arc<HashMap<PostId, Vec<f32>>>,
    /// Posts of earlier turns all have vectors.
    since: Turn,
}

impl RankVectors {
    /// Embeds every agent's persona.
    pub async fn new(spec: &SimSpec, agents: &[Agent]) -> Result<RankVectors> {
        let embedder = match spec.relevance {
            RelevanceSource::Tfidf => None,
            RelevanceSource::Embedder => Some(installed_embedder(&spec.embedding_model)?.ok_or_else(|| {
                Error::Invalid(format!(
                    "the {1} ranker embeds with {0}, which is not installed here: run `some models fetch {0}`, or use --relevance tfidf",
                    spec.embedding_model, spec.ranker.name
                ))
            })?),
        };
        let mut v = RankVectors { embedder, agents: Arc::default(), posts: Arc::default(), since: Turn(0) };
        let texts: Vec<String> = agents.iter().map(|a| a.persona.full_text()).collect();
        let vectors = v.embed(texts, Purpose::Query).await?;
        v.agents = Arc::new(agents.iter().map(|a| a.persona.id).zip(vectors).collect());
        Ok(v)
    }

    /// Embeds the posts of `platform` that have no vector yet.
    pub async fn catch_up(&mut self, platform: &Platform) -> Result<()> {
        let new: Vec<(PostId, String, Turn)> = platform
            .posts_since(self.since)
            .filter(|p| !self.posts.contains_key(&p.id))
            .map(|p| (p.id, p.content.to_string(), p.turn))
            .collect();
        let Some(last) = new.iter().map(|p| p.2).max() else { return Ok(()) };
        self.since = last;
        let (ids, texts): (Vec<PostId>, Vec<String>) = new.into_iter().map(|(id, text, _)| (id, text)).unzip();
        let vectors = self.embed(texts, Purpose::Document).await?;
        Arc::make_mut(&mut self.posts).extend(ids.into_iter().zip(vectors));
        Ok(())
    }

    /// The vectors as rankers take them (shared, not copied).
    pub fn content(&self) -> ContentVectors {
        ContentVectors { agents: self.agents.clone(), posts: self.posts.clone() }
    }

    async fn embed(&self, texts: Vec<String>, purpose: Purpose) -> Result<Vec<Vec<f32>>> {
        match &self.embedder {
            Some(e) => Ok(e.embed(&texts, purpose).await?),
            None => Ok(texts.iter().map(|t| tfidf::hashed_vector(t, HASHED_DIM)).collect()),
        }
    }
}
