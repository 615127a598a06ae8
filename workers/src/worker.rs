//! The worker loop: take a job from the queue (an episode shard, a judge
//! shard, a unit of an ingestion, a partition to embed, a simulation
//! shard), hand it to its kind's handler (beside its lifecycle, see
//! [`crate::handler`]), which commits its rows to the lake, and only then
//! acknowledge it.
//!
//! What can go wrong, and what happens:
//! - the worker dies or hangs: its deliveries are unacknowledged, and the
//!   broker (on the lost connection or missed heartbeats) or the in-process
//!   queue (on drop) delivers them again;
//! - a job fails while the object store does not answer (its reads or its
//!   commit failed because the store is down): the outage is not the
//!   job's fault, so it does not count toward the job's delivery limit.
//!   The worker waits for the store (up to a pause that doubles with each
//!   such failure, to 32 s) and defers the delivery ([`Delivery::defer`]);
//!   the next delivery is still a redelivery to the handler. A store down
//!   for an hour dead-letters nothing;
//! - a job runs past the job deadline, or fails in another way that may
//!   pass (its model endpoint is down, a read failed while the store
//!   answers): it is requeued after a pause that doubles with each
//!   delivery; its last allowed delivery is dead-lettered with the error
//!   instead;
//! - a message that cannot be read, or names a run, judging or ingestion
//!   the lake does not have, or a release file that cannot be read:
//!   dead-lettered at once with the reason;
//! - a redelivered shard, some or all of whose episodes were committed
//!   before the worker died (they commit as they finish): queries whose
//!   attempt has a row already are skipped (and episodes that already have
//!   their score, for a judge shard), so readers see one result per
//!   attempt (and [`crate::runs`] resolves any duplicate a race leaves
//!   deterministically).

use std::sync::Arc;
use std::time::{Duration, Instant};

use some_jobs::kernels::CpuKernels;
use some_jobs::progress::Progress;
use some_jobs::tools::KernelService;
use some_schemas::{Job, JobKind, JobMessage};
use tokio::sync::{Semaphore, watch};

use crate::annotate::AnnotateJobs;
use crate::embed::EmbedJobs;
use crate::error::{Error, Result};
use crate::handler::JobContext;
use crate::lake::Lake;
use crate::llm::ClientSettings;
use crate::queue::{Deliveries, Delivery, Queue, consume_reconnecting};
use crate::runs::episodes::EpisodeJobs;
use crate::runs::judging::JudgeJobs;
use crate::sim::work::SimJobs;
use crate::world::ingest;

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
/// A delivery deferred for a store outage waits as long at most, by its
/// deferrals.
fn retry_pause(earlier_deliveries: u32) -> Duration {
    Duration::from_secs(1 << earlier_deliveries.min(5))
}

/// How long the store has to answer the worker's probe after a failed job.
const STORE_PROBE: Duration = Duration::from_secs(5);

pub struct Worker {
    lake: Lake,
    queue: Arc<dyn Queue>,
    config: WorkerConfig,
    progress: Arc<dyn Progress>,
    episodes: EpisodeJobs,
    judging: JudgeJobs,
    embedding: EmbedJobs,
    sims: SimJobs,
    annotations: AnnotateJobs,
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
            progress,
            episodes: EpisodeJobs::new(kernels.clone()),
            annotations: AnnotateJobs::new(kernels),
            judging: JudgeJobs::default(),
            embedding: EmbedJobs::default(),
            sims: SimJobs::default(),
        })
    }

    /// Consumes jobs of `kind` until `stop` turns true, reconnecting when
    /// the queue's connection is lost.
    pub async fn run(self: Arc<Self>, kind: JobKind, stop: watch::Receiver<bool>) {
        let prefetch = u16::try_from(self.config.concurrency.max(1)).unwrap_or(u16::MAX);
        let connect = || self.queue.consume(kind, prefetch);
        consume_reconnecting(kind.queue(), stop, connect, |deliveries, stop| self.clone().serve(deliveries, stop)).await;
    }

    /// Takes deliveries, `concurrency` jobs at once, until the connection
    /// is lost or `stop` turns true.
    async fn serve(self: Arc<Self>, mut deliveries: Box<dyn Deliveries>, mut stop: watch::Receiver<bool>) {
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

    async fn handle(&self, delivery: Delivery) {
        let (label, outcome) = match JobMessage::from_bytes(&delivery.body) {
            Err(e) => (None, Err(Error::Invalid(e))),
            Ok(JobMessage { job, .. }) => {
                let ctx = JobContext {
                    lake: &self.lake,
                    client: &self.config.client,
                    threads: self.config.threads,
                    progress: self.progress.as_ref(),
                    redelivered: delivery.redelivered(),
                };
                let outcome = match tokio::time::timeout(self.config.deadline, self.run_job(&job, &ctx)).await {
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
            Err(e) if !self.lake.store_answers(STORE_PROBE).await => {
                // The store is down: not this job's failure. Deferred, the
                // delivery does not count toward the limit, so an outage
                // of any length dead-letters nothing. Not held until the
                // store is back: the broker takes back a delivery held
                // unsettled too long (RabbitMQ's consumer timeout), and
                // counts it.
                let pause = retry_pause(delivery.deferred);
                tracing::warn!(error = %named(&e.to_string()), pause_s = pause.as_secs(), "job failed while the object store does not answer; deferring it");
                self.wait_for_store(pause).await;
                delivery.defer().await
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

    /// Waits until the store answers, or `at_most` has passed.
    async fn wait_for_store(&self, at_most: Duration) {
        let until = Instant::now() + at_most;
        loop {
            let step = Duration::from_secs(1).min(until.saturating_duration_since(Instant::now()));
            if step.is_zero() {
                return;
            }
            tokio::time::sleep(step).await;
            if self.lake.store_answers(STORE_PROBE).await {
                return;
            }
        }
    }

    /// Hands `job` to its kind's handler.
    async fn run_job(&self, job: &Job, ctx: &JobContext<'_>) -> Result<()> {
        match job {
            Job::Episodes { run_id, queries, .. } => self.episodes.run(ctx, run_id, queries).await,
            Job::Judge { run_id, judging, query_ids, .. } => self.judging.run(ctx, run_id, judging, query_ids).await,
            Job::Ingest { ingestion, unit } => ingest::run_job(ctx, ingestion, *unit).await,
            Job::Embed { collection, model, partition } => self.embedding.run(ctx.lake, ctx.progress, collection, model, partition).await,
            Job::Sim { run_id, payload, .. } => self.sims.run(ctx, run_id, payload).await,
            Job::Annotate { annotation, payload, .. } => self.annotations.run(ctx, annotation, payload).await,
        }
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
