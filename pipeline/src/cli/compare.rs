//! `some compare RUN BASELINE`: per-task deltas against a baseline run.

use std::process::ExitCode;

use clap::Args;
use some_schemas::{PRIMARY_JUDGING, RunId};
use some_workers::Lake;
use some_workers::runs::compare::{compare, regressions};
use some_workers::runs::{load_run, read_run};

use super::flags::AsOfFlag;

#[derive(Debug, Args)]
pub struct Compare {
    pub run_id: RunId,
    pub baseline: RunId,
    /// Read the run's scores under this judging.
    #[arg(long, default_value = PRIMARY_JUDGING)]
    pub judging: String,
    /// Read the baseline's scores under this judging (the same run under
    /// two judgings compares the judges).
    #[arg(long, default_value = PRIMARY_JUDGING)]
    pub baseline_judging: String,
    /// Fail when a task's score or TCR drops by more than this many points.
    #[arg(long, default_value_t = 5.0)]
    pub threshold: f64,
    /// Bootstrap resamples for the 95% intervals.
    #[arg(long, default_value_t = 2000)]
    pub resamples: usize,
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[command(flatten)]
    pub version: AsOfFlag,
}

impl Compare {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let lake = &self.version.pin(lake).await?;
        // Both must be known runs and judgings; an unknown one is an error,
        // not an empty diff.
        load_run(lake, &self.run_id).await?.judging(&self.judging)?;
        load_run(lake, &self.baseline).await?.judging(&self.baseline_judging)?;
        let run = read_run(lake, &self.run_id).await?.finals(&self.judging);
        let baseline = read_run(lake, &self.baseline).await?.finals(&self.baseline_judging);
        let deltas = compare(&run, &baseline, self.resamples, self.seed);
        if deltas.is_empty() {
            anyhow::bail!("runs {} and {} have no finished query in common", self.run_id, self.baseline);
        }
        println!(
            "{} (judging {}) vs baseline {} (judging {}), paired over common queries; 95% bootstrap intervals",
            self.run_id, self.judging, self.baseline, self.baseline_judging
        );
        println!(
            "{:<5} {:>6} {:>8} {:>8} {:>8} {:>18} {:>8} {:>8} {:>8} {:>18}",
            "task", "paired", "score_b", "score", "delta", "interval", "tcr_b", "tcr", "delta", "interval"
        );
        for d in &deltas {
            println!(
                "{:<5} {:>6} {:>8.2} {:>8.2} {:>+8.2} {:>18} {:>8.2} {:>8.2} {:>+8.2} {:>18}",
                d.task.code(),
                d.paired,
                d.score.baseline,
                d.score.run,
                d.score.delta,
                format!("[{:+.2}, {:+.2}]", d.score.low, d.score.high),
                d.tcr.baseline,
                d.tcr.run,
                d.tcr.delta,
                format!("[{:+.2}, {:+.2}]", d.tcr.low, d.tcr.high)
            );
        }
        let dropped = regressions(&deltas, self.threshold);
        if dropped.is_empty() {
            println!("no task dropped by more than {} points", self.threshold);
            return Ok(ExitCode::SUCCESS);
        }
        let codes: Vec<&str> = dropped.iter().map(|t| t.code()).collect();
        eprintln!("regression: {} dropped by more than {} points", codes.join(", "), self.threshold);
        Ok(ExitCode::FAILURE)
    }
}
