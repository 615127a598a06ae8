//! A counterfactual fork against its parent, from the fork's first turn:
//! where their states part, actions per turn by kind (paired by turn),
//! followers at the last turn both reached (paired by agent), and the
//! distinct-n of the posts and comments each made, each with a 95%
//! bootstrap interval ([`some_jobs::bootstrap`]). A Δ whose interval holds
//! 0 is flagged: the fork may not differ there.

use std::collections::BTreeMap;

use rand::SeedableRng;
use serde::Serialize;
use some_jobs::bootstrap::{self, Delta, Interval};
use some_jobs::render::Table;
use some_schemas::sim::{ActionKind, ActionStatus, SimActionRow, SimPostRow, SimTurnRow};

use crate::evaluation::metrics::distinct_n;

/// One run's side of the comparison, its rows from the fork's first turn.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub run_id: &'a str,
    pub turns: &'a [SimTurnRow],
    pub actions: &'a [SimActionRow],
    pub posts: &'a [SimPostRow],
    /// Followers of each agent after the last compared turn, by agent id.
    pub followers: &'a [u32],
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindDelta {
    pub kind: ActionKind,
    pub parent_total: u64,
    pub fork_total: u64,
    /// Applied per turn, paired by turn.
    pub per_turn: Delta,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistinctSide {
    pub texts: usize,
    pub distinct_1: Option<Interval>,
    pub distinct_2: Option<Interval>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Distinct {
    /// "post" or "comment".
    pub kind: &'static str,
    pub parent: DistinctSide,
    pub fork: DistinctSide,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ForkComparison {
    pub parent: String,
    pub fork: String,
    /// The turns compared, both included.
    pub from: i64,
    pub to: i64,
    /// The first compared turn after which the two states differ.
    pub parted_at: Option<i64>,
    pub actions: Vec<KindDelta>,
    /// Followers per agent, paired by agent.
    pub followers: Option<Delta>,
    pub distinct: Vec<Distinct>,
}

const KINDS: [ActionKind; 5] = [ActionKind::Like, ActionKind::Reblog, ActionKind::Comment, ActionKind::Post, ActionKind::Follow];

/// Applied actions of `kind` per turn in `from..=to`.
fn per_turn(actions: &[SimActionRow], kind: ActionKind, from: i64, to: i64) -> Vec<f64> {
    let mut counts: BTreeMap<i64, u64> = (from..=to).map(|t| (t, 0)).collect();
    for a in actions.iter().filter(|a| a.action == kind.as_str() && a.status == ActionStatus::Applied.as_str()) {
        if let Some(c) = counts.get_mut(&a.turn) {
            *c += 1;
        }
    }
    counts.into_values().map(|c| c as f64).collect()
}

fn distinct_side(posts: &[SimPostRow], comments: bool, from: i64, to: i64, resamples: usize, rng: &mut impl rand::Rng) -> DistinctSide {
    let texts: Vec<&str> = posts
        .iter()
        .filter(|p| p.parent_post_id.is_some() == comments && (from..=to).contains(&p.turn))
        .map(|p| p.content.as_str())
        .collect();
    let at = |n: usize, rng: &mut _| bootstrap::of(&texts, |t| distinct_n(t, n).map(|d| d * 100.0), resamples, rng);
    DistinctSide { texts: texts.len(), distinct_1: at(1, rng), distinct_2: at(2, rng) }
}

/// Compares `fork` with `parent` over turns `from..=to` (the fork's first
/// turn to the last both committed).
pub fn compare(parent: Side<'_>, fork: Side<'_>, from: i64, to: i64, resamples: usize, seed: u64) -> ForkComparison {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let digests = |turns: &[SimTurnRow]| -> BTreeMap<i64, String> { turns.iter().map(|t| (t.turn, t.state_digest.clone())).collect() };
    let (pd, fd) = (digests(parent.turns), digests(fork.turns));
    let parted_at = (from..=to).find(|t| pd.get(t) != fd.get(t));
    let actions = KINDS
        .iter()
        .map(|&kind| {
            let (p, f) = (per_turn(parent.actions, kind, from, to), per_turn(fork.actions, kind, from, to));
            let pairs: Vec<(f64, f64)> = p.iter().copied().zip(f.iter().copied()).collect();
            KindDelta {
                kind,
                parent_total: p.iter().sum::<f64>() as u64,
                fork_total: f.iter().sum::<f64>() as u64,
                per_turn: bootstrap::paired(&pairs, resamples, &mut rng),
            }
        })
        .collect();
    let pairs: Vec<(f64, f64)> = parent.followers.iter().zip(fork.followers).map(|(p, f)| (f64::from(*p), f64::from(*f))).collect();
    let followers = (!pairs.is_empty()).then(|| bootstrap::paired(&pairs, resamples, &mut rng));
    let distinct = [("post", false), ("comment", true)]
        .into_iter()
        .map(|(kind, comments)| Distinct {
            kind,
            parent: distinct_side(parent.posts, comments, from, to, resamples, &mut rng),
            fork: distinct_side(fork.posts, comments, from, to, resamples, &mut rng),
        })
        .collect();
    ForkComparison { parent: parent.run_id.into(), fork: fork.run_id.into(), from, to, parted_at, actions, followers, distinct }
}

fn delta_cells(d: &Delta) -> Vec<String> {
    let flag = if d.spans_zero() { " (may be 0)" } else { "" };
    vec![
        format!("{:.3}", d.baseline),
        format!("{:.3}", d.run),
        format!("{:+.3}{flag}", d.delta),
        format!("[{:+.3}, {:+.3}]", d.low, d.high),
    ]
}

fn interval(i: Option<Interval>) -> String {
    i.map_or_else(|| "-".into(), |i| format!("{:.2} [{:.2}, {:.2}]", i.value, i.low, i.high))
}

impl ForkComparison {
    /// A headline, then the tables.
    pub fn render(&self) -> String {
        let mut out = format!("fork {} against {}, turns {} to {}\n", self.fork, self.parent, self.from, self.to);
        out.push_str(&match self.parted_at {
            None => "the same state after every compared turn\n".to_string(),
            Some(t) => format!("the states part at turn {t}: the first turn after which their digests differ\n"),
        });
        for t in self.tables() {
            t.text(&mut out);
        }
        out
    }

    pub fn tables(&self) -> Vec<Table> {
        let header = |first: &str| [first, "Parent", "Fork", "Δ", "95% interval"].map(String::from).to_vec();
        let mut rows: Vec<Vec<String>> = self
            .actions
            .iter()
            .map(|k| {
                let mut row = vec![format!("{} ({} / {})", k.kind.as_str(), k.parent_total, k.fork_total)];
                row.extend(delta_cells(&k.per_turn));
                row
            })
            .collect();
        if let Some(f) = &self.followers {
            let mut row = vec!["followers per agent".to_string()];
            row.extend(delta_cells(f));
            rows.push(row);
        }
        let per_turn = Table {
            title: "Applied actions per turn (totals in brackets), paired by turn; followers per agent at the last turn, paired by agent"
                .into(),
            header: header("Figure"),
            left: vec![0],
            highlight: None,
            rows,
        };
        let distinct = Table {
            title: "Distinct-n (×100) of the texts made from the fork on, with 95% intervals".into(),
            header: ["Texts", "Parent n", "Parent distinct-1", "Parent distinct-2", "Fork n", "Fork distinct-1", "Fork distinct-2"]
                .map(String::from)
                .to_vec(),
            left: vec![0],
            highlight: None,
            rows: self
                .distinct
                .iter()
                .map(|d| {
                    vec![
                        d.kind.to_string(),
                        d.parent.texts.to_string(),
                        interval(d.parent.distinct_1),
                        interval(d.parent.distinct_2),
                        d.fork.texts.to_string(),
                        interval(d.fork.distinct_1),
                        interval(d.fork.distinct_2),
                    ]
                })
                .collect(),
        };
        vec![per_turn, distinct]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use some_schemas::Timestamp;

    fn turn(t: i64, digest: &str) -> SimTurnRow {
        SimTurnRow {
            turn: t,
            stage: 1,
            active_agents: 1,
            actions_applied: 1,
            actions_failed: 0,
            state_digest: digest.into(),
            committed_at: Timestamp(0),
            run_id: "r".into(),
        }
    }

    fn like(t: i64) -> SimActionRow {
        SimActionRow {
            turn: t,
            agent_id: 1,
            seq: 0,
            item: 0,
            action: "like".into(),
            post_id: Some(1),
            target_agent_id: None,
            text: None,
            status: "applied".into(),
            error: None,
            run_id: "r".into(),
        }
    }

    #[test]
    fn a_fork_that_likes_more_is_told_apart_where_its_state_parts() {
        let parent_turns = [turn(3, "a"), turn(4, "b"), turn(5, "c")];
        let fork_turns = [turn(3, "a"), turn(4, "x"), turn(5, "y")];
        let parent_actions = [like(3)];
        let fork_actions: Vec<SimActionRow> = (3..=5).flat_map(|t| [like(t), like(t), like(t)]).collect();
        let side = |run_id, turns, actions, followers| Side { run_id, turns, actions, posts: &[], followers };
        let c = compare(side("p", &parent_turns, &parent_actions, &[0, 1]), side("f", &fork_turns, &fork_actions, &[0, 1]), 3, 5, 500, 1);
        assert_eq!(c.parted_at, Some(4));
        let likes = &c.actions[0];
        assert_eq!((likes.parent_total, likes.fork_total), (1, 9));
        assert!(!likes.per_turn.spans_zero() && likes.per_turn.delta > 2.0, "{likes:?}");
        assert!(c.actions[1].per_turn.spans_zero(), "no reblogs in either");
        assert!(c.followers.unwrap().spans_zero());
        let text = c.render();
        assert!(text.contains("the states part at turn 4") && text.contains("like (1 / 9)") && text.contains("(may be 0)"), "{text}");
    }
}
