//! `some judge`: scores a run's final episodes through the judge queue,
//! under its primary judging (what a failing judge left out) or under a
//! named judging with another judge.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_schemas::{JobKind, PRIMARY_JUDGING, RunEvent, RunId};
use some_workers::Lake;
use some_workers::coordinator;
use some_workers::executor::{Executor, Look, Outcome, Work};
use some_workers::queue::Queue;
use some_workers::runs::{JudgingSpec, load_run, read_run, record_event, record_judging, unscored};

use super::failures::report_failures;
use super::flags::{ExecFlags, JudgeFlags};
use super::progress::Bars;
use super::report::print_report;

#[derive(Debug, Args)]
pub struct JudgeCmd {
    pub run_id: RunId,
    /// `primary` (the run's own judge) or the name of another judging.
    #[arg(long, default_value = PRIMARY_JUDGING)]
    pub judging: String,
    /// A new judging needs --judge-model; for an existing one,
    /// --judge-endpoint says where to reach its judge from now on.
    #[command(flatten)]
    pub judge: JudgeFlags,
    /// Queries per judge job.
    #[arg(long, default_value_t = 50)]
    pub shard_size: usize,
    /// With a broker: wait until every final episode is scored, then print
    /// the report under this judging.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl JudgeCmd {
    /// The judging this command line asks for: as recorded, with new
    /// endpoints if given, or a new one.
    async fn judging(&self, lake: &Lake) -> anyhow::Result<JudgingSpec> {
        let record = load_run(lake, &self.run_id).await?;
        if record.cancelled {
            anyhow::bail!("run {} was cancelled", self.run_id);
        }
        let existing = record.judging(&self.judging).ok().cloned();
        let mut run = record.spec;
        if let (Some(j), Some(model)) = (&existing, &self.judge.judge_model)
            && *model != j.judge_model
        {
            anyhow::bail!(
                "judging {} of run {} uses judge {}; give another --judging name for {model}",
                j.judging,
                self.run_id,
                j.judge_model
            );
        }
        let mut spec = match existing {
            Some(j) => j,
            None => {
                if self.judge.judge_model.is_none() {
                    anyhow::bail!("run {} has no judging {:?}: a new judging needs --judge-model", self.run_id, self.judging);
                }
                let (judge_model, judge_endpoints) = self.judge.judge(&run.judge_model, &run.judge_endpoints);
                let spec = JudgingSpec {
                    run_id: run.run_id.clone(),
                    judging: self.judging.clone(),
                    judge_model,
                    judge_endpoints,
                    settings: self.judge.settings()?,
                };
                some_workers::llm::check_chat_model(&spec.judge_model, &spec.judge_endpoints)?;
                record_judging(lake, &spec).await?;
                return Ok(spec);
            }
        };
        if !self.judge.judge_endpoints.is_empty() && self.judge.judge_endpoints != spec.judge_endpoints {
            // Workers read the endpoints from the lake.
            spec.judge_endpoints = self.judge.judge_endpoints.clone();
            if spec.judging == PRIMARY_JUDGING {
                run.judge_endpoints = spec.judge_endpoints.clone();
                record_event(lake, &run, RunEvent::Submitted).await?;
            } else {
                record_judging(lake, &spec).await?;
            }
        }
        some_workers::llm::check_chat_model(&spec.judge_model, &spec.judge_endpoints)?;
        Ok(spec)
    }

    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let spec = self.judging(lake).await?;
        let run = load_run(lake, &self.run_id).await?.spec;
        let todo = unscored(&run, &read_run(lake, &run.run_id).await?, &spec.judging);
        if todo.is_empty() {
            println!("run {}: every final episode has a score under judging {}", run.run_id, spec.judging);
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("run {}: judging {} episodes under {} with {}", run.run_id, todo.len(), spec.judging, spec.judge_model);
        let again = "`some judge` again scores what is missing";
        let executor = Executor::open(lake, &self.flags.jobs.queue, self.flags.worker(), Arc::new(Bars::new())).await?;
        let shard_size = self.shard_size;
        let remote = executor.broker().is_some();
        let publish = |queue: Arc<dyn Queue>| {
            let (spec, todo) = (&spec, &todo);
            async move {
                let shards = coordinator::publish_judging(queue.as_ref(), spec, todo, shard_size).await?;
                if remote {
                    eprintln!("published {} judge jobs for `some worker --kind llm`", shards.len());
                }
                Ok(shards)
            }
        };
        let (run, spec, total) = (&run, &spec, todo.len());
        let look = || async move {
            let left = unscored(run, &read_run(lake, &run.run_id).await?, &spec.judging).len();
            Ok(Look { done: total.saturating_sub(left), settled: left == 0, failures: Vec::new() })
        };
        let work = Work { kind: JobKind::Judge, phase: "judged", units: total };
        let failures = match executor.submit(work, publish, self.wait.then_some(look)).await? {
            Outcome::Published(_) => return Ok(ExitCode::SUCCESS),
            Outcome::Settled(failures) => failures,
        };
        if failures.is_empty() || executor.broker().is_none() {
            print_report(lake, &run.run_id, &spec.judging, None).await?;
        }
        Ok(report_failures(&failures, again))
    }
}
