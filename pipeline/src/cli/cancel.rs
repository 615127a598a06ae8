//! `some cancel` (and `some sim cancel`): a benchmark run's workers drop
//! its remaining shards; a simulation's coordinator stops before its next
//! turn and workers drop its shards.

use std::process::ExitCode;

use clap::Args;
use some_schemas::{RunEvent, RunId};
use some_workers::Lake;
use some_workers::{runs, sim};

#[derive(Debug, Args)]
pub struct Cancel {
    /// A benchmark run's or a simulation's id.
    pub run_id: RunId,
}

impl Cancel {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        match runs::load_run(lake, &self.run_id).await {
            Ok(record) => {
                if !record.cancelled {
                    runs::record_event(lake, &record.spec, RunEvent::Cancelled).await?;
                }
                println!("run {} cancelled: workers drop its remaining shards; `some rerun` will refuse it", self.run_id);
            }
            Err(not_a_run) => {
                // Not a benchmark run: a simulation, or the run's error.
                let Ok(record) = sim::load_sim(lake, &self.run_id).await else { return Err(not_a_run.into()) };
                if !record.cancelled {
                    sim::record_event(lake, &record.spec, RunEvent::Cancelled).await?;
                }
                println!("simulation {} cancelled: its coordinator stops before the next turn; workers drop its shards", self.run_id);
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
