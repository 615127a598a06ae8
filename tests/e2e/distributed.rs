//! Runs through the real RabbitMQ with worker processes, under faults: a
//! worker killed mid-run, a worker hung mid-run, a shard past its
//! deadline, the broker restarted, a failing endpoint, a poison message,
//! the object store gone (for seconds, and for longer than a shard's
//! delivery limit would last). Every query ends with exactly one final result.
//! And the compute workers: embedding jobs, and a run whose tools'
//! similarity and clustering a compute worker process computes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::{Value, json};
use some_schemas::EmbeddingRow;
use some_tests::fleet::{Cluster, assert_one_final_each, finals, instant, scalar, submit, worker, worker_with};
use some_tests::scripted::{Reply, ScriptedEndpoint, assistant_turns, is_agent, messages, text_vector};
use some_tests::{BROKER, Background, Vhost, some, wait_until};
use some_workers::{Lake, LakeLocation};

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
    // The agent's calls for about one query in eight always fail, so those
    // episodes exhaust their retries whatever the timing; of the other
    // calls, two in five fail (500 or 429) and one in fifty hangs past the
    // time-out, and are retried.
    let flaky = ScriptedEndpoint::start(|n, body| {
        let user = messages(body).get(1).and_then(|m| m["content"].as_str()).unwrap_or_default();
        if is_agent(body) && user.bytes().map(u32::from).sum::<u32>() % 8 == 0 {
            return Reply::Status(500, None);
        }
        match n % 50 {
            0 => Reply::Hang(Duration::from_secs(5)),
            k if k % 5 == 1 => Reply::Status(500, None),
            k if k % 5 == 2 => Reply::Status(429, Some(0)),
            _ => Reply::Text("是".into()),
        }
    });
    // 10 per task: 80 queries, which the backed-off retries keep to a few a second.
    let run = submit(lake, queue, &flaky.url, "10", &[]);
    let _workers: Vec<Background> = (0..2).map(|_| worker(lake, queue)).collect();
    let settled = || {
        let failed =
            scalar(lake, &format!("SELECT count(DISTINCT query_id) AS n FROM episodes WHERE run_id = '{}' AND NOT is_final", run.id));
        finals(lake, &run.id) + failed >= run.planned
    };
    assert!(wait_until(Duration::from_secs(300), settled), "the run did not settle");
    // Episodes that exhausted their retries are recorded as failed, with the cause.
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

/// The object store down for longer than a shard's deliveries would last
/// if each failure counted (delivery limit 1 here, S3 requests retried for
/// 2 s: a failing shard used to be dead-lettered within seconds of the
/// outage), while the agents' tool calls read the world from it: the
/// failed shards are deferred, not counted, and once the store is back
/// the run finishes with one final result per query, every one of them
/// having made its tool call, and nothing dead-lettered.
#[test]
fn a_store_outage_longer_than_the_delivery_limit_allows_dead_letters_nothing() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    let vhost = Vhost::create();
    let queue = &vhost.url();
    let mut s3 = some_tests::S3Server::start("lake");
    let mut env = s3.env();
    env.push(("SOME_DELIVERY_LIMIT".into(), "1".into()));
    env.push(("SOME_STORE_RETRY_TIMEOUT".into(), "2".into()));
    let lake = "s3://lake/outage";
    some(lake, &env, &["ingest", "queries"]).ok();
    some(lake, &env, &["synth", "--scale", "small"]).ok();
    let sql = |query: &str| -> Option<String> {
        let out = some(lake, &env, &["sql", "--format", "csv", query]);
        (out.status == 0).then(|| out.stdout.lines().nth(1).unwrap_or_default().to_string())
    };
    let topic = sql("SELECT topic FROM posts WHERE source = 'topic' GROUP BY topic ORDER BY count(*) DESC, topic LIMIT 1").unwrap();
    // Each SMQ episode searches the topic's posts (a read of the store),
    // then answers; slowly enough that the run is under way when the
    // store goes.
    let endpoint = ScriptedEndpoint::start(move |_, body| {
        if !is_agent(body) {
            return Reply::Text("是".into());
        }
        match assistant_turns(body) {
            0 => Reply::Delayed(
                Duration::from_millis(200),
                format!("<tool_call>\n{}\n</tool_call>", json!({"name": "topic_search", "arguments": {"topic_name": topic}})),
            ),
            _ => Reply::Delayed(Duration::from_millis(200), "是".into()),
        }
    });
    let out = some(
        lake,
        &env,
        &[
            "run",
            "--queue",
            queue,
            "--tasks",
            "SMQ",
            "--sample",
            "40",
            "--model",
            "scripted",
            "--endpoint",
            &endpoint.url,
            "--shard-size",
            "4",
        ],
    )
    .ok();
    let line = out.stderr.lines().find(|l| l.starts_with("run ")).unwrap_or_else(|| panic!("{}", out.stderr)).to_string();
    let id = line["run ".len()..].split(':').next().unwrap().to_string();
    let planned: usize = line.split(": ").nth(1).and_then(|r| r.split(' ').next()).and_then(|n| n.parse().ok()).unwrap();
    let workers: Vec<Background> = (0..2)
        .map(|_| {
            Background::start(
                lake,
                &env,
                &["worker", "--queue", queue, "--concurrency", "2", "--calls", "4", "--retries", "2", "--timeout", "5"],
            )
        })
        .collect();
    let count = |query: &str| sql(query).and_then(|v| v.parse::<usize>().ok());
    let finals = format!("SELECT count(DISTINCT query_id) AS n FROM episodes WHERE run_id = '{id}' AND is_final");
    assert!(wait_until(Duration::from_secs(60), || count(&finals).unwrap_or(0) >= 4), "no progress");
    s3.stop();
    let before = count(&finals);
    assert!(before.is_none(), "the store still answers");
    std::thread::sleep(Duration::from_secs(15));
    s3.restart();
    assert!(
        wait_until(Duration::from_secs(90), || count(&finals) == Some(planned)),
        "the run did not finish: {:?} of {planned}",
        count(&finals)
    );
    let failed_in_outage = workers.iter().filter(|w| w.log().contains("job failed while the object store does not answer")).count();
    assert!(failed_in_outage > 0, "no job failed during the outage: the test proves nothing");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let broker = rt.block_on(some_workers::queue::RabbitQueue::connect(queue, 1)).unwrap();
    let broker: &dyn some_workers::queue::Queue = &broker;
    for kind in [some_schemas::JobKind::Episode, some_schemas::JobKind::Judge] {
        let dead = rt.block_on(broker.dead_letters(kind)).unwrap();
        assert!(dead.is_empty(), "{kind:?} dead-lettered: {:?}", dead.iter().map(|d| &d.reason).collect::<Vec<_>>());
    }
    let dupes = format!(
        "SELECT count(*) AS n FROM (SELECT query_id FROM episodes WHERE run_id = '{id}' AND is_final GROUP BY query_id HAVING count(*) > 1)"
    );
    assert_eq!(count(&dupes), Some(0), "a query has two final results");
    let searched = format!("SELECT count(*) AS n FROM episodes WHERE run_id = '{id}' AND is_final AND transcript LIKE '%topic_search%'");
    assert_eq!(count(&searched), Some(planned), "an episode is missing its tool call");
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

/// The embedding model of the runs that call the vector tools: the scripted
/// endpoint's [`text_vector`], served at `/v1/embeddings`.
const TEXT_MODEL: &str = "scripted-text-32d";

/// One JSON object per row of a query.
fn rows(lake: &str, query: &str) -> Vec<Value> {
    let out = some(lake, &[], &["sql", "--format", "json", query]).ok().stdout;
    out.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"))).collect()
}

/// Stores [`TEXT_MODEL`] vectors of the knowledge base, as `some embed
/// knowledge` would with that model.
fn embed_knowledge(lake: &str) -> usize {
    let docs = rows(lake, "SELECT doc_index, content FROM knowledge ORDER BY doc_index");
    let vectors: Vec<EmbeddingRow> = docs
        .iter()
        .map(|d| {
            let v = text_vector(d["content"].as_str().unwrap());
            EmbeddingRow {
                id: d["doc_index"].as_i64().unwrap().to_string(),
                dtype: "f32".into(),
                dim: v.len() as i32,
                vector: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                collection: "knowledge".into(),
                model: TEXT_MODEL.into(),
                bucket: "all".into(),
            }
        })
        .collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let lake = Lake::open(&LakeLocation::Local(lake.into())).await.unwrap();
        let mut txn = lake.txn();
        txn.write_rows(vectors).await.unwrap();
        txn.commit().await.unwrap();
    });
    docs.len()
}

/// A scripted agent that calls the tools whose similarity and clustering
/// the kernels compute, as its task offers them: MID retrieves knowledge,
/// RED searches a location's hour, clusters it and reads every cluster,
/// SMQ searches a topic and retrieves its posts; then it answers. What it
/// searches is picked from `windows` and `topics` by the query's text, so
/// a query calls the same tools in any run.
fn vector_tool_caller(windows: Vec<(String, String, String)>, topics: Vec<String>) -> ScriptedEndpoint {
    ScriptedEndpoint::start(move |_, body| {
        let messages = messages(body);
        let system = messages.first().and_then(|m| m["content"].as_str()).unwrap_or_default();
        if !system.contains("<tools>") {
            return Reply::Text("是".into());
        }
        let question = messages.iter().find(|m| m["role"] == "user").and_then(|m| m["content"].as_str()).unwrap_or_default();
        let pick = question.chars().map(|c| c as usize).sum::<usize>();
        // From a third of the way in: past the task's fixed opening words.
        let snippet: String = question.chars().skip(question.chars().count() / 3).take(40).collect();
        let last = messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default();
        let call = |name: &str, arguments: Value| {
            Reply::Text(format!("<tool_call>\n{}\n</tool_call>", json!({"name": name, "arguments": arguments})))
        };
        let answer = Reply::Text("根据检索结果，答案是是。".into());
        match assistant_turns(body) {
            0 if system.contains("knowledge_retrieve") => call("knowledge_retrieve", json!({"query": snippet, "topk": 10})),
            1 if system.contains("knowledge_retrieve") => {
                call("knowledge_retrieve", json!({"query": "official statistics report", "topk": 3}))
            }
            turn if system.contains("topic_clustering") => {
                let (location, start, end) = &windows[pick % windows.len()];
                let folder = format!("{location}_{start}_{end}");
                match turn {
                    0 => call("post_search", json!({"location": location, "start_time": start, "end_time": end})),
                    1 => call("topic_clustering", json!({"folder_name": folder})),
                    // Past the end: the error names the number of clusters.
                    2 => call("data_folder", json!({"folder_name": format!("{folder}_cluster"), "start_idx": 0, "end_idx": 100_000})),
                    3 => {
                        let n: usize = last
                            .split("长度")
                            .nth(1)
                            .and_then(|r| r.trim_end_matches(|c: char| !c.is_ascii_digit()).parse().ok())
                            .unwrap_or(1);
                        call("data_folder", json!({"folder_name": format!("{folder}_cluster"), "start_idx": 0, "end_idx": n}))
                    }
                    _ => answer,
                }
            }
            turn if system.contains("post_retrieve") => {
                let topic = &topics[pick % topics.len()];
                match turn {
                    0 => call("topic_search", json!({"topic_name": topic})),
                    1 => call("post_retrieve", json!({"query": snippet, "folder_name": topic, "topk": 5})),
                    _ => answer,
                }
            }
            _ => answer,
        }
    })
}

/// Each episode's conversation and tool records (its model calls' timings
/// left out), by query.
fn tool_answers(lake: &str, run: &str) -> BTreeMap<String, (Value, Value)> {
    rows(lake, &format!("SELECT query_id, transcript FROM episodes WHERE run_id = '{run}' AND is_final"))
        .into_iter()
        .map(|r| {
            let t: Value = serde_json::from_str(r["transcript"].as_str().unwrap()).unwrap();
            (r["query_id"].as_str().unwrap().to_string(), (t["messages"].clone(), t["tool_results"].clone()))
        })
        .collect()
}

/// A run whose LLM worker sends the tools' similarity and clustering to a
/// compute worker (`some worker --kind llm --remote-kernels` and `some
/// worker --kind compute`, separate processes on RabbitMQ) gets, call for
/// call, the tool answers of the same run worked in one process with
/// `--queue memory --kernels cpu`.
#[test]
fn a_run_through_a_compute_worker_answers_every_tool_call_as_one_process_does() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    assert!(embed_knowledge(lake) > 10, "a knowledge base to search");
    let windows: Vec<(String, String, String)> = rows(
        lake,
        "SELECT area, CAST(date_trunc('hour', published_at) AS VARCHAR) AS hour, count(*) AS n FROM posts \
         WHERE source = 'raw' GROUP BY 1, 2 HAVING count(*) BETWEEN 8 AND 80 ORDER BY n DESC, area, hour LIMIT 4",
    )
    .into_iter()
    .map(|r| {
        let start = r["hour"].as_str().unwrap().replace('T', " ");
        let start = start[..19].to_string();
        let end = format!("{}:59:59", &start[..13]);
        (r["area"].as_str().unwrap().to_string(), start, end)
    })
    .collect();
    let topics: Vec<String> = rows(
        lake,
        "SELECT topic, count(*) AS n FROM posts WHERE source = 'topic' GROUP BY 1 HAVING count(*) >= 6 ORDER BY n DESC, topic LIMIT 4",
    )
    .into_iter()
    .map(|r| r["topic"].as_str().unwrap().to_string())
    .collect();
    assert!(!windows.is_empty() && !topics.is_empty(), "{windows:?} {topics:?}");
    let endpoint = vector_tool_caller(windows, topics);
    let run = |id: &str, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--run-id",
            id,
            "--tasks",
            "MID,RED,SMQ",
            "--sample",
            "3",
            "--model",
            "scripted",
            "--endpoint",
            &endpoint.url,
            "--embedding-model",
            TEXT_MODEL,
            "--embedding-endpoint",
            &endpoint.url,
            "--cluster-threshold",
            "0.8",
            "--shard-size",
            "2",
        ];
        args.extend_from_slice(extra);
        some(lake, &[], &args)
    };

    // A run that only publishes computes nothing here: --kernels is refused, before anything is recorded.
    let refused = run("refused", &["--queue", queue, "--kernels", "cpu"]);
    assert_eq!(refused.status, 1, "{}", refused.stderr);
    assert!(refused.stderr.contains("--kernels cpu applies to episodes worked on this process"), "{}", refused.stderr);
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM runs WHERE run_id = 'refused'"), 0);

    run("here", &["--queue", "memory", "--kernels", "cpu"]).ok();
    // --kernels cuda works its episodes on a GPU where one opens, and
    // otherwise stops, saying why, before the run is recorded.
    let cuda = run("cuda", &["--queue", "memory", "--kernels", "cuda"]);
    if cuda.status != 0 {
        assert!(cuda.stderr.contains("--kernels cuda: "), "{}", cuda.stderr);
        assert_eq!(scalar(lake, "SELECT count(*) AS n FROM runs WHERE run_id = 'cuda'"), 0);
    }
    let compute = Background::start(lake, &[("SOME_LOG".into(), "info".into())], &["worker", "--kind", "compute", "--queue", queue]);
    let _llm = worker_with(lake, queue, &["--remote-kernels"]);
    run("there", &["--queue", queue, "--wait"]).ok();

    let (here, there) = (tool_answers(lake, "here"), tool_answers(lake, "there"));
    assert_eq!(here.len(), 9, "{here:?}");
    assert_eq!(here.keys().collect::<Vec<_>>(), there.keys().collect::<Vec<_>>());
    // Every tool whose vectors the kernels compare ran and answered (no error).
    let answered: BTreeSet<&str> = here
        .values()
        .flat_map(|(_, tools)| tools.as_array().unwrap())
        .filter(|t| t["error"] == false)
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in ["knowledge_retrieve", "topic_clustering", "post_retrieve"] {
        assert!(answered.contains(tool), "{tool} never answered: {here:?}");
    }
    // The clusterings split their folders (the last read of a folder's clusters asks for all of them).
    let most_clusters = here
        .values()
        .flat_map(|(_, tools)| tools.as_array().unwrap())
        .filter(|t| t["name"] == "data_folder" && t["error"] == false)
        .filter_map(|t| t["arguments"]["end_idx"].as_u64())
        .max();
    assert!(most_clusters.is_some_and(|n| n > 1), "{here:?}");
    for (query, answers) in &here {
        assert_eq!(&there[query], answers, "query {query}: the tools answered otherwise through the compute worker");
    }
    if cuda.status == 0 {
        assert_eq!(tool_answers(lake, "cuda"), here, "the tools answered otherwise on the GPU");
    }
    // The knowledge searches went to the compute worker, which kept the knowledge base.
    assert!(compute.log().contains("knowledge base kept"), "{}", compute.log());
}
