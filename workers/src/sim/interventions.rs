//! Interventions on the lake: a file checked whole and stored as requests
//! (`sim_interventions` rows without an applied turn), taken by the
//! coordinator at the first turn at or after each one's turn, applied
//! before the turn's feeds and committed with the turn (the same rows with
//! the turn and what came of them, and the posts they made). A replay
//! applies the committed rows again, so a run with interventions replays to
//! the same digest. The events themselves are `some_sim`'s
//! ([`some_sim::intervention`]).

use std::collections::{BTreeMap, BTreeSet};

use datafusion::prelude::{col, lit};
use some_schemas::Timestamp;
use some_schemas::sim::{ActionStatus, SimInterventionRow, SimPostRow, sim_interventions};
use some_sim::intervention::{self, BadEvent, Event, Known, Timed};
use some_sim::{Platform, Turn};

use super::spec::SimSpec;
use crate::error::{Error, Result};
use crate::lake::Lake;

/// Reads and checks a file's events against the run as it stands: its
/// first uncommitted turn and platform (`None` for a run not started),
/// with `at` for events without a turn.
pub fn check(
    text: &str,
    at: Option<Turn>,
    spec: &SimSpec,
    now: Option<(Turn, &Platform)>,
) -> std::result::Result<Vec<(Turn, Timed)>, BadEvent> {
    let empty = Platform::new();
    let (next_turn, platform) = now.unwrap_or((Turn(0), &empty));
    let known = Known { agents: spec.preset.agents(), next_turn, end: Turn(spec.preset.turns()), platform };
    intervention::check(intervention::parse(text)?, at, &known)
}

/// Stores checked events as requests in one commit; returns the batch name
/// (dated, with the file's name).
pub async fn submit(lake: &Lake, spec: &SimSpec, events: &[(Turn, Timed)], source: &str) -> Result<String> {
    let submitted_at = Timestamp::now();
    let batch = format!("{}-{}", some_schemas::RunId::new_dated(), source.rsplit('/').next().unwrap_or(source));
    let rows: Vec<SimInterventionRow> = events
        .iter()
        .map(|(turn, e)| SimInterventionRow {
            batch: batch.clone(),
            line: i64::from(e.line),
            requested_turn: i64::from(turn.0),
            event: serde_json::to_string(&e.event).expect("events serialize"),
            submitted_at,
            applied_turn: None,
            status: None,
            error: None,
            post_id: None,
            account_id: None,
            run_id: spec.run_id.to_string(),
        })
        .collect();
    let mut txn = lake.txn();
    txn.write_rows(rows).await?;
    txn.commit().await?;
    Ok(batch)
}

/// The order a turn applies its interventions in, and a replay again.
fn order(r: &SimInterventionRow) -> (i64, i64, String, i64) {
    (r.requested_turn, r.submitted_at.0, r.batch.clone(), r.line)
}

async fn read(lake: &Lake, spec: &SimSpec) -> Result<Vec<SimInterventionRow>> {
    let filter = col(sim_interventions::run_id).eq(lit(spec.run_id.as_str()));
    lake.read(&lake.session().await?, Some(filter)).await
}

/// Requests not applied yet, read again whenever the coordinator looks.
#[derive(Debug, Default)]
pub struct Pending {
    rows: Vec<SimInterventionRow>,
    /// Requests this coordinator handed to turns, by batch and line: a
    /// turn's commit may not have landed when the requests are read again,
    /// and they must not be taken twice.
    taken: BTreeSet<(String, i64)>,
}

impl Pending {
    pub async fn load(lake: &Lake, spec: &SimSpec) -> Result<Pending> {
        let mut pending = Pending::default();
        pending.reload(lake, spec).await?;
        Ok(pending)
    }

    /// Reads the requests again: those submitted since are added, those
    /// applied by a committed turn or taken by a turn of this coordinator
    /// left out.
    pub async fn reload(&mut self, lake: &Lake, spec: &SimSpec) -> Result<()> {
        let rows = read(lake, spec).await?;
        let applied: BTreeSet<(String, i64)> =
            rows.iter().filter(|r| r.applied_turn.is_some()).map(|r| (r.batch.clone(), r.line)).collect();
        let open = |r: &SimInterventionRow| {
            let key = (r.batch.clone(), r.line);
            r.applied_turn.is_none() && !applied.contains(&key) && !self.taken.contains(&key)
        };
        let mut rows: Vec<SimInterventionRow> = rows.into_iter().filter(open).collect();
        rows.sort_by_key(order);
        self.rows = rows;
        Ok(())
    }

    /// Takes the requests due at `turn`, in order.
    pub fn due(&mut self, turn: Turn) -> Vec<SimInterventionRow> {
        let (due, later): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.rows).into_iter().partition(|r| r.requested_turn <= i64::from(turn.0));
        self.rows = later;
        self.taken.extend(due.iter().map(|r| (r.batch.clone(), r.line)));
        due
    }
}

/// The committed interventions of turns up to `last`, by turn, in order.
pub async fn applied(lake: &Lake, spec: &SimSpec, last: i64) -> Result<BTreeMap<i64, Vec<SimInterventionRow>>> {
    let mut out: BTreeMap<i64, Vec<SimInterventionRow>> = BTreeMap::new();
    for r in read(lake, spec).await? {
        if let Some(t) = r.applied_turn.filter(|t| *t <= last) {
            out.entry(t).or_default().push(r);
        }
    }
    out.values_mut().for_each(|rows| rows.sort_by_key(order));
    Ok(out)
}

/// What a turn's interventions add to its commit.
#[derive(Debug, Default)]
pub struct Applied {
    pub rows: Vec<SimInterventionRow>,
    pub posts: Vec<SimPostRow>,
}

/// The events of `due`, read from their rows.
pub fn events(spec: &SimSpec, due: &[SimInterventionRow]) -> Result<Vec<Event>> {
    due.iter()
        .map(|r| {
            serde_json::from_str(&r.event).map_err(|e| {
                Error::Invalid(format!(
                    "sim_interventions of run {}, batch {} line {}: the event does not read: {e}",
                    spec.run_id, r.batch, r.line
                ))
            })
        })
        .collect()
}

/// The rows a turn commits for the events of `due` applied at `turn` with
/// `outcomes`: each request with its turn and result, and injected posts.
pub fn applied_rows(
    spec: &SimSpec,
    turn: Turn,
    due: Vec<SimInterventionRow>,
    events: &[Event],
    outcomes: Vec<intervention::Applied>,
) -> Applied {
    let run = spec.run_id.as_str();
    let mut out = Applied::default();
    for ((mut row, event), done) in due.into_iter().zip(events).zip(outcomes) {
        row.applied_turn = Some(i64::from(turn.0));
        row.status = Some(if done.result.is_ok() { ActionStatus::Applied } else { ActionStatus::Failed }.as_str().to_string());
        row.error = done.result.as_ref().err().map(ToString::to_string);
        row.post_id = done.post.map(|p| p.0 as i64);
        row.account_id = done.account.map(|a| i64::from(a.0));
        if let (Event::Post { text, .. }, Some(post), Some(author)) = (event, done.post, done.account) {
            out.posts.push(SimPostRow {
                post_id: post.0 as i64,
                author_id: i64::from(author.0),
                turn: i64::from(turn.0),
                content: text.clone(),
                parent_post_id: None,
                topic: None,
                knowledge: None,
                run_id: run.to_string(),
            });
        }
        out.rows.push(row);
    }
    out
}

/// The posts a run's interventions injected, up to turn `last`.
pub async fn injected_posts(lake: &Lake, spec: &SimSpec, last: i64) -> Result<BTreeSet<i64>> {
    let applied = applied(lake, spec, last).await?;
    let injected = |r: &SimInterventionRow| matches!(serde_json::from_str(&r.event), Ok(Event::Post { .. }));
    Ok(applied.into_values().flatten().filter(injected).filter_map(|r| r.post_id).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::LakeLocation;
    use crate::sim::PersonaSet;

    #[tokio::test]
    async fn requests_a_turn_took_are_not_taken_again_before_it_commits() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&LakeLocation::Local(dir.path().join("lake"))).await.unwrap();
        let spec = SimSpec::new(some_schemas::RunId("run".into()), "m", Vec::new(), some_sim::Preset::paper(), PersonaSet::Builtin);
        let submitted = |text: &str, at| check(text, Some(Turn(at)), &spec, None).unwrap();
        submit(&lake, &spec, &submitted(r#"{"type": "mute", "account": 3}"#, 2), "first.jsonl").await.unwrap();
        let mut pending = Pending::load(&lake, &spec).await.unwrap();
        assert!(pending.due(Turn(1)).is_empty());
        assert_eq!(pending.due(Turn(2)).len(), 1);
        // Turn 2's commit has not landed: its request is still open in the lake.
        pending.reload(&lake, &spec).await.unwrap();
        assert!(pending.due(Turn(3)).is_empty(), "taken by turn 2 already");
        submit(&lake, &spec, &submitted(r#"{"type": "boost", "account": 4}"#, 3), "second.jsonl").await.unwrap();
        pending.reload(&lake, &spec).await.unwrap();
        assert_eq!(pending.due(Turn(3)).len(), 1, "submitted since");
        // A coordinator that starts again runs turn 2 again, and takes its request again.
        assert_eq!(Pending::load(&lake, &spec).await.unwrap().due(Turn(3)).len(), 2);
    }
}
