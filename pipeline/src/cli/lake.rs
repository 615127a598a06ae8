//! `some lake history|export-delta|convert` and `some vacuum`: the lake's
//! versions, its tables' Delta logs, and the files no version needs.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use some_workers::{Lake, LakeLocation};

#[derive(Debug, Subcommand)]
pub enum LakeCmd {
    /// The lake's versions, newest last: what each transaction added and removed.
    History(History),
    /// Rewrite every table's Delta log (`<table>/_delta_log/`, what Spark,
    /// Trino, DuckDB, Polars and `deltalake` read) from the lake's log.
    /// Commits keep them current; this is for a damaged or deleted one.
    ExportDelta,
    /// Convert a lake of the folder layout of earlier builds in place (one
    /// commit adds every file its tables hold).
    Convert,
}

#[derive(Debug, Args)]
pub struct History {
    /// Show this many versions, the latest ones.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// One table's Delta versions instead: which lake version each one is.
    #[arg(long)]
    pub table: Option<String>,
}

impl LakeCmd {
    pub async fn run(self, location: &str) -> anyhow::Result<ExitCode> {
        let location: LakeLocation = location.parse()?;
        match self {
            LakeCmd::History(History { limit, table: Some(table) }) => {
                let lake = Lake::open(&location).await?;
                println!(
                    "{:>8}  {:>8}  {:<25}  {:>6}  {:>10}  {:>7}  transaction",
                    "table", "lake", "committed (UTC)", "files", "rows", "removed"
                );
                for v in lake.table_history(&table, limit).await? {
                    println!(
                        "{:>8}  {:>8}  {:<25}  {:>6}  {:>10}  {:>7}  {}",
                        v.table_version,
                        v.lake_version,
                        v.committed_at(),
                        v.added,
                        v.rows,
                        v.removed,
                        v.txn
                    );
                }
            }
            LakeCmd::ExportDelta => {
                let lake = Lake::open(&location).await?;
                let done = lake.export_delta().await?;
                println!(
                    "wrote the Delta logs of {} tables from the lake at {location}: {} versions, {} checkpoints",
                    done.tables, done.versions, done.checkpoints
                );
            }
            LakeCmd::History(cmd) => {
                let lake = Lake::open(&location).await?;
                let latest = lake.snapshot().await?.version();
                let from = (latest + 1).saturating_sub(cmd.limit as u64);
                println!("{:>8}  {:<25}  {:>6}  {:>10}  {:>7}  transaction", "version", "committed (UTC)", "files", "rows", "removed");
                for c in lake.history(from, cmd.limit).await? {
                    println!("{:>8}  {:<25}  {:>6}  {:>10}  {:>7}  {}", c.version, c.committed_at(), c.added, c.rows, c.removed, c.txn);
                }
            }
            LakeCmd::Convert => {
                let (lake, files) = Lake::convert(&location).await?;
                println!("converted the lake at {}: {files} files committed as version {}", location, lake.snapshot().await?.version());
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}

/// `some vacuum`.
#[derive(Debug, Args)]
pub struct Vacuum {
    /// Keep what versions of the last this many hours need (time travel
    /// further back than this may fail afterwards); at least 1.
    #[arg(long, default_value_t = 168.0)]
    pub retain_hours: f64,
    /// Count what would be deleted; delete nothing.
    #[arg(long)]
    pub dry_run: bool,
}

impl Vacuum {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        // Files a running job wrote and has not committed yet look like
        // orphans; an hour keeps any job within its deadline safe.
        if !(self.retain_hours >= 1.0 && self.retain_hours.is_finite()) {
            anyhow::bail!(
                "--retain-hours must be 1 or more (got {}): a shorter retention could delete the files of a job still running",
                self.retain_hours
            );
        }
        let done = lake.vacuum(Duration::from_secs_f64(self.retain_hours * 3600.0), self.dry_run).await?;
        let verb = if self.dry_run { "would delete" } else { "deleted" };
        println!(
            "{verb} {} removed files, {} files of uncommitted transactions, {} staged parts ({:.1} MB)",
            done.removed,
            done.orphans,
            done.staged,
            done.bytes as f64 / 1e6
        );
        Ok(ExitCode::SUCCESS)
    }
}
