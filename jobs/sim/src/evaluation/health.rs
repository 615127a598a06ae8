//! Whether a run did what its stages are for: agents active, shown posts,
//! acting on them, writing posts. A simulation can run every turn and
//! produce nothing (feeds gone dark, a week without posts), so these
//! figures are read from the committed rows and said out loud by `some sim
//! run`, `some sim status` and the report, never left for the reader to
//! find.
//!
//! In a stage every active agent is ranked a feed and browses it, so an
//! active agent without a browse row in a turn was shown an empty feed.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use some_schemas::sim::{ActionKind, ActionStatus, SimActionRow, SimTurnRow};

/// One stage's activity, from its committed turns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageHealth {
    /// 0 is seeding.
    pub stage: u32,
    pub turns: usize,
    /// Agent-turns in which an agent acted.
    pub active: u64,
    /// Agent-turns shown an empty feed (0 when seeding: no one browses).
    pub empty_feeds: u64,
    /// Turns in which at least one active agent was shown an empty feed.
    pub turns_with_empty_feeds: usize,
    pub first_empty_turn: Option<i64>,
    /// Applied actions by kind.
    pub applied: BTreeMap<ActionKind, u64>,
}

impl StageHealth {
    pub fn applied(&self, kind: ActionKind) -> u64 {
        self.applied.get(&kind).copied().unwrap_or(0)
    }

    /// Likes, reblogs, comments, posts and follows: what agents did beyond looking.
    pub fn interactions(&self) -> u64 {
        self.applied.iter().filter(|(k, _)| **k != ActionKind::Browse).map(|(_, n)| n).sum()
    }
}

/// Per stage, in order, from a run's committed turns and their actions.
pub fn stage_health(turns: &[SimTurnRow], actions: &[SimActionRow]) -> Vec<StageHealth> {
    let mut browsers: BTreeMap<i64, BTreeSet<i64>> = BTreeMap::new();
    let mut applied: BTreeMap<i64, BTreeMap<ActionKind, u64>> = BTreeMap::new();
    for a in actions {
        let Some(kind) = ActionKind::parse(&a.action) else { continue };
        if kind == ActionKind::Browse {
            browsers.entry(a.turn).or_default().insert(a.agent_id);
        }
        // A browse is a row per post shown: count it once.
        let first_row = kind != ActionKind::Browse || a.item == 0;
        if first_row && ActionStatus::parse(&a.status) == Some(ActionStatus::Applied) {
            *applied.entry(a.turn).or_default().entry(kind).or_default() += 1;
        }
    }
    let mut stages: BTreeMap<u32, StageHealth> = BTreeMap::new();
    for t in turns {
        let stage = t.stage.max(0) as u32;
        let h = stages.entry(stage).or_insert_with(|| StageHealth { stage, ..StageHealth::default() });
        h.turns += 1;
        h.active += t.active_agents.max(0) as u64;
        if stage > 0 {
            let browsed = browsers.get(&t.turn).map_or(0, |b| b.len() as u64);
            let empty = (t.active_agents.max(0) as u64).saturating_sub(browsed);
            if empty > 0 {
                h.empty_feeds += empty;
                h.turns_with_empty_feeds += 1;
                h.first_empty_turn.get_or_insert(t.turn);
            }
        }
        for (kind, n) in applied.get(&t.turn).into_iter().flatten() {
            *h.applied.entry(*kind).or_default() += n;
        }
    }
    stages.into_values().collect()
}

/// What a reader must be told about a run's stages: dark feeds, stages
/// without posts or without any interaction.
pub fn warnings(health: &[StageHealth]) -> Vec<String> {
    let mut out = Vec::new();
    for h in health.iter().filter(|h| h.stage > 0) {
        let s = h.stage;
        if h.active == 0 {
            out.push(format!("stage {s}: no agent acted in its {} turns", h.turns));
            continue;
        }
        if h.empty_feeds > 0 {
            out.push(format!(
                "stage {s}: {} of {} active agent-turns were shown an empty feed, in {} of its {} turns (first at turn {})",
                h.empty_feeds,
                h.active,
                h.turns_with_empty_feeds,
                h.turns,
                h.first_empty_turn.unwrap_or_default()
            ));
        }
        if h.applied(ActionKind::Post) == 0 {
            out.push(format!("stage {s}: no post was written in its {} turns", h.turns));
        }
        if h.interactions() == 0 {
            out.push(format!("stage {s}: no like, reblog, comment, post or follow in its {} turns", h.turns));
        }
    }
    out
}

/// A run whose stages all ended without any interaction did nothing worth
/// reporting: the command that ran it fails.
pub fn did_nothing(health: &[StageHealth]) -> bool {
    let stages: Vec<&StageHealth> = health.iter().filter(|h| h.stage > 0).collect();
    !stages.is_empty() && stages.iter().all(|h| h.interactions() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use some_schemas::Timestamp;

    fn turn(turn: i64, stage: i32, active: i64) -> SimTurnRow {
        SimTurnRow {
            turn,
            stage,
            active_agents: active,
            actions_applied: 0,
            actions_failed: 0,
            state_digest: String::new(),
            committed_at: Timestamp::now(),
            run_id: "r".into(),
        }
    }

    fn action(turn: i64, agent: i64, kind: ActionKind, item: i32) -> SimActionRow {
        SimActionRow {
            turn,
            agent_id: agent,
            seq: 0,
            item,
            action: kind.as_str().into(),
            post_id: None,
            target_agent_id: None,
            text: None,
            status: ActionStatus::Applied.as_str().into(),
            error: None,
            run_id: "r".into(),
        }
    }

    #[test]
    fn active_agents_without_a_browse_were_shown_an_empty_feed() {
        let turns = [turn(0, 0, 2), turn(1, 1, 3), turn(2, 1, 2), turn(3, 2, 2)];
        let actions = [
            action(0, 0, ActionKind::Post, 0),
            action(1, 5, ActionKind::Browse, 0),
            action(1, 5, ActionKind::Browse, 1),
            action(1, 5, ActionKind::Like, 0),
            action(2, 5, ActionKind::Browse, 0),
            action(2, 6, ActionKind::Browse, 0),
            action(2, 6, ActionKind::Post, 0),
        ];
        let h = stage_health(&turns, &actions);
        assert_eq!(h.iter().map(|s| (s.stage, s.turns, s.active)).collect::<Vec<_>>(), [(0, 1, 2), (1, 2, 5), (2, 1, 2)]);
        assert_eq!((h[0].empty_feeds, h[0].applied(ActionKind::Post)), (0, 1), "seeding shows no feed");
        assert_eq!((h[1].empty_feeds, h[1].turns_with_empty_feeds, h[1].first_empty_turn), (2, 1, Some(1)));
        assert_eq!((h[1].applied(ActionKind::Browse), h[1].interactions()), (3, 2), "a browse counts once, not per post");
        assert_eq!(h[2].empty_feeds, 2);
        let w = warnings(&h);
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(w[0].starts_with("stage 1: 2 of 5 active agent-turns were shown an empty feed, in 1 of its 2 turns (first at turn 1)"));
        assert_eq!(
            w[1..],
            [
                "stage 2: 2 of 2 active agent-turns were shown an empty feed, in 1 of its 1 turns (first at turn 3)".to_string(),
                "stage 2: no post was written in its 1 turns".into(),
                "stage 2: no like, reblog, comment, post or follow in its 1 turns".into()
            ]
        );
        assert!(!did_nothing(&h));
        assert!(did_nothing(&h[2..]));
    }
}
