//! `some compare RUN BASELINE`: per-task score and TCR deltas over the
//! queries both runs finished, with paired bootstrap confidence intervals,
//! for regression checks (the nightly evaluation fails on a drop).

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use some_schemas::{QueryId, Task};

use super::results::FinalResult;

/// A delta and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delta {
    pub baseline: f64,
    pub run: f64,
    pub delta: f64,
    pub low: f64,
    pub high: f64,
}

/// One task's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskDelta {
    pub task: Task,
    /// Queries with a final result in both runs.
    pub paired: usize,
    pub score: Delta,
    pub tcr: Delta,
}

/// Paired bootstrap of the mean of `diffs`: `resamples` resamples with
/// replacement, percentile interval.
fn bootstrap(pairs: &[(f64, f64)], resamples: usize, rng: &mut impl Rng) -> Delta {
    let n = pairs.len();
    let mean = |f: &dyn Fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / n as f64;
    let (baseline, run) = (mean(&|p| p.0), mean(&|p| p.1));
    let diffs: Vec<f64> = pairs.iter().map(|(b, r)| r - b).collect();
    let mut means: Vec<f64> =
        (0..resamples.max(1)).map(|_| (0..n).map(|_| diffs[rng.random_range(0..n)]).sum::<f64>() / n as f64).collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| means[((means.len() - 1) as f64 * q).round() as usize];
    Delta { baseline, run, delta: run - baseline, low: at(0.025), high: at(0.975) }
}

/// Compares two runs' final results over the queries both have.
pub fn compare(
    run: &BTreeMap<QueryId, FinalResult>,
    baseline: &BTreeMap<QueryId, FinalResult>,
    resamples: usize,
    seed: u64,
) -> Vec<TaskDelta> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut by_task: BTreeMap<Task, Vec<(&FinalResult, &FinalResult)>> = BTreeMap::new();
    for (q, r) in run {
        if let Some(b) = baseline.get(q) {
            by_task.entry(r.episode.task).or_default().push((b, r));
        }
    }
    let tcr = |f: &FinalResult| if f.score.completed { 100.0 } else { 0.0 };
    by_task
        .into_iter()
        .map(|(task, pairs)| {
            let scores: Vec<(f64, f64)> = pairs.iter().map(|(b, r)| (b.score.score, r.score.score)).collect();
            let tcrs: Vec<(f64, f64)> = pairs.iter().map(|(b, r)| (tcr(b), tcr(r))).collect();
            TaskDelta {
                task,
                paired: pairs.len(),
                score: bootstrap(&scores, resamples, &mut rng),
                tcr: bootstrap(&tcrs, resamples, &mut rng),
            }
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
    fn the_interval_holds_the_delta_and_narrows_with_agreement() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        // Every pair improves by exactly 10: no spread at all.
        let same: Vec<(f64, f64)> = (0..50).map(|i| (i as f64, i as f64 + 10.0)).collect();
        let d = bootstrap(&same, 200, &mut rng);
        assert_eq!((d.delta, d.low, d.high), (10.0, 10.0, 10.0));
        // Half the pairs gain 100, half lose 100: mean 0, wide interval.
        let noisy: Vec<(f64, f64)> = (0..40).map(|i| if i % 2 == 0 { (0.0, 100.0) } else { (100.0, 0.0) }).collect();
        let d = bootstrap(&noisy, 500, &mut rng);
        assert_eq!(d.delta, 0.0);
        assert!(d.low < -20.0 && d.high > 20.0, "{d:?}");
    }
}
