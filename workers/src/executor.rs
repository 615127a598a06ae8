//! Where a command's jobs run, decided once from the queue location: on
//! this process (an in-process queue worked by the same worker loop that
//! serves a broker) or by `some worker`s behind a broker. Commands say what
//! to publish and how to read progress from the lake; they never look at
//! the location, so a new queue backend is one more arm of
//! [`Executor::open`].
//!
//! Waiting is one loop, [`until_settled`]: poll the lake every second,
//! advance the progress, stop when the work is settled, and stop early
//! when a job of it was dead-lettered (it will not come back by waiting).

use std::collections::HashSet;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use some_jobs::kernels::CpuKernels;
use some_jobs::progress::{PhasesOnly, Progress};
use some_jobs::tools::KernelService;
use some_schemas::{JobKind, JobMessage, QueueLocation, ShardId};

use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::queue::{DeadLetter, MemoryQueue, Queue};
use crate::sim::{Drive, SimSpec, Until, drive};
use crate::worker::{Worker, WorkerConfig};
use crate::world::{ImportReport, ingest};

/// How often the lake is read while waiting.
const EVERY: Duration = Duration::from_secs(1);

/// Runs jobs here or on a broker's workers.
pub struct Executor {
    lake: Lake,
    config: WorkerConfig,
    progress: Arc<dyn Progress>,
    /// The tools' similarity and clustering in episodes this process works.
    kernels: Arc<dyn KernelService>,
    /// `None`: this process works the jobs.
    broker: Option<Broker>,
}

struct Broker {
    queue: Arc<dyn Queue>,
    location: String,
}

/// What came of submitted work.
#[derive(Debug)]
pub enum Outcome {
    /// Every job settled; why parts of the work failed for good (none: all done).
    Settled(Vec<String>),
    /// This many jobs published for workers; nobody waited.
    Published(usize),
}

/// What one look at the lake found.
pub struct Look {
    /// Units of work done so far (for the progress).
    pub done: usize,
    /// Nothing more will change by waiting.
    pub settled: bool,
    /// Why parts of the work failed for good, as the lake records it.
    pub failures: Vec<String>,
}

/// What a submission publishes and how its progress is counted.
pub struct Work<'a> {
    pub kind: JobKind,
    /// The progress phase's name and its units (episodes, queries judged).
    pub phase: &'a str,
    pub units: usize,
}

impl Executor {
    /// The executor of `location`: a broker is connected to now, so a bad
    /// address fails before any work is planned.
    pub async fn open(lake: &Lake, location: &QueueLocation, config: WorkerConfig, progress: Arc<dyn Progress>) -> Result<Executor> {
        let broker = match location {
            QueueLocation::Memory => None,
            QueueLocation::Amqp(_) => Some(Broker { queue: crate::queue::open(location).await?, location: location.to_string() }),
        };
        Ok(Executor { lake: lake.clone(), config, progress, kernels: cpu_kernels(), broker })
    }

    /// An executor that works every job on this process.
    pub fn here(lake: &Lake, config: WorkerConfig, progress: Arc<dyn Progress>) -> Executor {
        Executor { lake: lake.clone(), config, progress, kernels: cpu_kernels(), broker: None }
    }

    /// Computes the tools' similarity and clustering of the episodes worked
    /// on this process with `kernels` (the CPU kernels unless given). Jobs
    /// published to a broker are computed by the workers' own kernels.
    pub fn with_kernels(mut self, kernels: Arc<dyn KernelService>) -> Executor {
        self.kernels = kernels;
        self
    }

    /// The broker's queue and address, when workers elsewhere take the jobs.
    pub fn broker(&self) -> Option<(&dyn Queue, &str)> {
        self.broker.as_ref().map(|b| (b.queue.as_ref(), b.location.as_str()))
    }

    /// Publishes the jobs `publish` puts on the queue (it returns their
    /// shard ids). Here they are worked to the end; on a broker, with
    /// `look`, this waits for the workers, reading how far they got from
    /// the lake; without, it returns once they are published.
    pub async fn submit<P, PF, L, LF>(&self, work: Work<'_>, publish: P, look: Option<L>) -> Result<Outcome>
    where
        P: FnOnce(Arc<dyn Queue>) -> PF,
        PF: Future<Output = Result<Vec<ShardId>>>,
        L: FnMut() -> LF,
        LF: Future<Output = Result<Look>>,
    {
        let Some(broker) = &self.broker else {
            let queue = MemoryQueue::new(crate::queue::delivery_limit());
            publish(Arc::new(queue.clone())).await?;
            self.progress.phase(work.phase, Some(work.units as u64));
            let dead = self.work_here(queue, work.kind).await?;
            return Ok(Outcome::Settled(dead.into_iter().map(|d| d.reason).collect()));
        };
        let shards = publish(broker.queue.clone()).await?;
        let Some(look) = look else { return Ok(Outcome::Published(shards.len())) };
        let jobs = Jobs { queue: broker.queue.as_ref(), kind: work.kind, shards: &shards };
        Ok(Outcome::Settled(until_settled(self.progress.as_ref(), Some((work.phase, work.units)), Some(jobs), look).await?))
    }

    /// Drives a simulation from where the lake has it; here, a worker on
    /// this process works its shards.
    pub async fn simulate(&self, spec: &SimSpec, until: Until) -> Result<Drive> {
        if let Some(broker) = &self.broker {
            return drive(&self.lake, broker.queue.as_ref(), spec, until, self.progress.as_ref()).await;
        }
        let queue = MemoryQueue::new(crate::queue::delivery_limit());
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let worker = self.worker(&queue);
        let working = tokio::spawn(worker.run(JobKind::Sim, stopped));
        // The worker counts agents as they finish; the driver only names phases.
        let done = drive(&self.lake, &queue, spec, until, &PhasesOnly(self.progress.as_ref())).await;
        let _ = stop.send(true);
        let _ = working.await;
        done
    }

    /// Ingests the release under `root` through its per-unit jobs. Here, a
    /// unit that fails aborts the ingestion: its error (file and position)
    /// is returned and nothing of it is visible. On a broker the units are
    /// published and the ingestion's id returned (`some ingest status`
    /// follows it; a failed unit waits there for a fix and a resume).
    pub async fn ingest(&self, root: &Path, replace: bool) -> Result<Ingested> {
        let started = Instant::now();
        let manifest = ingest::plan(&self.lake, root, replace).await?;
        let units: Vec<u32> = (0..manifest.units.len() as u32).collect();
        if let Some(broker) = &self.broker {
            ingest::publish(broker.queue.as_ref(), &manifest.id, &units).await?;
            return Ok(Ingested::Published { id: manifest.id, units: units.len() });
        }
        let queue = MemoryQueue::new(crate::queue::delivery_limit());
        ingest::publish(&queue, &manifest.id, &units).await?;
        self.progress.phase("release units", Some(units.len() as u64));
        let dead = self.work_here(queue, JobKind::Ingest).await?;
        if let Some(first) = dead.first() {
            ingest::abort(&self.lake, &manifest.id).await?;
            return Err(Error::Invalid(first.reason.clone()));
        }
        let status = ingest::status(&self.lake, &manifest.id).await?;
        let committed = status.committed.ok_or_else(|| Error::Invalid(format!("ingestion {} did not commit", manifest.id)))?;
        Ok(Ingested::Here(ImportReport {
            added: committed.rows,
            skipped: 0,
            files: committed.parts,
            bytes: committed.bytes,
            seconds: started.elapsed().as_secs_f64(),
        }))
    }

    /// Works off the jobs of `kind` on `queue` with a worker on this
    /// process; returns once every job is settled, with the dead letters.
    async fn work_here(&self, queue: MemoryQueue, kind: JobKind) -> Result<Vec<DeadLetter>> {
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let running = tokio::spawn(self.worker(&queue).run(kind, stopped));
        queue.drained(kind).await;
        let _ = stop.send(true);
        let _ = running.await;
        self.progress.finish();
        queue.dead_letters(kind).await
    }

    /// A worker on this process taking jobs from `queue`.
    fn worker(&self, queue: &MemoryQueue) -> Arc<Worker> {
        Worker::with_kernels(self.lake.clone(), Arc::new(queue.clone()), self.config.clone(), self.progress.clone(), self.kernels.clone())
    }
}

/// The kernels of in-process work unless told otherwise (as [`Worker::new`]'s).
fn cpu_kernels() -> Arc<dyn KernelService> {
    Arc::new(Arc::new(CpuKernels::default()))
}

/// What [`Executor::ingest`] did.
#[derive(Debug)]
pub enum Ingested {
    /// Committed on this process.
    Here(ImportReport),
    /// Published for compute workers.
    Published { id: String, units: usize },
}

/// The jobs a wait covers, to find their dead letters.
pub struct Jobs<'a> {
    pub queue: &'a dyn Queue,
    pub kind: JobKind,
    pub shards: &'a [ShardId],
}

impl Jobs<'_> {
    async fn dead_letters(&self) -> Result<Vec<String>> {
        let ours: HashSet<&ShardId> = self.shards.iter().collect();
        Ok(self
            .queue
            .dead_letters(self.kind)
            .await?
            .into_iter()
            .filter(|d| JobMessage::from_bytes(&d.body).is_ok_and(|m| m.job.shard_id().is_some_and(|s| ours.contains(s))))
            .map(|d| d.reason)
            .collect())
    }
}

/// Polls `look` until the work is settled, or failed (returned: the
/// reasons, from the lake or the dead letters). `phase` names the phase of
/// `progress` with its units; `None` names none (the caller draws its own).
pub async fn until_settled<L, LF>(
    progress: &dyn Progress,
    phase: Option<(&str, usize)>,
    jobs: Option<Jobs<'_>>,
    mut look: L,
) -> Result<Vec<String>>
where
    L: FnMut() -> LF,
    LF: Future<Output = Result<Look>>,
{
    if let Some((name, total)) = phase {
        progress.phase(name, Some(total as u64));
    }
    let mut shown = 0;
    loop {
        let now = look().await?;
        progress.advance(now.done.saturating_sub(shown) as u64);
        shown = shown.max(now.done);
        let mut failures = now.failures;
        if let Some(jobs) = &jobs {
            failures.extend(jobs.dead_letters().await?);
        }
        if now.settled || !failures.is_empty() {
            progress.finish();
            return Ok(failures);
        }
        tokio::time::sleep(EVERY).await;
    }
}
