//! A run's state as the lake holds it: agents as set up, the platform
//! rebuilt by replaying every committed turn's actions (each turn's digest
//! checked against the one recorded with it), and what steps read of each
//! agent's memory, from the changes its committed steps made. This is all a
//! coordinator starts from, so a resumed run goes on exactly where the last
//! committed turn left it.

use std::collections::{BTreeMap, HashMap};

use datafusion::prelude::{Expr, col, lit};
use futures::FutureExt;
use futures::future::BoxFuture;
use some_schemas::sim::{
    SimActionRow, SimAgentRow, SimInterventionRow, SimPostRow, SimStepRow, SimTurnRow, sim_actions, sim_agents, sim_posts, sim_steps,
    sim_turns,
};
use some_sim::agent::memory::{Held, Remembers};
use some_sim::evaluation::health::{StageHealth, stage_health};
use some_sim::evaluation::live::{self, Recent};
use some_sim::intervention::{self, Event};
use some_sim::platform::footprint::{Footprint, mb};
use some_sim::rows::actions_from_rows;
use some_sim::{AgentId, Memory, Persona, Platform, Turn};

use super::interventions::{self, Applied};
use super::shard::{read_results, uncommitted_steps};
use super::spec::{SimSpec, load_sim};
use super::work::{Agent, load_agents};
use crate::error::{Error, Result};
use crate::lake::Lake;

/// Where a run stands.
#[derive(Debug, Clone, Default)]
pub struct SimState {
    /// Every agent of the run, once all are set up (else empty).
    pub agents: Vec<Agent>,
    pub platform: Platform,
    /// What steps read of each agent's memory (the whole memory, for an
    /// interview or a review, is rebuilt by [`memories_of`]).
    pub memories: HashMap<AgentId, Held>,
    /// The turns committed so far, in order.
    pub turns: Vec<SimTurnRow>,
    /// Personas interventions changed, as they are now; sent with the
    /// agents' steps (workers know the personas as set up).
    pub changed: BTreeMap<AgentId, Persona>,
}

/// What a coordinator's state holds that grows with the turns run, in heap
/// bytes ([`SimState::footprint`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct StateFootprint {
    pub platform: Footprint,
    /// The agents' recalls, their map's slots included.
    pub recalls: usize,
}

impl std::fmt::Display for StateFootprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "platform {}: {}; recalls {}", mb(self.platform.bytes()), self.platform, mb(self.recalls))
    }
}

impl SimState {
    /// Counts what the platform and the recalls hold (a pass over both).
    pub fn footprint(&self) -> StateFootprint {
        let slots = self.memories.capacity() * (size_of::<(AgentId, Held)>() + 1);
        StateFootprint { platform: self.platform.footprint(), recalls: slots + self.memories.values().map(Held::heap_bytes).sum::<usize>() }
    }

    /// Applies the interventions `due` at the start of `turn` (the platform,
    /// the personas they change); returns what the turn commits for them.
    pub fn intervene(&mut self, spec: &SimSpec, turn: Turn, due: Vec<SimInterventionRow>) -> Result<Applied> {
        if due.is_empty() {
            return Ok(Applied::default());
        }
        let events = interventions::events(spec, &due)?;
        let outcomes = self.apply_events(turn, &events);
        Ok(interventions::applied_rows(spec, turn, due, &events, outcomes))
    }

    fn apply_events(&mut self, turn: Turn, events: &[Event]) -> Vec<intervention::Applied> {
        for e in events {
            if let Event::Persona { agent, .. } = e
                && let Some(a) = self.agents.get(*agent as usize)
            {
                self.changed.entry(a.persona.id).or_insert_with(|| a.persona.clone());
            }
        }
        let out = intervention::intervene(&mut self.platform, turn, events, &mut self.changed);
        for (id, persona) in &self.changed {
            if let Some(a) = self.agents.get_mut(id.0 as usize) {
                a.persona = persona.clone();
            }
        }
        out
    }

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
        SimState::load_until(lake, spec, None).await
    }

    /// Reads and replays the run up to committed turn `until` (all when
    /// `None`). A fork starts from its parent's state before its first
    /// turn, read the same way, and replays its own turns on top.
    pub async fn load_until(lake: &Lake, spec: &SimSpec, until: Option<Turn>) -> Result<SimState> {
        SimState::replay(lake, spec, until, true).await
    }

    /// [`SimState::load_until`] without the agents' recalls, for a reader
    /// that rebuilds the memories it needs itself (an interview).
    pub async fn load_platform_until(lake: &Lake, spec: &SimSpec, until: Option<Turn>) -> Result<SimState> {
        SimState::replay(lake, spec, until, false).await
    }

    fn replay<'a>(lake: &'a Lake, spec: &'a SimSpec, until: Option<Turn>, recalls: bool) -> BoxFuture<'a, Result<SimState>> {
        async move {
            let run = spec.run_id.as_str();
            let first = spec.first_turn();
            let last_wanted = until.map_or(i64::MAX, |t| i64::from(t.0));
            let ctx = lake.session().await?;
            let own = col(sim_turns::run_id).eq(lit(run)).and(col(sim_turns::turn).lt_eq(lit(last_wanted)));
            let mut turns: Vec<SimTurnRow> = lake.read(&ctx, Some(own)).await?;
            turns.sort_by_key(|t| t.turn);
            // A turn is committed by its one `sim_turns` row, and turns commit
            // in order; anything else was not written by a coordinator.
            if let Some((i, t)) = turns.iter().enumerate().find(|(i, t)| t.turn != i64::from(first.0) + *i as i64) {
                return Err(Error::Invalid(format!(
                    "sim_turns of run {run}: expected turn {}, found turn {} (a turn is missing or repeated)",
                    i64::from(first.0) + i as i64,
                    t.turn
                )));
            }
            let mut state = match &spec.fork {
                Some(fork) if first == Turn(0) => SimState::fresh(lake, spec, !turns.is_empty()).await?.ok_or_else(|| {
                    Error::Invalid(format!("run {run} shares the setup of run {}, whose agents are not all set up", fork.agents_run))
                })?,
                Some(fork) if until.is_some_and(|u| u < first) => {
                    return SimState::replay(lake, &load_sim(lake, &fork.parent).await?.spec, until, recalls).await;
                }
                Some(fork) => {
                    let parent = load_sim(lake, &fork.parent).await?.spec;
                    let base = SimState::replay(lake, &parent, Some(Turn(first.0 - 1)), recalls).await?;
                    if base.next_turn() != first {
                        return Err(Error::Invalid(format!(
                            "run {run} forks {} at turn {first}, but the parent has committed only {} turns",
                            fork.parent,
                            base.next_turn()
                        )));
                    }
                    base
                }
                None => match SimState::fresh(lake, spec, !turns.is_empty()).await? {
                    Some(state) => state,
                    None => return Ok(SimState { turns, ..SimState::default() }),
                },
            };
            let last = turns.last().map_or(i64::from(first.0) - 1, |t| t.turn);
            let filter = col(sim_actions::run_id).eq(lit(run)).and(col(sim_actions::turn).lt_eq(lit(last)));
            let rows: Vec<SimActionRow> = lake.read(&ctx, Some(filter)).await?;
            let mut replayed = actions_from_rows(rows).map_err(Error::Invalid)?.into_iter().peekable();
            let mut interventions = interventions::applied(lake, spec, last).await?;
            for t in turns {
                let turn = Turn(t.turn as u32);
                state.intervene(spec, turn, interventions.remove(&t.turn).unwrap_or_default())?;
                let actions = match replayed.peek() {
                    Some((at, _)) if *at == turn => replayed.next().map(|(_, a)| a).unwrap_or_default(),
                    _ => Vec::new(),
                };
                state.platform.apply_turn(turn, actions);
                let digest = state.platform.history_digest();
                if digest != t.state_digest {
                    return Err(Error::Invalid(format!(
                        "replaying turn {} of run {run} gives state {digest}, the lake recorded {}: its sim_actions or sim_interventions rows were changed, or written by another build",
                        t.turn, t.state_digest
                    )));
                }
                state.turns.push(t);
            }
            // A fork's own steps come after its parent's, which `base` holds.
            if recalls {
                fold_steps(lake, run, last + 1, None, &mut state.memories, |_, _, _| {}).await?;
            }
            Ok(state)
        }
        .boxed()
    }

    /// A run's agents as set up, on the platform they start on; `None` while
    /// not all are set up (an error if turns were committed all the same).
    async fn fresh(lake: &Lake, spec: &SimSpec, has_turns: bool) -> Result<Option<SimState>> {
        let run = spec.agents_run().as_str();
        let mut known = load_agents(lake, spec.agents_run()).await?;
        let n = spec.preset.agents();
        if (known.len() as u32) < n {
            if has_turns {
                return Err(Error::Invalid(format!("run {run} has committed turns but only {} of its {n} agents", known.len())));
            }
            return Ok(None);
        }
        let agents = (0..n)
            .map(|i| {
                known
                    .remove(&AgentId(i))
                    .ok_or_else(|| Error::Invalid(format!("sim_agents of run {run} lacks agent {i} (ids must be 0..{n})")))
            })
            .collect::<Result<Vec<Agent>>>()?;
        let platform = initial_platform(&agents)?;
        Ok(Some(SimState { agents, platform, ..SimState::default() }))
    }
}

/// Applies the memory changes of `run`'s steps before turn `end` (of the
/// agents `only`, every agent when `None`) to `memories`, in turn order;
/// `after` sees each agent's memory after each of its steps.
pub(crate) async fn fold_steps<M: Remembers>(
    lake: &Lake,
    run: &str,
    end: i64,
    only: Option<&[i64]>,
    memories: &mut HashMap<AgentId, M>,
    mut after: impl FnMut(AgentId, i64, &M),
) -> Result<()> {
    let mut filter = col(sim_steps::run_id).eq(lit(run)).and(col(sim_steps::turn).lt(lit(end)));
    if let Some(agents) = only {
        filter = filter.and(col(sim_steps::agent_id).in_list(agents.iter().map(|a| lit(*a)).collect(), false));
    }
    let mut steps: Vec<SimStepRow> = lake.read(&lake.session().await?, Some(filter)).await?;
    steps.sort_by_key(|s| (s.turn, s.agent_id));
    for s in steps {
        let agent = AgentId(s.agent_id as u32);
        let memory = memories.entry(agent).or_default();
        memory.absorb(&s.memory).map_err(|e| {
            Error::Invalid(format!("sim_steps of run {run}, turn {}, agent {agent}: the memory does not read: {e}", s.turn))
        })?;
        after(agent, s.turn, memory);
    }
    Ok(())
}

/// The whole memory of `agents` (every agent when `None`) after their
/// steps up to turn `until`, along the run's line: what an interview or a
/// review shows. `after` sees each agent's memory after each of its steps.
pub(crate) async fn memories_of(
    lake: &Lake,
    spec: &SimSpec,
    agents: Option<&[i64]>,
    until: Turn,
    mut after: impl FnMut(AgentId, i64, &Memory),
) -> Result<HashMap<AgentId, Memory>> {
    let end = i64::from(until.0) + 1;
    let mut memories = HashMap::new();
    for (parent, part_end) in lineage(lake, spec).await? {
        fold_steps(lake, parent.run_id.as_str(), end.min(i64::from(part_end.0)), agents, &mut memories, &mut after).await?;
    }
    fold_steps(lake, spec.run_id.as_str(), end, agents, &mut memories, &mut after).await?;
    Ok(memories)
}

/// Where a fork's history before its first turn comes from: each run of
/// its line with the turn its part ends before, oldest first; empty for a
/// run that is no fork.
pub async fn lineage(lake: &Lake, spec: &SimSpec) -> Result<Vec<(SimSpec, Turn)>> {
    let mut out = Vec::new();
    let mut at = spec.clone();
    while let Some(fork) = at.fork.clone() {
        let parent = load_sim(lake, &fork.parent).await?.spec;
        out.push((parent.clone(), fork.turn));
        at = parent;
    }
    out.reverse();
    Ok(out)
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
    let agents: Vec<SimAgentRow> = lake.read(&ctx, Some(col(sim_agents::run_id).eq(lit(spec.agents_run().as_str())))).await?;
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
    /// The turns this run committed so far, in order (a fork's from its first).
    pub turns: Vec<SimTurnRow>,
    /// The run's first own turn.
    pub first: Turn,
    pub agents_set_up: usize,
    pub setup_failed: usize,
    /// Agent steps already written for the turn not yet committed.
    pub steps_in_progress: usize,
}

impl SimGlance {
    /// The first turn not committed yet.
    pub fn next_turn(&self) -> Turn {
        Turn(self.first.0 + self.turns.len() as u32)
    }
}

/// Reads where a run stands from its `sim_turns` rows (in order), its
/// agents and the steps of the turn in progress.
pub async fn glance(lake: &Lake, spec: &SimSpec) -> Result<SimGlance> {
    let ctx = lake.session().await?;
    let mut turns: Vec<SimTurnRow> = lake.read(&ctx, Some(col(sim_turns::run_id).eq(lit(spec.run_id.as_str())))).await?;
    turns.sort_by_key(|t| t.turn);
    let first = spec.first_turn();
    let next = Turn(first.0 + turns.len() as u32);
    let (agents_set_up, setup_failed, steps_in_progress) = setup_and_steps(lake, spec, next).await?;
    Ok(SimGlance { turns, first, agents_set_up, setup_failed, steps_in_progress })
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
        let filter = col(sim_agents::run_id).eq(lit(spec.agents_run().as_str())).and(col(sim_agents::agent_id).in_list(authors, false));
        let agents: Vec<SimAgentRow> = lake.read(&ctx, Some(filter)).await?;
        agents.into_iter().map(|a| (a.agent_id, a.username)).collect()
    };
    r.describe_posts(&posts, &names);
    Ok(r)
}

/// Each stage's activity over the committed turns ([`some_sim::evaluation::health`]).
/// A fork's turns before its first are its parent's, not counted here.
pub async fn health(lake: &Lake, spec: &SimSpec, turns: &[SimTurnRow]) -> Result<Vec<StageHealth>> {
    let first = i64::from(spec.first_turn().0);
    let turns: Vec<SimTurnRow> = turns.iter().filter(|t| t.turn >= first).cloned().collect();
    let turns = turns.as_slice();
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
