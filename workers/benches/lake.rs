//! Lake benchmarks at the paper's scale, printed as figures:
//!
//! 1. `some synth --scale paper` throughput: posts generated, encoded and
//!    committed per second (target ≥ 200,000 posts/s on 2 cores).
//! 2. The latency of a SearchPost-shaped read (one location, one hour) over
//!    that lake (target: median < 50 ms).
//!
//! `cargo bench -p some-workers --bench lake`. The lake is written under
//! `$SOME_BENCH_DIR` (default: a temporary folder) and removed afterwards
//! unless `SOME_BENCH_KEEP=1`.

use std::sync::Arc;
use std::time::Instant;

use datafusion::prelude::{col, lit};
use some_jobs::progress::NoProgress;
use some_jobs::queries::read_bundled;
use some_jobs::synth::{Scale, SynthConfig, World};
use some_schemas::{Task, buckets, posts};
use some_workers::world::{ingest_queries, write_world};
use some_workers::{Lake, LakeLocation};

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::var("SOME_BENCH_DIR").map(std::path::PathBuf::from).unwrap_or_else(|_| std::env::temp_dir());
    let dir = tempfile::tempdir_in(base)?;
    let lake = Lake::open(&LakeLocation::Local(dir.path().join("lake"))).await?;
    let queries = read_bundled()?;
    ingest_queries(&lake, queries.clone()).await?;

    let planned = Instant::now();
    let world = Arc::new(World::plan(&queries, SynthConfig { scale: Scale::Paper, seed: 0 })?);
    let plan_secs = planned.elapsed().as_secs_f64();
    let started = Instant::now();
    let report = write_world(&lake, world.clone(), None, false, &NoProgress).await?;
    let secs = started.elapsed().as_secs_f64();
    let posts = world.post_count();
    println!("synth --scale paper: {posts} posts, {} rows, {} files, {:.0} MB", report.added, report.files, report.bytes as f64 / 1e6);
    println!("synth --scale paper: plan {plan_secs:.2} s, write {secs:.1} s: {:.0} posts/s (target >= 200000)", posts as f64 / secs);

    let counted = lake.sql("SELECT count(*) FROM posts").await?;
    println!(
        "SELECT count(*) FROM posts = {}",
        arrow::util::pretty::pretty_format_batches(&counted)?.to_string().lines().nth(3).unwrap_or("?").trim_matches(['|', ' '])
    );

    // SearchPost-shaped reads: every RED query window, as post_search asks them.
    let ctx = lake.session().await?;
    let mut latencies = Vec::new();
    let mut rows = 0usize;
    for q in queries.iter().filter(|q| q.task == Task::Red) {
        let (Some(location), Some(start), Some(end)) = (&q.location, q.window_start, q.window_end) else { continue };
        let t = Instant::now();
        let df = ctx
            .table("posts")
            .await?
            .filter(
                col(posts::source)
                    .eq(lit("raw"))
                    .and(col(posts::bucket).eq(lit(buckets::raw(&start.day(), location))))
                    .and(col(posts::published_at).gt_eq(lit(datafusion::scalar::ScalarValue::TimestampSecond(Some(start.0), None))))
                    .and(col(posts::published_at).lt(lit(datafusion::scalar::ScalarValue::TimestampSecond(Some(end.0), None)))),
            )?
            .select_columns(&["post_id", "content", "platform", "title", "published_at", "ocr", "nickname", "location"])?;
        let batches = df.collect().await?;
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        rows += batches.iter().map(|b| b.num_rows()).sum::<usize>();
    }
    latencies.sort_by(f64::total_cmp);
    println!(
        "SearchPost (one location, one hour) over the paper-scale lake: {} reads, {:.1} posts each; median {:.1} ms, p90 {:.1} ms, max {:.1} ms (target median < 50 ms)",
        latencies.len(),
        rows as f64 / latencies.len() as f64,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.9),
        latencies.last().copied().unwrap_or_default()
    );
    if std::env::var("SOME_BENCH_KEEP").is_ok_and(|v| v == "1") {
        println!("kept the lake at {}", dir.keep().join("lake").display());
    }
    Ok(())
}
