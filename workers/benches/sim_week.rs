//! Simulation throughput: 10,000 agents for one simulated week (168 turns:
//! seeding, then two stages of 84) against an instant scripted model over
//! HTTP, through the in-process queue and then through RabbitMQ with 2
//! worker processes of the release `some` binary. Prints active
//! agent-turns/s (targets: >= 15,000 at 10,000 agents for a week, 16,000
//! at a million) and the share of the turn time spent ranking feeds and
//! committing turns (target: together < 15%): the time turns waited for
//! them; a turn's files are written while the next turn's steps run, and
//! that time is printed apart.
//!
//! Before the week it measures the ceiling the model calls alone put on
//! it: the same client calls the same server with a 10-post feed question
//! at the week's concurrency, with no simulation around the calls. With
//! the calls per agent-turn the week counts (and their mean prompt size,
//! to compare), that bounds the agent-turns/s this machine can reach
//! in-process, where one process plays both sides (through RabbitMQ the
//! clients are the worker processes', 2 × 256 calls in flight).
//!
//! Every `SOME_BENCH_EVERY` turns (default 24) it prints the window's
//! agent-turns/s and the process's resident memory, so a rate or a size
//! that grows with the turns already run shows; at the end, the peak, and
//! the coordinator's state part by part.
//!
//! `cargo bench -p some-workers --bench sim_week`; `SOME_BENCH_AGENTS` and
//! `SOME_BENCH_TURNS` for a smaller run, `SOME_BENCH_SHARD_SIZE` for
//! another shard size (default 250), `SOME_BENCH_QUEUE` for another
//! broker, `SOME_BENCH_MODES=memory` to skip RabbitMQ.

use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use some_jobs::chat::{ChatModel, ChatResponse};
use some_jobs::progress::{NoProgress, Progress};
use some_jobs::testing::ScriptedModel;
use some_schemas::sim::AgentKind;
use some_schemas::{RunEvent, RunId};
use some_sim::agent::activity::Stage;
use some_sim::agent::{decide_feed, persona_sets};
use some_sim::testing::sim_answer;
use some_sim::{AgentId, BrowseMode, FeedPost, PostId, Preset};
use some_workers::executor::Executor;
use some_workers::llm::serve::{MAX_REQUEST_BYTES, Served, serve};
use some_workers::llm::{ClientSettings, Endpoint, OpenAiClient};
use some_workers::sim::{PersonaSet, RelevanceSource, SimSpec, Until, drive, record_event};
use some_workers::worker::WorkerConfig;
use some_workers::{Lake, LakeLocation};

/// As the `some` binary allocates (see the workspace's Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Prints a line every `every` turns: the window's agent-turns/s and the
/// resident memory (the coordinator's; in-process, the workers' too).
struct Pulse {
    every: u32,
    window: Mutex<(Instant, u64, u32)>,
}

impl Progress for Pulse {
    fn phase(&self, name: &str, total: Option<u64>) {
        let Some(turn) = name.strip_prefix("turn ").and_then(|t| t.parse::<u32>().ok()) else { return };
        let mut w = self.window.lock().expect("pulse lock");
        if turn > 0 && turn % self.every == 0 {
            let secs = w.0.elapsed().as_secs_f64();
            println!(
                "  turns {}-{}: {} agent-turns, {:.0}/s; resident {:.2} GB",
                turn - w.2,
                turn - 1,
                w.1,
                w.1 as f64 / secs.max(1e-9),
                memory_gb("VmRSS")
            );
            *w = (Instant::now(), 0, 0);
        }
        w.1 += total.unwrap_or(0);
        w.2 += 1;
    }
    fn advance(&self, _: u64) {}
}

/// A figure of /proc/self/status in GB (VmRSS now, VmHWM the peak).
fn memory_gb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kb = status.lines().find(|l| l.starts_with(field)).and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<f64>().ok());
    kb.unwrap_or(0.0) / 1e6
}

/// Shards a worker runs at once in the week.
const SHARDS_AT_ONCE: usize = 4;
/// Agents of a shard stepping at once.
const AGENTS_AT_ONCE: usize = 64;
/// Calls in flight per worker in the week (a step asks one question at a time).
const IN_FLIGHT: usize = SHARDS_AT_ONCE * AGENTS_AT_ONCE;

/// Chat calls/s of `calls` feed questions (10 posts, a built-in persona)
/// sent to `endpoint` by [`IN_FLIGHT`] tasks sharing one client, and the
/// question's prompt size in characters.
async fn endpoint_alone(endpoint: &str, calls: usize) -> Result<(f64, usize), Box<dyn std::error::Error>> {
    let settings = ClientSettings { concurrency: IN_FLIGHT, ..Default::default() };
    let client = Arc::new(OpenAiClient::new("instant", vec![Endpoint::new(endpoint)], settings)?);
    let persona = persona_sets::builtin_recagent().first().map(|p| p.full_text()).unwrap_or_default();
    let post = "A quiet morning at the market: fresh bread, a street musician and far too many people with the same idea. ".repeat(2);
    let feed: Vec<FeedPost> = (0..10).map(|i| FeedPost { id: PostId(i), author: AgentId(i as u32 * 7), content: post.clone() }).collect();
    let question = decide_feed::question(&persona, &feed, (3, 1, 1));
    let prompt_chars = question.prompt.chars().count();
    let request = Arc::new(question.into_request(Some(1)));
    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..IN_FLIGHT)
        .map(|_| {
            let (client, request, next) = (client.clone(), request.clone(), next.clone());
            tokio::spawn(async move {
                while next.fetch_add(1, Ordering::Relaxed) < calls {
                    client.chat(&request).await?;
                }
                Ok::<_, some_jobs::chat::ModelError>(())
            })
        })
        .collect();
    for task in tasks {
        task.await??;
    }
    Ok((calls as f64 / started.elapsed().as_secs_f64().max(1e-9), prompt_chars))
}

fn env(name: &str, default: u32) -> u32 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As the `some` binary runs.
    some_workers::process::without_huge_pages();
    let agents = env("SOME_BENCH_AGENTS", 10_000);
    let turns = env("SOME_BENCH_TURNS", 168);
    let every = env("SOME_BENCH_EVERY", 24).max(1);
    let modes = std::env::var("SOME_BENCH_MODES").unwrap_or_else(|_| "memory,amqp".into());
    let queue_url = std::env::var("SOME_BENCH_QUEUE").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
    // Calls served, and their prompts' characters.
    let served = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let counted = served.clone();
    let model = ScriptedModel::new("instant", move |request| {
        let prompt = request.messages.last().map(|m| m.content.as_str()).unwrap_or_default();
        counted.0.fetch_add(1, Ordering::Relaxed);
        counted.1.fetch_add(prompt.chars().count() as u64, Ordering::Relaxed);
        Ok(ChatResponse { content: sim_answer(prompt), model: "instant".into(), ..Default::default() })
    })
    .unrecorded();
    let addr: SocketAddr = serve(
        Served { chat: Arc::new(model), embedder: None },
        "127.0.0.1:0".parse()?,
        &some_workers::access::Access::open(MAX_REQUEST_BYTES),
        std::future::pending(),
    )
    .await?;
    let endpoint = format!("http://{addr}/v1");
    let alone_calls = env("SOME_BENCH_ALONE_CALLS", 100_000) as usize;
    let (alone, alone_chars) = endpoint_alone(&endpoint, alone_calls).await?;
    println!(
        "endpoint alone: {alone_calls} feed questions ({alone_chars}-character prompts) over HTTP at {IN_FLIGHT} in flight, no simulation: {alone:.0} calls/s on this machine"
    );
    let served_now = || (served.0.load(Ordering::Relaxed), served.1.load(Ordering::Relaxed));
    let initial = agents / 10;
    let stage = |turns, browsing_authors| Stage { turns, acting: AgentKind::Regular, browsing_authors };
    let preset = Preset {
        initial_agents: initial,
        regular_agents: agents - initial,
        seed_posts: initial * 2,
        stages: vec![stage(turns / 2, AgentKind::Initial), stage(turns - turns / 2, AgentKind::Regular)],
        pareto_alpha: 2.0,
    };
    for mode in modes.split(',') {
        let dir = tempfile::tempdir()?;
        let lake = Lake::open(&LakeLocation::Local(dir.path().join("lake"))).await?;
        let mut spec = SimSpec::new(RunId(format!("bench-{mode}")), "instant", vec![endpoint.clone()], preset.clone(), PersonaSet::Builtin);
        spec.enrich = false;
        spec.knowledge = some_workers::sim::KnowledgeSource::None;
        spec.relevance = RelevanceSource::Tfidf;
        spec.step.browse = BrowseMode::Batched;
        spec.shard_size = env("SOME_BENCH_SHARD_SIZE", 250) as usize;
        spec.concurrency = AGENTS_AT_ONCE;
        record_event(&lake, &spec, RunEvent::Submitted).await?;
        let config = WorkerConfig {
            concurrency: SHARDS_AT_ONCE,
            deadline: std::time::Duration::from_secs(600),
            client: some_workers::llm::ClientSettings { concurrency: IN_FLIGHT, ..Default::default() },
            threads: 1,
        };
        // Setup (planning every agent) first, so the week is timed alone.
        let setup = Until { turn: Some(some_sim::Turn(0)) };
        let (week, setup_secs, secs, before) = if mode == "memory" {
            let started = Instant::now();
            Executor::here(&lake, config.clone(), Arc::new(NoProgress)).simulate(&spec, setup).await?;
            let setup_secs = started.elapsed().as_secs_f64();
            let (started, before) = (Instant::now(), served_now());
            let pulse = Arc::new(Pulse { every, window: Mutex::new((Instant::now(), 0, 0)) });
            let week = Executor::here(&lake, config, pulse).simulate(&spec, Until::default()).await?;
            let secs = started.elapsed().as_secs_f64();
            (week, setup_secs, secs, before)
        } else {
            let target = std::env::var("CARGO_TARGET_DIR").map(std::path::PathBuf::from).unwrap_or_else(|_| "target".into());
            let bin = std::env::var("SOME_BIN").map(std::path::PathBuf::from).unwrap_or_else(|_| target.join("release/some"));
            if !bin.is_file() {
                return Err(format!("{} is missing: run `cargo build --release -p some` first (or set SOME_BIN)", bin.display()).into());
            }
            let queue = some_workers::queue::open(&queue_url.parse()?).await?;
            let lake_dir = dir.path().join("lake");
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    Command::new(&bin)
                        .args(["--lake", lake_dir.to_str().expect("utf-8 path"), "worker", "--queue", &queue_url])
                        .args(["--concurrency", &SHARDS_AT_ONCE.to_string(), "--calls", &IN_FLIGHT.to_string()])
                        .stdout(Stdio::null())
                        .stderr(Stdio::null())
                        .spawn()
                })
                .collect::<Result<_, _>>()?;
            let started = Instant::now();
            drive(&lake, queue.as_ref(), &spec, setup, &NoProgress).await?;
            let setup_secs = started.elapsed().as_secs_f64();
            let (started, before) = (Instant::now(), served_now());
            let pulse = Pulse { every, window: Mutex::new((Instant::now(), 0, 0)) };
            let week = drive(&lake, queue.as_ref(), &spec, Until::default(), &pulse).await?;
            let secs = started.elapsed().as_secs_f64();
            for mut w in workers {
                let _ = w.kill();
                let _ = w.wait();
            }
            (week, setup_secs, secs, before)
        };
        let per_turn = |d: std::time::Duration| d.as_secs_f64() * 1000.0 / f64::from(week.turns.max(1));
        let share = (week.feed_time + week.commit_time).as_secs_f64() / secs.max(1e-9) * 100.0;
        let after = served_now();
        let (calls, chars) = (after.0 - before.0, after.1 - before.1);
        let per_agent_turn = calls as f64 / (week.agent_turns as f64).max(1.0);
        let mean_chars = chars as f64 / (calls as f64).max(1.0);
        println!(
            "sim {mode}: {agents} agents set up in {setup_secs:.1} s; {} turns, {} active agent-turns in {secs:.1} s: {:.0} agent-turns/s (target >= 15,000 at 10,000 agents, 16,000 at a million); per turn: feeds {:.1} ms, steps {:.1} ms, commit {:.1} ms (of which applying the steps {:.1} ms; and {:.1} ms written beside the next turn's steps); feeds + commits {share:.1}% of the week (target < 15%); peak resident {:.2} GB (this process{}); {per_agent_turn:.2} model calls per agent-turn (mean prompt {mean_chars:.0} characters), so the endpoint alone allows {:.0} agent-turns/s",
            week.turns,
            week.agent_turns,
            week.agent_turns as f64 / secs.max(1e-9),
            per_turn(week.feed_time),
            per_turn(week.step_time),
            per_turn(week.commit_time),
            per_turn(week.apply_time),
            per_turn(week.commit_behind),
            memory_gb("VmHWM"),
            if mode == "memory" { ", workers included" } else { ": the coordinator" },
            alone / per_agent_turn.max(1e-9),
        );
        if let Some(held) = &week.footprint {
            println!(
                "  what grows with the turns, at the end (counted; resident also holds the personas, plans and allocator slack): {held}"
            );
        }
    }
    Ok(())
}
