//! The simulation's transport-free hot paths at the benchmark
//! scale (10,000 agents, one simulated week): ranking feeds with
//! mastodon_digest, applying a turn's actions, hashing the state. Prints
//! each figure and its share of the per-agent-turn budget that the
//! issue's target (5,000 active agent-turns/s) leaves.
//!
//! `cargo bench -p some-jobs --bench sim_platform`

use std::time::Instant;

use rand::{Rng, SeedableRng};
use some_sim::{Action, AgentAction, AgentId, DigestIndex, FeedSettings, MastodonDigest, Platform, Turn, feed};

const AGENTS: u32 = 10_000;
const TURNS: u32 = 168;
/// Active agents per turn: the 10,000 agents at RecAgent-like levels (~6%).
const ACTIVE: u32 = 600;
const TARGET_AGENT_TURNS_PER_S: f64 = 5_000.0;

fn main() {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let mut platform = Platform::new();
    (0..AGENTS).for_each(|a| platform.register(AgentId(a)));
    let settings = FeedSettings { look_back_turns: Some(24), limit: 10, ..FeedSettings::default() };
    let ranker = MastodonDigest::default();
    let (mut feed_s, mut generic_s, mut apply_s, mut agent_turns, mut actions_n, mut posts) = (0f64, 0f64, 0f64, 0u64, 0u64, 0u64);
    for t in 0..TURNS {
        let turn = Turn(t);
        let mut actions = Vec::new();
        let viewers: Vec<AgentId> = (0..ACTIVE).map(|i| AgentId((t * 7919 + i * 104_729) % AGENTS)).collect();
        let start = Instant::now();
        let mut shown = Vec::new();
        if let Some(index) = DigestIndex::build(&platform, ranker, turn, &settings, None) {
            shown.extend(viewers.iter().map(|a| (*a, index.feed(&platform, *a))));
        }
        feed_s += start.elapsed().as_secs_f64();
        // The generic path, on a tenth of the viewers (it is the slow one).
        let start = Instant::now();
        for (agent, indexed) in shown.iter().step_by(10) {
            assert_eq!(&feed(&platform, &ranker, *agent, turn, &settings, None), indexed, "the index and the generic feed agree");
        }
        generic_s += start.elapsed().as_secs_f64() * 10.0;
        for (agent, f) in shown {
            let mut seq = 0;
            let mut act = |action| {
                actions.push(AgentAction { agent, seq, action });
                seq += 1;
            };
            if !f.is_empty() {
                act(Action::Browse { posts: f.iter().map(|r| r.post).collect() });
            }
            for r in &f {
                if rng.random::<f64>() < 0.3 {
                    act(Action::Like { post: r.post });
                }
                if rng.random::<f64>() < 0.1 {
                    act(Action::Reblog { post: r.post });
                }
                if rng.random::<f64>() < 0.05 {
                    act(Action::Comment { post: r.post, text: "Interesting take on this.".into() });
                }
            }
            if rng.random::<f64>() < 0.25 {
                act(Action::Post { text: format!("A post about topic {} from agent {}", rng.random::<u16>(), agent) });
                posts += 1;
            }
            if rng.random::<f64>() < 0.02 {
                act(Action::Follow { agent: AgentId(rng.random_range(0..AGENTS)) });
            }
        }
        actions_n += actions.len() as u64;
        agent_turns += u64::from(ACTIVE);
        let start = Instant::now();
        platform.apply_turn(turn, actions);
        apply_s += start.elapsed().as_secs_f64();
    }
    let start = Instant::now();
    let digest = platform.digest();
    let digest_s = start.elapsed().as_secs_f64();
    let budget_us = 1e6 / TARGET_AGENT_TURNS_PER_S;
    let feed_us = feed_s * 1e6 / agent_turns as f64;
    let apply_us = apply_s * 1e6 / agent_turns as f64;
    println!("sim_platform: {AGENTS} agents, {TURNS} turns, {agent_turns} agent-turns, {actions_n} actions, {posts} posts");
    let generic_us = generic_s * 1e6 / agent_turns as f64;
    println!(
        "  feed ranking (mastodon_digest, 24-turn window), index built once per turn: {feed_us:.1} µs per agent-turn ({:.1}% of the {budget_us:.0} µs budget)",
        100.0 * feed_us / budget_us
    );
    println!(
        "  feed ranking, generic path (candidates per viewer): {generic_us:.1} µs per agent-turn ({:.1}x the index)",
        generic_us / feed_us
    );
    println!(
        "  apply_turn: {apply_us:.1} µs per agent-turn ({:.2} µs per action; {:.1}% of the budget)",
        apply_s * 1e6 / actions_n as f64,
        100.0 * apply_us / budget_us
    );
    println!("  full-state digest of the final state: {:.1} ms ({})", digest_s * 1e3, &digest[..12]);
    println!("  history digest (chained per turn, included in apply_turn): {}", &platform.history_digest()[..12]);
}
