//! Distributed throughput: all 17,869 real queries on the paper-scale world,
//! through RabbitMQ, with 2 worker processes of the release `some` binary,
//! against an instant scripted model over HTTP. Prints episodes/s (target
//! ≥ 300 on this 2-core machine).
//!
//! Needs RabbitMQ on 127.0.0.1:5672 (infra/local.sh or infra/test.sh start
//! it) and `cargo build --release -p some` first.
//! `cargo bench -p some-workers --bench distributed`; `SOME_BENCH_SCALE=small`
//! for a quick run, `SOME_BENCH_QUEUE` for another broker.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use some_jobs::synth::Scale;
use some_schemas::RunId;
use some_workers::coordinator::publish_shards;
use some_workers::runs::progress::progress;
use some_workers::runs::{RunSpec, plan_queries, record_event};

/// As the `some` binary allocates (see the workspace's Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // As the `some` binary runs.
    some_workers::process::without_huge_pages();
    let scale: Scale = std::env::var("SOME_BENCH_SCALE").unwrap_or_else(|_| "paper".into()).parse()?;
    let queue_url = std::env::var("SOME_BENCH_QUEUE").unwrap_or_else(|_| "amqp://guest:guest@127.0.0.1:5672/%2f".into());
    let target = std::env::var("CARGO_TARGET_DIR").map(std::path::PathBuf::from).unwrap_or_else(|_| "target".into());
    let bin = std::env::var("SOME_BIN").map(std::path::PathBuf::from).unwrap_or_else(|_| target.join("release/some"));
    if !bin.is_file() {
        return Err(format!("{} is missing: run `cargo build --release -p some` first (or set SOME_BIN)", bin.display()).into());
    }
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let (lake, queries) = common::lake_with_world(dir.path(), scale).await?;
    println!("world ({scale:?}) written in {:.1} s", started.elapsed().as_secs_f64());
    let endpoint = common::instant_endpoint().await?;
    let queue = some_workers::queue::open(&queue_url.parse()?).await?;

    let planned = plan_queries(&queries, &[], None, 0);
    let spec = RunSpec {
        shard_size: 100,
        concurrency: 32,
        ..RunSpec::new(RunId(format!("bench-{}", std::process::id())), "instant", vec![endpoint], planned.clone())
    };
    record_event(&lake, &spec, some_schemas::RunEvent::Submitted).await?;
    let lake_dir = dir.path().join("lake");
    let workers: Vec<_> = (0..2)
        .map(|_| {
            Command::new(&bin)
                .args([
                    "--lake",
                    lake_dir.to_str().expect("utf-8 path"),
                    "worker",
                    "--queue",
                    &queue_url,
                    "--concurrency",
                    "4",
                    "--calls",
                    "128",
                ])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
        })
        .collect::<Result<_, _>>()?;
    let started = Instant::now();
    let todo = spec.first_attempts();
    publish_shards(queue.as_ref(), &spec, &todo, 1).await?;
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let p = progress(&lake, &spec, false, None).await?;
        if p.finished() + p.tasks.values().map(|t| t.failed).sum::<usize>() >= planned.len() {
            break;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    for mut w in workers {
        let _ = w.kill();
        let _ = w.wait();
    }
    let p = progress(&lake, &spec, false, None).await?;
    println!(
        "distributed: {} queries, {} final, through RabbitMQ with 2 workers in {secs:.1} s: {:.0} episodes/s (target >= 300)",
        planned.len(),
        p.finished(),
        p.finished() as f64 / secs
    );
    Ok(())
}
