//! Runs through a broker with worker processes: submitting, the workers,
//! and reading what the lake holds.

use std::sync::{RwLockReadGuard, RwLockWriteGuard};

use crate::scripted::{Reply, ScriptedEndpoint};
use crate::{BROKER, Background, Vhost, lake_with_world, some};

/// How a test holds the machine's broker.
enum BrokerHold {
    Shared(#[allow(dead_code)] RwLockReadGuard<'static, ()>),
    Exclusive(#[allow(dead_code)] RwLockWriteGuard<'static, ()>),
}

/// What a test through the broker starts from: a lake with the world, a
/// vhost of its own, and its hold on the broker (exclusive for a test that
/// restarts it). Everything is removed on drop.
pub struct Cluster {
    pub lake: String,
    /// The AMQP URL of the test's vhost.
    pub queue: String,
    _dir: tempfile::TempDir,
    _vhost: Vhost,
    _hold: BrokerHold,
}

impl Cluster {
    /// Beside other tests on the broker.
    pub fn shared() -> Cluster {
        Cluster::with(BrokerHold::Shared(BROKER.read().unwrap_or_else(|p| p.into_inner())))
    }

    /// Alone on the broker, to restart it.
    pub fn exclusive() -> Cluster {
        Cluster::with(BrokerHold::Exclusive(BROKER.write().unwrap_or_else(|p| p.into_inner())))
    }

    fn with(hold: BrokerHold) -> Cluster {
        let vhost = Vhost::create();
        let (dir, lake) = lake_with_world();
        Cluster { lake, queue: vhost.url(), _dir: dir, _vhost: vhost, _hold: hold }
    }
}

/// Answers every call at once with a label (agent and judge alike).
pub fn instant() -> ScriptedEndpoint {
    ScriptedEndpoint::start(|_, _| Reply::Text("是".into()))
}

/// A submitted run.
pub struct Run {
    pub id: String,
    pub planned: usize,
}

/// `some run --queue QUEUE --sample SAMPLE` with the scripted model at
/// `endpoint`, shards of 20.
pub fn submit(lake: &str, queue: &str, endpoint: &str, sample: &str, extra: &[&str]) -> Run {
    let mut args = vec!["run", "--queue", queue, "--sample", sample, "--model", "scripted", "--endpoint", endpoint, "--shard-size", "20"];
    args.extend_from_slice(extra);
    let out = some(lake, &[], &args).ok();
    let line = out.stderr.lines().find(|l| l.starts_with("run ")).unwrap_or_else(|| panic!("{}", out.stderr)).to_string();
    let id = line["run ".len()..].split(':').next().expect("a run id").to_string();
    let planned = line.split(": ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).expect("a query count");
    Run { id, planned }
}

/// The one number a SQL query answers.
pub fn scalar(lake: &str, query: &str) -> usize {
    let out = some(lake, &[], &["sql", "--format", "csv", query]).ok().stdout;
    out.lines().nth(1).and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{query}: {out}"))
}

/// Queries of a run with a final episode.
pub fn finals(lake: &str, run: &str) -> usize {
    scalar(lake, &format!("SELECT count(DISTINCT query_id) AS n FROM episodes WHERE run_id = '{run}' AND is_final"))
}

/// No query has two final rows, as the raw table stands.
pub fn assert_one_final_each(lake: &str, run: &str) {
    let dupes = scalar(
        lake,
        &format!(
            "SELECT count(*) AS n FROM (SELECT query_id FROM episodes WHERE run_id = '{run}' AND is_final GROUP BY query_id HAVING count(*) > 1)"
        ),
    );
    assert_eq!(dupes, 0, "queries with more than one final row");
}

/// An LLM worker (episodes and judging) with short retries.
pub fn worker(lake: &str, queue: &str) -> Background {
    worker_with(lake, queue, &[])
}

/// An LLM worker with extra flags.
pub fn worker_with(lake: &str, queue: &str, extra: &[&str]) -> Background {
    let mut args = vec!["worker", "--queue", queue, "--concurrency", "2", "--calls", "16", "--retries", "2", "--timeout", "2"];
    args.extend_from_slice(extra);
    Background::start(lake, &[], &args)
}

/// A compute worker (ingestion and embedding).
pub fn compute_worker(lake: &str, queue: &str) -> Background {
    Background::start(lake, &[], &["worker", "--kind", "compute", "--queue", queue, "--concurrency", "2"])
}
