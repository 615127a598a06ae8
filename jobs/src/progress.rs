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

/// Passes phases on and drops counts: for a driver whose units are counted
/// by the workers sharing its progress (in-process), so nothing counts twice.
pub struct PhasesOnly<'a>(pub &'a dyn Progress);

impl Progress for PhasesOnly<'_> {
    fn phase(&self, name: &str, total: Option<u64>) {
        self.0.phase(name, total);
    }
    fn advance(&self, _: u64) {}
    fn item(&self, _: &str) {}
    fn finish(&self) {
        self.0.finish();
    }
}
