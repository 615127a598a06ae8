//! `some ingest queries|release|status|resume|abort`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Subcommand;
use some_jobs::progress::NoProgress;
use some_jobs::queries;
use some_schemas::{QueueLocation, Task};
use some_workers::Lake;
use some_workers::executor::{Executor, Ingested, Look, until_settled};
use some_workers::world::{ingest, ingest_queries};

use super::flags::QueueFlags;
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
    /// `post_data`, `knowledge_data`, `emb_data`), one job per unit of files
    /// that fill one partition, all committed together. With a broker, the
    /// jobs go to compute workers (which must see DIR at the same path).
    Release {
        /// The release root (the `database` folder or its parent).
        dir: PathBuf,
        /// Replace the world the lake already holds.
        #[arg(long)]
        replace: bool,
        /// With a broker: wait until the ingestion commits or a unit fails.
        #[arg(long)]
        wait: bool,
        #[command(flatten)]
        flags: QueueFlags,
    },
    /// What an ingestion has staged, what failed and why, whether it committed.
    Status { id: String },
    /// Publish the units of an ingestion that are not done (after fixing a
    /// file that failed).
    Resume {
        id: String,
        /// The broker to publish to (amqp://...).
        #[arg(long, env = "SOME_QUEUE")]
        queue: QueueLocation,
    },
    /// Delete what an uncommitted ingestion staged.
    Abort { id: String },
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
                    if let Some(c) = counts.iter_mut().find(|(t, _)| *t == r.task) {
                        c.1 += 1;
                    }
                }
                let report = ingest_queries(lake, rows).await?;
                let per_task: Vec<String> = counts.iter().filter(|(_, n)| *n > 0).map(|(t, n)| format!("{t} {n}")).collect();
                println!("read {} queries ({})", report.added + report.skipped, per_task.join(", "));
                println!("added {}, already present {}, into {}", report.added, report.skipped, lake.location());
            }
            Ingest::Release { dir, replace, wait, flags } => {
                let executor = Executor::open(lake, &flags.queue, flags.worker(), Arc::new(Bars::new())).await?;
                match executor.ingest(&dir, replace).await? {
                    Ingested::Here(report) => println!(
                        "imported {} rows in {} files ({:.1} MB) from {} in {:.1} s",
                        report.added,
                        report.files,
                        report.bytes as f64 / 1e6,
                        dir.display(),
                        report.seconds
                    ),
                    Ingested::Published { id, units } => {
                        println!(
                            "ingestion {id}: {units} units published for `some worker --kind compute`; follow with `some ingest status {id}`"
                        );
                        if wait {
                            return wait_for(lake, &id).await;
                        }
                    }
                }
            }
            Ingest::Status { id } => {
                let status = ingest::status(lake, &id).await?;
                print!("{}", describe(&status));
            }
            Ingest::Resume { id, queue } => {
                let queue = some_workers::queue::open(&queue).await?;
                let jobs = ingest::resume(lake, queue.as_ref(), &id).await?;
                if jobs == 0 {
                    println!("ingestion {id} is committed: nothing to resume");
                } else {
                    println!("ingestion {id}: published {jobs} jobs");
                }
            }
            Ingest::Abort { id } => {
                ingest::abort(lake, &id).await?;
                println!("ingestion {id}: staged files and records deleted");
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn describe(status: &ingest::IngestionStatus) -> String {
    let m = &status.manifest;
    let mut out = format!("ingestion {} of {}{}\n", m.id, m.root.display(), if m.replace { " (replacing the world)" } else { "" });
    out.push_str(&format!("{} of {} units staged, {} failed\n", status.done, m.units.len(), status.failed.len()));
    for (unit, error) in &status.failed {
        out.push_str(&format!("failed: unit {unit}: {error}\n"));
    }
    match &status.committed {
        Some(c) => out.push_str(&format!("committed: {} rows in {} part files ({:.1} MB)\n", c.rows, c.parts, c.bytes as f64 / 1e6)),
        None if !status.failed.is_empty() => out.push_str(&format!(
            "nothing is visible: fix the failed files, then `some ingest resume {}` (or `some ingest abort {}`)\n",
            m.id, m.id
        )),
        None => out.push_str("nothing is visible until every unit is staged\n"),
    }
    out
}

/// Waits until the ingestion commits (success) or a unit fails.
async fn wait_for(lake: &Lake, id: &str) -> anyhow::Result<ExitCode> {
    let failures = until_settled(&NoProgress, None, None, || async move {
        let status = ingest::status(lake, id).await?;
        let failures = status.failed.iter().map(|(unit, error)| format!("unit {unit}: {error}")).collect();
        Ok(Look { done: status.done, settled: status.committed.is_some(), failures })
    })
    .await?;
    print!("{}", describe(&ingest::status(lake, id).await?));
    Ok(if failures.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
