//! The worker loop: take a job from the queue (an episode shard, a judge
//! shard, a unit of an ingestion, a partition to embed, a simulation
//! shard), run it, commit its
//! rows to the lake, and only then acknowledge it.
//!
//! What can go wrong, and what happens:
//! - the worker dies or hangs: its deliveries are unacknowledged, and the
//!   broker (on the lost connection or missed heartbeats) or the in-process
//!   queue (on drop) delivers them again;
//! - a job runs past the job deadline, or its commit fails (the object
//!   store is down), or its model endpoint does: it is requeued after a
//!   pause that doubles with each delivery; its last allowed delivery is
//!   dead-lettered with the error instead;
//! - a message that cannot be read, or names a run, judging or ingestion
//!   the lake does not have, or a release file that cannot be read:
//!   dead-lettered at once with the reason;
//! - a redelivered shard, some or all of whose episodes were committed
//!   before the worker died (they commit as they finish): queries whose
//!   attempt has a row already are skipped (and episodes that already have
//!   their score, for a judge shard), so readers see one result per
//!   attempt (and [`crate::runs`] resolves any duplicate a race leaves
//!   deterministically).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use datafusion::prelude::{col, lit};
use some_jobs::kernels::CpuKernels;
use some_jobs::progress::Progress;
use some_jobs::tools::KernelService;
use some_schemas::{Attempt, EpisodeRow, Job, JobKind, JobMessage, QueryAttempt, QueryId, RunId, episodes};
use tokio::sync::{Mutex, Semaphore, watch};

use crate::embed::{BuiltinEmbedder, EmbedPartition, embed_partition};
use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::llm::ClientSettings;
use crate::queue::{Delivery, Queue};
use crate::runs::{JudgeRunner, RunSpec, Runner, load_run};
use crate::sim::shard::ShardWork;
use crate::sim::{SimRunner, load_sim};
use crate::world::ingest::{UnitOutcome, run_unit};

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// Jobs of each kind in flight at once (and the queue prefetch).
    pub concurrency: usize,
    /// A job not committed by then is abandoned and requeued.
    pub deadline: Duration,
    pub client: ClientSettings,
    /// CPU threads of built-in models.
    pub threads: usize,
}

/// The command line's defaults, for commands whose jobs call no model.
impl Default for WorkerConfig {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        WorkerConfig { concurrency: 2, deadline: Duration::from_secs(1800), client: ClientSettings::default(), threads }
    }
}

/// How long a failed delivery is held before it is requeued: doubling
/// from 1 s, so the deliveries a queue allows span about half a minute.
fn retry_pause(earlier_deliveries: u32) -> Duration {
    Duration::from_secs(1 << earlier_deliveries.min(5))
}

/// Values built once per key and shared (a run's runner, a judging's
/// judge): their models and queries load once per process.
struct Cache<V> {
    entries: Mutex<HashMap<String, Arc<V>>>,
}

impl<V> Cache<V> {
    fn new() -> Cache<V> {
        Cache { entries: Mutex::new(HashMap::new()) }
    }

    async fn get_or_build(&self, key: String, build: impl Future<Output = Result<V>>) -> Result<Arc<V>> {
        let mut entries = self.entries.lock().await;
        if let Some(v) = entries.get(&key) {
            return Ok(v.clone());
        }
        let v = Arc::new(build.await?);
        entries.insert(key, v.clone());
        Ok(v)
    }
}

pub struct Worker {
    lake: Lake,
    queue: Arc<dyn Queue>,
    config: WorkerConfig,
    /// A runner per run and endpoints (a rerun may move them).
    runners: Cache<(Runner, RunSpec)>,
    /// A judge per judging and endpoints, likewise.
    judges: Cache<JudgeRunner>,
    progress: Arc<dyn Progress>,
    /// A simulation runner per run.
    sims: Cache<SimRunner>,
    /// The built-in embedders, each loaded by the first job that names it.
    embedders: tokio::sync::Mutex<HashMap<String, BuiltinEmbedder>>,
    /// The tools' similarity and clustering: this process's CPU kernels
    /// unless [`Worker::with_kernels`] names others (compute workers').
    kernels: Arc<dyn KernelService>,
}

impl Worker {
    pub fn new(lake: Lake, queue: Arc<dyn Queue>, config: WorkerConfig, progress: Arc<dyn Progress>) -> Arc<Worker> {
        Worker::with_kernels(lake, queue, config, progress, Arc::new(Arc::new(CpuKernels::default())))
    }

    pub fn with_kernels(
        lake: Lake,
        queue: Arc<dyn Queue>,
        config: WorkerConfig,
        progress: Arc<dyn Progress>,
        kernels: Arc<dyn KernelService>,
    ) -> Arc<Worker> {
        Arc::new(Worker {
            lake,
            queue,
            config,
            runners: Cache::new(),
            judges: Cache::new(),
            sims: Cache::new(),
            progress,
            embedders: Default::default(),
            kernels,
        })
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
        let (label, outcome) = match JobMessage::from_bytes(&delivery.body) {
            Err(e) => (None, Err(Error::Invalid(e))),
            Ok(JobMessage { job, .. }) => {
                let redelivered = delivery.delivery_count > 0;
                let outcome = match tokio::time::timeout(self.config.deadline, self.run_job(&job, redelivered)).await {
                    Ok(outcome) => outcome,
                    Err(_) => Err(Error::Task(format!("past its deadline of {} s", self.config.deadline.as_secs()))),
                };
                (Some(job.label()), outcome)
            }
        };
        let named = |e: &str| label.as_ref().map_or_else(|| e.to_string(), |l| format!("{l}: {e}"));
        let settled = match outcome {
            Ok(()) => delivery.ack().await,
            Err(e) if !e.is_retryable() => {
                tracing::error!(error = %named(&e.to_string()), "dead-lettering a job");
                delivery.dead_letter(&named(&e.to_string())).await
            }
            Err(e) if delivery.is_last_try() => {
                let reason = named(&format!("gave up after {} deliveries: {e}", delivery.delivery_count + 1));
                tracing::error!(error = %reason, "dead-lettering a job");
                delivery.dead_letter(&reason).await
            }
            Err(e) => {
                // Held, not requeued at once: a store or endpoint that is
                // down for seconds would otherwise use up every delivery.
                let pause = retry_pause(delivery.delivery_count);
                tracing::warn!(error = %named(&e.to_string()), pause_s = pause.as_secs(), "job failed; requeueing after a pause");
                tokio::time::sleep(pause).await;
                delivery.retry().await
            }
        };
        if let Err(e) = settled {
            // The delivery comes back when the connection does.
            tracing::warn!(error = %e, "could not settle a delivery");
        }
    }

    async fn run_job(&self, job: &Job, redelivered: bool) -> Result<()> {
        match job {
            Job::Episodes { run_id, queries, .. } => self.run_shard(run_id, queries, redelivered).await,
            Job::Judge { run_id, judging, query_ids, .. } => self.judge_shard(run_id, judging, query_ids).await,
            Job::Ingest { ingestion, unit } => {
                let outcome = run_unit(&self.lake, ingestion, *unit).await?;
                self.progress.advance(1);
                if let UnitOutcome::Committed(record) = outcome {
                    tracing::info!(ingestion, rows = record.rows, parts = record.parts, "ingestion committed");
                }
                Ok(())
            }
            Job::Embed { collection, model, partition } => self.embed(collection, model, partition).await,
            Job::Sim { run_id, payload, .. } => self.sim_shard(run_id, payload).await,
        }
    }

    /// Runs a simulation shard unless its run was cancelled.
    async fn sim_shard(&self, run_id: &RunId, payload: &str) -> Result<()> {
        let work = ShardWork::from_payload(payload)?;
        let record = load_sim(&self.lake, run_id).await?;
        if record.cancelled {
            tracing::info!(run = %run_id, "simulation cancelled: dropping its shard");
            return Ok(());
        }
        let runner = self
            .sims
            .get_or_build(run_id.to_string(), SimRunner::for_spec(&self.lake, &record.spec, &self.config.client, self.config.threads))
            .await
            .map_err(|e| e.context(format!("cannot set up simulation {run_id}")))?;
        runner.run_shard(work, self.progress.as_ref()).await
    }

    /// Embeds one partition with the built-in embedder the job names
    /// (loaded once per model).
    async fn embed(&self, collection: &str, model: &str, partition: &str) -> Result<()> {
        let part = EmbedPartition::parse(partition).map_err(Error::Invalid)?;
        if part.name().split('/').next() != Some(collection) {
            return Err(Error::Invalid(format!("partition {partition} is not of collection {collection}")));
        }
        let embedder = {
            let mut loaded = self.embedders.lock().await;
            match loaded.get(model) {
                Some(e) => e.clone(),
                None => {
                    let e = BuiltinEmbedder::load(model)?;
                    loaded.insert(model.to_string(), e.clone());
                    e
                }
            }
        };
        embed_partition(&self.lake, &embedder, &part, self.progress.as_ref()).await.map(drop)
    }

    async fn run_shard(&self, run_id: &RunId, queries: &[QueryAttempt], redelivered: bool) -> Result<()> {
        let record = load_run(&self.lake, run_id).await?;
        if record.cancelled {
            tracing::info!(run = %run_id, "run cancelled: dropping its shard");
            return Ok(());
        }
        let spec = record.spec;
        let key = format!("{run_id} {:?} {:?}", spec.endpoints, spec.judge_endpoints);
        let runner = self
            .runners
            .get_or_build(key, async {
                let runner = Runner::for_spec(&self.lake, &spec, &self.config.client, self.config.threads, self.kernels.clone()).await?;
                Ok((runner, spec.clone()))
            })
            .await
            // A store that is down is worth waiting for; an unknown model is not.
            .map_err(|e| e.context(format!("cannot set up run {run_id}")))?;
        let mut todo = queries.to_vec();
        if redelivered {
            let done = self.already_recorded(run_id, &todo).await?;
            todo.retain(|q| !done.contains(&(q.query_id.clone(), q.attempt)));
        }
        if todo.is_empty() {
            return Ok(());
        }
        let (runner, spec) = runner.as_ref();
        runner.run_shard(spec, &todo, self.progress.as_ref()).await.map(drop)
    }

    /// Scores the final episodes of a judge shard that its judging has no
    /// score for yet; fails (to be tried again) if the judge could not be
    /// reached for some, after committing the others.
    async fn judge_shard(&self, run_id: &RunId, judging: &str, query_ids: &[QueryId]) -> Result<()> {
        let record = load_run(&self.lake, run_id).await?;
        if record.cancelled {
            tracing::info!(run = %run_id, "run cancelled: dropping its judge shard");
            return Ok(());
        }
        let spec = record.judging(judging)?.clone();
        let key = format!("{run_id} {judging} {:?}", spec.judge_endpoints);
        let judge = self
            .judges
            .get_or_build(key, JudgeRunner::for_spec(&self.lake, &spec, &self.config.client, self.config.threads))
            .await
            .map_err(|e| e.context(format!("cannot set up judging {judging} of run {run_id}")))?;
        let done = judge.judge_shard(&spec, query_ids, self.config.client.concurrency, self.progress.as_ref()).await?;
        if done.unavailable > 0 {
            return Err(Error::Task(format!(
                "the judge could not score {} episodes: {}",
                done.unavailable,
                done.first_error.unwrap_or_default()
            )));
        }
        Ok(())
    }

    /// Which (query, attempt) pairs of a shard have a row already, final
    /// or failed: a failed attempt is retried by `some rerun` as the next
    /// attempt, never by running the same one twice.
    async fn already_recorded(&self, run_id: &RunId, todo: &[QueryAttempt]) -> Result<HashSet<(QueryId, Attempt)>> {
        let ctx = self.lake.session().await?;
        let ids = todo.iter().map(|q| lit(q.query_id.as_str())).collect();
        let filter = col(episodes::run_id).eq(lit(run_id.as_str())).and(col(episodes::query_id).in_list(ids, false));
        let rows: Vec<EpisodeRow> = self.lake.read(&ctx, Some(filter)).await?;
        Ok(rows.into_iter().map(|e| (e.query_id, e.attempt)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deliveries_a_queue_allows_outlast_a_half_minute_outage() {
        let held: Duration = (0..crate::queue::DELIVERY_LIMIT).map(retry_pause).sum();
        assert!(held >= Duration::from_secs(30), "{held:?}");
        assert!(retry_pause(u32::MAX) <= Duration::from_secs(32));
    }
}
