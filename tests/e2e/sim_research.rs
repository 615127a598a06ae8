//! The simulation's research tools end to end through the `some` command:
//! interviews and surveys of a finished run's agents as of a turn.

use std::collections::BTreeMap;

use some_tests::fleet::scalar;
use some_tests::sim::{prompt_of, sim_model};
use some_tests::some;

use crate::sim::{digest, run, small};

/// (agent, question) → answer of one interview, from SQL.
fn answers(lake: &str, interview: &str) -> BTreeMap<(u32, String), String> {
    let q = format!(
        "SELECT agent_id, question_id, answer FROM sim_interviews WHERE interview_id = '{interview}' ORDER BY agent_id, question_id"
    );
    let out = some(lake, &[], &["sql", "--format", "csv", &q]).ok().stdout;
    out.lines()
        .skip(1)
        .map(|l| {
            let mut parts = l.splitn(3, ',');
            let agent = parts.next().and_then(|a| a.parse().ok()).unwrap_or_else(|| panic!("{l}"));
            let question = parts.next().unwrap_or_default().to_string();
            ((agent, question), parts.next().unwrap_or_default().trim_matches('"').to_string())
        })
        .collect()
}

#[test]
fn an_interview_as_of_a_turn_leaves_the_run_unchanged_and_asked_twice_gives_the_same_answers() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().to_str().unwrap();
    let done = run(lake, &small(&model.url, "memory", "r1", "3")).ok();
    let before = digest(&done);
    let questions = dir.path().join("survey.jsonl");
    std::fs::write(
        &questions,
        concat!(
            "{\"id\": \"why\", \"question\": \"Why do you use this platform?\"}\n",
            "{\"id\": \"trust\", \"question\": \"Do you trust the posts you read here?\", \"options\": [\"Yes\", \"No\", \"Not sure\"]}\n",
        ),
    )
    .unwrap();
    let q = questions.to_str().unwrap();
    let ask = |id: &str| {
        some(lake, &[], &["sim", "interview", "r1", "--turn", "6", "--agents", "regular", "--questions", q, "--id", id, "--answers"]).ok()
    };
    let first = ask("first");
    assert!(
        first.stdout.contains("Survey first at turn 6, trust: Do you trust the posts you read here? (8 of 8 answered)"),
        "{}",
        first.stdout
    );
    assert!(first.stderr.contains("16 answers from 8 agents, 0 replies could not be read"), "{}", first.stderr);
    let second = ask("second");
    let (a, b) = (answers(lake, "first"), answers(lake, "second"));
    assert_eq!(a.len(), 16, "8 regular agents × 2 questions: {a:?}");
    assert_eq!(a, b, "the same interview with a deterministic model gives the same answers");
    assert!(a.iter().filter(|((_, q), _)| q == "trust").all(|(_, v)| ["Yes", "No", "Not sure"].contains(&v.as_str())), "{a:?}");
    assert_eq!(second.stdout.lines().filter(|l| l.starts_with("agent ")).count(), 16);

    // Asked as of turn 6: the prompt holds what the agent had read by then.
    let asked: Vec<String> = model.bodies().iter().map(prompt_of).filter(|p| p.contains("An interviewer asks you a question")).collect();
    assert_eq!(asked.len(), 32);
    assert!(asked.iter().any(|p| p.contains("A post by user ")), "no agent remembered a post it read");

    // The run is as it was: same digest, same turns, nothing else written.
    let status = some(lake, &[], &["sim", "status", "r1"]).ok();
    assert_eq!(digest(&status), before);
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_turns WHERE run_id = 'r1'"), 9);
    let report = some(lake, &[], &["sim", "report", "r1", "--no-embedder"]).ok();
    assert!(report.stdout.contains("Survey second at turn 6, trust"), "{}", report.stdout);

    // A turn not committed, and a selector no agent matches, are refused with the reason.
    let late = some(lake, &[], &["sim", "interview", "r1", "--turn", "9", "--question", "Hi?"]);
    assert!(late.status != 0 && late.stderr.contains("turn 9 of run r1 is not committed: its turns 0 to 8 are"), "{}", late.stderr);
    let none = some(lake, &[], &["sim", "interview", "r1", "--turn", "2", "--agents", "500-600", "--question", "Hi?"]);
    assert!(none.status != 0 && none.stderr.contains("no agent of run r1"), "{}", none.stderr);
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_interviews"), 32, "refused interviews store nothing");
}

/// The interventions of the tests below: a news account's boosted post,
/// later removed; a follow of it; a persona change; a mute.
const INTERVENTIONS: &str = r#"# what a researcher does to the small run
{"turn": 2, "type": "post", "by": "Daily News", "text": "Breaking: the river flooded the harbor", "label": "flood"}
{"turn": 2, "type": "boost", "account": "Daily News"}
{"turn": 3, "type": "follow", "follower": 5, "followee": "Daily News"}
{"turn": 4, "type": "mute", "account": 0}
{"turn": 5, "type": "persona", "agent": 6, "set": {"personality": "Sceptical of everything"}}
{"turn": 6, "type": "remove", "post": "flood"}
"#;

fn with(mut args: Vec<String>, more: &[&str]) -> Vec<String> {
    args.extend(more.iter().map(|s| s.to_string()));
    args
}

#[test]
fn interventions_change_feeds_and_personas_at_their_turns_and_replay_to_the_same_digest() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("interventions.jsonl");
    std::fs::write(&file, INTERVENTIONS).unwrap();
    let file = file.to_str().unwrap();
    let (a, b, plain) = (dir.path().join("a"), dir.path().join("b"), dir.path().join("plain"));
    let (a, b, plain) = (a.to_str().unwrap(), b.to_str().unwrap(), plain.to_str().unwrap());
    let first = run(a, &with(small(&model.url, "memory", "x", "3"), &["--interventions", file])).ok();
    assert!(first.stderr.contains("6 interventions from"), "{}", first.stderr);
    let again = run(b, &with(small(&model.url, "memory", "x", "3"), &["--interventions", file])).ok();
    let without = run(plain, &small(&model.url, "memory", "x", "3")).ok();
    assert_eq!(digest(&first), digest(&again), "the same interventions replay to the same digest");
    assert_ne!(digest(&first), digest(&without));
    assert_eq!(digest(&some(a, &[], &["sim", "status", "x"]).ok()), digest(&first), "a replay from the lake checks every turn");

    let q = |lake: &str, sql: &str| scalar(lake, sql);
    assert_eq!(q(a, "SELECT count(*) AS n FROM sim_interventions WHERE applied_turn IS NOT NULL AND status = 'applied'"), 6);
    let flood = q(a, "SELECT post_id AS n FROM sim_interventions WHERE applied_turn = 2 AND post_id IS NOT NULL");
    // Boosted: first in the feeds of turn 3 of every agent that had not read it.
    let shown = q(a, &format!("SELECT count(*) AS n FROM sim_feeds WHERE turn = 3 AND post_id = {flood}"));
    let first_place = q(a, &format!("SELECT count(*) AS n FROM sim_feeds WHERE turn = 3 AND post_id = {flood} AND position = 0"));
    assert!(shown > 0 && shown == first_place, "the boosted post is shown first: {first_place} of {shown}");
    assert_eq!(q(a, &format!("SELECT count(*) AS n FROM sim_feeds WHERE turn >= 6 AND post_id = {flood}")), 0, "removed at turn 6");
    assert_eq!(
        q(a, &format!("SELECT count(*) AS n FROM sim_posts WHERE post_id = {flood} AND author_id = 12")),
        1,
        "the news account is the next id"
    );
    let by_muted = "SELECT count(*) AS n FROM sim_feeds f JOIN sim_posts p ON f.post_id = p.post_id WHERE p.author_id = 0 AND f.turn >= 4";
    assert!(q(plain, by_muted) > 0, "agent 0's posts are in feeds without the mute");
    assert_eq!(q(a, by_muted), 0, "muted from turn 4");

    // The persona change is what the agent is from turn 5: its steps and an interview as of then.
    let ask = |turn: &str| some(a, &[], &["sim", "interview", "x", "--turn", turn, "--agents", "6", "--question", "Who are you?"]).ok();
    let before = model.bodies().len();
    ask("4");
    ask("8");
    let asked: Vec<String> = model.bodies()[before..].iter().map(prompt_of).collect();
    assert_eq!(asked.len(), 2);
    assert!(!asked[0].contains("Sceptical of everything") && asked[1].contains("Sceptical of everything"), "{asked:?}");
    some(a, &[], &["sim", "report", "x", "--no-embedder"]).ok();
}

#[test]
fn a_bad_interventions_file_is_refused_whole_with_its_line_and_a_paused_run_takes_a_late_one_at_its_next_turn() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let good = r#"{"type": "post", "by": 3, "text": "An announcement from agent three"}"#;
    for (bad, why) in [
        (
            format!("{good}\n{{\"turn\": 2, \"type\": \"mute\", \"account\": 40}}"),
            "line 2: agent 40 is not in the run (its agents are 0 to 11)",
        ),
        (format!("{good}\n{{\"turn\": 2, \"type\": \"remove\", \"post\": 999}}"), "line 2: post 999 does not exist"),
        (format!("{good}\n{{\"turn\": 2, \"type\": \"shout\", \"account\": 1}}"), "line 2: unknown variant `shout`"),
        (format!("{good}\n{{\"turn\": 20, \"type\": \"mute\", \"account\": 1}}"), "line 2: turn 20 is past the run's end"),
    ] {
        let path = write("bad.jsonl", &format!("{}\n", bad.replace(good, &good.replace('{', "{\"turn\": 1, "))));
        let out = run(lake, &with(small(&model.url, "memory", "bad", "3"), &["--interventions", &path]));
        assert!(out.status != 0 && out.stderr.contains(why), "{why}: {}", out.stderr);
    }
    assert!(some(lake, &[], &["sim", "status", "bad"]).status != 0, "a refused file records no run");

    // Paused at turn 4; a late file: a turn in the past is refused whole, then a good one is taken at turn 4.
    run(lake, &with(small(&model.url, "memory", "late", "3"), &["--until", "4"])).ok();
    let past = write("past.jsonl", &format!("{good}\n{{\"turn\": 1, \"type\": \"mute\", \"account\": 1}}\n"));
    let refused = some(lake, &[], &["sim", "intervene", "late", "--at", "2", &past]);
    assert!(
        refused.status != 0 && refused.stderr.contains("line 2: turn 1 is in the past: turns up to 3 are committed; nothing was applied"),
        "{}",
        refused.stderr
    );
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_interventions"), 0);
    let late = write("late.jsonl", &format!("{good}\n"));
    let taken = some(lake, &[], &["sim", "intervene", "late", "--at", "2", &late]).ok();
    assert!(taken.stdout.contains("1 interventions stored"), "{}", taken.stdout);
    let resumed = some(lake, &[], &["sim", "resume", "late"]).ok();
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_interventions WHERE applied_turn = 4 AND status = 'applied'"), 1);
    // The same event given from the start at turn 4 makes the same run.
    let from_start = write("start.jsonl", &format!("{}\n", good.replace('{', "{\"turn\": 4, ")));
    let other = dir.path().join("other");
    let whole = run(other.to_str().unwrap(), &with(small(&model.url, "memory", "late", "3"), &["--interventions", &from_start])).ok();
    assert_eq!(digest(&resumed), digest(&whole));
}

/// Turn → state digest of a run's own committed turns, from SQL.
fn digests(lake: &str, run: &str) -> BTreeMap<u32, String> {
    let q = format!("SELECT turn, state_digest FROM sim_turns WHERE run_id = '{run}' ORDER BY turn");
    let out = some(lake, &[], &["sql", "--format", "csv", &q]).ok().stdout;
    out.lines().skip(1).filter_map(|l| l.split_once(',')).map(|(t, d)| (t.parse().unwrap(), d.to_string())).collect()
}

#[test]
fn a_fork_without_changes_keeps_its_parents_digests_and_one_with_another_ranker_parts_and_is_compared() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().to_str().unwrap();
    let parent = run(lake, &small(&model.url, "memory", "p", "3")).ok();
    let fork = |id: &str, at: &str, more: &[&str]| {
        let mut args = vec!["sim", "fork", "p", "--at", at, "--run-id", id];
        args.extend_from_slice(more);
        some(lake, &[], &args)
    };
    let same = fork("same", "2", &[]).ok();
    assert_eq!(digest(&same), digest(&parent));
    let (p, s) = (digests(lake, "p"), digests(lake, "same"));
    assert_eq!(s.keys().copied().collect::<Vec<_>>(), [2, 3, 4, 5, 6, 7, 8], "the fork commits only its own turns");
    for (turn, d) in &s {
        assert_eq!(Some(d), p.get(turn), "turn {turn}: a fork with no change has its parent's state");
    }
    assert_eq!(scalar(lake, "SELECT count(*) AS n FROM sim_agents WHERE run_id = 'same'"), 0, "the parent's state is read, not copied");
    let status = some(lake, &[], &["sim", "status", "same"]).ok();
    assert!(status.stdout.contains("turns committed 9 of 9"), "{}", status.stdout);
    let compared = some(lake, &[], &["sim", "compare", "same"]).ok();
    assert!(compared.stdout.contains("the same state after every compared turn"), "{}", compared.stdout);

    // Stage 1 (turns 1-4) shows the seed posts, all of turn 0: newest first (live) and mastodon_digest agree on them while
    // nothing is liked, so the fork ranks by similarity to the persona.
    let similar = fork("similar", "2", &["--ranker", "recency-similarity"]).ok();
    assert_ne!(digest(&similar), digest(&parent));
    let compared = some(lake, &[], &["sim", "compare", "similar"]).ok().stdout;
    assert!(compared.contains("fork similar against p, turns 2 to 8"), "{compared}");
    let parted: u32 = compared
        .lines()
        .find_map(|l| l.strip_prefix("the states part at turn ")?.split(':').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no parting turn: {compared}"));
    assert!((2..=8).contains(&parted), "{compared}");
    assert!(compared.contains("Applied actions per turn") && compared.contains("Distinct-n"), "{compared}");
    let json: serde_json::Value = serde_json::from_str(&some(lake, &[], &["sim", "compare", "similar", "--json"]).ok().stdout).unwrap();
    assert_eq!(json["parted_at"], serde_json::json!(parted));
    let report = some(lake, &[], &["sim", "report", "similar", "--no-embedder"]).ok();
    assert!(report.stdout.contains("fork similar against p"), "{}", report.stdout);
    // The fork's agents as of a turn before the fork are the parent's.
    some(lake, &[], &["sim", "interview", "similar", "--turn", "1", "--agents", "4-5", "--question", "Hi?"]).ok();

    let late = fork("late", "20", &[]);
    assert!(
        late.status != 0 && late.stderr.contains("run p has committed 9 turns: a fork at turn 20 needs its turns 0 to 19"),
        "{}",
        late.stderr
    );
}

#[test]
fn replicates_share_one_setup_run_their_own_seeds_and_report_each_figure_with_an_interval() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().to_str().unwrap();
    let out = run(lake, &with(small(&model.url, "memory", "g", "3"), &["--replicates", "3"])).ok();
    assert!(out.stdout.contains("Figures over 3 replicates"), "{}", out.stdout);
    let row =
        out.stdout.lines().find(|l| l.starts_with("actions.per_stage[stage=1].applied.like ")).unwrap_or_else(|| panic!("{}", out.stdout));
    assert_eq!(row.split_whitespace().nth(1), Some("3"), "{row}");
    assert_eq!(scalar(lake, "SELECT count(DISTINCT run_id) AS n FROM sim_agents"), 1, "one setup, shared");
    assert_eq!(scalar(lake, "SELECT count(DISTINCT run_id) AS n FROM sim_turns"), 3);
    let last = |run: &str| {
        let d = digests(lake, run);
        d.get(&8).cloned().unwrap_or_else(|| panic!("{run}: {d:?}"))
    };
    let (a, b, c) = (last("g-r0"), last("g-r1"), last("g-r2"));
    assert!(a != b && b != c && a != c, "each replicate has its own seed");
    let report = some(lake, &[], &["sim", "report", "g-r1", "--no-embedder"]).ok();
    assert!(report.stdout.contains("Figures over 3 replicates"), "{}", report.stdout);
}

#[test]
fn model_groups_answer_their_own_agents_and_the_report_breaks_actions_down_by_group() {
    let (main, other) = (sim_model(), sim_model());
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let groups = dir.path().join("groups.jsonl");
    std::fs::write(
        &groups,
        format!("{{\"name\": \"second\", \"agents\": \"regular\", \"model\": \"scripted\", \"endpoints\": [\"{}\"]}}\n", other.url),
    )
    .unwrap();
    let done = run(lake, &with(small(&main.url, "memory", "m", "3"), &["--groups", groups.to_str().unwrap()])).ok();
    let prompts = |e: &some_tests::scripted::ScriptedEndpoint| e.bodies().iter().map(prompt_of).collect::<Vec<String>>();
    let (to_main, to_other) = (prompts(&main), prompts(&other));
    let plans = |p: &[String]| p.iter().filter(|p| p.contains("Plan a typical week")).count();
    assert_eq!((plans(&to_main), plans(&to_other)), (0, 8), "the 8 regular agents plan with their group's model");
    assert!(to_other.iter().any(|p| p.contains("One post from the feed is shown here")), "their turns too");
    assert!(!to_main.iter().any(|p| p.contains("One post from the feed is shown here")), "initial agents only seed");
    let report = some(lake, &[], &["sim", "report", "m", "--no-embedder"]).ok().stdout;
    let row =
        |g: &str| report.lines().find(|l| l.starts_with(&format!("{g} "))).map(|l| l.split_whitespace().nth(1).unwrap_or("").to_string());
    assert!(report.contains("By model group"), "{report}");
    assert_eq!((row("second").as_deref(), row("default").as_deref()), (Some("8"), Some("4")), "{report}");
    assert!(!digest(&done).is_empty());

    std::fs::write(&groups, "{\"name\": \"w\", \"agents\": \"gender=female\", \"model\": \"scripted\"}\n").unwrap();
    let refused = run(lake, &with(small(&main.url, "memory", "m2", "3"), &["--groups", groups.to_str().unwrap()]));
    assert!(
        refused.status != 0 && refused.stderr.contains("line 1: group w: agents \"gender=female\" reads an enriched persona field"),
        "{}",
        refused.stderr
    );
}
