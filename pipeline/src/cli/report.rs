//! `some report`: a run's results under one of its judgings.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use some_schemas::{PRIMARY_JUDGING, RunId};
use some_workers::Lake;
use some_workers::runs::report;

use super::flags::AsOfFlag;

#[derive(Debug, Args)]
pub struct Report {
    pub run_id: RunId,
    /// Read the scores of this judging of the run.
    #[arg(long, default_value = PRIMARY_JUDGING)]
    pub judging: String,
    /// Also write a self-contained HTML report with charts to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub version: AsOfFlag,
}

impl Report {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let lake = &self.version.pin(lake).await?;
        print_report(lake, &self.run_id, &self.judging, self.html.as_deref()).await?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Prints a run's report under one of its judgings (and writes it as HTML).
pub(super) async fn print_report(lake: &Lake, run_id: &RunId, judging: &str, html: Option<&Path>) -> anyhow::Result<()> {
    let report = report::build(lake, run_id, judging).await?;
    println!("{}", report::text(&report));
    if let Some(path) = html {
        std::fs::write(path, report::html(&report)).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
