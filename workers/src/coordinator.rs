//! The coordinator: turns a run, a judging or an ingestion into messages
//! on the queue (or runs them on this process through the in-process queue
//! and the same worker loop), and reads a run's progress back from the lake
//! (never from memory, so any machine can ask, and a restarted coordinator
//! loses nothing).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Int32Type, Int64Type, TimestampSecondType};
use datafusion::prelude::{col, lit};
use some_jobs::progress::Progress;
use some_schemas::{EpisodeRow, Job, JobKind, JobMessage, QueryAttempt, Row, ScoreRow};

use crate::embedding::{EmbedPartition, EmbedTarget, partitions};
use crate::error::{Error, Result};
use crate::ingestion;
use crate::judging::{JudgingSpec, publish_judging};
use crate::lake::Lake;
use crate::queue::{DeadLetter, MemoryQueue, Queue};
use crate::runner::RunSpec;
use crate::worker::{Worker, WorkerConfig};
use crate::world::ImportReport;

/// Publishes `todo` (query, attempt) in shards of the spec's size; returns
/// how many shards. `wave` keeps shard ids of a rerun apart from the first.
pub async fn publish_shards(queue: &dyn Queue, spec: &RunSpec, todo: &[(String, i32)], wave: u32) -> Result<usize> {
    let shards: Vec<&[(String, i32)]> = todo.chunks(spec.shard_size.max(1)).collect();
    for (i, shard) in shards.iter().enumerate() {
        let job = Job::Episodes {
            run_id: spec.run_id.as_str().into(),
            shard_id: format!("{}-w{wave}-{i:05}", spec.run_id).as_str().into(),
            queries: shard.iter().map(|(q, a)| QueryAttempt { query_id: q.as_str().into(), attempt: *a }).collect(),
        };
        queue.publish(JobKind::Episode, JobMessage::new(job).to_bytes()).await?;
    }
    Ok(shards.len())
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
    todo: &[(String, i32)],
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
    query_ids: &[String],
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
    let manifest = ingestion::plan(lake, root, replace).await?;
    let queue = memory_queue();
    let units: Vec<u32> = (0..manifest.units.len() as u32).collect();
    ingestion::publish(&queue, &manifest.id, &units).await?;
    progress.phase("release units", Some(units.len() as u64));
    let dead = work_in_process(lake, queue, JobKind::Ingest, config, progress).await?;
    if let Some(first) = dead.first() {
        ingestion::abort(lake, &manifest.id).await?;
        return Err(Error::Other(first.reason.clone()));
    }
    let status = ingestion::status(lake, &manifest.id).await?;
    let committed = status.committed.ok_or_else(|| Error::Other(format!("ingestion {} did not commit", manifest.id)))?;
    Ok(ImportReport {
        added: committed.rows,
        skipped: 0,
        files: committed.parts,
        bytes: committed.bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Publishes one embedding job per partition of `target`; returns how many.
pub async fn publish_embedding(queue: &dyn Queue, lake: &Lake, target: &EmbedTarget, model: &str) -> Result<usize> {
    let parts = partitions(lake, target).await?;
    for (part, _) in &parts {
        let collection = if *part == EmbedPartition::Knowledge { "knowledge" } else { "posts" };
        let job = Job::Embed { collection: collection.into(), model: model.into(), partition: part.name() };
        queue.publish(JobKind::Embed, JobMessage::new(job).to_bytes()).await?;
    }
    Ok(parts.len())
}

/// How many of the (query, attempt) pairs in `todo` have a result row yet,
/// final or failed: what `some run --wait` and `some rerun --wait` wait for
/// (a rerun's queries already have failed rows of earlier attempts).
pub async fn attempted(lake: &Lake, run_id: &str, todo: &[(String, i32)]) -> Result<usize> {
    let wanted: HashSet<(&str, i32)> = todo.iter().map(|(q, a)| (q.as_str(), *a)).collect();
    let ctx = lake.session()?;
    let df = ctx.table(EpisodeRow::TABLE).await?.filter(col("run_id").eq(lit(run_id)))?.select_columns(&["query_id", "attempt"])?;
    let mut seen: HashSet<(String, i32)> = HashSet::new();
    for b in df.collect().await? {
        let (Some(query), attempt) = (b.column(0).as_string_opt::<i32>(), b.column(1).as_primitive::<Int32Type>()) else { continue };
        for r in 0..b.num_rows() {
            if wanted.contains(&(query.value(r), attempt.value(r))) {
                seen.insert((query.value(r).to_string(), attempt.value(r)));
            }
        }
    }
    Ok(seen.len())
}

/// One task's progress.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskProgress {
    pub planned: usize,
    pub finished: usize,
    /// Queries whose latest attempt failed (model errors awaiting a rerun).
    pub failed: usize,
}

/// A run's progress as the lake has it.
#[derive(Debug, Clone, Default)]
pub struct RunProgress {
    pub tasks: BTreeMap<String, TaskProgress>,
    /// Failed attempts by cause (the episode status and the error's start).
    pub failures: BTreeMap<String, usize>,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// Seconds from the first episode's start to the last one's finish.
    pub elapsed: i64,
    pub cancelled: bool,
    /// Queries whose final episode has a score, per judging.
    pub scored: BTreeMap<String, usize>,
}

impl RunProgress {
    pub fn planned(&self) -> usize {
        self.tasks.values().map(|t| t.planned).sum()
    }
    pub fn finished(&self) -> usize {
        self.tasks.values().map(|t| t.finished).sum()
    }
    /// Final results per second so far.
    pub fn throughput(&self) -> f64 {
        self.finished() as f64 / (self.elapsed.max(1) as f64)
    }
    /// Seconds to go at the current throughput.
    pub fn eta(&self) -> Option<f64> {
        let rate = self.throughput();
        (self.finished() > 0 && rate > 0.0).then(|| (self.planned() - self.finished()) as f64 / rate)
    }
}

fn task_of(query_id: &str) -> String {
    query_id.split('-').next().unwrap_or_default().to_uppercase()
}

/// Reads a run's progress: only the few columns it needs, never the
/// transcripts.
pub async fn progress(lake: &Lake, spec: &RunSpec, cancelled: bool) -> Result<RunProgress> {
    let ctx = lake.session()?;
    let df = ctx.table(EpisodeRow::TABLE).await?.filter(col("run_id").eq(lit(spec.run_id.as_str())))?.select_columns(&[
        "query_id",
        "attempt",
        "is_final",
        "status",
        "error",
        "prompt_tokens",
        "completion_tokens",
        "started_at",
        "finished_at",
        "episode_id",
    ])?;
    let batches = df.collect().await?;
    let mut p = RunProgress { cancelled, ..Default::default() };
    for q in &spec.queries {
        p.tasks.entry(task_of(q)).or_default().planned += 1;
    }
    // Per query: whether any attempt is final, and its latest attempt's state.
    let mut latest: BTreeMap<String, (i32, bool)> = BTreeMap::new();
    let mut finals: HashSet<String> = HashSet::new();
    let mut final_episodes: HashMap<String, String> = HashMap::new();
    let (mut first, mut last) = (i64::MAX, i64::MIN);
    for b in &batches {
        let text = |i: usize| b.column(i).as_string_opt::<i32>().cloned();
        let (Some(query), Some(status), Some(error), Some(episode)) = (text(0), text(3), text(4), text(9)) else { continue };
        let attempt = b.column(1).as_primitive::<Int32Type>();
        let is_final = b.column(2).as_boolean();
        let prompt = b.column(5).as_primitive::<Int64Type>();
        let completion = b.column(6).as_primitive::<Int64Type>();
        let started = b.column(7).as_primitive::<TimestampSecondType>();
        let finished = b.column(8).as_primitive::<TimestampSecondType>();
        for r in 0..b.num_rows() {
            let q = query.value(r).to_string();
            p.prompt_tokens += prompt.value(r);
            p.completion_tokens += completion.value(r);
            first = first.min(started.value(r));
            last = last.max(finished.value(r));
            if is_final.value(r) {
                finals.insert(q.clone());
                final_episodes.insert(episode.value(r).to_string(), q.clone());
            } else {
                let cause =
                    if error.is_null(r) { status.value(r).to_string() } else { format!("{}: {}", status.value(r), short(error.value(r))) };
                *p.failures.entry(cause).or_default() += 1;
            }
            let entry = latest.entry(q).or_insert((0, true));
            if attempt.value(r) >= entry.0 {
                *entry = (attempt.value(r), is_final.value(r));
            }
        }
    }
    for (q, (_, ok)) in &latest {
        let t = p.tasks.entry(task_of(q)).or_default();
        if finals.contains(q) {
            t.finished += 1;
        } else if !ok {
            t.failed += 1;
        }
    }
    p.elapsed = if last >= first { last - first } else { 0 };
    let scores = ctx
        .table(ScoreRow::TABLE)
        .await?
        .filter(col("run_id").eq(lit(spec.run_id.as_str())))?
        .select_columns(&["judging", "episode_id"])?
        .collect()
        .await?;
    let mut scored: BTreeMap<String, HashSet<&str>> = BTreeMap::new();
    for b in &scores {
        let (Some(judging), Some(episode)) = (b.column(0).as_string_opt::<i32>(), b.column(1).as_string_opt::<i32>()) else { continue };
        for r in 0..b.num_rows() {
            if let Some(q) = final_episodes.get(episode.value(r)) {
                scored.entry(judging.value(r).to_string()).or_default().insert(q.as_str());
            }
        }
    }
    p.scored = scored.into_iter().map(|(j, qs)| (j, qs.len())).collect();
    Ok(p)
}

/// The first clause of an error, without the endpoint, so causes group
/// ("HTTP 500 Internal Server Error", "no answer within 1s").
fn short(error: &str) -> String {
    let error = match error.strip_prefix("model endpoint ") {
        Some(rest) => rest.split_once(": ").map_or(rest, |(_, m)| m),
        None => error,
    };
    let cut = error.find([':', '(']).unwrap_or(error.len());
    error[..cut].chars().take(60).collect::<String>().trim().to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn causes_group_without_their_endpoint() {
        let e = "model endpoint http://127.0.0.1:9/v1: HTTP 500 Internal Server Error: {\"error\"} (transient)";
        assert_eq!(super::short(e), "HTTP 500 Internal Server Error");
        assert_eq!(super::short("query red-1 is not in the lake"), "query red-1 is not in the lake");
    }
}
