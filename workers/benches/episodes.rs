//! Harness throughput: episodes per second of the in-process pipeline
//! (in-process queue, worker loop, agent loop, tools on the lake, scoring,
//! committing results) against an instant scripted model served over real
//! HTTP by `some llm serve`'s server, on the small world. The target is ≥ 500
//! episodes/s on 2 cores: the harness must never be what keeps a GPU idle.
//!
//! `cargo bench -p some-workers --bench episodes` (`SOME_BENCH_EPISODES`
//! sets how many, default 2,000).

use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use some_jobs::progress::NoProgress;
use some_jobs::synth::Scale;
use some_schemas::JobKind;
use some_workers::coordinator::publish_shards;
use some_workers::executor::{Executor, Look, Outcome, Work};
use some_workers::llm::ClientSettings;
use some_workers::queue::Queue;
use some_workers::runs::{RunSpec, plan_queries, read_run, record_event};
use some_workers::worker::WorkerConfig;

/// As the `some` binary allocates (see the workspace's Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As the `some` binary runs.
    some_workers::process::without_huge_pages();
    let n: usize = std::env::var("SOME_BENCH_EPISODES").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    let dir = tempfile::tempdir()?;
    let (lake, queries) = common::lake_with_world(dir.path(), Scale::Small).await?;
    let endpoint = common::instant_endpoint().await?;

    // An even mix of the tasks, as a full run has.
    let per_task = n.div_ceil(8);
    let planned = plan_queries(&queries, &[], Some(per_task), 0);
    let spec = RunSpec { shard_size: 100, concurrency: 32, ..RunSpec::new("bench".into(), "instant", vec![endpoint], planned.clone()) };
    record_event(&lake, &spec, some_schemas::RunEvent::Submitted).await?;
    let todo = spec.first_attempts();
    let config = WorkerConfig {
        concurrency: 4,
        deadline: Duration::from_secs(600),
        client: ClientSettings { concurrency: 128, ..Default::default() },
        threads: 1,
    };
    let started = Instant::now();
    let executor = Executor::here(&lake, config, Arc::new(NoProgress));
    let work = Work { kind: JobKind::Episode, phase: "episodes", units: todo.len() };
    let publish = |queue: Arc<dyn Queue>| {
        let (spec, todo) = (&spec, &todo);
        async move { publish_shards(queue.as_ref(), spec, todo, 1).await }
    };
    let outcome = executor.submit(work, publish, None::<fn() -> std::future::Ready<some_workers::Result<Look>>>).await?;
    let secs = started.elapsed().as_secs_f64();
    assert!(matches!(&outcome, Outcome::Settled(dead) if dead.is_empty()), "{outcome:?}");
    let finals = read_run(&lake, &spec.run_id).await?.finals(some_schemas::PRIMARY_JUDGING).len();
    assert_eq!(finals, todo.len(), "every query has one final result");
    println!("episodes: {finals} in {secs:.2} s: {:.0} episodes/s (target >= 500), results committed to the lake", finals as f64 / secs);
    Ok(())
}
