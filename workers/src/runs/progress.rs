//! A run's progress as the lake has it (never from memory, so any machine
//! can ask, and a restarted coordinator loses nothing): what `some status`
//! shows and what `--wait` waits for. Reads only the few columns it needs,
//! never the transcripts.

use std::collections::{BTreeMap, HashMap, HashSet};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Int32Type, Int64Type, TimestampSecondType};
use datafusion::prelude::{col, lit};
use some_schemas::{Epoch, QueryAttempt, QueryId, RunId, Task, episodes, scores};

use super::spec::RunSpec;
use crate::error::Result;
use crate::lake::Lake;

/// How many of the (query, epoch, attempt)s in `todo` have a result row
/// yet, final or failed: what `some run --wait` and `some rerun --wait`
/// wait for (a rerun's queries already have failed rows of earlier attempts).
pub async fn attempted(lake: &Lake, run_id: &RunId, todo: &[QueryAttempt]) -> Result<usize> {
    let wanted: HashSet<(&str, i32, i32)> = todo.iter().map(|q| (q.query_id.as_str(), q.epoch.0, q.attempt.0)).collect();
    let ctx = lake.session().await?;
    let df = ctx.table(episodes::TABLE).await?.filter(col(episodes::run_id).eq(lit(run_id.as_str())))?.select_columns(&[
        episodes::query_id,
        episodes::attempt,
        episodes::epoch,
    ])?;
    let mut seen: HashSet<(String, i32, i32)> = HashSet::new();
    for b in df.collect().await? {
        let (Some(query), attempt) = (b.column(0).as_string_opt::<i32>(), b.column(1).as_primitive::<Int32Type>()) else { continue };
        let epoch = b.column(2).as_primitive::<Int32Type>();
        for r in 0..b.num_rows() {
            let key = (query.value(r), epoch_at(epoch, r), attempt.value(r));
            if wanted.contains(&key) {
                seen.insert((key.0.to_string(), key.1, key.2));
            }
        }
    }
    Ok(seen.len())
}

/// The epoch of row `r`: null in rows written before epochs, the first.
fn epoch_at(epochs: &arrow::array::Int32Array, r: usize) -> i32 {
    if epochs.is_null(r) { Epoch::FIRST.0 } else { epochs.value(r) }
}

/// One task's progress.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskProgress {
    /// Queries × epochs.
    pub planned: usize,
    pub finished: usize,
    /// Samples whose latest attempt failed (model errors awaiting a rerun).
    pub failed: usize,
}

/// A run's progress as the lake has it.
#[derive(Debug, Clone, Default)]
pub struct RunProgress {
    pub tasks: BTreeMap<Task, TaskProgress>,
    /// Failed attempts by cause (the episode status and the error's start).
    pub failures: BTreeMap<String, usize>,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// Of the prompt tokens, those the endpoints took from their prompt caches.
    pub cached_prompt_tokens: i64,
    /// Seconds from the first episode's start to the last one's finish.
    pub elapsed: i64,
    pub cancelled: bool,
    /// Why the run stopped at its budget.
    pub stopped: Option<String>,
    /// Samples (query, epoch) whose final episode has a score, per judging.
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

/// Reads a run's progress: only the few columns it needs, never the
/// transcripts.
pub async fn progress(lake: &Lake, spec: &RunSpec, cancelled: bool, stopped: Option<String>) -> Result<RunProgress> {
    let ctx = lake.session().await?;
    let df = ctx.table(episodes::TABLE).await?.filter(col(episodes::run_id).eq(lit(spec.run_id.as_str())))?.select_columns(&[
        episodes::query_id,
        episodes::attempt,
        episodes::is_final,
        episodes::status,
        episodes::error,
        episodes::prompt_tokens,
        episodes::completion_tokens,
        episodes::started_at,
        episodes::finished_at,
        episodes::episode_id,
        episodes::cached_prompt_tokens,
        episodes::epoch,
    ])?;
    let batches = df.collect().await?;
    let mut p = RunProgress { cancelled, stopped, ..Default::default() };
    for (task, _) in spec.samples().filter_map(|(q, e)| Some((q.task()?, e))) {
        p.tasks.entry(task).or_default().planned += 1;
    }
    // Per (query, epoch): whether any attempt is final, and its latest
    // attempt's state.
    let mut latest: BTreeMap<(String, i32), (i32, bool)> = BTreeMap::new();
    let mut finals: HashSet<(String, i32)> = HashSet::new();
    let mut final_episodes: HashMap<String, (String, i32)> = HashMap::new();
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
        let cached = b.column(10).as_primitive::<Int64Type>();
        let epoch = b.column(11).as_primitive::<Int32Type>();
        for r in 0..b.num_rows() {
            let q = (query.value(r).to_string(), epoch_at(epoch, r));
            p.prompt_tokens += prompt.value(r);
            p.completion_tokens += completion.value(r);
            p.cached_prompt_tokens += if cached.is_null(r) { 0 } else { cached.value(r) };
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
        let Some(task) = QueryId::from(q.0.as_str()).task() else { continue };
        let t = p.tasks.entry(task).or_default();
        if finals.contains(q) {
            t.finished += 1;
        } else if !ok {
            t.failed += 1;
        }
    }
    p.elapsed = if last >= first { last - first } else { 0 };
    let scores = ctx
        .table(scores::TABLE)
        .await?
        .filter(col(scores::run_id).eq(lit(spec.run_id.as_str())))?
        .select_columns(&[scores::judging, scores::episode_id])?
        .collect()
        .await?;
    let mut scored: BTreeMap<String, HashSet<&(String, i32)>> = BTreeMap::new();
    for b in &scores {
        let (Some(judging), Some(episode)) = (b.column(0).as_string_opt::<i32>(), b.column(1).as_string_opt::<i32>()) else { continue };
        for r in 0..b.num_rows() {
            if let Some(q) = final_episodes.get(episode.value(r)) {
                scored.entry(judging.value(r).to_string()).or_default().insert(q);
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
