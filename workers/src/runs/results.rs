//! A run's results as readers take them: one final episode per query and
//! its score under a judging, what is still to do, and the plan of queries.
//!
//! Every reader (report, rerun, status, the workers) resolves duplicates the
//! same way, so a shard delivered twice never shows two results.

use std::collections::{BTreeMap, HashMap, HashSet};

use datafusion::prelude::{col, lit};
use some_schemas::{Attempt, EpisodeRow, Epoch, QueryAttempt, QueryId, QueryRow, Row, RunId, ScoreRow, Task, episodes};

use super::spec::RunSpec;
use crate::error::Result;
use crate::lake::Lake;

/// What the lake holds for one run.
#[derive(Debug, Default)]
pub struct RunRows {
    pub episodes: Vec<EpisodeRow>,
    pub scores: Vec<ScoreRow>,
}

pub async fn read_run(lake: &Lake, run_id: &RunId) -> Result<RunRows> {
    let ctx = lake.session().await?;
    let filter = || Some(col(episodes::run_id).eq(lit(run_id.as_str())));
    Ok(RunRows { episodes: lake.read(&ctx, filter()).await?, scores: lake.read(&ctx, filter()).await? })
}

/// The result readers take for a query in one epoch: its final episode
/// and that episode's score under one judging.
#[derive(Debug, Clone)]
pub struct FinalResult {
    pub episode: EpisodeRow,
    pub score: ScoreRow,
}

/// One planned unit of a run: a query in one epoch.
pub type Sample = (QueryId, Epoch);

impl RunRows {
    /// The final episode of each (query, epoch). A shard delivered twice
    /// can leave two final rows for one; the latest attempt wins, then the
    /// later finish, then the greater worker name, then the greater episode
    /// id, so every reader picks the same.
    pub fn final_episodes(&self) -> HashMap<(&QueryId, Epoch), &EpisodeRow> {
        let key = |r: &EpisodeRow| (r.attempt, r.finished_at, r.worker.clone(), r.episode_id.clone());
        let mut finals: HashMap<(&QueryId, Epoch), &EpisodeRow> = HashMap::new();
        for e in self.episodes.iter().filter(|e| e.is_final) {
            let slot = finals.entry((&e.query_id, e.epoch)).or_insert(e);
            if key(e) > key(slot) {
                *slot = e;
            }
        }
        finals
    }

    /// One final result per (query, epoch) under `judging`: the final
    /// episode and its score. One whose final episode has no score under
    /// it yet is left out. Of two scores of one episode (a judge job
    /// delivered twice), the later one wins, then the higher, so every
    /// reader picks the same.
    pub fn finals(&self, judging: &str) -> BTreeMap<Sample, FinalResult> {
        let key = |s: &ScoreRow| (s.finished_at, s.score.to_bits(), s.judge_calls);
        let mut scores: HashMap<&str, &ScoreRow> = HashMap::new();
        for s in self.scores.iter().filter(|s| s.judging == judging) {
            let slot = scores.entry(s.episode_id.as_str()).or_insert(s);
            if key(s) > key(slot) {
                *slot = s;
            }
        }
        self.final_episodes()
            .into_iter()
            .filter_map(|((q, epoch), e)| {
                let score = scores.get(e.episode_id.as_str())?;
                Some(((q.clone(), epoch), FinalResult { episode: e.clone(), score: (*score).clone() }))
            })
            .collect()
    }

    /// The highest attempt each (query, epoch) has reached.
    pub fn last_attempts(&self) -> HashMap<(&QueryId, Epoch), Attempt> {
        let mut last: HashMap<(&QueryId, Epoch), Attempt> = HashMap::new();
        for e in &self.episodes {
            let a = last.entry((&e.query_id, e.epoch)).or_insert(e.attempt);
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
    /// Only these tasks.
    pub tasks: Vec<Task>,
}

/// The (query, epoch)s of a run that have no final result, each with its
/// next attempt, in the run's planned order.
pub fn todo(spec: &RunSpec, rows: &RunRows, filter: &RerunFilter) -> Vec<QueryAttempt> {
    let finals = rows.final_episodes();
    let last = rows.last_attempts();
    spec.samples()
        .filter(|&(q, e)| !finals.contains_key(&(q, e)))
        .filter(|&(q, e)| !filter.failed_only || last.contains_key(&(q, e)))
        .filter(|(q, _)| filter.tasks.is_empty() || q.task().is_some_and(|t| filter.tasks.contains(&t)))
        .map(|(q, epoch)| QueryAttempt { query_id: q.clone(), epoch, attempt: last.get(&(q, epoch)).map_or(Attempt::FIRST, |a| a.next()) })
        .collect()
}

/// The queries, in the run's planned order, with a final episode (in any
/// epoch) that has no score under `judging`: what judge jobs take.
pub fn unscored(spec: &RunSpec, rows: &RunRows, judging: &str) -> Vec<QueryId> {
    let finals = rows.final_episodes();
    let scored: HashSet<&str> = rows.scores.iter().filter(|s| s.judging == judging).map(|s| s.episode_id.as_str()).collect();
    spec.queries
        .iter()
        .filter(|q| Epoch::all(spec.epochs).any(|e| finals.get(&(*q, e)).is_some_and(|e| !scored.contains(e.episode_id.as_str()))))
        .cloned()
        .collect()
}

/// The queries a run takes: every query of `tasks` (all tasks if empty), or
/// `sample` per task chosen by `seed` (the same seed, the same sample), in
/// task order.
pub fn plan_queries<'a>(queries: impl IntoIterator<Item = &'a QueryRow>, tasks: &[Task], sample: Option<usize>, seed: u64) -> Vec<QueryId> {
    use sha2::{Digest, Sha256};
    let mut by_task: BTreeMap<Task, Vec<(Vec<u8>, QueryId)>> = BTreeMap::new();
    for q in queries {
        if !tasks.is_empty() && !tasks.contains(&q.task) {
            continue;
        }
        let key = Sha256::new().chain_update(seed.to_le_bytes()).chain_update(q.query_id.as_str().as_bytes()).finalize().to_vec();
        by_task.entry(q.task).or_default().push((key, q.query_id.clone()));
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

/// Merges a run's part files into one per table: the merged file replaces
/// the parts in one commit, so a reader sees either (never both, never
/// neither). The parts' files stay readable by earlier versions until
/// `some vacuum`.
pub async fn compact(lake: &Lake, run_id: &RunId) -> Result<Compacted> {
    let mut done = compact_table::<ScoreRow>(lake, run_id).await?;
    done += compact_table::<EpisodeRow>(lake, run_id).await?;
    Ok(done)
}

impl std::ops::AddAssign for Compacted {
    fn add_assign(&mut self, other: Compacted) {
        self.files_before += other.files_before;
        self.files_after += other.files_after;
        self.rows += other.rows;
    }
}

/// Rewrites one table's partition of the run as one file. The rows are read
/// from one version and replace exactly that version's parts, so a part
/// committed meanwhile is kept; a compaction racing another fails.
async fn compact_table<R: Row + Send + 'static>(lake: &Lake, run_id: &RunId) -> Result<Compacted> {
    let version = lake.pinned().await?;
    let folder = format!("{}/{}={run_id}", R::TABLE, episodes::run_id);
    let parts: Vec<String> = version.snapshot().await?.files_under(&folder).map(|f| f.path.clone()).collect();
    if parts.len() <= 1 {
        return Ok(Compacted { files_before: parts.len(), files_after: parts.len(), rows: 0 });
    }
    let rows: Vec<R> = version.read(&version.session().await?, Some(col(episodes::run_id).eq(lit(run_id.as_str())))).await?;
    let mut done = Compacted { files_before: parts.len(), rows: rows.len(), ..Default::default() };
    let mut txn = lake.txn();
    txn.write_rows(rows).await?;
    txn.remove_files(parts);
    done.files_after = txn.commit().await?.files.len();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use some_jobs::testing::answered_episode;
    use some_schemas::{PRIMARY_JUDGING, Timestamp};

    use super::*;
    use crate::runs::JudgingSpec;
    use crate::runs::scoring::score_row;

    fn episode(query: &str, attempt: i32, id: &str, is_final: bool, finished: i64) -> EpisodeRow {
        EpisodeRow { attempt: Attempt(attempt), is_final, finished_at: Timestamp(finished), ..answered_episode("r", query, id) }
    }

    fn score(episode: &EpisodeRow, judging: &str, score: f64, finished: i64) -> ScoreRow {
        let judging = JudgingSpec { judging: judging.into(), ..RunSpec::new("r".into(), "j", Vec::new(), Vec::new()).primary_judging() };
        let scored = some_jobs::scorers::Scored { score, completed: true, judge_calls: 1, ..Default::default() };
        score_row(&judging, episode, scored, Timestamp(finished))
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
        let q1 = (QueryId::from("q1"), Epoch::FIRST);
        let primary = rows.finals(PRIMARY_JUDGING);
        assert_eq!(primary.keys().collect::<Vec<_>>(), [&q1], "q2 has no score yet");
        assert_eq!((primary[&q1].episode.episode_id.as_str(), primary[&q1].score.score), ("e3", 60.0));
        assert_eq!(rows.finals("other")[&q1].score.score, 80.0);
        assert!(rows.finals("nobody").is_empty());
        assert_eq!(rows.final_episodes().len(), 2);

        let spec = RunSpec::new("r".into(), "m", Vec::new(), vec!["q1".into(), "q2".into(), "q3".into()]);
        assert_eq!(super::unscored(&spec, &rows, PRIMARY_JUDGING), [QueryId::from("q2")]);
        assert_eq!(super::unscored(&spec, &rows, "fresh"), [QueryId::from("q1"), QueryId::from("q2")]);
        // Reruns take only what has no final episode, whatever the scores.
        let first = |q: &str, epoch: i32| QueryAttempt { query_id: q.into(), epoch: Epoch(epoch), attempt: Attempt::FIRST };
        assert_eq!(todo(&spec, &rows, &RerunFilter::default()), [first("q3", 1)]);

        // With epochs, each (query, epoch) is a sample of its own: q1's
        // second epoch failed once, so its rerun is attempt 2 of epoch 2.
        let spec = spec.with_epochs(2);
        let mut second = episode("q1", 1, "e5", false, 40);
        second.epoch = Epoch(2);
        let rows = RunRows { episodes: [rows.episodes, vec![second]].concat(), scores: rows.scores };
        let again = QueryAttempt { query_id: "q1".into(), epoch: Epoch(2), attempt: Attempt(2) };
        assert_eq!(todo(&spec, &rows, &RerunFilter::default()), [again.clone(), first("q2", 2), first("q3", 1), first("q3", 2)]);
        assert_eq!(todo(&spec, &rows, &RerunFilter { failed_only: true, ..Default::default() }), [again]);
        assert_eq!(rows.final_episodes().len(), 2, "finals are per epoch");
    }

    #[test]
    fn epochs_sample_with_seeds_apart_and_one_epoch_keeps_the_agents_seed() {
        let spec = RunSpec::new("r".into(), "m", Vec::new(), vec!["q1".into(), "q2".into()]);
        assert_eq!((spec.seed_of(Epoch::FIRST), spec.first_attempts().len()), (None, 2));
        let mut seeded = spec.clone();
        seeded.agent.seed = Some(7);
        assert_eq!(seeded.clone().with_epochs(1).seed_of(Epoch::FIRST), Some(7));
        let three = seeded.with_epochs(3);
        assert_eq!(three.epoch_seeds, [7, 1_000_007, 2_000_007]);
        assert_eq!(three.seed_of(Epoch(2)), Some(1_000_007));
        let planned: Vec<(String, i32)> = three.first_attempts().iter().map(|q| (q.query_id.to_string(), q.epoch.0)).collect();
        assert_eq!(planned, [("q1", 1), ("q1", 2), ("q1", 3), ("q2", 1), ("q2", 2), ("q2", 3)].map(|(q, e)| (q.to_string(), e)));
    }
}
