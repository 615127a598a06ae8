//! What repeated samples say (`some run --epochs N`): each task's score as
//! the mean over queries of each query's mean over its epochs, with a 95%
//! interval across queries (Student's t: a task's queries are few), each
//! epoch's own mean (the noise floor between whole runs), pass@k and pass^k
//! for the label tasks, and how often a query's epochs agree.
//!
//! A label task's sample is correct when it scored 100. pass@k is the
//! chance that at least one of k samples of a query is correct, pass^k that
//! all k are (tau-bench), both estimated without bias from a query's n
//! finished epochs with c correct: 1 - C(n-c, k)/C(n, k) and C(c, k)/C(n, k),
//! then averaged over the queries with at least k finished epochs.

use std::collections::BTreeMap;

use some_schemas::{Epoch, QueryId, Scoring, Task};

use super::super::results::FinalResult;

/// One task's figures over epochs.
#[derive(Debug, Clone, PartialEq)]
pub struct EpochFigures {
    /// Queries with at least one finished epoch.
    pub queries: usize,
    /// Half the width of the 95% interval of the task's score; `None` with
    /// fewer than two queries.
    pub half_width: Option<f64>,
    /// The mean score of each epoch's finished samples, epoch 1 first.
    pub per_epoch: Vec<Option<f64>>,
    /// pass@k and pass^k for k = 1..=epochs (label tasks only; `None` where
    /// no query has k finished epochs).
    pub pass_at: Vec<Option<f64>>,
    pub pass_all: Vec<Option<f64>>,
    /// Label tasks: the share of queries with two or more finished epochs
    /// whose epochs all read the same label, in %.
    pub agreement: Option<f64>,
    /// The mean over queries of the standard deviation of a query's scores
    /// across its epochs (queries with two or more).
    pub spread: Option<f64>,
}

/// The mean over queries of each query's mean score over its epochs: the
/// task's score (equal to the plain mean when every query ran every epoch).
pub fn reduced_mean(results: &[&FinalResult]) -> Option<f64> {
    let means: Vec<f64> = by_query(results).values().map(|r| mean(r.iter().map(|f| f.score.score))).collect();
    (!means.is_empty()).then(|| mean(means.iter().copied()))
}

/// The figures of one task over `epochs`, from its final results.
pub fn figures(task: Task, results: &[&FinalResult], epochs: u32) -> EpochFigures {
    let queries = by_query(results);
    let means: Vec<f64> = queries.values().map(|r| mean(r.iter().map(|f| f.score.score))).collect();
    let per_epoch = Epoch::all(epochs)
        .map(|e| {
            let scores: Vec<f64> = results.iter().filter(|r| r.episode.epoch == e).map(|r| r.score.score).collect();
            (!scores.is_empty()).then(|| mean(scores.iter().copied()))
        })
        .collect();
    let repeated: Vec<&Vec<&FinalResult>> = queries.values().filter(|r| r.len() >= 2).collect();
    let spread =
        (!repeated.is_empty()).then(|| mean(repeated.iter().map(|r| std_dev(&r.iter().map(|f| f.score.score).collect::<Vec<_>>()))));
    let label = task.scoring() == Scoring::Label;
    let (pass_at, pass_all) = if label {
        let counts: Vec<(u64, u64)> =
            queries.values().map(|r| (r.len() as u64, r.iter().filter(|f| f.score.score >= 100.0).count() as u64)).collect();
        let over_k = |k: u64, f: &dyn Fn(u64, u64, u64) -> f64| {
            let eligible: Vec<f64> = counts.iter().filter(|(n, _)| *n >= k).map(|&(n, c)| f(n, c, k)).collect();
            (!eligible.is_empty()).then(|| 100.0 * mean(eligible.iter().copied()))
        };
        (
            (1..=u64::from(epochs)).map(|k| over_k(k, &|n, c, k| 1.0 - choose(n - c, k) / choose(n, k))).collect(),
            (1..=u64::from(epochs)).map(|k| over_k(k, &|n, c, k| choose(c, k) / choose(n, k))).collect(),
        )
    } else {
        (Vec::new(), Vec::new())
    };
    let agreement = (label && !repeated.is_empty()).then(|| {
        let same = repeated.iter().filter(|r| r.iter().all(|f| f.score.extracted == r[0].score.extracted)).count();
        100.0 * same as f64 / repeated.len() as f64
    });
    EpochFigures { queries: means.len(), half_width: half_width(&means), per_epoch, pass_at, pass_all, agreement, spread }
}

fn by_query<'a>(results: &[&'a FinalResult]) -> BTreeMap<&'a QueryId, Vec<&'a FinalResult>> {
    let mut out: BTreeMap<&QueryId, Vec<&FinalResult>> = BTreeMap::new();
    for r in results {
        out.entry(&r.episode.query_id).or_default().push(r);
    }
    out
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f64 }
}

/// The sample standard deviation (n - 1).
fn std_dev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values.iter().copied());
    (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
}

/// t × the standard error of the mean of `values`, for a 95% interval.
fn half_width(values: &[f64]) -> Option<f64> {
    let n = values.len();
    (n >= 2).then(|| t95(n - 1) * std_dev(values) / (n as f64).sqrt())
}

/// Student's t for a two-sided 95% interval with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
        2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => TABLE[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// n choose k as a float (k is at most the epochs).
fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).map(|i| (n - i) as f64 / (i + 1) as f64).product()
}

#[cfg(test)]
mod tests {
    use some_jobs::testing::answered_episode;
    use some_schemas::{Attempt, PRIMARY_JUDGING, ScoreRow, Timestamp};

    use super::*;

    fn result(query: &str, epoch: i32, label: &str, score: f64) -> FinalResult {
        let mut episode = answered_episode("r", query, &format!("{query}-{epoch}"));
        episode.epoch = Epoch(epoch);
        episode.task = Task::Mid;
        let score = ScoreRow {
            query_id: query.into(),
            task: Task::Mid,
            attempt: Attempt::FIRST,
            epoch: Epoch(epoch),
            is_final: true,
            episode_id: episode.episode_id.clone(),
            judging: PRIMARY_JUDGING.into(),
            extracted: Some(label.into()),
            dimensions: None,
            score,
            completed: true,
            judge_model: None,
            judge_calls: 1,
            judge_seed: None,
            judge_temperature: None,
            judge_reply: None,
            judge_prompt_tokens: None,
            judge_completion_tokens: None,
            error: None,
            finished_at: Timestamp(0),
            run_id: "r".into(),
        };
        FinalResult { episode, score }
    }

    #[test]
    fn pass_at_k_pass_hat_k_agreement_and_the_interval_of_three_epochs() {
        // q1 right in all three epochs, q2 right in one, q3 never.
        let all = [
            result("q1", 1, "true", 100.0),
            result("q1", 2, "true", 100.0),
            result("q1", 3, "true", 100.0),
            result("q2", 1, "true", 0.0),
            result("q2", 2, "false", 100.0),
            result("q2", 3, "true", 0.0),
            result("q3", 1, "false", 0.0),
            result("q3", 2, "false", 0.0),
            result("q3", 3, "false", 0.0),
        ];
        let refs: Vec<&FinalResult> = all.iter().collect();
        let f = figures(Task::Mid, &refs, 3);
        let round = |v: Option<f64>| v.map(|v| (v * 1000.0).round() / 1000.0);
        assert_eq!(f.queries, 3);
        assert_eq!(f.per_epoch, [Some(100.0 / 3.0), Some(200.0 / 3.0), Some(100.0 / 3.0)]);
        // pass@1 = mean(1, 1/3, 0); pass@2 = mean(1, 1 - C(2,2)/C(3,2), 0); pass@3 = mean(1, 1, 0).
        assert_eq!(f.pass_at.iter().map(|v| round(*v)).collect::<Vec<_>>(), [Some(44.444), Some(55.556), Some(66.667)]);
        // pass^1 = pass@1; pass^2 = mean(1, 0, 0); pass^3 likewise.
        assert_eq!(f.pass_all.iter().map(|v| round(*v)).collect::<Vec<_>>(), [Some(44.444), Some(33.333), Some(33.333)]);
        assert_eq!(round(f.agreement), Some(66.667), "q1 and q3 read the same label every time, q2 does not");
        // Query means 100, 33.3, 0: sd 50.92, t(2) = 4.303.
        assert_eq!(round(f.half_width), Some(126.496));
        assert_eq!(round(reduced_mean(&refs)), Some(44.444));
        // q2's scores (0, 100, 0) have sd 57.735; q1 and q3 none.
        assert_eq!(round(f.spread), Some(19.245));
    }

    #[test]
    fn an_unfinished_epoch_counts_only_where_a_query_has_enough_samples() {
        let all = [result("q1", 1, "true", 100.0), result("q1", 2, "true", 100.0), result("q2", 1, "true", 0.0)];
        let refs: Vec<&FinalResult> = all.iter().collect();
        let f = figures(Task::Mid, &refs, 2);
        assert_eq!(f.pass_at, [Some(50.0), Some(100.0)], "pass@2 only over q1, the one query with two epochs");
        assert_eq!(reduced_mean(&refs), Some(50.0), "each query weighs the same, however many epochs finished");
        assert_eq!(f.half_width.map(|h| (h * 100.0).round() / 100.0), Some(635.3));
    }
}
