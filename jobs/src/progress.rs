//! Progress reporting without a terminal dependency: jobs report counts, the
//! command line draws them.

/// Receives progress of a long job.
pub trait Progress: Send + Sync {
    /// A new phase with `total` units of work (`None` if unknown).
    fn phase(&self, name: &str, total: Option<u64>);
    fn advance(&self, n: u64);
    /// One unit finished, described in a line (an episode: its query,
    /// outcome and cost), for logs that show each one.
    fn item(&self, _line: &str) {
        self.advance(1);
    }
    fn finish(&self) {}
}

/// Discards progress.
pub struct NoProgress;

impl Progress for NoProgress {
    fn phase(&self, _: &str, _: Option<u64>) {}
    fn advance(&self, _: u64) {}
}
