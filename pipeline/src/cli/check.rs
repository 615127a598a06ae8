//! `some check`: does the world hold what every query needs?

use std::process::ExitCode;

use clap::Args;
use some_workers::Lake;
use some_workers::world::check::check_coverage;

#[derive(Debug, Args)]
pub struct Check {
    /// Also require each SMQ reference answer to be stated in its posts
    /// (true of synthetic worlds).
    #[arg(long)]
    pub answers: bool,
    /// Missing items to list per task.
    #[arg(long, default_value_t = 5)]
    pub show: usize,
}

impl Check {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let coverage = check_coverage(lake, self.answers).await?;
        if coverage.tasks.is_empty() {
            anyhow::bail!("the lake has no queries: run `some ingest queries` first");
        }
        println!("{:<5} {:>8} {:>8} {:>8}", "task", "queries", "covered", "missing");
        for (task, c) in &coverage.tasks {
            println!("{:<5} {:>8} {:>8} {:>8}", task.code(), c.queries, c.covered, c.missing.len());
            for (id, what) in c.missing.iter().take(self.show) {
                println!("      {id}: {what}");
            }
        }
        Ok(if coverage.is_complete() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
    }
}
