//! The simulation end to end through the `some` command: a seeded run
//! replays to the same state, a run whose coordinator and a worker are
//! SIGKILLed mid-turn resumes to the state of an uninterrupted one
//! (RabbitMQ, two workers), the paper's preset runs, and bad input is
//! refused or recorded.

use std::collections::BTreeMap;
use std::time::Duration;

use some_sim::testing::sim_answer;
use some_tests::fleet::{Cluster, scalar, worker};
use some_tests::scripted::{Reply, ScriptedEndpoint};
use some_tests::sim::{prompt_of, sim_model, sim_model_that_cannot_plan};
use some_tests::{Background, SomeRun, some, wait_until};

/// A small run: 4 initial agents, 8 regular, two stages of 4 turns.
pub(crate) fn small(endpoint: &str, queue: &str, run_id: &str, seed: &str) -> Vec<String> {
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

pub(crate) fn run(lake: &str, args: &[String]) -> SomeRun {
    some(lake, &[], &args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The digest a `sim run`/`sim resume`/`sim status` printed.
pub(crate) fn digest(out: &SomeRun) -> String {
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
    let slow = ScriptedEndpoint::start(|_, body| Reply::Delayed(Duration::from_millis(200), sim_answer(&prompt_of(body))));
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

/// The paper's experiment to its end: seeding, then two one-week stages
/// (337 turns), with the paper's 150 initial agents and 1,050 seed posts
/// and 100 of its 300 regular agents (for time; the stages are whole).
/// Asserts what the paper's design implies of every stage, from the lake.
#[test]
fn the_papers_experiment_runs_both_weeks_with_feeds_actions_and_follows_to_the_end() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().to_str().unwrap();
    let args = [
        "sim",
        "run",
        "--preset",
        "paper",
        "--regular",
        "100",
        "--model",
        "scripted",
        "--endpoint",
        &model.url,
        "--relevance",
        "tfidf",
        "--browse",
        "batched",
        "--run-id",
        "pw",
        "--calls",
        "32",
    ];
    let out = some(lake, &[], &args).ok();
    assert!(out.stderr.contains("simulation pw: 250 agents (150 initial), 337 turns"), "{}", out.stderr);
    assert!(out.stderr.contains("simulation pw finished"), "{}", out.stderr);
    assert!(!out.stderr.contains("warning:"), "a full run warns of nothing: {}", out.stderr);
    let status = some(lake, &[], &["sim", "status", "pw"]).ok();
    assert!(status.stdout.contains("turns committed 337 of 337"), "{}", status.stdout);
    assert!(!status.stdout.contains("warning:"), "{}", status.stdout);

    // Every turn of both stages: agents act, and each is shown a feed.
    let stage_turns = |stage: u32| {
        scalar(lake, &format!("SELECT count(*) AS n FROM sim_turns WHERE run_id = 'pw' AND stage = {stage} AND active_agents > 0"))
    };
    assert_eq!((stage_turns(1), stage_turns(2)), (168, 168), "every turn of each week has active agents");
    let dark = scalar(
        lake,
        "SELECT count(*) AS n FROM sim_turns t LEFT JOIN          (SELECT turn, count(DISTINCT agent_id) AS browsers FROM sim_actions WHERE run_id = 'pw' AND action = 'browse' GROUP BY turn) b          ON t.turn = b.turn WHERE t.run_id = 'pw' AND t.stage > 0 AND (b.browsers IS NULL OR b.browsers < t.active_agents)",
    );
    assert_eq!(dark, 0, "no turn shows an active agent an empty feed");
    let last_shown = |stage: u32| {
        scalar(
            lake,
            &format!(
                "SELECT max(f.turn) AS n FROM sim_feeds f JOIN sim_turns t ON f.turn = t.turn AND f.run_id = t.run_id WHERE f.run_id = 'pw' AND t.stage = {stage}"
            ),
        )
    };
    assert_eq!((last_shown(1), last_shown(2)), (168, 336), "feeds to the last turn of each week");
    let stage_one_from_regulars = scalar(
        lake,
        "SELECT count(*) AS n FROM sim_feeds f JOIN sim_posts p ON f.post_id = p.post_id AND f.run_id = p.run_id          WHERE f.run_id = 'pw' AND f.turn BETWEEN 1 AND 168 AND p.author_id >= 150",
    );
    assert_eq!(stage_one_from_regulars, 0, "week one shows only the initial agents' posts");

    // Every kind of action in each week, posts in both, follows through reflection.
    for stage in [1, 2] {
        let kinds = some_tests::csv(
            lake,
            &format!(
                "SELECT DISTINCT a.action FROM sim_actions a JOIN sim_turns t ON a.turn = t.turn AND a.run_id = t.run_id                  WHERE a.run_id = 'pw' AND t.stage = {stage} AND a.status = 'applied' ORDER BY a.action"
            ),
        );
        assert_eq!(kinds.lines().skip(1).collect::<Vec<_>>(), ["browse", "comment", "follow", "like", "post", "reblog"], "stage {stage}");
        let week = if stage == 1 { "BETWEEN 1 AND 168" } else { "BETWEEN 169 AND 336" };
        let posts =
            scalar(lake, &format!("SELECT count(*) AS n FROM sim_posts WHERE run_id = 'pw' AND turn {week} AND parent_post_id IS NULL"));
        assert!(posts >= 150, "week {stage}: {posts} posts (100 agents, 2 a week each)");
        let follows = scalar(lake, &format!("SELECT count(*) AS n FROM sim_follows WHERE run_id = 'pw' AND turn {week}"));
        assert!(follows > 0, "week {stage}: follows come from reflection");
    }

    let report = some(lake, &[], &["sim", "report", "pw", "--no-embedder", "--judge-sample", "2"]).ok();
    assert!(!report.stdout.contains("(none)"), "every table of the report is filled: {}", report.stdout);
    assert!(!report.stdout.contains("Warning:"), "{}", report.stdout);
    for table in ["Table 1", "Table 2", "Figure 6", "Feeds and activity per stage"] {
        assert!(report.stdout.contains(table), "{table}: {}", report.stdout);
    }
}

#[test]
fn knowledge_comes_from_a_hotpotqa_file_and_a_malformed_one_is_refused_at_its_line() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    // The scripted posts' topics are "topic N number i" and the enriched
    // personas know "sourdough starters and pacing": this paragraph is
    // retrieved for the topic and adopted for the persona.
    let good = dir.path().join("hotpot.json");
    std::fs::write(
        &good,
        r#"[{"_id": "q1", "question": "?", "answer": "a", "type": "bridge", "level": "easy", "supporting_facts": [],
            "context": [["Sourdough", ["Sourdough starters and pacing: a topic and number of notes", " on bread."]],
                        ["Matterhorn", ["The Matterhorn is a mountain of the Alps."]]]}]"#,
    )
    .unwrap();
    let with = |run_id: &str, file: &std::path::Path| {
        let mut args: Vec<String> = small(&model.url, "memory", run_id, "5").into_iter().filter(|a| a != "--no-knowledge").collect();
        args.extend(["--knowledge".into(), format!("hotpotqa:{}", file.display())]);
        run(lake, &args)
    };
    with("kb", &good).ok();
    let adopted = scalar(lake, "SELECT count(*) AS n FROM sim_posts WHERE run_id = 'kb' AND knowledge IS NOT NULL AND knowledge <> '[]'");
    assert!(adopted > 0, "posts adopted the file's passages");

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "[{\"_id\": \"q1\",\n  \"context\": [[\"Sourdough\", [\"text\"]]\n").unwrap();
    let out = with("kb-bad", &bad);
    assert_ne!(out.status, 0);
    assert!(out.stderr.contains("bad.json") && out.stderr.contains("line 3"), "the file and the line are named: {}", out.stderr);
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_runs WHERE run_id = 'kb-bad'"), 0, "nothing recorded");
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
    let out = run(lake, &small(&cannot.url, "memory", "np", "1"));
    assert_ne!(out.status, 0, "8 of 12 agents without a plan: the run stops instead of running empty turns");
    assert!(out.stderr.contains("setup failed for 8 of 12 agents, more than the 50% allowed"), "{}", out.stderr);
    assert!(out.stderr.contains("8 × planning: no usable reply"), "the causes are named: {}", out.stderr);
    let status = some(lake, &[], &["sim", "status", "np"]).ok();
    assert!(status.stdout.contains("setup failed for 8"), "{}", status.stdout);
    let cause = some_tests::csv(lake, "SELECT error FROM sim_agents WHERE run_id = 'np' AND error IS NOT NULL LIMIT 1");
    assert!(cause.contains("planning: no usable reply in 2 attempts") && cause.contains("plan reply cannot be read"), "{cause}");
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_steps WHERE run_id = 'np' AND turn > 0"), 0, "unplanned agents do not act");
}

/// The applied actions per kind of turns `first..=last` as `some sql`
/// counts them (a browse once: its first row), and the refused ones.
fn sql_counts(lake: &str, run_id: &str, first: u32, last: u32) -> BTreeMap<(u32, String), u64> {
    let out = some_tests::csv(
        lake,
        &format!(
            "SELECT turn, CASE WHEN status = 'applied' THEN action ELSE 'refused' END AS kind, count(*) AS n FROM sim_actions \
             WHERE run_id = '{run_id}' AND item = 0 AND turn BETWEEN {first} AND {last} GROUP BY 1, 2"
        ),
    );
    out.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            ((f[0].parse().unwrap(), f[1].to_string()), f[2].parse().unwrap())
        })
        .collect()
}

/// The per-kind table `sim status` printed, as (turn, kind) → count.
fn status_counts(stdout: &str) -> BTreeMap<(u32, String), u64> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("actions applied in "));
    lines.next();
    let head: Vec<&str> = lines.next().unwrap_or_else(|| panic!("no table: {stdout}")).split_whitespace().skip(1).collect();
    let mut counts = BTreeMap::new();
    for line in lines.take_while(|l| l.starts_with(|c: char| c.is_ascii_digit())) {
        let mut cells = line.split_whitespace();
        let turn: u32 = cells.next().unwrap().parse().unwrap();
        for (kind, n) in head.iter().zip(cells) {
            let n: u64 = n.parse().unwrap();
            if n > 0 {
                counts.insert((turn, kind.to_string()), n);
            }
        }
    }
    counts
}

#[test]
fn sim_status_shows_the_last_turns_actions_per_kind_and_the_busiest_post_and_watches_a_run_to_its_end() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().to_str().unwrap();
    // One stage (turns 0-4): the small run's second stage shows regular
    // agents' posts, which it has none of.
    let one_stage = |url: &str, run_id: &str| [small(url, "memory", run_id, "4"), vec!["--stages".into(), "1".into()]].concat();
    let done = digest(&run(lake, &one_stage(&model.url, "w1")).ok());

    let status = some(lake, &[], &["sim", "status", "w1"]).ok();
    assert!(status.stdout.contains("actions applied in turns 2-4 "), "the last 3 turns by default: {}", status.stdout);
    let shown = status_counts(&status.stdout);
    assert_eq!(shown, sql_counts(lake, "w1", 2, 4), "{}", status.stdout);
    assert!(shown.keys().any(|(_, k)| k == "like") && shown.keys().any(|(_, k)| k == "comment"), "{shown:?}: {}", status.stdout);
    let wider = some(lake, &[], &["sim", "status", "w1", "--last", "5", "--top", "2"]).ok();
    assert_eq!(status_counts(&wider.stdout), sql_counts(lake, "w1", 0, 4), "{}", wider.stdout);

    let busiest = some_tests::csv(
        lake,
        "SELECT a.post_id, count(*) AS n, p.author_id, g.username FROM sim_actions a \
         JOIN sim_posts p ON a.post_id = p.post_id AND a.run_id = p.run_id \
         JOIN sim_agents g ON p.author_id = g.agent_id AND p.run_id = g.run_id \
         WHERE a.run_id = 'w1' AND a.status = 'applied' AND a.action IN ('like', 'reblog', 'comment') AND a.turn BETWEEN 0 AND 4 \
         GROUP BY a.post_id, p.author_id, g.username ORDER BY n DESC, a.post_id LIMIT 2",
    );
    let top: Vec<Vec<&str>> = busiest.lines().skip(1).map(|l| l.split(',').collect()).collect();
    assert_eq!(top.len(), 2, "{busiest}");
    for (i, post) in top.iter().enumerate() {
        let line = format!("{:>3}. post {} by {} (agent {}, turn ", i + 1, post[0], post[3], post[2]);
        let engagements = format!("): {} engagements (", post[1]);
        let printed = wider.stdout.lines().find(|l| l.starts_with(&line)).unwrap_or_else(|| panic!("{line}: {}", wider.stdout));
        assert!(printed.contains(&engagements), "{engagements}: {printed}");
    }
    assert_eq!(wider.stdout.lines().filter(|l| l.contains(" engagements (")).count(), 2, "--top 2: {}", wider.stdout);

    // On a finished run, --watch shows the status once and ends by itself.
    let watched = some(lake, &[], &["sim", "status", "w1", "--watch", "--every", "0.2"]).ok();
    assert_eq!(watched.stdout.lines().last(), Some("simulation w1 finished: 5 of 5 turns committed"), "{}", watched.stdout);
    assert_eq!(watched.stdout.matches("actions applied in ").count(), 1, "{}", watched.stdout);
    assert_eq!(digest(&watched), done);

    // On a run that goes on (slow replies: a turn takes about a second),
    // it shows the turns as they commit, then ends with the run.
    let slow = ScriptedEndpoint::start(|_, body| Reply::Delayed(Duration::from_millis(200), sim_answer(&prompt_of(body))));
    let args = one_stage(&slow.url, "w2");
    let _run = Background::start(lake, &[], &args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(wait_until(Duration::from_secs(60), || turns_committed(lake, "w2") >= 1), "a first turn within a minute");
    let started = std::time::Instant::now();
    let live = some(lake, &[], &["sim", "status", "w2", "--watch", "--every", "0.2"]).ok();
    eprintln!("watched for {:.1} s", started.elapsed().as_secs_f64());
    let frames = live.stdout.lines().filter(|l| l.starts_with("simulation w2: ") && l.ends_with(" of 5 turns committed")).count();
    assert!(frames >= 2, "live frames as the run goes: {}", live.stdout);
    assert_eq!(live.stdout.lines().last(), Some("simulation w2 finished: 5 of 5 turns committed"), "{}", live.stdout);
    assert_eq!(digest(&live), done, "the same seed, the same state; watching changed nothing");
}
