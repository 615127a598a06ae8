//! `some judge`: scores a run's final episodes through the judge queue,
//! under its primary judging (what a failing judge left out) or under a
//! named judging with another judge.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use some_jobs::progress::Progress as _;
use some_schemas::{Job, JobKind, JobMessage, PRIMARY_JUDGING};
use some_workers::Lake;
use some_workers::coordinator;
use some_workers::judging::{JudgingSpec, judgings, publish_judging, record_judging, unscored};
use some_workers::runs::{load_run, read_run, record_event};

use super::progress::Bars;
use super::run::{ExecFlags, JudgeFlags, print_report};

#[derive(Debug, Args)]
pub struct JudgeCmd {
    pub run_id: String,
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
        let (mut run, cancelled) = load_run(lake, &self.run_id).await?;
        if cancelled {
            anyhow::bail!("run {} was cancelled", self.run_id);
        }
        let existing = judgings(lake, &run).await?.into_iter().find(|j| j.judging == self.judging);
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
                    settings: self.judge.settings(),
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
                record_event(lake, &run, some_schemas::RunEvent::Submitted).await?;
            } else {
                record_judging(lake, &spec).await?;
            }
        }
        some_workers::llm::check_chat_model(&spec.judge_model, &spec.judge_endpoints)?;
        Ok(spec)
    }

    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let spec = self.judging(lake).await?;
        let (run, _) = load_run(lake, &self.run_id).await?;
        let todo = unscored(&run, &read_run(lake, &run.run_id).await?, &spec.judging);
        if todo.is_empty() {
            println!("run {}: every final episode has a score under judging {}", run.run_id, spec.judging);
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("run {}: judging {} episodes under {} with {}", run.run_id, todo.len(), spec.judging, spec.judge_model);
        if self.flags.jobs.queue == "memory" {
            let dead =
                coordinator::judge_in_process(lake, &spec, &todo, self.shard_size, self.flags.worker(), Arc::new(Bars::new())).await?;
            print_report(lake, &run.run_id, &spec.judging, None).await?;
            return report_dead(&dead.iter().map(|d| d.reason.clone()).collect::<Vec<_>>());
        }
        let queue = some_workers::queue::open(&self.flags.jobs.queue).await?;
        let shards = publish_judging(queue.as_ref(), &spec, &todo, self.shard_size).await?;
        eprintln!("published {} judge jobs for `some worker --kind llm`", shards.len());
        if !self.wait {
            return Ok(ExitCode::SUCCESS);
        }
        let bars = Bars::new();
        bars.phase("judged", Some(todo.len() as u64));
        let mut left = todo.len();
        while left > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let dead: Vec<String> = queue
                .dead_letters(JobKind::Judge)
                .await?
                .into_iter()
                .filter(|d| {
                    matches!(JobMessage::from_bytes(&d.body), Ok(JobMessage { job: Job::Judge { shard_id, .. }, .. })
                        if shards.contains(&shard_id))
                })
                .map(|d| d.reason)
                .collect();
            if !dead.is_empty() {
                bars.finish();
                return report_dead(&dead);
            }
            let now = unscored(&run, &read_run(lake, &run.run_id).await?, &spec.judging).len();
            bars.advance(left.saturating_sub(now) as u64);
            left = now;
        }
        bars.finish();
        print_report(lake, &run.run_id, &spec.judging, None).await?;
        Ok(ExitCode::SUCCESS)
    }
}

fn report_dead(reasons: &[String]) -> anyhow::Result<ExitCode> {
    if reasons.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for reason in reasons {
        eprintln!("dead-lettered: {reason}");
    }
    eprintln!("`some judge` again scores what is missing");
    Ok(ExitCode::FAILURE)
}
