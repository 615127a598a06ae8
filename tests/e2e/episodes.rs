//! Episodes over a real HTTP endpoint whose replies the test scripts: every
//! tool-call format, malformed calls, unknown tools, 429 with Retry-After,
//! 5xx and hanging calls; then a broken endpoint and `some rerun`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;
use some_tests::scripted::{Reply, ScriptedEndpoint, assistant_turns, is_agent, messages};
use some_tests::{Background, lake_with_world, some, wait_until};

/// The first tool call of an episode, in the format numbered `i`.
fn first_call(i: usize) -> (&'static str, String) {
    let args = r#"{"folder_name": "nothing", "start_idx": 0, "end_idx": 5}"#;
    match i % 4 {
        0 => ("tool_call", format!("<tool_call>\n{{\"name\": \"data_folder\", \"arguments\": {args}}}\n</tool_call>")),
        1 => ("json_fence", format!("我先查看文件夹。\n```json\n{{\"name\": \"data_folder\", \"arguments\": {args}}}\n```")),
        2 => ("function_call", format!("<function_call>{{\"name\": \"data_folder\", \"arguments\": {args}}}</function_call>")),
        // GLM's format is read only at the start of a reply, as the reference reads it.
        _ => ("name_line", format!("data_folder\n{args}")),
    }
}

fn sql(lake: &str, query: &str) -> String {
    some(lake, &[], &["sql", "--format", "csv", query]).ok().stdout
}

fn run_id(stderr: &str) -> String {
    let line = stderr.lines().find(|l| l.starts_with("run ")).unwrap_or_else(|| panic!("no run line in:\n{stderr}"));
    line["run ".len()..].split(':').next().unwrap().to_string()
}

#[test]
fn scripted_replies_drive_the_loop_the_client_and_the_scores() {
    let (_dir, lake) = lake_with_world();
    let firsts = AtomicUsize::new(0);
    let endpoint = ScriptedEndpoint::start(move |n, body| {
        // The first three requests fail in the three transient ways; the
        // client retries each and the episode never sees them.
        match n {
            0 => return Reply::Status(429, Some(0)),
            1 => return Reply::Status(503, None),
            2 => return Reply::Hang(Duration::from_secs(4)),
            _ => {}
        }
        if !is_agent(body) {
            // The judge, asked to extract a label from the answer.
            return Reply::Text("积极".into());
        }
        Reply::Text(match assistant_turns(body) {
            0 => first_call(firsts.fetch_add(1, Ordering::SeqCst)).1,
            1 => "<tool_call>\n{\"name\": \"data_folder\", \"arguments\": {\"folder_name\": </tool_call>".into(),
            2 => "<tool_call>\n{\"name\": \"post_search\", \"arguments\": {\"location\": \"北京\"}}\n</tool_call>".into(),
            _ => "<think>已经查过了。</think>根据该用户的帖子，情绪是积极的。".into(),
        })
    });
    let run = some(
        &lake,
        &[],
        &[
            "run",
            "--tasks",
            "UEA",
            "--sample",
            "4",
            "--model",
            "scripted",
            "--endpoint",
            &endpoint.url,
            "--calls",
            "1",
            "--concurrency",
            "1",
            "--timeout",
            "1",
            "--retries",
            "3",
        ],
    )
    .ok();
    let id = run_id(&run.stderr);

    // Three failed attempts, then 4 agent calls and 1 judge call per episode.
    assert_eq!(endpoint.requests(), 3 + 4 * 5, "{}", run.stderr);
    let episodes = sql(
        &lake,
        &format!(
            "SELECT status, llm_calls, tool_calls, tool_errors, attempt, is_final, count(*) AS n FROM episodes WHERE run_id = '{id}' GROUP BY 1, 2, 3, 4, 5, 6"
        ),
    );
    // data_folder on a missing folder and the unknown tool are tool errors
    // that ran; the malformed call is an error that did not.
    assert_eq!(episodes, "status,llm_calls,tool_calls,tool_errors,attempt,is_final,n\nanswered,4,2,3,1,true,4\n");

    // The model read back the parse error and the reference's unknown-tool text.
    let agent_bodies: Vec<Value> = endpoint.bodies().into_iter().skip(3).filter(is_agent).collect();
    let third_turn = agent_bodies.iter().find(|b| assistant_turns(b) == 2).unwrap();
    assert!(messages(third_turn).last().unwrap()["content"].as_str().unwrap().contains("The tool call could not be read"), "{third_turn}");
    let last_turn = agent_bodies.iter().find(|b| assistant_turns(b) == 3).unwrap();
    assert!(messages(last_turn).last().unwrap()["content"].as_str().unwrap().contains("Tool post_search does not exists."), "{last_turn}");

    // Each first call was read in its own format.
    let transcripts = sql(&lake, &format!("SELECT transcript FROM episodes WHERE run_id = '{id}'"));
    for format in ["tool_call", "json_fence", "function_call", "name_line"] {
        assert!(transcripts.contains(&format!("\"\"call_formats\"\":[\"\"{format}\"\"]")), "no first call read as {format}");
    }
    let answers = sql(&lake, &format!("SELECT DISTINCT answer FROM episodes WHERE run_id = '{id}'"));
    assert_eq!(answers, "answer\n根据该用户的帖子，情绪是积极的。\n", "the answer keeps its think block");

    // The judge's label is the extracted one; scores are 0 or 100 by the labels.
    let scores = sql(
        &lake,
        &format!(
            "SELECT extracted, completed, judge_calls, judge_temperature, judge_seed, count(*) AS n FROM scores WHERE run_id = '{id}' GROUP BY 1, 2, 3, 4, 5"
        ),
    );
    assert_eq!(scores, "extracted,completed,judge_calls,judge_temperature,judge_seed,n\n积极,true,1,0.0,0,4\n");

    // The report lays the run out as the paper's tables, with baselines.
    let report = some(&lake, &[], &["report", &id]).ok().stdout;
    assert!(report.contains("queries: 4 of 4 have a final result"), "{report}");
    assert!(report.contains("paper: Qwen3-8B"), "{report}");
    // Every episode called tools before answering: none counts as a guess.
    assert!(report.contains("final answers given with no tool call (scored above as guesses): UEA 0 of 4"), "{report}");
    assert!(report.contains("random baseline") && report.contains("16.67"), "{report}");
    // Four UEA queries judged by the agent's own model: the report says what that means.
    assert!(report.contains("note: smoke test: 4 queries in the smallest task"), "{report}");
    assert!(report.contains("note: the judge is the agent's own model (scripted)"), "{report}");
    assert!(report.contains("first failure: format"), "{report}");
    // The no-LLM solvers over the world: the cheat near the baselines, the oracle far above.
    let row = |name: &str| report.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("no {name} row in {report}")).to_string();
    assert!(row("cheat: emotion-lexicon vote").contains('.'), "{report}");
    assert!(row("oracle reader").contains('.'), "{report}");
    // A majority over 4 queries is a multiple of 25; over the lake's 2,696 UEA queries it is not.
    let figures = |name: &str| row(name).split_whitespace().filter(|t| t.contains('.')).map(str::to_string).collect::<Vec<_>>();
    let (sampled, lake_wide) =
        (figures("majority-class baseline, this run's queries"), figures("majority-class baseline, all labelled queries"));
    assert!(!sampled.is_empty() && !lake_wide.is_empty() && sampled != lake_wide, "{report}");
    assert!(report.contains("over the labelled queries whose data the lake holds (") && report.contains("UEA 2696"), "{report}");
}

#[test]
fn status_counts_the_episodes_of_a_shard_that_is_still_running() {
    let (_dir, lake) = lake_with_world();
    // One shard of four episodes, one at a time; the third one's model
    // takes 20 s to answer, the others answer at once.
    let firsts = AtomicUsize::new(0);
    let endpoint = ScriptedEndpoint::start(move |_, body| {
        let answer = "根据该用户的帖子，情绪是积极的。".to_string();
        if is_agent(body) && assistant_turns(body) == 0 && firsts.fetch_add(1, Ordering::SeqCst) == 2 {
            return Reply::Delayed(Duration::from_secs(20), answer);
        }
        Reply::Text(if is_agent(body) { answer } else { "积极".into() })
    });
    let args = ["run", "--tasks", "UEA", "--sample", "4", "--model", "scripted", "--endpoint", &endpoint.url];
    let mut run = Background::start(&lake, &[], &[&args[..], &["--shard-size", "4", "--calls", "1", "--timeout", "60"]].concat());
    assert!(wait_until(Duration::from_secs(30), || run.log().lines().any(|l| l.starts_with("run "))), "{}", run.log());
    let id = run_id(&run.log());
    let mut status = String::new();
    let counted = wait_until(Duration::from_secs(15), || {
        status = some(&lake, &[], &["status", &id]).ok().stdout;
        status.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["UEA", "4", "2", "0", "2"])
    });
    assert!(counted, "status never showed 2 of 4 final mid-shard:\n{status}\n{}", run.log());
    assert!(run.child.try_wait().unwrap().is_none(), "the shard is still running");
    // Standard error is a file here: a line per finished episode.
    assert_eq!(run.log().lines().filter(|l| l.starts_with("episodes ") && l.contains(" answered (")).count(), 2, "{}", run.log());

    assert!(run.child.wait().unwrap().success(), "{}", run.log());
    let status = some(&lake, &[], &["status", &id]).ok().stdout;
    assert!(status.lines().any(|l| l.split_whitespace().collect::<Vec<_>>() == ["UEA", "4", "4", "0", "0"]), "{status}");
    // Each query once: the mid-shard commits are not repeated by the last one.
    assert_eq!(sql(&lake, &format!("SELECT count(*) AS n FROM episodes WHERE run_id = '{id}'")), "n\n4\n");
    assert_eq!(sql(&lake, &format!("SELECT count(*) AS n FROM scores WHERE run_id = '{id}'")), "n\n4\n");
}

#[test]
fn a_broken_endpoint_ends_episodes_as_model_errors_and_rerun_completes_them() {
    let (_dir, lake) = lake_with_world();
    let broken = ScriptedEndpoint::start(|_, _| Reply::Status(500, None));
    let run =
        some(&lake, &[], &["run", "--tasks", "UEA,MID", "--sample", "2", "--model", "m", "--endpoint", &broken.url, "--retries", "1"]).ok();
    let id = run_id(&run.stderr);
    assert_eq!(broken.requests(), 4 * 2, "one retry per episode's first call");
    let episodes = sql(&lake, &format!("SELECT status, is_final, count(*) AS n FROM episodes WHERE run_id = '{id}' GROUP BY 1, 2"));
    assert_eq!(episodes, "status,is_final,n\nmodel_error,false,4\n");
    let errors = sql(&lake, &format!("SELECT DISTINCT error FROM episodes WHERE run_id = '{id}'"));
    assert!(errors.contains("500"), "{errors}");
    assert!(run.stdout.contains("queries: 0 of 4 have a final result; 4 attempts await a rerun"), "{}", run.stdout);

    // The endpoint is healthy again (elsewhere): rerun takes exactly the four.
    let healthy = ScriptedEndpoint::start(|_, _| Reply::Text("true".into()));
    let rerun = some(&lake, &[], &["rerun", &id, "--endpoint", &healthy.url]).ok();
    assert!(rerun.stderr.contains("rerunning 4 queries"), "{}", rerun.stderr);
    let finals = sql(&lake, &format!("SELECT attempt, count(*) AS n FROM episodes WHERE run_id = '{id}' AND is_final GROUP BY 1"));
    assert_eq!(finals, "attempt,n\n2,4\n");
    let again = some(&lake, &[], &["rerun", &id, "--endpoint", &healthy.url]).ok();
    assert!(again.stdout.contains("every query has a final result"), "{}", again.stdout);
}

#[test]
fn unknown_models_and_runs_are_refused_clearly() {
    let (_dir, lake) = lake_with_world();
    let run = some(&lake, &[], &["run", "--tasks", "MID", "--sample", "1", "--model", "gpt-17"]);
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("unknown model \"gpt-17\": the built-in models are"), "{}", run.stderr);
    let report = some(&lake, &[], &["report", "no-such-run"]);
    assert_eq!(report.status, 1);
    assert!(report.stderr.contains("unknown run \"no-such-run\""), "{}", report.stderr);
    let unreachable = some(&lake, &[], &["run", "--tasks", "MID", "--sample", "1", "--model", "m", "--endpoint", "ftp://x"]);
    assert!(unreachable.stderr.contains("expected an http:// or https:// base URL"), "{}", unreachable.stderr);
}

#[test]
fn compare_flags_a_regression_and_compact_keeps_every_result() {
    let (_dir, lake) = lake_with_world();
    let yes = ScriptedEndpoint::start(|_, _| Reply::Text("是".into()));
    let no = ScriptedEndpoint::start(|_, _| Reply::Text("否".into()));
    let args = |url: &str, id: &str| -> Vec<String> {
        ["run", "--tasks", "UBP,MCR", "--sample", "30", "--model", "m", "--endpoint", url, "--run-id", id, "--shard-size", "5"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let run = |a: Vec<String>| some(&lake, &[], &a.iter().map(String::as_str).collect::<Vec<_>>()).ok();
    run(args(&yes.url, "yes"));
    run(args(&no.url, "no"));
    // The same run against itself: no delta, exit 0.
    let same = some(&lake, &[], &["compare", "yes", "yes"]).ok();
    assert!(same.stdout.contains("no task dropped"), "{}", same.stdout);
    // Always "yes" vs always "no" differ on every query whose label is one of them.
    let a = some(&lake, &[], &["compare", "no", "yes", "--threshold", "1"]);
    let b = some(&lake, &[], &["compare", "yes", "no", "--threshold", "1"]);
    assert!(a.status == 1 || b.status == 1, "neither direction is a regression:\n{}\n{}", a.stdout, b.stdout);
    assert!(a.stdout.contains("UBP") && a.stdout.contains("paired"), "{}", a.stdout);
    let unknown = some(&lake, &[], &["compare", "yes", "nope"]);
    assert!(unknown.stderr.contains("unknown run \"nope\""), "{}", unknown.stderr);

    let before = sql(&lake, "SELECT query_id, attempt, score FROM scores WHERE run_id = 'yes' ORDER BY query_id");
    let compacted = some(&lake, &[], &["compact", "yes"]).ok();
    // 12 shards of 5, each committed in one transaction or more (episodes
    // commit as they finish): at least 24 files, of episodes and scores.
    let merged = compacted.stdout.split(" part files merged into 2 (120 rows)").next().and_then(|s| s.split_whitespace().last());
    assert!(merged.and_then(|n| n.parse::<usize>().ok()).is_some_and(|n| n >= 24), "{}", compacted.stdout);
    assert_eq!(sql(&lake, "SELECT query_id, attempt, score FROM scores WHERE run_id = 'yes' ORDER BY query_id"), before);
    assert_eq!(sql(&lake, "SELECT count(*) AS n FROM episodes WHERE run_id = 'yes'"), "n\n60\n");
}

#[test]
fn a_run_uses_the_prompt_files_it_is_given() {
    let (dir, lake) = lake_with_world();
    let prompts = dir.path().join("prompts");
    some(&lake, &[], &["prompts", "export", prompts.to_str().unwrap()]).ok();
    std::fs::write(prompts.join("tasks/mid.txt"), "自定义系统提示：判断这条说法的真假。").unwrap();
    let extract = std::fs::read_to_string(prompts.join("eval/extract_mid.txt")).unwrap();
    std::fs::write(prompts.join("eval/extract_mid.txt"), format!("自定义评分规则。\n{extract}")).unwrap();
    let endpoint = ScriptedEndpoint::start(|_, _| Reply::Text("综合各方信息，这个说法基本可信。".into()));
    let args =
        ["run", "--tasks", "MID", "--sample", "1", "--model", "m", "--endpoint", &endpoint.url, "--prompts", prompts.to_str().unwrap()];
    some(&lake, &[], &args).ok();
    let systems: Vec<String> =
        endpoint.bodies().iter().filter_map(|b| messages(b).first().and_then(|m| m["content"].as_str()).map(str::to_string)).collect();
    assert!(systems.iter().any(|s| s.starts_with("自定义系统提示")), "the agent's system prompt is the file's: {systems:?}");
    assert!(systems.iter().any(|s| s.starts_with("自定义评分规则")), "the extraction rubric is the file's: {systems:?}");

    let misspelt = dir.path().join("bad");
    std::fs::create_dir_all(misspelt.join("tasks")).unwrap();
    std::fs::write(misspelt.join("tasks/mdi.txt"), "x").unwrap();
    let refused = some(
        &lake,
        &[],
        &["run", "--tasks", "MID", "--sample", "1", "--model", "m", "--endpoint", &endpoint.url, "--prompts", misspelt.to_str().unwrap()],
    );
    assert_eq!(refused.status, 1);
    assert!(refused.stderr.contains("mdi.txt") && refused.stderr.contains("tasks/mid.txt"), "{}", refused.stderr);
}

/// An endpoint that takes 4 calls at once and refuses more with 429: a run
/// allowed 32 calls at once settles near 4 and no episode fails.
#[test]
fn calls_at_once_settle_to_what_the_endpoint_takes_and_no_episode_fails() {
    let (_dir, lake) = lake_with_world();
    let endpoint = ScriptedEndpoint::with_capacity(4, |_, body| {
        let text = if is_agent(body) { "根据该用户的帖子，情绪是积极的。" } else { "积极" };
        Reply::Delayed(Duration::from_millis(30), text.into())
    });
    let run = some(
        &lake,
        &[],
        &["run", "--tasks", "UEA", "--sample", "48", "--model", "scripted", "--endpoint", &endpoint.url, "--calls", "32", "--retries", "5"],
    )
    .ok();
    assert!(run.stdout.contains("queries: 48 of 48 have a final result"), "{}\n{}", run.stdout, run.stderr);
    let failed = sql(&lake, "SELECT count(*) AS n FROM episodes WHERE status = 'model_error'");
    assert_eq!(failed, "n\n0\n");
    // 48 agent calls and 48 judge calls answered; the refusals are the
    // window finding the endpoint's capacity, not one per call.
    assert_eq!(endpoint.requests(), 96);
    assert!(endpoint.refused() < 24, "{} refusals for 96 answers", endpoint.refused());
    // The report says what the agent's calls settled at.
    let line = run.stdout.lines().find(|l| l.starts_with("endpoint ")).unwrap_or_else(|| panic!("no capacity line:\n{}", run.stdout));
    let median: u32 = line.split("(median ").nth(1).and_then(|r| r.split(')').next()).and_then(|n| n.parse().ok()).unwrap();
    assert!((3..=6).contains(&median), "settled at {median}, not near 4: {line}");
}
