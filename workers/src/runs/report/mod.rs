//! `some report`: a run's results in the layout of the paper's Tables 3 and
//! 4, with the random and majority-class baselines, the no-LLM solvers
//! (cheats and the synthetic world's oracle reader), the published rows for
//! reference, and the paper's tool-use analyses (one-attempt success and
//! hallucination rates).

mod capacity;
pub mod epochs;
mod paper;
mod render;

use std::collections::{BTreeMap, HashMap, HashSet};

use some_jobs::agent::Transcript;
use some_jobs::agent::analysis::{ChainFailure, first_chain_failure, tool_calling_hallucination};
use some_jobs::scorers::baselines::{Baseline, baselines};
use some_jobs::solvers::oracle::Oracle;
use some_jobs::solvers::{Solver, SolverScore, cheats, evaluate};
use some_schemas::{Epoch, QueryId, QueryRow, RunId, Task};

pub use paper::{PAPER_SCORES, PAPER_TCR, PaperRow};
pub use render::{html, text};

use super::record::load_run;
use super::results::{FinalResult, RunRows, read_run};
use super::spec::{JudgingSpec, RunSpec};
use crate::error::Result;
use crate::lake::Lake;
use crate::world::read_queries;

/// One task's line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskLine {
    pub task: Task,
    /// Queries planned (each runs once per epoch).
    pub planned: usize,
    /// Samples (query, epoch) with a final result.
    pub done: usize,
    /// Mean score of the final results, 0-100 (over epochs: the mean over
    /// queries of each query's mean).
    pub score: Option<f64>,
    /// Task completion rate, %.
    pub tcr: Option<f64>,
    /// Final results whose episode made no tool call: answers from the
    /// prompt alone, guessed whatever they scored.
    pub tool_free: usize,
    /// Their mean score, 0-100.
    pub tool_free_score: Option<f64>,
    /// Baselines over the run's queries of the task.
    pub baseline: Option<Baseline>,
    /// The majority-class baseline over every labelled query of the task in
    /// the lake: what a small sample's majority baseline stands for.
    pub lake_majority: Option<f64>,
    /// What repeated samples say, when the run has more than one epoch.
    pub epochs: Option<epochs::EpochFigures>,
}

/// Below this many queries in a task, a run is a smoke test: its figures
/// show that the pipeline runs, not how good the model is.
pub const SMOKE_TEST_QUERIES: usize = 300;

/// The paper's tool-use analyses over the run's final episodes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolUse {
    pub episodes: usize,
    /// Tool chains planned in one attempt.
    pub one_attempt: usize,
    pub failures: BTreeMap<ChainFailure, usize>,
    /// Episodes that never got a tool call read.
    pub calling_hallucinations: usize,
}

/// Everything `some report` prints.
#[derive(Debug, Clone)]
pub struct Report {
    pub spec: RunSpec,
    /// The judging whose scores the report reads.
    pub judging: JudgingSpec,
    pub cancelled: bool,
    /// Why the run stopped at its budget.
    pub stopped: Option<String>,
    pub tasks: Vec<TaskLine>,
    pub tool_use: ToolUse,
    /// Episodes by status, final results only.
    pub statuses: BTreeMap<String, usize>,
    /// Attempts that are not final (model errors awaiting a rerun).
    pub unfinished_attempts: usize,
    /// Final episodes with no score under the judging yet.
    pub unscored: usize,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub judge_calls: i64,
    /// No-LLM solvers over the lake's labelled queries whose data the lake
    /// holds (a query whose user or stream is absent reads at chance and
    /// says nothing about the world).
    pub solvers: Vec<SolverScore>,
    /// Labelled queries of the lake left out of the solver rows because the
    /// lake does not hold their data.
    pub solvers_ungrounded: usize,
    /// How many calls at once each endpoint took, and the waiting for room.
    pub capacity: capacity::Capacity,
}

impl Report {
    /// What the figures cannot say, printed before them.
    pub fn caveats(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if let Some(fewest) = self.tasks.iter().map(|t| t.planned).min().filter(|n| *n < SMOKE_TEST_QUERIES) {
            notes.push(format!(
                "smoke test: {fewest} queries in the smallest task (fewer than {SMOKE_TEST_QUERIES}); these figures show that the pipeline runs, \
                 not how good the model is, and a sample's majority baseline is compared with the one over all labelled queries"
            ));
        }
        if self.judging.judge_model == self.spec.model {
            notes.push(format!("the judge is the agent's own model ({}): its scores and TCR grade its own answers", self.spec.model));
        }
        notes
    }

    /// The mean over the tasks that have results (the paper's Avg.).
    pub fn average(&self, value: impl Fn(&TaskLine) -> Option<f64>) -> Option<f64> {
        let values: Vec<f64> = self.tasks.iter().filter_map(value).collect();
        (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
    }
}

/// The report of a run under one of its judgings.
pub async fn build(lake: &Lake, run_id: &RunId, judging: &str) -> Result<Report> {
    let record = load_run(lake, run_id).await?;
    let judging = record.judging(judging)?.clone();
    let rows = read_run(lake, run_id).await?;
    let queries = read_queries(lake).await?;
    let labels: HashMap<QueryId, Option<String>> = queries.iter().map(|q| (q.query_id.clone(), q.label.clone())).collect();
    let mut report = summarize(record.spec, judging, record.cancelled, &rows, &labels);
    report.stopped = record.stopped;
    let (grounded, ungrounded) = grounded_labelled(lake, queries).await?;
    report.solvers = solver_scores(lake, &grounded).await?;
    report.solvers_ungrounded = ungrounded;
    Ok(report)
}

/// The lake's labelled queries whose data the lake holds (by the rule
/// `some check` applies), and how many labelled ones it does not.
async fn grounded_labelled(lake: &Lake, queries: Vec<QueryRow>) -> Result<(Vec<QueryRow>, usize)> {
    let coverage = crate::world::check::check_coverage(lake, false).await?;
    let missing: HashSet<&QueryId> = coverage.tasks.values().flat_map(|t| t.missing.iter().map(|(id, _)| id)).collect();
    let (grounded, ungrounded): (Vec<QueryRow>, Vec<QueryRow>) =
        queries.into_iter().filter(|q| q.label.is_some()).partition(|q| !missing.contains(&q.query_id));
    Ok((grounded, ungrounded.len()))
}

/// The no-LLM solvers over `queries` (not only the run's): the cheats, and
/// the oracle reader of the synthetic world.
pub async fn solver_scores(lake: &Lake, queries: &[QueryRow]) -> Result<Vec<SolverScore>> {
    let sources = crate::world::solver_sources(lake).await?;
    let mut solvers: Vec<&dyn Solver> = cheats::all().to_vec();
    solvers.push(&Oracle);
    Ok(evaluate(&solvers, queries, &sources))
}

/// The report of a run from its rows and the queries' labels.
pub fn summarize(
    spec: RunSpec,
    judging: JudgingSpec,
    cancelled: bool,
    rows: &RunRows,
    labels: &HashMap<QueryId, Option<String>>,
) -> Report {
    let finals = rows.finals(&judging.judging);
    let unscored = rows.final_episodes().len() - finals.len();
    let mut tasks = Vec::new();
    for task in Task::ALL {
        let planned: Vec<&QueryId> = spec.queries.iter().filter(|q| q.task() == Some(task)).collect();
        if planned.is_empty() {
            continue;
        }
        let done: Vec<&FinalResult> =
            planned.iter().flat_map(|q| Epoch::all(spec.epochs).filter_map(|e| finals.get(&((*q).clone(), e)))).collect();
        let mean = |f: &dyn Fn(&FinalResult) -> f64| (!done.is_empty()).then(|| done.iter().map(|r| f(r)).sum::<f64>() / done.len() as f64);
        let tool_free: Vec<f64> = done.iter().filter(|r| r.episode.tool_calls == 0).map(|r| r.score.score).collect();
        let task_labels: Vec<&str> = planned.iter().filter_map(|q| labels.get(*q).and_then(|l| l.as_deref())).collect();
        let lake_labels = labels.iter().filter(|(q, _)| q.task() == Some(task)).filter_map(|(_, l)| l.as_deref());
        tasks.push(TaskLine {
            task,
            planned: planned.len(),
            done: done.len(),
            score: epochs::reduced_mean(&done),
            tcr: mean(&|r| if r.score.completed { 100.0 } else { 0.0 }),
            tool_free: tool_free.len(),
            tool_free_score: (!tool_free.is_empty()).then(|| tool_free.iter().sum::<f64>() / tool_free.len() as f64),
            baseline: baselines(task, task_labels),
            lake_majority: baselines(task, lake_labels).map(|b| b.majority),
            epochs: (spec.epochs > 1).then(|| epochs::figures(task, &done, spec.epochs)),
        });
    }
    let mut tool_use = ToolUse::default();
    let mut capacity = capacity::Capacity::default();
    let mut statuses: BTreeMap<String, usize> = BTreeMap::new();
    let (mut prompt_tokens, mut completion_tokens, mut judge_calls) = (0, 0, 0);
    for result in finals.values() {
        let e = &result.episode;
        *statuses.entry(e.status.clone()).or_default() += 1;
        prompt_tokens += e.prompt_tokens;
        completion_tokens += e.completion_tokens;
        judge_calls += i64::from(result.score.judge_calls);
        let Ok(transcript) = serde_json::from_str::<Transcript>(&e.transcript) else { continue };
        capacity.add(&transcript);
        tool_use.episodes += 1;
        match first_chain_failure(e.task, &transcript) {
            None => tool_use.one_attempt += 1,
            Some(cause) => *tool_use.failures.entry(cause).or_default() += 1,
        }
        tool_use.calling_hallucinations += usize::from(tool_calling_hallucination(&transcript));
    }
    let unfinished_attempts = rows.episodes.iter().filter(|e| !e.is_final).count();
    Report {
        spec,
        judging,
        cancelled,
        stopped: None,
        tasks,
        tool_use,
        statuses,
        unfinished_attempts,
        unscored,
        prompt_tokens,
        completion_tokens,
        judge_calls,
        solvers: Vec::new(),
        solvers_ungrounded: 0,
        capacity,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::lake::LakeLocation;
    use some_jobs::progress::NoProgress;
    use some_jobs::queries::read_bundled;
    use some_jobs::synth::{Scale, SynthConfig, World};

    use super::*;
    use crate::world::{ingest_queries, write_world};

    /// A world planned for a few queries answers only those: the solver
    /// rows leave the rest out rather than score them at chance.
    #[tokio::test]
    async fn solver_rows_leave_out_the_queries_whose_data_the_lake_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&LakeLocation::Local(dir.path().to_path_buf())).await.unwrap();
        let all = read_bundled().unwrap();
        let chosen: Vec<QueryRow> = all.iter().filter(|q| q.task == Task::Uea).take(5).cloned().collect();
        ingest_queries(&lake, all).await.unwrap();
        let world = World::plan(&chosen, SynthConfig { scale: Scale::Small, seed: 0 }).unwrap();
        write_world(&lake, Arc::new(world), None, false, &NoProgress).await.unwrap();

        let (grounded, ungrounded) = grounded_labelled(&lake, read_queries(&lake).await.unwrap()).await.unwrap();
        let uea: HashSet<&QueryId> = grounded.iter().filter(|q| q.task == Task::Uea).map(|q| &q.query_id).collect();
        assert_eq!(uea, chosen.iter().map(|q| &q.query_id).collect(), "only the planned UEA queries are grounded");
        assert!(grounded.iter().all(|q| q.label.is_some()));
        let labelled = read_bundled().unwrap().iter().filter(|q| q.label.is_some()).count();
        assert_eq!(grounded.len() + ungrounded, labelled);
        assert!(ungrounded > 1000, "{ungrounded} left out");
    }
}
