//! `some ingest queries|release`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use some_jobs::ingest::queries;
use some_schemas::Task;
use some_workers::Lake;
use some_workers::world::{ingest_queries, ingest_release};

use super::progress::Bars;

#[derive(Debug, Subcommand)]
pub enum Ingest {
    /// Import the SoMe query files (one folder per task, as the release names
    /// them). Without DIR, the copy built into this binary is imported.
    /// Importing the same queries again adds nothing.
    Queries {
        /// A `datasets` folder with e.g. realtime_event_detection/ground_truth.json.
        dir: Option<PathBuf>,
    },
    /// Import a SoMe release (`database/raw_data`, `topic_data`, `user_data`,
    /// `post_data`, `knowledge_data`, `emb_data`).
    Release {
        /// The release root (the `database` folder or its parent).
        dir: PathBuf,
        /// Replace the world the lake already holds.
        #[arg(long)]
        replace: bool,
    },
}

impl Ingest {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        match self {
            Ingest::Queries { dir } => {
                let rows = match &dir {
                    Some(dir) => queries::read_dataset_dir(dir)?,
                    None => queries::read_bundled()?,
                };
                let mut counts: Vec<(Task, usize)> = Task::ALL.iter().map(|t| (*t, 0)).collect();
                for r in &rows {
                    if let Some(c) = counts.iter_mut().find(|(t, _)| t.code() == r.task) {
                        c.1 += 1;
                    }
                }
                let report = ingest_queries(lake, rows).await?;
                let per_task: Vec<String> = counts.iter().filter(|(_, n)| *n > 0).map(|(t, n)| format!("{t} {n}")).collect();
                println!("read {} queries ({})", report.added + report.skipped, per_task.join(", "));
                println!("added {}, already present {}, into {}", report.added, report.skipped, lake.location());
            }
            Ingest::Release { dir, replace } => {
                let report = ingest_release(lake, &dir, replace, &Bars::new()).await?;
                println!(
                    "imported {} rows in {} files ({:.1} MB) from {} in {:.1} s",
                    report.added,
                    report.files,
                    report.bytes as f64 / 1e6,
                    dir.display(),
                    report.seconds
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
