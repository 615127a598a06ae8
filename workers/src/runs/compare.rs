//! `some compare RUN BASELINE`: per-task score and TCR deltas over the
//! queries both runs finished, with paired bootstrap confidence intervals,
//! for regression checks (the nightly evaluation fails on a drop).
//!
//! Runs with epochs are paired by query: each query's mean over the epochs
//! it finished in one run against its mean in the other. Epoch 2 of one
//! run has nothing in common with epoch 2 of another (both are draws), so
//! pairing samples epoch by epoch would count one query several times and
//! narrow the interval with no new information.

use std::collections::BTreeMap;

use rand::SeedableRng;
use some_jobs::bootstrap::paired;
use some_schemas::{QueryId, Task};

use super::results::{FinalResult, Sample};

pub use some_jobs::bootstrap::Delta;

/// One task's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskDelta {
    pub task: Task,
    /// Queries with a final result (in some epoch) in both runs.
    pub paired: usize,
    pub score: Delta,
    pub tcr: Delta,
}

/// A query's mean score and TCR over the epochs it finished.
#[derive(Debug, Clone, Copy)]
struct QueryMean {
    task: Task,
    score: f64,
    tcr: f64,
}

fn per_query(finals: &BTreeMap<Sample, FinalResult>) -> BTreeMap<&QueryId, QueryMean> {
    let mut sums: BTreeMap<&QueryId, (Task, f64, f64, usize)> = BTreeMap::new();
    for ((q, _), f) in finals {
        let entry = sums.entry(q).or_insert((f.episode.task, 0.0, 0.0, 0));
        entry.1 += f.score.score;
        entry.2 += if f.score.completed { 100.0 } else { 0.0 };
        entry.3 += 1;
    }
    sums.into_iter().map(|(q, (task, score, tcr, n))| (q, QueryMean { task, score: score / n as f64, tcr: tcr / n as f64 })).collect()
}

/// Compares two runs' final results over the queries both have.
pub fn compare(
    run: &BTreeMap<Sample, FinalResult>,
    baseline: &BTreeMap<Sample, FinalResult>,
    resamples: usize,
    seed: u64,
) -> Vec<TaskDelta> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let baseline = per_query(baseline);
    let mut by_task: BTreeMap<Task, Vec<(QueryMean, QueryMean)>> = BTreeMap::new();
    for (q, r) in per_query(run) {
        if let Some(b) = baseline.get(q) {
            by_task.entry(r.task).or_default().push((*b, r));
        }
    }
    by_task
        .into_iter()
        .map(|(task, pairs)| {
            let scores: Vec<(f64, f64)> = pairs.iter().map(|(b, r)| (b.score, r.score)).collect();
            let tcrs: Vec<(f64, f64)> = pairs.iter().map(|(b, r)| (b.tcr, r.tcr)).collect();
            TaskDelta { task, paired: pairs.len(), score: paired(&scores, resamples, &mut rng), tcr: paired(&tcrs, resamples, &mut rng) }
        })
        .collect()
}

/// Tasks whose score or TCR fell by more than `threshold` points.
pub fn regressions(deltas: &[TaskDelta], threshold: f64) -> Vec<Task> {
    deltas.iter().filter(|d| d.score.delta < -threshold || d.tcr.delta < -threshold).map(|d| d.task).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_pair_by_query_on_their_means() {
        use some_schemas::{Epoch, ScoreRow};
        let result = |q: &str, epoch: i32, score: f64| {
            let mut episode = some_jobs::testing::answered_episode("r", q, &format!("{q}{epoch}"));
            episode.epoch = Epoch(epoch);
            let scored = some_jobs::scorers::Scored { score, completed: score > 0.0, judge_calls: 1, ..Default::default() };
            let spec = crate::runs::RunSpec::new("r".into(), "m", Vec::new(), Vec::new());
            let score: ScoreRow = crate::runs::scoring::score_row(&spec.primary_judging(), &episode, scored, some_schemas::Timestamp(0));
            ((QueryId::from(q), Epoch(epoch)), FinalResult { episode, score })
        };
        // Three epochs against one: q1 averages 50 (100, 50, 0) against 20.
        let run: BTreeMap<_, _> = [result("q1", 1, 100.0), result("q1", 2, 50.0), result("q1", 3, 0.0), result("q2", 1, 80.0)].into();
        let baseline: BTreeMap<_, _> = [result("q1", 1, 20.0), result("q2", 1, 80.0), result("q3", 1, 10.0)].into();
        let d = &compare(&run, &baseline, 100, 0)[0];
        assert_eq!((d.paired, d.score.run, d.score.baseline, d.score.delta), (2, 65.0, 50.0, 15.0));
        // TCR: q1 finished two of three epochs with a score above zero.
        assert_eq!((d.tcr.run * 3.0).round(), 250.0);
    }
}
