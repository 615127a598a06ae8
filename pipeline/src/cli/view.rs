//! `some view`: a run's transcripts in a browser, served on loopback or
//! written as static pages.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use some_schemas::{PRIMARY_JUDGING, RunId};
use some_workers::Lake;
use some_workers::runs::view;

use super::flags::AsOfFlag;

#[derive(Debug, Args)]
pub struct View {
    pub run_id: RunId,
    /// Show the scores of this judging of the run.
    #[arg(long, default_value = PRIMARY_JUDGING)]
    pub judging: String,
    /// Serve on this port of 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8321)]
    pub port: u16,
    /// Write the pages as static files into this folder instead of serving.
    #[arg(long)]
    pub html: Option<PathBuf>,
    #[command(flatten)]
    pub version: AsOfFlag,
}

impl View {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let lake = &self.version.pin(lake).await?;
        let pages = view::build(lake, &self.run_id, &self.judging).await?;
        if let Some(dir) = &self.html {
            pages.write(dir).map_err(|e| anyhow::anyhow!("writing the pages into {}: {e}", dir.display()))?;
            println!("wrote {} pages; open {}", pages.len(), dir.join("index.html").display());
            return Ok(ExitCode::SUCCESS);
        }
        let shutdown = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        pages.serve(self.port, |addr| eprintln!("serving run {} on http://{addr}/ (Ctrl-C stops)", self.run_id), shutdown).await?;
        Ok(ExitCode::SUCCESS)
    }
}
