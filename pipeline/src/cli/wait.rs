//! The one way a command waits for work done by workers: poll the lake
//! every second, draw a bar, stop when the work is settled, and stop early
//! when a job of it was dead-lettered (it will not come back by waiting).

use std::collections::HashSet;
use std::future::Future;
use std::time::Duration;

use some_jobs::progress::Progress as _;
use some_schemas::{JobKind, JobMessage, ShardId};
use some_workers::queue::Queue;

use super::progress::Bars;

/// How often the lake is read while waiting.
const EVERY: Duration = Duration::from_secs(1);

/// What one look at the lake found.
pub struct Look {
    /// Units of work done so far (for the bar).
    pub done: usize,
    /// Nothing more will change by waiting.
    pub settled: bool,
    /// Why parts of the work failed for good, as the lake records it.
    pub failures: Vec<String>,
}

/// The jobs a wait covers, to find their dead letters.
pub struct Jobs<'a> {
    pub queue: &'a dyn Queue,
    pub kind: JobKind,
    pub shards: &'a [ShardId],
}

impl Jobs<'_> {
    async fn dead_letters(&self) -> anyhow::Result<Vec<String>> {
        let ours: HashSet<&ShardId> = self.shards.iter().collect();
        Ok(self
            .queue
            .dead_letters(self.kind)
            .await?
            .into_iter()
            .filter(|d| JobMessage::from_bytes(&d.body).is_ok_and(|m| m.job.shard_id().is_some_and(|s| ours.contains(s))))
            .map(|d| d.reason)
            .collect())
    }
}

/// Polls `look` until the work is settled, or failed (returned: the
/// reasons, from the lake or the dead letters). `bar` names the bar of
/// `total` units; `None` draws none (the caller draws its own).
pub async fn until_settled<F, Fut>(bar: Option<(&str, usize)>, jobs: Option<Jobs<'_>>, mut look: F) -> anyhow::Result<Vec<String>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = anyhow::Result<Look>>,
{
    let bars = Bars::new();
    if let Some((name, total)) = bar {
        bars.phase(name, Some(total as u64));
    }
    let mut shown = 0;
    loop {
        let now = look().await?;
        bars.advance(now.done.saturating_sub(shown) as u64);
        shown = shown.max(now.done);
        let mut failures = now.failures;
        if let Some(jobs) = &jobs {
            failures.extend(jobs.dead_letters().await?);
        }
        if now.settled || !failures.is_empty() {
            bars.finish();
            return Ok(failures);
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// Prints dead-lettered or failed work and what to do about it.
pub fn report_failures(failures: &[String], again: &str) -> std::process::ExitCode {
    if failures.is_empty() {
        return std::process::ExitCode::SUCCESS;
    }
    for reason in failures {
        eprintln!("failed: {reason}");
    }
    eprintln!("{again}");
    std::process::ExitCode::FAILURE
}
