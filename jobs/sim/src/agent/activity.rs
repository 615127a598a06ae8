//! Time and activation: who acts in which one-hour turn, and the paper's
//! experiment as a preset.
//!
//! Activity levels follow RecAgent's code (`simulator.py`): draw
//! `numpy.random.pareto(a, n)` (a Lomax variate, `U^(-1/a) - 1`) per agent
//! and divide by the largest, so the most active agent has level 1. The
//! paper's shape parameter is α = 2 (RecAgent uses `active_prob * 10`).
//!
//! Combining the level with the plan (the paper feeds the level into plan
//! generation and lets the plan decide times; it does not say more): an
//! agent is active in a turn when the turn falls in its plan's daily browse
//! window or, on a posting day, in its posting window; outside them it
//! still comes by with probability equal to its level (RecAgent's per-round
//! activation). The draw for (agent, turn) is a hash of (seed, agent, turn),
//! so activation does not depend on the order agents are visited or on how
//! a turn is sharded, and a resumed run draws the same.

use rand::Rng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use some_schemas::sim::AgentKind;

use crate::agent::plan::Plan;
use crate::platform::ids::{AgentId, TURNS_PER_WEEK, Turn};

/// Activity levels in (0, 1] for `n` agents, the largest exactly 1.
pub fn pareto_levels(n: usize, alpha: f64, seed: u64) -> Vec<f64> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let draws: Vec<f64> = (0..n)
        .map(|_| {
            // 1 - [0, 1) is (0, 1], so the power is finite.
            let u: f64 = 1.0 - rng.random::<f64>();
            u.powf(-1.0 / alpha) - 1.0
        })
        .collect();
    let max = draws.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return vec![1.0; n];
    }
    draws.into_iter().map(|x| x / max).collect()
}

/// A number fixed by (seed, agent, turn) (SplitMix64): the activation
/// draw, and the sampling seed of an agent's model calls in a turn.
pub fn mix(seed: u64, agent: AgentId, turn: Turn) -> u64 {
    let mut z = seed ^ ((u64::from(agent.0) << 32) | u64::from(turn.0)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for _ in 0..2 {
        z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
    }
    z
}

/// A uniform number in [0, 1) fixed by (seed, agent, turn).
pub fn draw(seed: u64, agent: AgentId, turn: Turn) -> f64 {
    (mix(seed, agent, turn) >> 11) as f64 / (1u64 << 53) as f64
}

/// Whether an agent acts in a turn, and whether it may post then.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Activation {
    pub active: bool,
    pub posting: bool,
}

/// The activation of one agent in one turn (see the module doc).
pub fn activation(seed: u64, agent: AgentId, level: f64, plan: &Plan, turn: Turn) -> Activation {
    let posting = plan.posting_at(turn);
    let active = posting || plan.browsing_at(turn) || draw(seed, agent, turn) < level;
    Activation { active, posting }
}

/// What part of a run a turn belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Initial agents publish the seed posts.
    Seeding,
    /// An interaction stage, numbered from 1.
    Stage(u32),
}

/// A stage: who acts, and whose posts they are shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub turns: u32,
    pub acting: AgentKind,
    pub browsing_authors: AgentKind,
}

/// A simulation's shape: agent counts, seeding, stages, activity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Preset {
    pub initial_agents: u32,
    pub regular_agents: u32,
    /// Seed posts in all, spread evenly over the initial agents.
    pub seed_posts: u32,
    pub stages: Vec<Stage>,
    pub pareto_alpha: f64,
}

impl Preset {
    /// The paper's experiment (§4.1): 150 initial and 300 regular agents;
    /// the sandbox starts empty and the initial agents publish 1,050 posts;
    /// then two one-week stages in which regular agents act, shown the
    /// initial agents' posts in the first (their own new posts are not
    /// shown) and the regular agents' posts in the second. α = 2.
    ///
    /// Seeding is one turn (turn 0); stage one is turns 1-168 and stage two
    /// 169-336.
    pub fn paper() -> Preset {
        let stage = |browsing_authors| Stage { turns: TURNS_PER_WEEK, acting: AgentKind::Regular, browsing_authors };
        Preset {
            initial_agents: 150,
            regular_agents: 300,
            seed_posts: 1050,
            stages: vec![stage(AgentKind::Initial), stage(AgentKind::Regular)],
            pareto_alpha: 2.0,
        }
    }

    /// A handful of agents for a few turns, for the demo and smoke tests:
    /// 3 initial agents with a seed post each, 3 regular agents, two stages
    /// of 2 turns. The turns are the small hours of Monday, when few plans
    /// browse: the most active agent (level 1) acts in every turn.
    pub fn demo() -> Preset {
        let stage = |browsing_authors| Stage { turns: 2, acting: AgentKind::Regular, browsing_authors };
        Preset {
            initial_agents: 3,
            regular_agents: 3,
            seed_posts: 3,
            stages: vec![stage(AgentKind::Initial), stage(AgentKind::Regular)],
            pareto_alpha: 2.0,
        }
    }

    pub fn agents(&self) -> u32 {
        self.initial_agents + self.regular_agents
    }

    /// Agents `0..initial_agents` are initial, the rest regular.
    pub fn kind_of(&self, agent: AgentId) -> AgentKind {
        if agent.0 < self.initial_agents { AgentKind::Initial } else { AgentKind::Regular }
    }

    /// Seed posts of one initial agent: the total spread evenly, the first
    /// agents taking one more when it does not divide.
    pub fn seed_posts_of(&self, agent: AgentId) -> u32 {
        if self.kind_of(agent) != AgentKind::Initial || self.initial_agents == 0 {
            return 0;
        }
        let (each, extra) = (self.seed_posts / self.initial_agents, self.seed_posts % self.initial_agents);
        each + u32::from(agent.0 < extra)
    }

    /// Turns in the whole run, seeding included.
    pub fn turns(&self) -> u32 {
        1 + self.stages.iter().map(|s| s.turns).sum::<u32>()
    }

    /// The phase of a turn; `None` past the end.
    pub fn phase(&self, turn: Turn) -> Option<Phase> {
        if turn.0 == 0 {
            return Some(Phase::Seeding);
        }
        let mut start = 1;
        for (i, s) in self.stages.iter().enumerate() {
            if turn.0 < start + s.turns {
                return Some(Phase::Stage(i as u32 + 1));
            }
            start += s.turns;
        }
        None
    }

    /// The stage definition of a phase.
    pub fn stage(&self, phase: Phase) -> Option<&Stage> {
        match phase {
            Phase::Seeding => None,
            Phase::Stage(n) => self.stages.get(n.checked_sub(1)? as usize),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::plan::Plan;

    #[test]
    fn pareto_levels_are_seeded_normalised_and_long_tailed() {
        let a = pareto_levels(450, 2.0, 7);
        assert_eq!(a, pareto_levels(450, 2.0, 7));
        assert_ne!(a, pareto_levels(450, 2.0, 8));
        assert_eq!(a.iter().copied().fold(0.0, f64::max), 1.0);
        assert!(a.iter().all(|x| *x > 0.0 && *x <= 1.0));
        let mean = a.iter().sum::<f64>() / a.len() as f64;
        let median = {
            let mut s = a.clone();
            s.sort_by(f64::total_cmp);
            s[225]
        };
        assert!(mean < 0.2 && median < mean, "long tail: mean {mean}, median {median}");
    }

    #[test]
    fn draws_are_uniform_and_fixed_by_seed_agent_and_turn() {
        assert_eq!(draw(1, AgentId(3), Turn(5)), draw(1, AgentId(3), Turn(5)));
        assert_ne!(draw(1, AgentId(3), Turn(5)), draw(1, AgentId(5), Turn(3)));
        let n = 100_000;
        let mean = (0..n).map(|i| draw(9, AgentId(i % 1000), Turn(i / 1000))).sum::<f64>() / f64::from(n);
        assert!((mean - 0.5).abs() < 0.01, "{mean}");
    }

    #[test]
    fn activation_combines_the_plan_windows_with_the_level() {
        let plan = Plan::parse("Browse time: 20:00-21:00\nPost time: 19:00-20:00\nPost day: Tuesday\nLike probability: 60%\nReblog probability: 30%\nComment probability: 20%\nPosts per week: 2").unwrap();
        let tuesday_19 = Turn(24 + 19);
        assert_eq!(activation(1, AgentId(0), 0.0, &plan, tuesday_19), Activation { active: true, posting: true });
        assert_eq!(activation(1, AgentId(0), 0.0, &plan, Turn(20)), Activation { active: true, posting: false });
        assert_eq!(activation(1, AgentId(0), 0.0, &plan, Turn(19)), Activation { active: false, posting: false });
        assert!(activation(1, AgentId(0), 1.0, &plan, Turn(3)).active);
    }

    #[test]
    fn the_paper_preset_is_the_papers_experiment() {
        let p = Preset::paper();
        assert_eq!((p.agents(), p.turns(), p.pareto_alpha), (450, 337, 2.0));
        assert_eq!((0..450).map(|a| p.seed_posts_of(AgentId(a))).sum::<u32>(), 1050);
        assert_eq!((p.seed_posts_of(AgentId(0)), p.seed_posts_of(AgentId(200))), (7, 0));
        assert_eq!(
            [0, 1, 168, 169, 336, 337].map(|t| p.phase(Turn(t))),
            [Some(Phase::Seeding), Some(Phase::Stage(1)), Some(Phase::Stage(1)), Some(Phase::Stage(2)), Some(Phase::Stage(2)), None]
        );
        assert_eq!(p.stage(Phase::Stage(1)).unwrap().browsing_authors, AgentKind::Initial);
        assert_eq!(p.stage(Phase::Stage(2)).unwrap().browsing_authors, AgentKind::Regular);
        assert_eq!((p.kind_of(AgentId(149)), p.kind_of(AgentId(150))), (AgentKind::Initial, AgentKind::Regular));
    }
}
