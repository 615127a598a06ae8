//! `some compact`: merges a run's small result files.

use std::process::ExitCode;

use clap::Args;
use some_schemas::RunId;
use some_workers::Lake;
use some_workers::runs::{compact, load_run};

#[derive(Debug, Args)]
pub struct Compact {
    pub run_id: RunId,
}

impl Compact {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        load_run(lake, &self.run_id).await?;
        let done = compact(lake, &self.run_id).await?;
        println!("run {}: {} part files merged into {} ({} rows)", self.run_id, done.files_before, done.files_after, done.rows);
        Ok(ExitCode::SUCCESS)
    }
}
