//! What the handlers of the six job kinds share. Each kind's handler
//! lives beside its lifecycle (`runs::episodes::EpisodeJobs`,
//! `runs::judging::JudgeJobs`, `world::ingest::run_job`,
//! `embed::EmbedJobs` (given the lake and the progress alone: `embed` is below `llm`), `sim::work::SimJobs`, `annotate::AnnotateJobs`); the worker loop
//! (`crate::worker`) takes a job, hands it to its kind's handler, and
//! settles the delivery by the outcome.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use some_jobs::progress::Progress;
use tokio::sync::Mutex;

use crate::error::Result;
use crate::lake::Lake;
use crate::llm::ClientSettings;

/// What a job runs with.
pub struct JobContext<'a> {
    pub lake: &'a Lake,
    /// How its model calls are made.
    pub client: &'a ClientSettings,
    /// CPU threads of built-in models.
    pub threads: usize,
    pub progress: &'a dyn Progress,
    /// The message was delivered before (part of its work may be committed).
    pub redelivered: bool,
}

/// Values built once per key and shared (a run's runner, a judging's
/// judge): their models and queries load once per process.
pub struct Cache<V> {
    entries: Mutex<HashMap<String, Arc<V>>>,
}

impl<V> Default for Cache<V> {
    fn default() -> Cache<V> {
        Cache { entries: Mutex::new(HashMap::new()) }
    }
}

impl<V> Cache<V> {
    pub async fn get_or_build(&self, key: String, build: impl Future<Output = Result<V>>) -> Result<Arc<V>> {
        let mut entries = self.entries.lock().await;
        if let Some(v) = entries.get(&key) {
            return Ok(v.clone());
        }
        let v = Arc::new(build.await?);
        entries.insert(key, v.clone());
        Ok(v)
    }
}
