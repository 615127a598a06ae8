//! A release ingested through the queue by compute workers, one job per
//! unit, committed as one; a bad file fails its unit and nothing is visible
//! until it is fixed and the ingestion resumed.

use std::time::Duration;

use some_tests::fleet::{compute_worker, scalar};
use some_tests::{BAD_USER, BROKER, Background, Vhost, assert_same_world, some, tiny_release, wait_until};

/// The ingestion id and unit count `some ingest release --queue` printed.
fn planned(stdout: &str) -> (String, usize) {
    let line = stdout.lines().find(|l| l.starts_with("ingestion ")).unwrap_or_else(|| panic!("{stdout}"));
    let mut words = line.split_whitespace();
    let id = words.nth(1).unwrap().trim_end_matches(':').to_string();
    (id, words.next().unwrap().parse().unwrap())
}

fn status(lake: &str, id: &str) -> String {
    some(lake, &[], &["ingest", "status", id]).ok().stdout
}

/// Units staged so far, as `some ingest status` reports them.
fn staged(lake: &str, id: &str) -> usize {
    let shown = status(lake, id);
    let line = shown.lines().find(|l| l.contains(" units staged")).unwrap_or_else(|| panic!("{shown}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn a_release_ingests_through_the_queue_though_a_worker_dies() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    let vhost = Vhost::create();
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let release = dir.path().join("release");
    some(a, &[], &["ingest", "queries"]).ok();
    some(a, &[], &["synth", "--scale", "small", "--release-out", release.to_str().unwrap()]).ok();

    some(b, &[], &["ingest", "queries"]).ok();
    let out = some(b, &[], &["ingest", "release", release.to_str().unwrap(), "--queue", &vhost.url()]).ok();
    let (id, units) = planned(&out.stdout);
    // Location streams, topics, the referenced posts, the reports, and the
    // users in their 64 timeline buckets.
    assert!(units > 64 && units < 1000, "{units} units");
    assert_eq!(scalar(b, "SELECT count(*) AS n FROM posts"), 0, "nothing is visible before the commit");

    let mut first = compute_worker(b, &vhost.url());
    assert!(wait_until(Duration::from_secs(120), || staged(b, &id) >= 5), "no progress");
    first.kill();
    let _second = compute_worker(b, &vhost.url());
    assert!(wait_until(Duration::from_secs(300), || status(b, &id).contains("committed:")), "{}", status(b, &id));
    assert_same_world(a, b);
    some(b, &[], &["check", "--answers"]).ok();
}

#[test]
fn a_bad_file_fails_its_unit_and_resume_commits_once_it_is_fixed() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    let vhost = Vhost::create();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let release = tiny_release(dir.path(), Some(BAD_USER));
    let out = some(lake, &[], &["ingest", "release", release.to_str().unwrap(), "--queue", &vhost.url()]).ok();
    let (id, units) = planned(&out.stdout);
    assert_eq!(units, 2);
    let _worker = Background::start(lake, &[], &["worker", "--kind", "compute", "--queue", &vhost.url()]);
    let failed = || status(lake, &id).contains("failed:");
    assert!(wait_until(Duration::from_secs(60), failed), "{}", status(lake, &id));
    let shown = status(lake, &id);
    assert!(shown.contains("123.json: at weibo: expected a list of posts, found a number"), "{shown}");
    assert!(shown.contains("nothing is visible: fix the failed files"), "{shown}");
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM posts"), 0, "the good unit is staged, not visible");

    let rt = tokio::runtime::Runtime::new().unwrap();
    let queue = rt.block_on(some_workers::queue::open(&vhost.url().parse().unwrap())).unwrap();
    let dead = rt.block_on(queue.dead_letters(some_schemas::JobKind::Ingest)).unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].reason.contains("123.json: at weibo: expected a list of posts"), "{}", dead[0].reason);

    tiny_release(dir.path(), Some("{\"user\": {\"id\": \"123\"}, \"weibo\": [{\"id\": \"9\", \"text\": \"晚\"}]}"));
    let resumed = some(lake, &[], &["ingest", "resume", &id, "--queue", &vhost.url()]).ok();
    assert!(resumed.stdout.contains("published 1 jobs"), "{}", resumed.stdout);
    assert!(wait_until(Duration::from_secs(60), || status(lake, &id).contains("committed:")), "{}", status(lake, &id));
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM posts"), 2);
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM users"), 1);
}
