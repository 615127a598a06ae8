//! `some rerun`: the queries of a run without a final result, as their
//! next attempt.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_schemas::{RunEvent, RunId, Task};
use some_workers::Lake;
use some_workers::runs::{self, RerunFilter};

use super::flags::{BudgetFlags, RunFlags};
use super::progress::Bars;
use super::run::execute;

#[derive(Debug, Args)]
pub struct Rerun {
    pub run_id: RunId,
    /// Only queries that ran and failed, not those never started.
    #[arg(long)]
    pub failed_only: bool,
    /// Only these tasks (comma-separated codes).
    #[arg(long = "task", value_delimiter = ',')]
    pub tasks: Vec<Task>,
    /// Reach the agent model here instead of the run's endpoints.
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
    /// A new budget for the whole run (what it spent already counts): lifts
    /// a stop at the old one.
    #[command(flatten)]
    pub budget: BudgetFlags,
    /// With a broker: wait for the run to finish, then print the report.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub flags: RunFlags,
}

impl Rerun {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let record = runs::load_run(lake, &self.run_id).await?;
        if record.cancelled {
            anyhow::bail!("run {} was cancelled", self.run_id);
        }
        let mut spec = record.spec;
        if !self.endpoints.is_empty() {
            if spec.judge_endpoints == spec.endpoints {
                spec.judge_endpoints = self.endpoints.clone();
            }
            spec.endpoints = self.endpoints.clone();
        }
        if self.budget.given() {
            spec.budget = self.budget.budget(&[&spec.model, &spec.judge_model])?;
        } else if let Some(reason) = &record.stopped {
            anyhow::bail!("run {} stopped ({reason}); give it a new budget with --max-run-tokens or --max-run-cost", self.run_id);
        }
        let rows = runs::read_run(lake, &spec.run_id).await?;
        let todo = runs::todo(&spec, &rows, &RerunFilter { failed_only: self.failed_only, tasks: self.tasks.clone() });
        if todo.is_empty() {
            println!("run {}: every query has a final result", spec.run_id);
            return Ok(ExitCode::SUCCESS);
        }
        let executor = self.flags.executor(lake, Arc::new(Bars::new())).await?;
        let what = if spec.epochs > 1 { "samples (query, epoch)" } else { "queries" };
        eprintln!("run {}: rerunning {} {what}", spec.run_id, todo.len());
        if !self.endpoints.is_empty() || self.budget.given() {
            // Workers read the endpoints and the budget from the run's spec.
            runs::record_event(lake, &spec, RunEvent::Submitted).await?;
        }
        execute(lake, &spec, &todo, &executor, None, self.wait).await
    }
}
