//! `some cancel`: workers drop the run's remaining shards.

use std::process::ExitCode;

use clap::Args;
use some_schemas::{RunEvent, RunId};
use some_workers::Lake;
use some_workers::runs::{load_run, record_event};

#[derive(Debug, Args)]
pub struct Cancel {
    pub run_id: RunId,
}

impl Cancel {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let record = load_run(lake, &self.run_id).await?;
        if !record.cancelled {
            record_event(lake, &record.spec, RunEvent::Cancelled).await?;
        }
        println!("run {} cancelled: workers drop its remaining shards; `some rerun` will refuse it", self.run_id);
        Ok(ExitCode::SUCCESS)
    }
}
