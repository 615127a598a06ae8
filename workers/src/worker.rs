//! The worker loop: take a job from the queue (an episode shard, or a
//! partition to embed), run it, commit its rows to the lake, and only then
//! acknowledge it.
//!
//! What can go wrong, and what happens:
//! - the worker dies or hangs: its deliveries are unacknowledged, and the
//!   broker (on the lost connection or missed heartbeats) or the in-process
//!   queue (on drop) delivers them again;
//! - a shard runs past the job deadline, or its commit fails (the object
//!   store is down): it is requeued, and dead-lettered past the delivery
//!   limit;
//! - a message that cannot be read, or names a run the lake does not have:
//!   dead-lettered at once with the reason;
//! - a redelivered shard whose rows were committed before the worker died:
//!   queries that already have their attempt's final result are skipped, so
//!   readers see one final result per query (and [`crate::runs`] resolves
//!   any duplicate a race leaves deterministically).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use datafusion::prelude::{col, lit};
use some_jobs::embed::Embedder as _;
use some_jobs::progress::Progress;
use some_schemas::{EpisodeRow, Job, JobKind, JobMessage, QueryAttempt};
use tokio::sync::{Mutex, Semaphore, watch};

use crate::embed::MiniLm;
use crate::embedding::{EmbedPartition, embed_partition};
use crate::lake::Lake;
use crate::llm::ClientSettings;
use crate::queue::{Delivery, Queue};
use crate::runner::{RunSpec, Runner};
use crate::runs::load_run;

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Shards in flight at once (and the queue prefetch).
    pub concurrency: usize,
    /// A shard not committed by then is abandoned and requeued.
    pub deadline: Duration,
    pub client: ClientSettings,
    /// CPU threads of built-in models.
    pub threads: usize,
}

/// Why a shard did not complete.
enum ShardError {
    /// Trying again cannot help (the run is unknown): dead-letter.
    Permanent(String),
    /// Trying again may (an endpoint or the store was down): requeue.
    Transient(String),
}

/// A run's runner and the spec it was built from.
type RunnerFor = (Arc<Runner>, Arc<RunSpec>);

pub struct Worker {
    lake: Lake,
    queue: Arc<dyn Queue>,
    config: WorkerConfig,
    /// A runner per run and endpoints (a rerun may move them): its models
    /// and queries load once.
    runners: Mutex<HashMap<String, RunnerFor>>,
    progress: Arc<dyn Progress>,
    /// The built-in embedder, loaded by the first embedding job.
    embedder: tokio::sync::OnceCell<Arc<MiniLm>>,
}

impl Worker {
    pub fn new(lake: Lake, queue: Arc<dyn Queue>, config: WorkerConfig, progress: Arc<dyn Progress>) -> Arc<Worker> {
        Arc::new(Worker { lake, queue, config, runners: Mutex::new(HashMap::new()), progress, embedder: tokio::sync::OnceCell::new() })
    }

    /// Consumes jobs of `kind` until `stop` turns true, reconnecting when
    /// the queue's connection is lost.
    pub async fn run(self: Arc<Self>, kind: JobKind, mut stop: watch::Receiver<bool>) {
        let mut pause = Duration::from_millis(200);
        while !*stop.borrow() {
            let prefetch = u16::try_from(self.config.concurrency.max(1)).unwrap_or(u16::MAX);
            let mut deliveries = match self.queue.consume(kind, prefetch).await {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot consume; retrying");
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => {}
                        _ = stop.changed() => {}
                    }
                    pause = (pause * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            pause = Duration::from_millis(200);
            let slots = Arc::new(Semaphore::new(self.config.concurrency.max(1)));
            loop {
                let next = tokio::select! {
                    next = deliveries.next() => next,
                    _ = stop.changed() => None,
                };
                let Some(next) = next else { break };
                let delivery = match next {
                    Ok(d) => d,
                    Err(e) => {
                        tracing::warn!(error = %e, "delivery failed");
                        break;
                    }
                };
                let Ok(slot) = slots.clone().acquire_owned().await else { break };
                let this = self.clone();
                tokio::spawn(async move {
                    this.handle(delivery).await;
                    drop(slot);
                });
            }
        }
    }

    async fn handle(&self, delivery: Delivery) {
        let settled = match JobMessage::from_bytes(&delivery.body) {
            Err(e) => {
                tracing::error!(error = %e, "dead-lettering a message");
                delivery.dead_letter(&e).await
            }
            Ok(JobMessage { job: Job::Episodes { run_id, shard_id, queries }, .. }) => {
                let outcome =
                    tokio::time::timeout(self.config.deadline, self.run_shard(run_id.0, queries, delivery.delivery_count > 0)).await;
                match outcome {
                    Ok(Ok(())) => delivery.ack().await,
                    Ok(Err(ShardError::Permanent(e))) => {
                        tracing::error!(shard = %shard_id, error = %e, "dead-lettering a shard");
                        delivery.dead_letter(&format!("shard {shard_id}: {e}")).await
                    }
                    Ok(Err(ShardError::Transient(e))) => {
                        tracing::warn!(shard = %shard_id, error = %e, "shard failed; requeueing");
                        delivery.retry().await
                    }
                    Err(_) => {
                        tracing::warn!(shard = %shard_id, deadline = ?self.config.deadline, "shard past its deadline; requeueing");
                        delivery.retry().await
                    }
                }
            }
            Ok(JobMessage { job: Job::Embed { collection, model, partition }, .. }) => {
                match self.embed(&collection, &model, &partition).await {
                    Ok(()) => delivery.ack().await,
                    Err(ShardError::Permanent(e)) => delivery.dead_letter(&format!("embedding {partition}: {e}")).await,
                    Err(ShardError::Transient(e)) => {
                        tracing::warn!(partition, error = %e, "embedding failed; requeueing");
                        delivery.retry().await
                    }
                }
            }
            Ok(JobMessage { job, .. }) => {
                delivery.dead_letter(&format!("{:?} jobs are not run by this version's workers", job.kind())).await
            }
        };
        if let Err(e) = settled {
            // The delivery comes back when the connection does.
            tracing::warn!(error = %e, "could not settle a delivery");
        }
    }

    /// Embeds one partition with the built-in embedder (loaded once).
    async fn embed(&self, collection: &str, model: &str, partition: &str) -> Result<(), ShardError> {
        let part = EmbedPartition::parse(partition).map_err(ShardError::Permanent)?;
        if part.name().split('/').next() != Some(collection) {
            return Err(ShardError::Permanent(format!("partition {partition} is not of collection {collection}")));
        }
        let embedder = self
            .embedder
            .get_or_try_init(|| async { MiniLm::load_installed().map(Arc::new) })
            .await
            .map_err(|e| ShardError::Permanent(e.to_string()))?;
        if embedder.model() != model {
            return Err(ShardError::Permanent(format!("this worker embeds with {}, the job asks for {model}", embedder.model())));
        }
        embed_partition(&self.lake, embedder.as_ref(), &part, self.progress.as_ref())
            .await
            .map(drop)
            .map_err(|e| ShardError::Transient(e.to_string()))
    }

    async fn runner(&self, run_id: &str) -> Result<Option<RunnerFor>, ShardError> {
        let (spec, cancelled) = load_run(&self.lake, run_id).await.map_err(|e| {
            let message = e.to_string();
            if message.starts_with("unknown run") { ShardError::Permanent(message) } else { ShardError::Transient(message) }
        })?;
        if cancelled {
            return Ok(None);
        }
        let key = format!("{run_id} {:?} {:?}", spec.endpoints, spec.judge_endpoints);
        let mut runners = self.runners.lock().await;
        if let Some(r) = runners.get(&key) {
            return Ok(Some(r.clone()));
        }
        let runner = Runner::for_spec(&self.lake, &spec, &self.config.client, self.config.threads)
            .await
            .map_err(|e| ShardError::Permanent(format!("cannot set up run {run_id}: {e}")))?;
        let entry = (Arc::new(runner), Arc::new(spec));
        runners.insert(key, entry.clone());
        Ok(Some(entry))
    }

    async fn run_shard(&self, run_id: String, queries: Vec<QueryAttempt>, redelivered: bool) -> Result<(), ShardError> {
        let run_id = run_id.as_str();
        let Some((runner, spec)) = self.runner(run_id).await? else {
            tracing::info!(run = run_id, "run cancelled: dropping its shard");
            return Ok(());
        };
        let mut todo: Vec<(String, i32)> = queries.iter().map(|q| (q.query_id.0.clone(), q.attempt)).collect();
        if redelivered {
            let done = self.already_final(run_id, &todo).await.map_err(ShardError::Transient)?;
            todo.retain(|(q, a)| !done.contains(&(q.clone(), *a)));
        }
        if todo.is_empty() {
            return Ok(());
        }
        runner.run_shard(&spec, &todo, self.progress.as_ref()).await.map(|_| ()).map_err(|e| ShardError::Transient(e.to_string()))
    }

    /// Which (query, attempt) pairs of a shard already have a final result.
    async fn already_final(&self, run_id: &str, todo: &[(String, i32)]) -> Result<HashSet<(String, i32)>, String> {
        let ctx = self.lake.session().map_err(|e| e.to_string())?;
        let ids = todo.iter().map(|(q, _)| lit(q.clone())).collect();
        let filter = col("run_id").eq(lit(run_id)).and(col("is_final")).and(col("query_id").in_list(ids, false));
        let rows: Vec<EpisodeRow> = self.lake.read(&ctx, Some(filter)).await.map_err(|e| e.to_string())?;
        Ok(rows.into_iter().map(|e| (e.query_id, e.attempt)).collect())
    }
}
