//! A run's lifecycle as the `runs` table records it: submitted (again when a
//! rerun moves its endpoints or its budget), cancelled, stopped at its
//! budget, and each named judging.
//!
//! Nothing here keeps state in memory between commands: `some report`,
//! `some rerun` and the workers all read the same rows.

use datafusion::prelude::{col, lit};
use some_schemas::{RunEvent, RunId, RunRow, Timestamp, runs};

use super::spec::{JudgingSpec, RunSpec, check_judging_name};
use crate::error::{Error, Result};
use crate::lake::Lake;

/// A run as recorded: its spec, whether it was cancelled since, and every
/// judging of it (the primary first, each as last recorded). Read once.
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub spec: RunSpec,
    pub cancelled: bool,
    /// Why the run stopped at its budget, if it did under its current one.
    pub stopped: Option<String>,
    pub judgings: Vec<JudgingSpec>,
}

/// What a `stopped` event records.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stop {
    pub reason: String,
    /// The budget that was reached: a later submission with another budget
    /// is not stopped by it.
    pub budget: super::budget::RunBudget,
}

impl RunRecord {
    /// One judging of the run, by name.
    pub fn judging(&self, name: &str) -> Result<&JudgingSpec> {
        self.judgings.iter().find(|j| j.judging == name).ok_or_else(|| {
            let names: Vec<&str> = self.judgings.iter().map(|j| j.judging.as_str()).collect();
            Error::Unknown(format!("run {} has no judging {name:?}; its judgings: {}", self.spec.run_id, names.join(", ")))
        })
    }
}

/// Appends a lifecycle event (`submitted`, `cancelled`) for a run.
pub async fn record_event(lake: &Lake, spec: &RunSpec, event: RunEvent) -> Result<()> {
    let spec_json = serde_json::to_string(spec).map_err(|e| Error::Invalid(format!("run spec: {e}")))?;
    append(lake, RunRow { run_id: spec.run_id.clone(), event, at: Timestamp::now(), spec: spec_json }).await
}

/// Records that a run reached its budget (workers drop its shards from now).
pub async fn record_stop(lake: &Lake, spec: &RunSpec, reason: String) -> Result<()> {
    let stop = Stop { reason, budget: spec.budget.clone() };
    let json = serde_json::to_string(&stop).map_err(|e| Error::Invalid(format!("stop: {e}")))?;
    append(lake, RunRow { run_id: spec.run_id.clone(), event: RunEvent::Stopped, at: Timestamp::now(), spec: json }).await
}

/// Records a new judging of a run (or new endpoints for one).
pub async fn record_judging(lake: &Lake, spec: &JudgingSpec) -> Result<()> {
    check_judging_name(&spec.judging)?;
    let json = serde_json::to_string(spec).map_err(|e| Error::Invalid(format!("judging spec: {e}")))?;
    append(lake, RunRow { run_id: spec.run_id.clone(), event: RunEvent::Judging, at: Timestamp::now(), spec: json }).await
}

async fn append(lake: &Lake, row: RunRow) -> Result<()> {
    let mut txn = lake.txn();
    txn.write_rows(vec![row]).await?;
    txn.commit().await?;
    Ok(())
}

/// The error for a run the lake does not hold, listing those it does.
pub(crate) fn unknown_run<'a>(what: &str, run_id: &RunId, known: impl Iterator<Item = &'a RunId>) -> Error {
    let mut ids: Vec<&str> = known.map(RunId::as_str).collect();
    ids.sort_unstable();
    ids.dedup();
    let list = if ids.is_empty() { "none yet".to_string() } else { ids.join(", ") };
    Error::Unknown(format!("unknown {what} {run_id:?}; {what}s in this lake: {list}"))
}

/// Reads a run's record; an unknown run is an error listing the known ones.
pub async fn load_run(lake: &Lake, run_id: &RunId) -> Result<RunRecord> {
    let ctx = lake.session().await?;
    let events: Vec<RunRow> = lake.read(&ctx, Some(col(runs::run_id).eq(lit(run_id.as_str())))).await?;
    let Some(submitted) = events.iter().filter(|e| e.event == RunEvent::Submitted).max_by_key(|e| e.at) else {
        let known: Vec<RunRow> = lake.read(&ctx, Some(col(runs::event).eq(lit(RunEvent::Submitted.as_str())))).await?;
        return Err(unknown_run("run", run_id, known.iter().map(|r| &r.run_id)));
    };
    let spec: RunSpec =
        serde_json::from_str(&submitted.spec).map_err(|e| Error::Invalid(format!("run {run_id}: its stored spec does not read: {e}")))?;
    let cancelled = events.iter().any(|e| e.event == RunEvent::Cancelled && e.at >= submitted.at);
    // Stops under the current budget; a stop is recorded only once it is
    // reached, and spending only grows, so an older one still holds.
    let stopped = events
        .iter()
        .filter(|e| e.event == RunEvent::Stopped)
        .filter_map(|e| serde_json::from_str::<Stop>(&e.spec).ok())
        .find(|s| s.budget == spec.budget)
        .map(|s| s.reason);
    let mut judging_events: Vec<&RunRow> = events.iter().filter(|e| e.event == RunEvent::Judging).collect();
    judging_events.sort_by_key(|e| e.at);
    let mut judgings = vec![spec.primary_judging()];
    for event in judging_events {
        let judging: JudgingSpec = serde_json::from_str(&event.spec)
            .map_err(|e| Error::Invalid(format!("run {run_id}: a stored judging spec does not read: {e}")))?;
        match judgings.iter_mut().skip(1).find(|j| j.judging == judging.judging) {
            Some(slot) => *slot = judging,
            None => judgings.push(judging),
        }
    }
    Ok(RunRecord { spec, cancelled, stopped, judgings })
}
