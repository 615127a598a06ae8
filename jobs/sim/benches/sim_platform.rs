//! The simulation's transport-free hot paths at the benchmark
//! scale (10,000 agents, one simulated week): ranking feeds with
//! mastodon_digest, applying a turn's actions, hashing the state. Prints
//! each figure and its share of the per-agent-turn budget that the
//! issue's target (5,000 active agent-turns/s) leaves, and the platform's
//! heap: what it holds after the week, per post and per post shown, and
//! how much it added in the last day (counted by the allocator, so the
//! same actions give the same bytes on any machine).
//!
//! `cargo bench -p some-sim --bench sim_platform`; `SOME_BENCH_AGENTS=N`
//! and `SOME_BENCH_TURNS=T` change the scale (6% of agents act per turn),
//! `SOME_BENCH_LOOK_BACK=none` ranks every post of the run, as a
//! simulation does by default.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rand::{Rng, SeedableRng};
use some_sim::{Action, AgentAction, AgentId, DigestIndex, FeedSettings, MastodonDigest, Platform, Turn, feed};

/// The system allocator, counting the bytes it holds.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        HELD.fetch_add(new_size, Ordering::Relaxed);
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn held_mb() -> f64 {
    HELD.load(Ordering::Relaxed) as f64 / 1e6
}

fn env_or(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

const TARGET_AGENT_TURNS_PER_S: f64 = 5_000.0;

fn main() {
    let (agents, turns) = (env_or("SOME_BENCH_AGENTS", 10_000), env_or("SOME_BENCH_TURNS", 168));
    // Active agents per turn: RecAgent-like levels (~6%).
    let active = agents * 6 / 100;
    let look_back = match std::env::var("SOME_BENCH_LOOK_BACK").as_deref() {
        Ok("none") => None,
        Ok(n) => Some(n.parse().expect("SOME_BENCH_LOOK_BACK is a number of turns or `none`")),
        Err(_) => Some(24),
    };
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let empty = held_mb();
    let mut platform = Platform::new();
    (0..agents).for_each(|a| platform.register(AgentId(a)));
    let settings = FeedSettings { look_back_turns: look_back, limit: 10, ..FeedSettings::default() };
    let (mut shown_n, mut day_before) = (0u64, empty);
    let ranker = MastodonDigest::default();
    let (mut feed_s, mut generic_s, mut apply_s, mut agent_turns, mut actions_n, mut posts) = (0f64, 0f64, 0f64, 0u64, 0u64, 0u64);
    for t in 0..turns {
        let turn = Turn(t);
        if t + 24 == turns {
            day_before = held_mb();
        }
        let mut actions = Vec::new();
        let viewers: Vec<AgentId> =
            (0..active).map(|i| AgentId(((u64::from(t) * 7919 + u64::from(i) * 104_729) % u64::from(agents)) as u32)).collect();
        let start = Instant::now();
        let mut shown = Vec::new();
        if let Some(index) = DigestIndex::build(&platform, ranker, turn, &settings, None) {
            shown.extend(viewers.iter().map(|a| (*a, index.feed(&platform, *a))));
        }
        feed_s += start.elapsed().as_secs_f64();
        // The generic path, on 60 of the viewers (it is the slow one).
        let start = Instant::now();
        let every = (shown.len() / 60).max(1);
        for (agent, indexed) in shown.iter().step_by(every) {
            assert_eq!(&feed(&platform, &ranker, *agent, turn, &settings, None), indexed, "the index and the generic feed agree");
        }
        generic_s += start.elapsed().as_secs_f64() * every as f64;
        for (agent, f) in shown {
            let mut seq = 0;
            let mut act = |action| {
                actions.push(AgentAction { agent, seq, action });
                seq += 1;
            };
            shown_n += f.len() as u64;
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
                act(Action::Follow { agent: AgentId(rng.random_range(0..agents)) });
            }
        }
        actions_n += actions.len() as u64;
        agent_turns += u64::from(active);
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
    let held = held_mb() - empty;
    let window = look_back.map_or("every post of the run".to_string(), |n| format!("{n}-turn window"));
    println!("sim_platform: {agents} agents, {turns} turns, {agent_turns} agent-turns, {actions_n} actions, {posts} posts");
    let generic_us = generic_s * 1e6 / agent_turns as f64;
    println!(
        "  feed ranking (mastodon_digest, {window}), index built once per turn: {feed_us:.1} µs per agent-turn ({:.1}% of the {budget_us:.0} µs budget)",
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
    println!(
        "  platform heap: {held:.1} MB after the week ({:.0} bytes per post, {:.0} per post shown), {:.1} MB of it added in the last 24 turns",
        held * 1e6 / posts as f64,
        held * 1e6 / shown_n as f64,
        held_mb() - day_before
    );
}
