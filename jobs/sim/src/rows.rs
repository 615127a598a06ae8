//! Lake rows of a turn: what the orchestration commits for each turn, built
//! from the platform's outcomes and the agents' steps, so the mapping from
//! simulation values to table columns lives in one place.

use std::collections::HashMap;

use some_schemas::Timestamp;
use some_schemas::sim::{ActionKind, ActionStatus, AgentKind, SimActionRow, SimAgentRow, SimFeedRow, SimFollowRow, SimPostRow, SimTurnRow};

use crate::agent::persona::Persona;
use crate::agent::plan::Plan;
use crate::agent::step::PostNote;
use crate::feed::Ranked;
use crate::platform::ids::{AgentId, PostId, Turn};
use crate::platform::{Action, AgentAction, Outcome};

/// One row per action, applied or refused; a browse is one row per post
/// shown (`item` its place in the feed), so SQL counts posts browsed.
pub fn action_rows(run_id: &str, turn: Turn, outcomes: &[Outcome]) -> Vec<SimActionRow> {
    let mut rows = Vec::with_capacity(outcomes.len());
    for o in outcomes {
        let (status, error) = match &o.result {
            Ok(()) => (ActionStatus::Applied, None),
            Err(e) => (ActionStatus::Failed, Some(e.to_string())),
        };
        let row = |item: usize, post_id: Option<i64>, target: Option<i64>, text: Option<String>| SimActionRow {
            turn: i64::from(turn.0),
            agent_id: i64::from(o.agent.0),
            seq: o.seq as i32,
            item: item as i32,
            action: o.action.kind().as_str().into(),
            post_id,
            target_agent_id: target,
            text,
            status: status.as_str().into(),
            error: error.clone(),
            run_id: run_id.into(),
        };
        match &o.action {
            Action::Browse { posts } if posts.is_empty() => rows.push(row(0, None, None, None)),
            Action::Browse { posts } => rows.extend(posts.iter().enumerate().map(|(i, p)| row(i, Some(p.0 as i64), None, None))),
            Action::Like { post } | Action::Reblog { post } => rows.push(row(0, Some(post.0 as i64), None, None)),
            Action::Comment { post, text } => rows.push(row(0, Some(post.0 as i64), None, Some(text.clone()))),
            Action::Post { text } => rows.push(row(0, o.created.map(|p| p.0 as i64), None, Some(text.clone()))),
            Action::Follow { agent } => rows.push(row(0, None, Some(i64::from(agent.0)), None)),
        }
    }
    rows
}

/// The actions of committed turns read back from their rows, turn by turn
/// in order, each turn's in (agent, seq) order: what replaying a run
/// applies again. A row that does not describe an action is an error
/// naming it: the table was written by something else.
pub fn actions_from_rows(mut rows: Vec<SimActionRow>) -> Result<Vec<(Turn, Vec<AgentAction>)>, String> {
    rows.sort_by_key(|r| (r.turn, r.agent_id, r.seq, r.item));
    let mut turns: Vec<(Turn, Vec<AgentAction>)> = Vec::new();
    for r in rows {
        let at = || format!("sim_actions row (turn {}, agent {}, seq {}, item {})", r.turn, r.agent_id, r.seq, r.item);
        let turn = Turn(u32::try_from(r.turn).map_err(|_| format!("{}: bad turn", at()))?);
        let agent = AgentId(u32::try_from(r.agent_id).map_err(|_| format!("{}: bad agent id", at()))?);
        let seq = u32::try_from(r.seq).map_err(|_| format!("{}: bad seq", at()))?;
        let kind = ActionKind::parse(&r.action).ok_or_else(|| format!("{}: unknown action {:?}", at(), r.action))?;
        let post = || r.post_id.map(|p| PostId(p as u64)).ok_or_else(|| format!("{}: a {} needs a post_id", at(), r.action));
        let text = || r.text.clone().ok_or_else(|| format!("{}: a {} needs a text", at(), r.action));
        if turns.last().is_none_or(|(t, _)| *t != turn) {
            turns.push((turn, Vec::new()));
        }
        let actions = &mut turns.last_mut().expect("pushed above").1;
        if kind == ActionKind::Browse
            && let Some(AgentAction { agent: a, seq: s, action: Action::Browse { posts } }) = actions.last_mut()
            && (*a, *s) == (agent, seq)
        {
            posts.extend(r.post_id.map(|p| PostId(p as u64)));
            continue;
        }
        let action = match kind {
            ActionKind::Browse => Action::Browse { posts: r.post_id.map(|p| PostId(p as u64)).into_iter().collect() },
            ActionKind::Like => Action::Like { post: post()? },
            ActionKind::Reblog => Action::Reblog { post: post()? },
            ActionKind::Comment => Action::Comment { post: post()?, text: text()? },
            ActionKind::Post => Action::Post { text: text()? },
            ActionKind::Follow => Action::Follow {
                agent: AgentId(
                    r.target_agent_id
                        .and_then(|a| u32::try_from(a).ok())
                        .ok_or_else(|| format!("{}: a follow needs a target_agent_id", at()))?,
                ),
            },
        };
        actions.push(AgentAction { agent, seq, action });
    }
    Ok(turns)
}

/// The posts and comments a turn created; `notes` by (agent, seq) give a post's topic and knowledge.
pub fn post_rows(run_id: &str, turn: Turn, outcomes: &[Outcome], notes: &HashMap<(AgentId, u32), PostNote>) -> Vec<SimPostRow> {
    outcomes
        .iter()
        .filter_map(|o| {
            let created = o.created?;
            let (content, parent) = match &o.action {
                Action::Post { text } => (text.clone(), None),
                Action::Comment { post, text } => (text.clone(), Some(post.0 as i64)),
                _ => return None,
            };
            let note = notes.get(&(o.agent, o.seq));
            Some(SimPostRow {
                post_id: created.0 as i64,
                author_id: i64::from(o.agent.0),
                turn: i64::from(turn.0),
                content,
                parent_post_id: parent,
                topic: note.map(|n| n.topic.clone()),
                knowledge: note.filter(|n| !n.knowledge.is_empty()).map(|n| serde_json::Value::from(n.knowledge.clone()).to_string()),
                run_id: run_id.into(),
            })
        })
        .collect()
}

/// The follows a turn created.
pub fn follow_rows(run_id: &str, turn: Turn, outcomes: &[Outcome]) -> Vec<SimFollowRow> {
    outcomes
        .iter()
        .filter(|o| o.result.is_ok())
        .filter_map(|o| match o.action {
            Action::Follow { agent } => Some(SimFollowRow {
                follower_id: i64::from(o.agent.0),
                followee_id: i64::from(agent.0),
                turn: i64::from(turn.0),
                run_id: run_id.into(),
            }),
            _ => None,
        })
        .collect()
}

/// The feed one agent was shown.
pub fn feed_rows(run_id: &str, turn: Turn, agent: AgentId, ranker: &str, feed: &[Ranked]) -> Vec<SimFeedRow> {
    feed.iter()
        .enumerate()
        .map(|(i, r)| SimFeedRow {
            turn: i64::from(turn.0),
            agent_id: i64::from(agent.0),
            position: i as i32,
            post_id: r.post.0 as i64,
            score: r.score,
            ranker: ranker.into(),
            run_id: run_id.into(),
        })
        .collect()
}

/// The row that marks a turn committed.
pub fn turn_row(
    run_id: &str,
    turn: Turn,
    stage: u32,
    active_agents: usize,
    outcomes: &[Outcome],
    digest: String,
    at: Timestamp,
) -> SimTurnRow {
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    SimTurnRow {
        turn: i64::from(turn.0),
        stage: stage as i32,
        active_agents: active_agents as i64,
        actions_applied: (outcomes.len() - failed) as i64,
        actions_failed: failed as i64,
        state_digest: digest,
        committed_at: at,
        run_id: run_id.into(),
    }
}

/// An agent's row: persona and plan as JSON.
pub fn agent_row(
    run_id: &str,
    persona: &Persona,
    kind: AgentKind,
    activity: f64,
    plan: Option<&Plan>,
    error: Option<String>,
) -> SimAgentRow {
    SimAgentRow {
        agent_id: i64::from(persona.id.0),
        username: persona.username.clone(),
        kind: kind.as_str().into(),
        persona_source: persona.source.as_str().into(),
        persona: serde_json::to_string(persona).unwrap_or_default(),
        activity,
        plan: plan.and_then(|p| serde_json::to_string(p).ok()),
        error,
        run_id: run_id.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Platform;
    use some_schemas::Row;

    #[test]
    fn a_turns_outcomes_become_rows() {
        let mut p = Platform::new();
        (0..2).for_each(|a| p.register(AgentId(a)));
        let sent = vec![
            AgentAction { agent: AgentId(0), seq: 0, action: Action::Post { text: "hi".into() } },
            AgentAction { agent: AgentId(1), seq: 0, action: Action::Comment { post: PostId(0), text: "yo".into() } },
            AgentAction { agent: AgentId(1), seq: 1, action: Action::Follow { agent: AgentId(0) } },
            AgentAction { agent: AgentId(1), seq: 2, action: Action::Like { post: PostId(9) } },
        ];
        let out = p.apply_turn(Turn(3), sent.clone());
        let notes = HashMap::from([((AgentId(0), 0), PostNote { seq: 0, topic: "greetings".into(), knowledge: vec![4, 2] })]);
        let actions = action_rows("r", Turn(3), &out);
        assert_eq!(
            actions.iter().map(|a| (a.action.as_str(), a.status.as_str(), a.post_id)).collect::<Vec<_>>(),
            [("post", "applied", Some(0)), ("comment", "applied", Some(0)), ("follow", "applied", None), ("like", "failed", Some(9))]
        );
        assert_eq!(actions[3].error.as_deref(), Some("post 9 does not exist"));
        assert_eq!(actions_from_rows(actions.clone()).unwrap(), vec![(Turn(3), sent)]);
        let posts = post_rows("r", Turn(3), &out, &notes);
        assert_eq!(
            (posts[0].topic.as_deref(), posts[0].knowledge.as_deref(), posts[1].parent_post_id),
            (Some("greetings"), Some("[4,2]"), Some(0))
        );
        assert_eq!(follow_rows("r", Turn(3), &out)[0].followee_id, 0);
        let t = turn_row("r", Turn(3), 1, 2, &out, p.digest(), Timestamp(0));
        assert_eq!((t.actions_applied, t.actions_failed), (3, 1));
        SimActionRow::to_batch(&actions).unwrap();
        let feed = feed_rows("r", Turn(4), AgentId(1), "mastodon_digest", &[Ranked { post: PostId(0), score: 0.5 }]);
        assert_eq!((feed[0].position, feed[0].post_id), (0, 0));
        let persona = crate::agent::test_model::persona(0, "d");
        let a = agent_row("r", &persona, AgentKind::Initial, 0.5, None, None);
        assert_eq!((a.kind.as_str(), a.persona_source.as_str()), ("initial", "recagent"));
    }

    #[test]
    fn browses_are_a_row_per_post_and_replay_in_feed_order_whatever_the_row_order() {
        let mut p = Platform::new();
        (0..3).for_each(|a| p.register(AgentId(a)));
        p.apply_turn(
            Turn(0),
            (0..3).map(|i| AgentAction { agent: AgentId(0), seq: i, action: Action::Post { text: format!("p{i}") } }).collect(),
        );
        let sent = vec![
            AgentAction { agent: AgentId(1), seq: 0, action: Action::Browse { posts: vec![PostId(2), PostId(0), PostId(1)] } },
            AgentAction { agent: AgentId(1), seq: 1, action: Action::Reblog { post: PostId(2) } },
            AgentAction { agent: AgentId(2), seq: 0, action: Action::Browse { posts: vec![] } },
            AgentAction { agent: AgentId(2), seq: 1, action: Action::Browse { posts: vec![PostId(1)] } },
        ];
        let out = p.apply_turn(Turn(1), sent.clone());
        let mut rows = action_rows("r", Turn(1), &out);
        assert_eq!(rows.len(), 6);
        rows.reverse();
        assert_eq!(actions_from_rows(rows.clone()).unwrap(), vec![(Turn(1), sent)]);
        rows[0].action = "boost".into();
        let err = actions_from_rows(rows).unwrap_err();
        assert!(err.contains("unknown action \"boost\""), "{err}");
    }
}
