//! `some sql`: DataFusion SQL over every table of the lake.

use std::process::ExitCode;

use clap::Args;
use some_workers::Lake;
use some_workers::lake::{OutputFormat, format_batches};

use super::flags::AsOfFlag;

#[derive(Debug, Args)]
pub struct Sql {
    /// The statement, e.g. "SELECT task, count(*) FROM queries GROUP BY task".
    pub query: String,
    /// table, csv or json (one object per line).
    #[arg(long, default_value = "table")]
    pub format: OutputFormat,
    #[command(flatten)]
    pub version: AsOfFlag,
}

impl Sql {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let lake = self.version.pin(lake).await?;
        let batches = lake.sql(&self.query).await?;
        print!("{}", format_batches(&batches, self.format)?);
        if self.format == OutputFormat::Table {
            println!();
        }
        Ok(ExitCode::SUCCESS)
    }
}
