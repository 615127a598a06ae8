//! Lake rows of a turn: what the orchestration commits for each turn, built
//! from the platform's outcomes and the agents' steps, so the mapping from
//! simulation values to table columns lives in one place.

use std::collections::HashMap;

use some_schemas::Timestamp;
use some_schemas::sim::{ActionStatus, AgentKind, SimActionRow, SimAgentRow, SimFeedRow, SimFollowRow, SimPostRow, SimTurnRow};

use super::feed::Ranked;
use super::ids::{AgentId, Turn};
use super::persona::Persona;
use super::plan::Plan;
use super::platform::{Action, Outcome};
use super::step::PostNote;

/// One row per action, applied or refused.
pub fn action_rows(run_id: &str, turn: Turn, outcomes: &[Outcome]) -> Vec<SimActionRow> {
    outcomes
        .iter()
        .map(|o| {
            let (post_id, target, text) = match &o.action {
                Action::Browse { .. } => (None, None, None),
                Action::Like { post } | Action::Reblog { post } => (Some(post.0 as i64), None, None),
                Action::Comment { post, text } => (Some(post.0 as i64), None, Some(text.clone())),
                Action::Post { text } => (o.created.map(|p| p.0 as i64), None, Some(text.clone())),
                Action::Follow { agent } => (None, Some(i64::from(agent.0)), None),
            };
            let (status, error) = match &o.result {
                Ok(()) => (ActionStatus::Applied, None),
                Err(e) => (ActionStatus::Failed, Some(e.to_string())),
            };
            SimActionRow {
                turn: i64::from(turn.0),
                agent_id: i64::from(o.agent.0),
                seq: o.seq as i32,
                action: o.action.kind().as_str().into(),
                post_id,
                target_agent_id: target,
                text,
                status: status.as_str().into(),
                error,
                run_id: run_id.into(),
            }
        })
        .collect()
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
    use crate::sim::ids::PostId;
    use crate::sim::platform::{AgentAction, Platform};
    use some_schemas::Row;

    #[test]
    fn a_turns_outcomes_become_rows() {
        let mut p = Platform::new();
        (0..2).for_each(|a| p.register(AgentId(a)));
        let out = p.apply_turn(
            Turn(3),
            vec![
                AgentAction { agent: AgentId(0), seq: 0, action: Action::Post { text: "hi".into() } },
                AgentAction { agent: AgentId(1), seq: 0, action: Action::Comment { post: PostId(0), text: "yo".into() } },
                AgentAction { agent: AgentId(1), seq: 1, action: Action::Follow { agent: AgentId(0) } },
                AgentAction { agent: AgentId(1), seq: 2, action: Action::Like { post: PostId(9) } },
            ],
        );
        let notes = HashMap::from([((AgentId(0), 0), PostNote { seq: 0, topic: "greetings".into(), knowledge: vec![4, 2] })]);
        let actions = action_rows("r", Turn(3), &out);
        assert_eq!(
            actions.iter().map(|a| (a.action.as_str(), a.status.as_str(), a.post_id)).collect::<Vec<_>>(),
            [("post", "applied", Some(0)), ("comment", "applied", Some(0)), ("follow", "applied", None), ("like", "failed", Some(9))]
        );
        assert_eq!(actions[3].error.as_deref(), Some("post 9 does not exist"));
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
        let persona = crate::sim::test_model::persona(0, "d");
        let a = agent_row("r", &persona, AgentKind::Initial, 0.5, None, None);
        assert_eq!((a.kind.as_str(), a.persona_source.as_str()), ("initial", "recagent"));
    }
}
