//! Runs as the lake records them: the spec each was submitted with, the one
//! result per query that readers see, and what is still to do.
//!
//! Nothing here keeps state in memory between commands: `some report`,
//! `some rerun` and the workers all read the same rows.

use std::collections::{BTreeMap, HashMap};

use datafusion::prelude::{col, lit};
use some_schemas::{EpisodeRow, RunEvent, RunRow, ScoreRow, Timestamp};

use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::runner::RunSpec;

/// A fresh run id: the UTC time and a random suffix, so ids sort by age.
pub fn new_run_id() -> String {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), &suffix[..6])
}

/// Appends a lifecycle event (`submitted`, `cancelled`) for a run.
pub async fn record_event(lake: &Lake, spec: &RunSpec, event: RunEvent) -> Result<()> {
    let spec_json = serde_json::to_string(spec).map_err(|e| Error::Other(format!("run spec: {e}")))?;
    let at = Timestamp(chrono::Utc::now().timestamp());
    let mut txn = lake.txn();
    txn.write_rows(vec![RunRow { run_id: spec.run_id.clone(), event: event.as_str().into(), at, spec: spec_json }]).await?;
    txn.commit().await?;
    Ok(())
}

/// Every event of a run.
pub async fn run_events(lake: &Lake, run_id: &str) -> Result<Vec<RunRow>> {
    let ctx = lake.session()?;
    lake.read(&ctx, Some(col("run_id").eq(lit(run_id)))).await
}

/// The spec a run was submitted with, and whether it was cancelled since.
pub async fn load_run(lake: &Lake, run_id: &str) -> Result<(RunSpec, bool)> {
    let submitted_event = RunEvent::Submitted.as_str();
    let events = run_events(lake, run_id).await?;
    let Some(submitted) = events.iter().filter(|e| e.event == submitted_event).max_by_key(|e| e.at.0) else {
        let known: Vec<RunRow> = lake.read(&lake.session()?, Some(col("event").eq(lit(submitted_event)))).await?;
        let mut ids: Vec<&str> = known.iter().map(|r| r.run_id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        let list = if ids.is_empty() { "none yet".to_string() } else { ids.join(", ") };
        return Err(Error::Unknown(format!("unknown run {run_id:?}; runs in this lake: {list}")));
    };
    let spec: RunSpec =
        serde_json::from_str(&submitted.spec).map_err(|e| Error::Other(format!("run {run_id}: its stored spec does not read: {e}")))?;
    let cancelled = events.iter().any(|e| e.event == RunEvent::Cancelled.as_str() && e.at.0 >= submitted.at.0);
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
/// episode's score under one judging.
#[derive(Debug, Clone)]
pub struct FinalResult {
    pub episode: EpisodeRow,
    pub score: ScoreRow,
}

impl RunRows {
    /// The final episode of each query. A shard delivered twice can leave
    /// two final rows for a query; the latest attempt wins, then the later
    /// finish, then the greater worker name, then the greater episode id,
    /// so every reader picks the same.
    pub fn final_episodes(&self) -> HashMap<&str, &EpisodeRow> {
        let key = |r: &EpisodeRow| (r.attempt, r.finished_at.0, r.worker.clone(), r.episode_id.clone());
        let mut episodes: HashMap<&str, &EpisodeRow> = HashMap::new();
        for e in self.episodes.iter().filter(|e| e.is_final) {
            let slot = episodes.entry(e.query_id.as_str()).or_insert(e);
            if key(e) > key(slot) {
                *slot = e;
            }
        }
        episodes
    }

    /// One final result per query under `judging`: the final episode and
    /// its score. A query whose final episode has no score under it yet is
    /// left out. Of two scores of one episode (a judge job delivered twice),
    /// the later one wins, then the higher, so every reader picks the same.
    pub fn finals(&self, judging: &str) -> BTreeMap<String, FinalResult> {
        let key = |s: &ScoreRow| (s.finished_at.0, s.score.to_bits(), s.judge_calls);
        let mut scores: HashMap<&str, &ScoreRow> = HashMap::new();
        for s in self.scores.iter().filter(|s| s.judging == judging) {
            let slot = scores.entry(s.episode_id.as_str()).or_insert(s);
            if key(s) > key(slot) {
                *slot = s;
            }
        }
        self.final_episodes()
            .into_iter()
            .filter_map(|(q, e)| {
                let score = scores.get(e.episode_id.as_str())?;
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
    let finals = rows.final_episodes();
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

#[cfg(test)]
mod tests {
    use some_schemas::PRIMARY_JUDGING;

    use super::*;

    fn episode(query: &str, attempt: i32, id: &str, is_final: bool, finished: i64) -> EpisodeRow {
        EpisodeRow {
            query_id: query.into(),
            task: "SMQ".into(),
            attempt,
            episode_id: id.into(),
            is_final,
            status: "answered".into(),
            answer: Some("a".into()),
            model: "m".into(),
            protocol: "text".into(),
            llm_calls: 1,
            tool_calls: 0,
            tool_errors: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            latency_ms: 0,
            started_at: Timestamp(0),
            finished_at: Timestamp(finished),
            worker: "w".into(),
            transcript: "{}".into(),
            error: None,
            run_id: "r".into(),
        }
    }

    fn score(episode: &EpisodeRow, judging: &str, score: f64, finished: i64) -> ScoreRow {
        let judging = crate::judging::JudgingSpec {
            run_id: "r".into(),
            judging: judging.into(),
            judge_model: "j".into(),
            judge_endpoints: Vec::new(),
            settings: Default::default(),
        };
        let scored = some_jobs::scorers::Scored { score, completed: true, judge_calls: 1, ..Default::default() };
        crate::judging::score_row(&judging, episode, scored, Timestamp(finished))
    }

    #[test]
    fn readers_take_the_final_episode_and_its_score_under_the_judging_asked_for() {
        let failed = episode("q1", 1, "e1", false, 10);
        let first = episode("q1", 2, "e2", true, 20);
        // The same attempt delivered twice and finished later: this one wins.
        let redelivered = episode("q1", 2, "e3", true, 30);
        let unscored = episode("q2", 1, "e4", true, 20);
        let rows = RunRows {
            scores: vec![
                score(&first, PRIMARY_JUDGING, 10.0, 20),
                score(&redelivered, PRIMARY_JUDGING, 60.0, 30),
                score(&redelivered, "other", 40.0, 50),
                // A judge job delivered twice: the later score wins.
                score(&redelivered, "other", 80.0, 60),
            ],
            episodes: vec![failed, first, redelivered, unscored],
        };
        let primary = rows.finals(PRIMARY_JUDGING);
        assert_eq!(primary.keys().collect::<Vec<_>>(), ["q1"], "q2 has no score yet");
        assert_eq!((primary["q1"].episode.episode_id.as_str(), primary["q1"].score.score), ("e3", 60.0));
        assert_eq!(rows.finals("other")["q1"].score.score, 80.0);
        assert!(rows.finals("nobody").is_empty());
        assert_eq!(rows.final_episodes().len(), 2);

        let spec = RunSpec {
            run_id: "r".into(),
            model: "m".into(),
            endpoints: Vec::new(),
            judge_model: "j".into(),
            judge_endpoints: Vec::new(),
            agent: Default::default(),
            tools: Default::default(),
            judge: Default::default(),
            queries: vec!["q1".into(), "q2".into(), "q3".into()],
            shard_size: 1,
            concurrency: 1,
        };
        assert_eq!(crate::judging::unscored(&spec, &rows, PRIMARY_JUDGING), ["q2"]);
        assert_eq!(crate::judging::unscored(&spec, &rows, "fresh"), ["q1", "q2"]);
        // Reruns take only what has no final episode, whatever the scores.
        assert_eq!(todo(&spec, &rows, &RerunFilter::default()), [("q3".to_string(), 1)]);
    }
}
