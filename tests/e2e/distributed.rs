//! Runs through the real RabbitMQ with worker processes, under faults: a
//! worker killed mid-run, a worker hung mid-run, a shard past its
//! deadline, the broker restarted, a failing endpoint, a poison message,
//! the object store gone. Every query ends with exactly one final result.

use std::time::Duration;

use some_tests::fleet::{Cluster, assert_one_final_each, finals, instant, scalar, submit, worker};
use some_tests::scripted::{Reply, ScriptedEndpoint};
use some_tests::{BROKER, Background, Vhost, some, wait_until};

#[test]
fn a_worker_killed_mid_run_loses_nothing() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    let endpoint = instant();
    // 300 per task (SES has 154): 2,254 queries.
    let run = submit(lake, queue, &endpoint.url, "300", &[]);
    assert!(run.planned >= 2000, "{}", run.planned);
    let mut workers: Vec<Background> = (0..3).map(|_| worker(lake, queue)).collect();
    assert!(wait_until(Duration::from_secs(120), || finals(lake, &run.id) >= 200), "no progress");
    workers[0].kill();
    workers.push(worker(lake, queue));
    assert!(
        wait_until(Duration::from_secs(300), || finals(lake, &run.id) == run.planned),
        "the run did not finish: {} of {}",
        finals(lake, &run.id),
        run.planned
    );
    assert_one_final_each(lake, &run.id);
    let status = some(lake, &[], &["status", &run.id]).ok().stdout;
    assert!(status.contains("throughput"), "{status}");
}

#[test]
fn a_hung_worker_loses_its_shards_to_the_others() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    // Slow enough that the first worker is mid-run when it hangs.
    let slow = ScriptedEndpoint::start(|_, _| Reply::Delayed(Duration::from_millis(50), "是".into()));
    let run = submit(lake, queue, &slow.url, "30", &["--calls", "2"]);
    let hung = worker(lake, queue);
    assert!(wait_until(Duration::from_secs(120), || finals(lake, &run.id) >= 20), "no progress");
    // Alive but silent: no heartbeats, no acknowledgements. The broker
    // closes its connection and delivers what it held to the other worker.
    hung.signal("STOP");
    let held = run.planned - finals(lake, &run.id);
    assert!(held > 0, "the run finished before the worker hung");
    let _healthy = worker(lake, queue);
    assert!(
        wait_until(Duration::from_secs(240), || finals(lake, &run.id) == run.planned),
        "the run did not finish: {} of {}",
        finals(lake, &run.id),
        run.planned
    );
    assert_one_final_each(lake, &run.id);
    // Woken, it may still commit the shards it held: the lake then has two
    // final rows for some queries, and every reader picks the same one.
    hung.signal("CONT");
    std::thread::sleep(Duration::from_secs(3));
    let report = some(lake, &[], &["report", &run.id]).ok().stdout;
    assert!(report.contains(&format!("queries: {0} of {0} have a final result", run.planned)), "{report}");
}

#[test]
fn a_shard_past_its_deadline_is_taken_back_and_run_again() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    // The first two calls hang for ten minutes; every later one answers at once.
    let endpoint = ScriptedEndpoint::start(|n, _| if n < 2 { Reply::Hang(Duration::from_secs(600)) } else { Reply::Text("是".into()) });
    let run = submit(lake, queue, &endpoint.url, "3", &[]);
    // The calls would wait out the hang (15-minute time-out); the 3-second
    // job deadline takes the shard back and delivers it again.
    let _worker = Background::start(
        lake,
        &[],
        &["worker", "--queue", queue, "--concurrency", "2", "--timeout", "900", "--retries", "0", "--deadline", "3"],
    );
    assert!(
        wait_until(Duration::from_secs(90), || finals(lake, &run.id) == run.planned),
        "the run did not finish: {} of {}",
        finals(lake, &run.id),
        run.planned
    );
    assert_one_final_each(lake, &run.id);
    let retried = scalar(lake, &format!("SELECT count(*) AS n FROM episodes WHERE run_id = '{}' AND attempt <> 1", run.id));
    assert_eq!(retried, 0, "a redelivered shard writes the same attempt");
}

#[test]
fn the_broker_restarting_mid_run_loses_nothing() {
    let c = Cluster::exclusive();
    let (lake, queue) = (&c.lake, &c.queue);
    let endpoint = instant();
    let run = submit(lake, queue, &endpoint.url, "100", &[]);
    let _workers: Vec<Background> = (0..2).map(|_| worker(lake, queue)).collect();
    assert!(wait_until(Duration::from_secs(120), || finals(lake, &run.id) >= 50), "no progress");
    Vhost::restart_broker(Duration::from_secs(3));
    assert!(
        wait_until(Duration::from_secs(300), || finals(lake, &run.id) == run.planned),
        "the run did not finish: {} of {}",
        finals(lake, &run.id),
        run.planned
    );
    assert_one_final_each(lake, &run.id);
}

#[test]
fn a_failing_endpoint_marks_failures_and_rerun_completes_them() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    // One call in five fails (500 or 429), one in fifty hangs past the time-out.
    let flaky = ScriptedEndpoint::start(|n, _| match n % 50 {
        0 => Reply::Hang(Duration::from_secs(5)),
        k if k % 5 == 1 => Reply::Status(500, None),
        k if k % 5 == 2 => Reply::Status(429, Some(0)),
        _ => Reply::Text("是".into()),
    });
    let run = submit(lake, queue, &flaky.url, "40", &[]);
    let _workers: Vec<Background> = (0..2).map(|_| worker(lake, queue)).collect();
    let settled = || {
        let failed =
            scalar(lake, &format!("SELECT count(DISTINCT query_id) AS n FROM episodes WHERE run_id = '{}' AND NOT is_final", run.id));
        finals(lake, &run.id) + failed >= run.planned
    };
    assert!(wait_until(Duration::from_secs(300), settled), "the run did not settle");
    // With two in five calls failing and two retries, some episodes exhaust
    // their retries: they are recorded as failed, with the cause.
    let failed = scalar(lake, &format!("SELECT count(*) AS n FROM episodes WHERE run_id = '{}' AND NOT is_final", run.id));
    assert!(failed > 0, "no episode exhausted its retries");
    let status = some(lake, &[], &["status", &run.id]).ok().stdout;
    assert!(["HTTP 500", "HTTP 429", "no answer within"].iter().any(|c| status.contains(&format!("model_error: {c}"))), "{status}");
    // The endpoint is healthy again at another address: rerun finishes the rest.
    let healthy = instant();
    some(lake, &[], &["rerun", &run.id, "--queue", queue, "--endpoint", &healthy.url, "--wait"]).ok();
    assert_eq!(finals(lake, &run.id), run.planned);
    assert_one_final_each(lake, &run.id);
    let again = some(lake, &[], &["rerun", &run.id, "--queue", queue]).ok();
    assert!(again.stdout.contains("every query has a final result"), "{}", again.stdout);
}

#[test]
fn a_poison_message_is_dead_lettered_with_its_error_and_the_run_goes_on() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    let endpoint = instant();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let broker = rt.block_on(some_workers::queue::open(&queue.parse().unwrap())).unwrap();
    rt.block_on(broker.publish(some_schemas::JobKind::Episode, b"{\"job\": \"episodes\", \"garbage\": true}".to_vec())).unwrap();
    let run = submit(lake, queue, &endpoint.url, "5", &[]);
    let _worker = worker(lake, queue);
    assert!(wait_until(Duration::from_secs(120), || finals(lake, &run.id) == run.planned), "the run did not finish");
    let dead = rt.block_on(broker.dead_letters(some_schemas::JobKind::Episode)).unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert!(dead[0].reason.starts_with("undecodable job message"), "{}", dead[0].reason);
    assert!(String::from_utf8_lossy(&dead[0].body).contains("garbage"));
}

#[test]
fn cancelling_a_run_stops_its_shards() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    let endpoint = instant();
    let run = submit(lake, queue, &endpoint.url, "50", &[]);
    some(lake, &[], &["cancel", &run.id]).ok();
    let _worker = worker(lake, queue);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let broker = rt.block_on(some_workers::queue::open(&queue.parse().unwrap())).unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || rt.block_on(broker.depth(some_schemas::JobKind::Episode)).unwrap() == 0),
        "shards were not drained"
    );
    assert_eq!(finals(lake, &run.id), 0, "a cancelled run's shards ran");
    let rerun = some(lake, &[], &["rerun", &run.id]);
    assert!(rerun.stderr.contains("was cancelled"), "{}", rerun.stderr);
}

#[test]
fn the_object_store_going_away_for_ten_seconds_loses_nothing() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    let vhost = Vhost::create();
    let queue = &vhost.url();
    let mut s3 = some_tests::S3Server::start("lake");
    let env = s3.env();
    let lake = "s3://lake/runs";
    some(lake, &env, &["ingest", "queries"]).ok();
    some(lake, &env, &["synth", "--scale", "small"]).ok();
    let endpoint = instant();
    let out = some(
        lake,
        &env,
        &["run", "--queue", queue, "--sample", "60", "--model", "scripted", "--endpoint", &endpoint.url, "--shard-size", "10"],
    )
    .ok();
    let id = out.stderr.lines().find_map(|l| l.strip_prefix("run ")).and_then(|l| l.split(':').next()).unwrap().to_string();
    let planned: usize = 8 * 60;
    let _workers: Vec<Background> =
        (0..2).map(|_| Background::start(lake, &env, &["worker", "--queue", queue, "--concurrency", "2"])).collect();
    let count = |sql: &str| -> Option<usize> {
        let out = some(lake, &env, &["sql", "--format", "csv", sql]);
        (out.status == 0).then(|| out.stdout.lines().nth(1).and_then(|v| v.parse().ok())).flatten()
    };
    let finals = format!("SELECT count(DISTINCT query_id) AS n FROM episodes WHERE run_id = '{id}' AND is_final");
    assert!(wait_until(Duration::from_secs(120), || count(&finals).unwrap_or(0) >= 60), "no progress");
    s3.stop();
    // While the store is gone, reads fail whole; they never see part of a file.
    let during = some(lake, &env, &["sql", "SELECT count(*) FROM episodes"]);
    assert_eq!(during.status, 1, "{}", during.stdout);
    std::thread::sleep(Duration::from_secs(10));
    s3.restart();
    assert!(
        wait_until(Duration::from_secs(300), || count(&finals) == Some(planned)),
        "the run did not finish: {:?} of {planned}",
        count(&finals)
    );
    let dupes = format!(
        "SELECT count(*) AS n FROM (SELECT query_id FROM episodes WHERE run_id = '{id}' AND is_final GROUP BY query_id HAVING count(*) > 1)"
    );
    assert_eq!(count(&dupes), Some(0));
    // Every committed file reads whole (a partial Parquet file would fail here).
    assert!(count("SELECT count(*) AS n FROM scores").is_some());
}

#[test]
fn embedding_jobs_go_through_the_queue_to_a_compute_worker() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    let vhost = Vhost::create();
    let queue = &vhost.url();
    // A few MID claims make a world small enough to embed quickly.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("datasets/misinformation_detection");
    std::fs::create_dir_all(&data).unwrap();
    let claims = r#"{"1.json": {"claim": "The city banned all cars in 2020.", "label": "false"},
                     "2.json": {"claim": "The river flooded twice last spring.", "label": "true"},
                     "3.json": {"claim": "The mayor opened three new schools.", "label": "half"}}"#;
    std::fs::write(data.join("ground_truth.json"), claims).unwrap();
    let lake = &dir.path().join("lake").to_str().unwrap().to_string();
    some(lake, &[], &["ingest", "queries", dir.path().join("datasets").to_str().unwrap()]).ok();
    some(lake, &[], &["synth", "--scale", "small"]).ok();
    some(lake, &[], &["models", "fetch", "multilingual-e5-small"]).ok();
    let knowledge = some(lake, &[], &["embed", "knowledge", "--queue", queue]).ok();
    assert!(knowledge.stdout.contains("published 1 embedding jobs"), "{}", knowledge.stdout);
    let posts = some(lake, &[], &["embed", "posts", "--queue", queue]).ok();
    assert!(posts.stdout.contains("embedding jobs"), "{}", posts.stdout);

    let _worker = Background::start(lake, &[], &["worker", "--kind", "compute", "--queue", queue]);
    let expected = scalar(lake, "SELECT (SELECT count(*) FROM knowledge) + (SELECT count(*) FROM posts) AS n");
    let embedded =
        || scalar(lake, "SELECT count(DISTINCT collection || '/' || id) AS n FROM embeddings WHERE model = 'multilingual-e5-small'");
    assert!(wait_until(Duration::from_secs(240), || embedded() == expected), "embedded {} of {expected}", embedded());
    let dims = some(lake, &[], &["sql", "--format", "csv", "SELECT DISTINCT dim FROM embeddings"]).ok().stdout;
    assert_eq!(dims, "dim\n384\n");
}
