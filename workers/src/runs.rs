//! Runs as the lake records them: the spec each was submitted with, the one
//! result per query that readers see, and what is still to do.
//!
//! Nothing here keeps state in memory between commands: `some report`,
//! `some rerun` and the workers all read the same rows.

use std::collections::{BTreeMap, HashMap};

use datafusion::prelude::{col, lit};
use some_schemas::{EpisodeRow, RunRow, ScoreRow, Timestamp};

use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::runner::RunSpec;

/// A fresh run id: the UTC time and a random suffix, so ids sort by age.
pub fn new_run_id() -> String {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), &suffix[..6])
}

/// Appends a lifecycle event (`submitted`, `cancelled`) for a run.
pub async fn record_event(lake: &Lake, spec: &RunSpec, event: &str) -> Result<()> {
    let spec_json = serde_json::to_string(spec).map_err(|e| Error::Other(format!("run spec: {e}")))?;
    let at = Timestamp(chrono::Utc::now().timestamp());
    let mut txn = lake.txn();
    txn.write_rows(vec![RunRow { run_id: spec.run_id.clone(), event: event.into(), at, spec: spec_json }]).await?;
    txn.commit().await?;
    Ok(())
}

/// The spec a run was submitted with, and whether it was cancelled since.
pub async fn load_run(lake: &Lake, run_id: &str) -> Result<(RunSpec, bool)> {
    let ctx = lake.session()?;
    let events: Vec<RunRow> = lake.read(&ctx, Some(col("run_id").eq(lit(run_id)))).await?;
    let Some(submitted) = events.iter().filter(|e| e.event == "submitted").max_by_key(|e| e.at.0) else {
        let known: Vec<RunRow> = lake.read(&ctx, Some(col("event").eq(lit("submitted")))).await?;
        let mut ids: Vec<&str> = known.iter().map(|r| r.run_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let list = if ids.is_empty() { "none yet".to_string() } else { ids.join(", ") };
        return Err(Error::Other(format!("unknown run {run_id:?}; runs in this lake: {list}")));
    };
    let spec: RunSpec =
        serde_json::from_str(&submitted.spec).map_err(|e| Error::Other(format!("run {run_id}: its stored spec does not read: {e}")))?;
    let cancelled = events.iter().any(|e| e.event == "cancelled" && e.at.0 >= submitted.at.0);
    Ok((spec, cancelled))
}

/// What the lake holds for one run.
#[derive(Debug, Default)]
pub struct RunRows {
    pub episodes: Vec<EpisodeRow>,
    pub scores: Vec<ScoreRow>,
}

pub async fn read_run(lake: &Lake, run_id: &str) -> Result<RunRows> {
    let ctx = lake.session()?;
    let filter = || Some(col("run_id").eq(lit(run_id)));
    Ok(RunRows { episodes: lake.read(&ctx, filter()).await?, scores: lake.read(&ctx, filter()).await? })
}

/// The result readers take for a query: its final episode and that
/// episode's score.
#[derive(Debug, Clone)]
pub struct FinalResult {
    pub episode: EpisodeRow,
    pub score: ScoreRow,
}

impl RunRows {
    /// One final result per query. A shard delivered twice can leave two
    /// final rows for a query; the latest attempt wins, then the later
    /// finish, then the greater worker name, so every reader picks the same.
    pub fn finals(&self) -> BTreeMap<String, FinalResult> {
        let mut episodes: HashMap<&str, &EpisodeRow> = HashMap::new();
        for e in self.episodes.iter().filter(|e| e.is_final) {
            let key = |r: &EpisodeRow| (r.attempt, r.finished_at.0, r.worker.clone());
            let slot = episodes.entry(e.query_id.as_str()).or_insert(e);
            if key(e) > key(slot) {
                *slot = e;
            }
        }
        let mut scores: HashMap<(&str, i32, i64), &ScoreRow> = HashMap::new();
        for s in self.scores.iter().filter(|s| s.is_final) {
            scores.entry((s.query_id.as_str(), s.attempt, s.finished_at.0)).or_insert(s);
        }
        episodes
            .into_iter()
            .filter_map(|(q, e)| {
                let score = scores.get(&(q, e.attempt, e.finished_at.0))?;
                Some((q.to_string(), FinalResult { episode: e.clone(), score: (*score).clone() }))
            })
            .collect()
    }

    /// The highest attempt number each query has reached.
    pub fn last_attempts(&self) -> HashMap<&str, i32> {
        let mut last: HashMap<&str, i32> = HashMap::new();
        for e in &self.episodes {
            let a = last.entry(e.query_id.as_str()).or_insert(0);
            *a = (*a).max(e.attempt);
        }
        last
    }
}

/// Which queries a rerun takes.
#[derive(Debug, Clone, Default)]
pub struct RerunFilter {
    /// Only queries that ran and failed (not those never started).
    pub failed_only: bool,
    /// Only these tasks (codes such as `RED`).
    pub tasks: Vec<String>,
}

/// The queries of a run that have no final result, each with its next
/// attempt number, in the run's planned order.
pub fn todo(spec: &RunSpec, rows: &RunRows, filter: &RerunFilter) -> Vec<(String, i32)> {
    let finals = rows.finals();
    let last = rows.last_attempts();
    spec.queries
        .iter()
        .filter(|q| !finals.contains_key(q.as_str()))
        .filter(|q| !filter.failed_only || last.contains_key(q.as_str()))
        .filter(|q| filter.tasks.is_empty() || filter.tasks.iter().any(|t| q.starts_with(&format!("{}-", t.to_lowercase()))))
        .map(|q| (q.clone(), last.get(q.as_str()).copied().unwrap_or(0) + 1))
        .collect()
}

/// The queries a run takes: every query of `tasks` (all tasks if empty), or
/// `sample` per task chosen by `seed` (the same seed, the same sample), in
/// task order.
pub fn plan_queries<'a>(
    queries: impl IntoIterator<Item = &'a some_schemas::QueryRow>,
    tasks: &[some_schemas::Task],
    sample: Option<usize>,
    seed: u64,
) -> Vec<String> {
    use sha2::{Digest, Sha256};
    let mut by_task: BTreeMap<some_schemas::Task, Vec<(Vec<u8>, String)>> = BTreeMap::new();
    for q in queries {
        let Ok(task) = q.task.parse::<some_schemas::Task>() else { continue };
        if !tasks.is_empty() && !tasks.contains(&task) {
            continue;
        }
        let key = Sha256::new().chain_update(seed.to_le_bytes()).chain_update(q.query_id.as_bytes()).finalize().to_vec();
        by_task.entry(task).or_default().push((key, q.query_id.clone()));
    }
    by_task
        .into_values()
        .flat_map(|mut ids| {
            ids.sort_unstable();
            let n = sample.unwrap_or(ids.len()).min(ids.len());
            ids.into_iter().take(n).map(|(_, id)| id)
        })
        .collect()
}

/// What `some compact` did.
#[derive(Debug, Default, PartialEq)]
pub struct Compacted {
    pub files_before: usize,
    pub files_after: usize,
    pub rows: usize,
}

/// Merges a run's part files into one per table. The merged file is
/// committed before the parts are deleted, so no row is ever missing;
/// until the deletes finish a reader may see a row twice, which
/// [`RunRows::finals`] resolves (raw SQL counts may briefly double).
pub async fn compact(lake: &Lake, run_id: &str) -> Result<Compacted> {
    use futures::TryStreamExt;
    use object_store::ObjectStoreExt as _;
    let mut done = Compacted::default();
    let ctx = lake.session()?;
    for table in ["scores", "episodes"] {
        let prefix = lake.path(&format!("{table}/run_id={run_id}"));
        let parts: Vec<object_store::path::Path> =
            lake.store().list(Some(&prefix)).map_ok(|m| m.location).try_collect().await.map_err(Error::store("list", &prefix))?;
        done.files_before += parts.len();
        if parts.len() <= 1 {
            done.files_after += parts.len();
            continue;
        }
        let filter = Some(col("run_id").eq(lit(run_id)));
        let mut txn = lake.txn();
        if table == "scores" {
            let rows: Vec<ScoreRow> = lake.read(&ctx, filter).await?;
            done.rows += rows.len();
            txn.write_rows(rows).await?;
        } else {
            let rows: Vec<EpisodeRow> = lake.read(&ctx, filter).await?;
            done.rows += rows.len();
            txn.write_rows(rows).await?;
        }
        let committed = txn.commit().await?;
        done.files_after += committed.files.len();
        for part in parts {
            lake.store().delete(&part).await.map_err(Error::store("delete", &part))?;
        }
    }
    Ok(done)
}
