//! The coordinator: turns a run, a judging, an ingestion, an embedding or a
//! simulation into messages on the queue, or runs them on this process through the
//! in-process queue and the same worker loop. What the work has done is read
//! back from the lake ([`crate::runs::progress`]).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use some_jobs::progress::{PhasesOnly, Progress};
use some_schemas::{Job, JobKind, JobMessage, QueryAttempt, QueryId, ShardId, knowledge, posts};

use crate::embed::{EmbedPartition, EmbedTarget, partitions};
use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::queue::{DeadLetter, MemoryQueue, Queue};
use crate::runs::{JudgingSpec, RunSpec};
use crate::sim::{Drive, SimSpec, Until, drive};
use crate::worker::{Worker, WorkerConfig};
use crate::world::{ImportReport, ingest};

/// Publishes `todo` in shards of the spec's size; returns their ids.
/// `wave` keeps shard ids of a rerun apart from the first.
pub async fn publish_shards(queue: &dyn Queue, spec: &RunSpec, todo: &[QueryAttempt], wave: u32) -> Result<Vec<ShardId>> {
    let mut shards = Vec::new();
    for (i, shard) in todo.chunks(spec.shard_size.max(1)).enumerate() {
        let shard_id = ShardId(format!("{}-w{wave}-{i:05}", spec.run_id));
        let job = Job::Episodes { run_id: spec.run_id.clone(), shard_id: shard_id.clone(), queries: shard.to_vec() };
        queue.publish(JobKind::Episode, JobMessage::new(job).to_bytes()).await?;
        shards.push(shard_id);
    }
    Ok(shards)
}

/// Publishes judge jobs for `query_ids`, `shard_size` queries each; returns
/// their shard ids.
pub async fn publish_judging(queue: &dyn Queue, spec: &JudgingSpec, query_ids: &[QueryId], shard_size: usize) -> Result<Vec<ShardId>> {
    let wave = uuid::Uuid::new_v4().simple().to_string();
    let mut shards = Vec::new();
    for (i, shard) in query_ids.chunks(shard_size.max(1)).enumerate() {
        let shard_id = ShardId(format!("{}-{}-{}-{i:05}", spec.run_id, spec.judging, &wave[..6]));
        let job = Job::Judge {
            run_id: spec.run_id.clone(),
            judging: spec.judging.clone(),
            shard_id: shard_id.clone(),
            query_ids: shard.to_vec(),
        };
        queue.publish(JobKind::Judge, JobMessage::new(job).to_bytes()).await?;
        shards.push(shard_id);
    }
    Ok(shards)
}

/// Works off the jobs of `kind` already on `queue` with a worker on this
/// process, the same worker loop that serves RabbitMQ; returns once every
/// job is settled, with the dead letters.
async fn work_in_process(
    lake: &Lake,
    queue: MemoryQueue,
    kind: JobKind,
    config: WorkerConfig,
    progress: Arc<dyn Progress>,
) -> Result<Vec<DeadLetter>> {
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let worker = Worker::new(lake.clone(), Arc::new(queue.clone()), config, progress.clone());
    let running = tokio::spawn(worker.run(kind, stopped));
    queue.drained(kind).await;
    let _ = stop.send(true);
    let _ = running.await;
    progress.finish();
    queue.dead_letters(kind).await
}

fn memory_queue() -> MemoryQueue {
    MemoryQueue::new(crate::queue::DELIVERY_LIMIT)
}

/// Runs `todo` on this process; returns once every shard is committed or
/// dead-lettered, with the dead letters.
pub async fn run_in_process(
    lake: &Lake,
    spec: &RunSpec,
    todo: &[QueryAttempt],
    config: WorkerConfig,
    progress: Arc<dyn Progress>,
) -> Result<Vec<DeadLetter>> {
    let queue = memory_queue();
    publish_shards(&queue, spec, todo, 0).await?;
    progress.phase("episodes", Some(todo.len() as u64));
    work_in_process(lake, queue, JobKind::Episode, config, progress).await
}

/// Scores `query_ids` under a judging on this process; returns the dead
/// letters.
pub async fn judge_in_process(
    lake: &Lake,
    spec: &JudgingSpec,
    query_ids: &[QueryId],
    shard_size: usize,
    config: WorkerConfig,
    progress: Arc<dyn Progress>,
) -> Result<Vec<DeadLetter>> {
    let queue = memory_queue();
    publish_judging(&queue, spec, query_ids, shard_size).await?;
    progress.phase("judged", Some(query_ids.len() as u64));
    work_in_process(lake, queue, JobKind::Judge, config, progress).await
}

/// Ingests the release under `root` on this process, through the same
/// per-unit jobs as compute workers run. A unit that fails aborts the
/// ingestion: its error (file and position) is returned and nothing of it
/// is visible.
pub async fn ingest_in_process(
    lake: &Lake,
    root: &Path,
    replace: bool,
    config: WorkerConfig,
    progress: Arc<dyn Progress>,
) -> Result<ImportReport> {
    let started = Instant::now();
    let manifest = ingest::plan(lake, root, replace).await?;
    let queue = memory_queue();
    let units: Vec<u32> = (0..manifest.units.len() as u32).collect();
    ingest::publish(&queue, &manifest.id, &units).await?;
    progress.phase("release units", Some(units.len() as u64));
    let dead = work_in_process(lake, queue, JobKind::Ingest, config, progress).await?;
    if let Some(first) = dead.first() {
        ingest::abort(lake, &manifest.id).await?;
        return Err(Error::Invalid(first.reason.clone()));
    }
    let status = ingest::status(lake, &manifest.id).await?;
    let committed = status.committed.ok_or_else(|| Error::Invalid(format!("ingestion {} did not commit", manifest.id)))?;
    Ok(ImportReport {
        added: committed.rows,
        skipped: 0,
        files: committed.parts,
        bytes: committed.bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Drives a simulation on this process: the coordinator's turns, and a
/// worker on the in-process queue working their shards.
pub async fn simulate_in_process(
    lake: &Lake,
    spec: &SimSpec,
    until: Until,
    config: WorkerConfig,
    progress: Arc<dyn Progress>,
) -> Result<Drive> {
    let queue = memory_queue();
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let worker = Worker::new(lake.clone(), Arc::new(queue.clone()), config, progress.clone());
    let working = tokio::spawn(worker.run(JobKind::Sim, stopped));
    // The worker counts agents as they finish; the driver only names phases.
    let done = drive(lake, &queue, spec, until, &PhasesOnly(progress.as_ref())).await;
    let _ = stop.send(true);
    let _ = working.await;
    done
}

/// Publishes one embedding job per partition of `target`; returns how many.
pub async fn publish_embedding(queue: &dyn Queue, lake: &Lake, target: &EmbedTarget, model: &str) -> Result<usize> {
    let parts = partitions(lake, target).await?;
    for (part, _) in &parts {
        let collection = if *part == EmbedPartition::Knowledge { knowledge::TABLE } else { posts::TABLE };
        let job = Job::Embed { collection: collection.into(), model: model.into(), partition: part.name() };
        queue.publish(JobKind::Embed, JobMessage::new(job).to_bytes()).await?;
    }
    Ok(parts.len())
}
