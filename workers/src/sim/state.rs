//! A run's state as the lake holds it: agents as set up, the platform
//! rebuilt by replaying every committed turn's actions (each turn's digest
//! checked against the one recorded with it), and each agent's memory from
//! its last committed step. This is all a coordinator starts from, so a
//! resumed run goes on exactly where the last committed turn left it.

use std::collections::HashMap;

use datafusion::prelude::{Expr, col, lit};
use some_schemas::sim::{
    SimActionRow, SimAgentRow, SimPostRow, SimStepRow, SimTurnRow, sim_actions, sim_agents, sim_posts, sim_steps, sim_turns,
};
use some_sim::evaluation::health::{StageHealth, stage_health};
use some_sim::evaluation::live::{self, Recent};
use some_sim::rows::actions_from_rows;
use some_sim::{AgentId, Memory, Platform, Turn};

use super::shard::{read_results, uncommitted_steps};
use super::spec::SimSpec;
use super::work::{Agent, load_agents};
use crate::error::{Error, Result};
use crate::lake::Lake;

/// Where a run stands.
#[derive(Debug, Clone)]
pub struct SimState {
    /// Every agent of the run, once all are set up (else empty).
    pub agents: Vec<Agent>,
    pub platform: Platform,
    pub memories: HashMap<AgentId, Memory>,
    /// The turns committed so far, in order.
    pub turns: Vec<SimTurnRow>,
}

impl SimState {
    /// The first turn not committed yet.
    pub fn next_turn(&self) -> Turn {
        Turn(self.turns.len() as u32)
    }

    pub fn set_up(&self) -> bool {
        !self.agents.is_empty()
    }

    /// The state digest after the last committed turn.
    pub fn digest(&self) -> Option<&str> {
        self.turns.last().map(|t| t.state_digest.as_str())
    }

    /// Reads and replays the run.
    pub async fn load(lake: &Lake, spec: &SimSpec) -> Result<SimState> {
        let run = spec.run_id.as_str();
        let ctx = lake.session().await?;
        let mut turns: Vec<SimTurnRow> = lake.read(&ctx, Some(col(sim_turns::run_id).eq(lit(run)))).await?;
        turns.sort_by_key(|t| t.turn);
        // A turn is committed by its one `sim_turns` row, and turns commit
        // in order; anything else was not written by a coordinator.
        if let Some((i, t)) = turns.iter().enumerate().find(|(i, t)| t.turn != *i as i64) {
            return Err(Error::Invalid(format!(
                "sim_turns of run {run}: expected turn {i}, found turn {} (a turn is missing or repeated)",
                t.turn
            )));
        }
        let mut known = load_agents(lake, &spec.run_id).await?;
        let n = spec.preset.agents();
        if (known.len() as u32) < n {
            if !turns.is_empty() {
                return Err(Error::Invalid(format!("run {run} has committed turns but only {} of its {n} agents", known.len())));
            }
            return Ok(SimState { agents: Vec::new(), platform: Platform::new(), memories: HashMap::new(), turns });
        }
        let agents = (0..n)
            .map(|i| {
                known
                    .remove(&AgentId(i))
                    .ok_or_else(|| Error::Invalid(format!("sim_agents of run {run} lacks agent {i} (ids must be 0..{n})")))
            })
            .collect::<Result<Vec<Agent>>>()?;
        let mut platform = initial_platform(&agents)?;
        let last = turns.last().map_or(-1, |t| t.turn);
        let filter = |turn_col: &str, run_col: &str| col(run_col).eq(lit(run)).and(col(turn_col).lt_eq(lit(last)));
        let rows: Vec<SimActionRow> = lake.read(&ctx, Some(filter(sim_actions::turn, sim_actions::run_id))).await?;
        let mut replayed = actions_from_rows(rows).map_err(Error::Invalid)?.into_iter().peekable();
        for t in &turns {
            let turn = Turn(t.turn as u32);
            let actions = match replayed.peek() {
                Some((at, _)) if *at == turn => replayed.next().map(|(_, a)| a).unwrap_or_default(),
                _ => Vec::new(),
            };
            platform.apply_turn(turn, actions);
            let digest = platform.history_digest();
            if digest != t.state_digest {
                return Err(Error::Invalid(format!(
                    "replaying turn {} of run {run} gives state {digest}, the lake recorded {}: its sim_actions rows were changed, or written by another build",
                    t.turn, t.state_digest
                )));
            }
        }
        let steps: Vec<SimStepRow> = lake.read(&ctx, Some(filter(sim_steps::turn, sim_steps::run_id))).await?;
        let mut latest: HashMap<AgentId, SimStepRow> = HashMap::new();
        for s in steps {
            let agent = AgentId(s.agent_id as u32);
            if latest.get(&agent).is_none_or(|l| l.turn < s.turn) {
                latest.insert(agent, s);
            }
        }
        let mut memories = HashMap::with_capacity(latest.len());
        for (agent, s) in latest {
            let memory: Memory = serde_json::from_str(&s.memory).map_err(|e| {
                Error::Invalid(format!("sim_steps of run {run}, turn {}, agent {agent}: the memory does not read: {e}", s.turn))
            })?;
            memories.insert(agent, memory);
        }
        Ok(SimState { agents, platform, memories, turns })
    }
}

/// Where a run stands, as `some sim status` shows it.
#[derive(Debug, Clone)]
pub struct SimProgress {
    pub state: SimState,
    pub agents_set_up: usize,
    pub setup_failed: usize,
    /// Agent steps already written for the turn not yet committed.
    pub steps_in_progress: usize,
}

/// Reads where a run stands.
pub async fn progress(lake: &Lake, spec: &SimSpec) -> Result<SimProgress> {
    let state = SimState::load(lake, spec).await?;
    let (agents_set_up, setup_failed, steps_in_progress) = setup_and_steps(lake, spec, state.next_turn()).await?;
    Ok(SimProgress { agents_set_up, setup_failed, steps_in_progress, state })
}

/// Agents set up, those whose setup failed, and the agent steps written
/// for `next` (the turn not committed yet).
async fn setup_and_steps(lake: &Lake, spec: &SimSpec, next: Turn) -> Result<(usize, usize, usize)> {
    let ctx = lake.session().await?;
    let agents: Vec<SimAgentRow> = lake.read(&ctx, Some(col(sim_agents::run_id).eq(lit(spec.run_id.as_str())))).await?;
    // The next turn's shards write their steps before the turn commits:
    // they are files the log does not name yet.
    let mut pending = 0;
    for path in uncommitted_steps(lake, &spec.run_id, next).await? {
        pending += read_results::<SimStepRow>(lake, &spec.run_id, &path).await?.map_or(0, |rows| rows.len());
    }
    Ok((agents.len(), agents.iter().filter(|a| a.error.is_some()).count(), pending))
}

/// Where a run stands without replaying it: what a live view reads every
/// few seconds.
#[derive(Debug, Clone)]
pub struct SimGlance {
    /// The turns committed so far, in order.
    pub turns: Vec<SimTurnRow>,
    pub agents_set_up: usize,
    pub setup_failed: usize,
    /// Agent steps already written for the turn not yet committed.
    pub steps_in_progress: usize,
}

impl SimGlance {
    /// The first turn not committed yet.
    pub fn next_turn(&self) -> Turn {
        Turn(self.turns.len() as u32)
    }
}

/// Reads where a run stands from its `sim_turns` rows (in order), its
/// agents and the steps of the turn in progress.
pub async fn glance(lake: &Lake, spec: &SimSpec) -> Result<SimGlance> {
    let ctx = lake.session().await?;
    let mut turns: Vec<SimTurnRow> = lake.read(&ctx, Some(col(sim_turns::run_id).eq(lit(spec.run_id.as_str())))).await?;
    turns.sort_by_key(|t| t.turn);
    let next = Turn(turns.len() as u32);
    let (agents_set_up, setup_failed, steps_in_progress) = setup_and_steps(lake, spec, next).await?;
    Ok(SimGlance { turns, agents_set_up, setup_failed, steps_in_progress })
}

/// The last `last` of the committed `turns`: actions per kind in each and
/// the `top` posts most liked, reblogged and commented on in them, with
/// their authors and texts ([`some_sim::evaluation::live`]).
pub async fn recent(lake: &Lake, spec: &SimSpec, turns: &[SimTurnRow], last: usize, top: usize) -> Result<Recent> {
    let numbers: Vec<i64> = turns.iter().rev().take(last).rev().map(|t| t.turn).collect();
    let (Some(&first), Some(&end)) = (numbers.first(), numbers.last()) else { return Ok(Recent::default()) };
    let run = spec.run_id.as_str();
    let ctx = lake.session().await?;
    let filter = col(sim_actions::run_id).eq(lit(run)).and(col(sim_actions::turn).between(lit(first), lit(end)));
    let actions: Vec<SimActionRow> = lake.read(&ctx, Some(filter)).await?;
    let mut r = live::recent(&numbers, &actions, top);
    let ids = r.post_ids();
    if ids.is_empty() {
        return Ok(r);
    }
    let filter = col(sim_posts::run_id).eq(lit(run)).and(col(sim_posts::post_id).in_list(ids.into_iter().map(lit).collect(), false));
    let posts: Vec<SimPostRow> = lake.read(&ctx, Some(filter)).await?;
    let authors: Vec<Expr> = posts.iter().map(|p| lit(p.author_id)).collect();
    let names: HashMap<i64, String> = if authors.is_empty() {
        HashMap::new()
    } else {
        let filter = col(sim_agents::run_id).eq(lit(run)).and(col(sim_agents::agent_id).in_list(authors, false));
        let agents: Vec<SimAgentRow> = lake.read(&ctx, Some(filter)).await?;
        agents.into_iter().map(|a| (a.agent_id, a.username)).collect()
    };
    r.describe_posts(&posts, &names);
    Ok(r)
}

/// Each stage's activity over the committed turns ([`some_sim::evaluation::health`]).
pub async fn health(lake: &Lake, spec: &SimSpec, turns: &[SimTurnRow]) -> Result<Vec<StageHealth>> {
    let Some(last) = turns.iter().map(|t| t.turn).max() else { return Ok(Vec::new()) };
    let run = lit(spec.run_id.as_str());
    let filter = col(sim_actions::run_id).eq(run).and(col(sim_actions::turn).lt_eq(lit(last)));
    let actions: Vec<SimActionRow> = lake.read(&lake.session().await?, Some(filter)).await?;
    Ok(stage_health(turns, &actions))
}

/// Every agent's account and the persona set's follow graph, in agent order.
fn initial_platform(agents: &[Agent]) -> Result<Platform> {
    let mut platform = Platform::new();
    agents.iter().for_each(|a| platform.register(a.persona.id));
    for a in agents {
        for f in &a.persona.following {
            platform
                .seed_follow(a.persona.id, *f)
                .map_err(|e| Error::Invalid(format!("the follow graph of agent {}: {e}", a.persona.id)))?;
        }
    }
    Ok(platform)
}
