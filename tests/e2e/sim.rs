//! The simulation end to end through the `some` command: a seeded run
//! replays to the same state, a run whose coordinator and a worker are
//! SIGKILLed mid-turn resumes to the state of an uninterrupted one
//! (RabbitMQ, two workers), the paper's preset runs, and bad input is
//! refused or recorded.

use std::time::Duration;

use some_jobs::testing::sim_answer;
use some_tests::fleet::{Cluster, scalar, worker};
use some_tests::scripted::{Reply, ScriptedEndpoint};
use some_tests::sim::{prompt_of, sim_model, sim_model_that_cannot_plan};
use some_tests::{Background, SomeRun, some, wait_until};

/// A small run: 4 initial agents, 8 regular, two stages of 4 turns.
fn small(endpoint: &str, queue: &str, run_id: &str, seed: &str) -> Vec<String> {
    [
        "sim",
        "run",
        "--model",
        "scripted",
        "--endpoint",
        endpoint,
        "--queue",
        queue,
        "--run-id",
        run_id,
        "--seed",
        seed,
        "--initial",
        "4",
        "--regular",
        "8",
        "--seed-posts",
        "8",
        "--stage-turns",
        "4",
        "--feed-limit",
        "4",
        "--shard-size",
        "3",
        "--relevance",
        "tfidf",
        "--no-knowledge",
    ]
    .map(String::from)
    .to_vec()
}

fn run(lake: &str, args: &[String]) -> SomeRun {
    some(lake, &[], &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The digest a `sim run`/`sim resume`/`sim status` printed.
fn digest(out: &SomeRun) -> String {
    let line = out.stdout.lines().find(|l| l.starts_with("state digest ")).unwrap_or_else(|| panic!("no digest: {}", out.stdout));
    line["state digest ".len()..].to_string()
}

fn turns_committed(lake: &str, run_id: &str) -> usize {
    let out = some(lake, &[], &["sim", "status", run_id]);
    out.stdout.lines().find_map(|l| l.strip_prefix("turns committed ")?.split(' ').next()?.parse().ok()).unwrap_or(0)
}

#[test]
fn a_seeded_simulation_replays_to_the_same_state_and_its_tables_answer_sql() {
    let model = sim_model();
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (a, b) = (a.path().to_str().unwrap(), b.path().to_str().unwrap());
    let first = run(a, &small(&model.url, "memory", "s1", "7")).ok();
    let again = run(b, &small(&model.url, "memory", "s1", "7")).ok();
    assert_eq!(digest(&first), digest(&again), "same seed, same state");
    assert_eq!(digest(&first).len(), 64);
    let status = some(a, &[], &["sim", "status", "s1"]).ok();
    assert_eq!(digest(&status), digest(&first));
    assert!(status.stdout.contains("turns committed 9 of 9"), "{}", status.stdout);
    assert!(status.stdout.contains("agents set up 12 of 12; setup failed for 0"), "{}", status.stdout);

    assert_eq!(scalar(a, "SELECT count(*) AS n FROM sim_turns WHERE run_id = 's1'"), 9);
    assert_eq!(scalar(a, "SELECT count(*) AS n FROM sim_posts WHERE run_id = 's1' AND turn = 0"), 8, "the seed posts");
    let browsed = scalar(a, "SELECT count(*) AS n FROM sim_actions WHERE run_id = 's1' AND action = 'browse'");
    let shown = scalar(a, "SELECT count(*) AS n FROM sim_feeds WHERE run_id = 's1'");
    assert!(browsed > 0 && browsed == shown, "one browse row per post shown: {browsed} browsed, {shown} shown");
    assert!(scalar(a, "SELECT count(*) AS n FROM sim_actions WHERE run_id = 's1' AND action = 'like' AND status = 'applied'") > 0);
    let in_stage_one_from_regulars = scalar(
        a,
        "SELECT count(*) AS n FROM sim_feeds f JOIN sim_posts p ON f.post_id = p.post_id AND f.run_id = p.run_id \
         WHERE f.run_id = 's1' AND f.turn BETWEEN 1 AND 4 AND p.author_id >= 4",
    );
    assert_eq!(in_stage_one_from_regulars, 0, "stage one shows only the initial agents' posts");

    let html = tempfile::NamedTempFile::new().unwrap();
    let report =
        some(a, &[], &["sim", "report", "s1", "--no-embedder", "--judge-sample", "2", "--html", html.path().to_str().unwrap()]).ok();
    assert!(report.stdout.contains("Table 1"), "{}", report.stdout);
    let page = std::fs::read_to_string(html.path()).unwrap();
    assert!(page.matches("<svg").count() >= 2, "the follower and actions-per-turn plots");

    let other = tempfile::tempdir().unwrap();
    let other = run(other.path().to_str().unwrap(), &small(&model.url, "memory", "s1", "8")).ok();
    assert_ne!(digest(&other), digest(&first), "another seed, another run");
}

#[test]
fn a_simulation_whose_coordinator_and_a_worker_are_killed_mid_turn_resumes_to_the_uninterrupted_state() {
    let model = sim_model();
    let reference = tempfile::tempdir().unwrap();
    let expected = digest(&run(reference.path().to_str().unwrap(), &small(&model.url, "memory", "k1", "3")).ok());

    // Slow replies, so the kill lands while a turn's shards are in flight.
    let slow = ScriptedEndpoint::start(|_, body| Reply::Delayed(Duration::from_millis(40), sim_answer(&prompt_of(body))));
    let c = Cluster::shared();
    let mut w1 = worker(&c.lake, &c.queue);
    let _w2 = worker(&c.lake, &c.queue);
    let args = small(&slow.url, &c.queue, "k1", "3");
    let mut coordinator = Background::start(&c.lake, &[], &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(wait_until(Duration::from_secs(120), || turns_committed(&c.lake, "k1") >= 3), "three turns within two minutes");
    coordinator.kill();
    w1.kill();
    let _w3 = worker(&c.lake, &c.queue);
    let resumed = some(&c.lake, &[], &["sim", "resume", "k1", "--queue", &c.queue]).ok();
    assert_eq!(digest(&resumed), expected, "the resumed run ends where the uninterrupted one did");
    let doubled = scalar(
        &c.lake,
        "SELECT count(*) AS n FROM (SELECT turn, agent_id, seq, item FROM sim_actions WHERE run_id = 'k1' \
         GROUP BY turn, agent_id, seq, item HAVING count(*) > 1)",
    );
    assert_eq!(doubled, 0, "no action is recorded twice");
    assert_eq!(scalar(&c.lake, "SELECT count(*) AS n FROM sim_turns WHERE run_id = 'k1'"), 9);
}

#[test]
fn the_papers_preset_runs_its_seeding_and_first_turns() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().to_str().unwrap();
    let out = some(
        lake,
        &[],
        &[
            "sim",
            "run",
            "--preset",
            "paper",
            "--until",
            "3",
            "--model",
            "scripted",
            "--endpoint",
            &model.url,
            "--relevance",
            "tfidf",
            "--no-knowledge",
            "--browse",
            "batched",
            "--run-id",
            "p1",
            "--calls",
            "32",
        ],
    )
    .ok();
    assert!(out.stderr.contains("simulation p1: 450 agents (150 initial), 337 turns"), "{}", out.stderr);
    let status = some(lake, &[], &["sim", "status", "p1"]).ok();
    assert!(status.stdout.contains("turns committed 3 of 337"), "{}", status.stdout);
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_posts WHERE run_id = 'p1' AND turn = 0"), 1050, "the paper's seed posts");
    assert_eq!(scalar(lake, "SELECT count(DISTINCT author_id) AS n FROM sim_posts WHERE run_id = 'p1' AND turn = 0"), 150);
    let actors = scalar(lake, "SELECT count(*) AS n FROM sim_steps WHERE run_id = 'p1' AND turn > 0 AND agent_id < 150");
    assert_eq!(actors, 0, "initial agents do not act in stage one");
}

#[test]
fn bad_personas_are_refused_and_a_model_that_cannot_plan_is_recorded() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[{\"realname\": \"A\",").unwrap();
    let personas = format!("oasis-reddit:{}", bad.display());
    let out = some(lake, &[], &["sim", "run", "--personas", &personas, "--model", "scripted", "--endpoint", &model.url]);
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("bad.json"), "the error names the file: {}", out.stderr);
    let unknown = dir.path().join("unknown.csv");
    std::fs::write(&unknown, "id,name,age,traits,status,shoe_size\n0,A,30,calm,cook,42\n").unwrap();
    let personas = format!("recagent:{}", unknown.display());
    let out = some(lake, &[], &["sim", "run", "--personas", &personas, "--model", "scripted", "--endpoint", &model.url]);
    assert!(out.stderr.contains("unknown column \"shoe_size\""), "{}", out.stderr);
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_runs"), 0, "nothing recorded for refused input");

    let cannot = sim_model_that_cannot_plan();
    let out = run(lake, &small(&cannot.url, "memory", "np", "1")).ok();
    assert!(!digest(&out).is_empty());
    let status = some(lake, &[], &["sim", "status", "np"]).ok();
    assert!(status.stdout.contains("setup failed for 8"), "{}", status.stdout);
    let cause = some_tests::csv(lake, "SELECT error FROM sim_agents WHERE run_id = 'np' AND error IS NOT NULL LIMIT 1");
    assert!(cause.contains("planning: no usable reply in 2 attempts") && cause.contains("plan reply cannot be read"), "{cause}");
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_steps WHERE run_id = 'np' AND turn > 0"), 0, "unplanned agents do not act");
}
