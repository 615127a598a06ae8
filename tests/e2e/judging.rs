//! Judging through the judge queue: a run's episodes scored again by
//! another judge, and the scores a failing judge left out filled in later.

use std::time::Duration;

use some_tests::fleet::{assert_one_final_each, finals, instant, scalar, submit, worker};
use some_tests::scripted::{Reply, ScriptedEndpoint};
use some_tests::{BROKER, Vhost, lake_with_world, some, wait_until};

/// A judge that rates every answer 4 of 5 (80 points on SMQ).
fn generous() -> ScriptedEndpoint {
    ScriptedEndpoint::start(|_, _| Reply::Text("Accuracy: 4".into()))
}

/// The line of a report's score table for this run.
fn scores_line(report: &str) -> String {
    report.lines().find(|l| l.starts_with("this run")).unwrap_or_else(|| panic!("no score line in:\n{report}")).to_string()
}

#[test]
fn a_second_judging_goes_through_the_queue_and_reads_beside_the_first() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    let vhost = Vhost::create();
    let (_dir, lake) = lake_with_world();
    let agent = instant();
    let run = submit(&lake, &vhost.url(), &agent.url, "10", &["--tasks", "SMQ,UBP"]);
    let _worker = worker(&lake, &vhost.url());
    assert!(wait_until(Duration::from_secs(120), || finals(&lake, &run.id) == run.planned), "the run did not finish");

    // The agent's endpoint answers "是" to the SMQ judge too: no rating, 0.
    let primary = some(&lake, &[], &["report", &run.id]).ok().stdout;
    // The scripted agent answers at once: every answer is a guess, and the report says so.
    assert!(primary.contains("final answers given with no tool call (scored above as guesses): UBP 10 of 10, SMQ 10 of 10"), "{primary}");
    let judge = generous();
    let judged = some(
        &lake,
        &[],
        &[
            "judge",
            &run.id,
            "--judging",
            "generous",
            "--judge-model",
            "rater",
            "--judge-endpoint",
            &judge.url,
            "--queue",
            &vhost.url(),
            "--wait",
        ],
    )
    .ok();
    assert!(judged.stderr.contains("published 1 judge jobs"), "{}", judged.stderr);
    // The SMQ answers were asked once each; UBP answers are labels already.
    assert_eq!(judge.requests(), 10);
    let rows =
        |judging: &str| scalar(&lake, &format!("SELECT count(*) AS n FROM scores WHERE run_id = '{}' AND judging = '{judging}'", run.id));
    assert_eq!((rows("primary"), rows("generous")), (20, 20));
    assert!(judged.stdout.contains("judging generous: rater"), "{}", judged.stdout);
    assert_ne!(scores_line(&judged.stdout), scores_line(&primary));
    assert_eq!(some(&lake, &[], &["report", &run.id]).ok().stdout, primary, "the primary judging is unchanged");

    // The same episodes under two judges: SMQ moves by 80 points, UBP not at all.
    let compared = some(&lake, &[], &["compare", &run.id, &run.id, "--judging", "generous", "--baseline-judging", "primary"]).ok().stdout;
    let line = |task: &str| compared.lines().find(|l| l.starts_with(task)).unwrap_or_else(|| panic!("{compared}")).to_string();
    assert!(line("SMQ").split_whitespace().nth(4) == Some("+80.00"), "{compared}");
    assert!(line("UBP").split_whitespace().nth(4) == Some("+0.00"), "{compared}");

    // Judging again adds nothing: every final episode has its score.
    let again = some(&lake, &[], &["judge", &run.id, "--judging", "generous", "--queue", &vhost.url()]).ok();
    assert!(again.stdout.contains("every final episode has a score under judging generous"), "{}", again.stdout);
    assert_eq!(rows("generous"), 20);

    // A judging that names another judge model under a taken name is refused.
    let clash = some(&lake, &[], &["judge", &run.id, "--judging", "generous", "--judge-model", "other", "--judge-endpoint", &judge.url]);
    assert_eq!(clash.status, 1);
    assert!(clash.stderr.contains("judging generous of run"), "{}", clash.stderr);
    let unknown = some(&lake, &[], &["report", &run.id, "--judging", "nobody"]);
    assert!(unknown.stderr.contains("has no judging \"nobody\"; its judgings: primary, generous"), "{}", unknown.stderr);
}

#[test]
fn scores_a_failing_judge_left_out_are_filled_in_by_judging_again() {
    let (_dir, lake) = lake_with_world();
    let agent = instant();
    // Nothing listens here: every judge call fails past its retries.
    let gone = format!("http://127.0.0.1:{}/v1", some_tests::free_port());
    let out = some(
        &lake,
        &[],
        &[
            "run",
            "--tasks",
            "SMQ",
            "--sample",
            "6",
            "--model",
            "scripted",
            "--endpoint",
            &agent.url,
            "--judge-model",
            "rater",
            "--judge-endpoint",
            &gone,
            "--retries",
            "0",
            "--timeout",
            "2",
        ],
    )
    .ok();
    let id = out.stderr.lines().find_map(|l| l.strip_prefix("run ")).and_then(|l| l.split(':').next()).unwrap().to_string();
    // The episodes are final; their scores were left out, not written as 0.
    assert_eq!(finals(&lake, &id), 6);
    assert_one_final_each(&lake, &id);
    assert_eq!(scalar(&lake, &format!("SELECT count(*) AS n FROM scores WHERE run_id = '{id}'")), 0);
    assert!(out.stdout.contains("6 final episodes await a score under judging primary"), "{}", out.stdout);

    let judge = generous();
    let judged = some(&lake, &[], &["judge", &id, "--judge-endpoint", &judge.url]).ok();
    assert_eq!(judge.requests(), 6);
    assert_eq!(scalar(&lake, &format!("SELECT count(*) AS n FROM scores WHERE run_id = '{id}' AND judging = 'primary'")), 6);
    assert_eq!(scalar(&lake, &format!("SELECT CAST(min(score) AS INT) AS n FROM scores WHERE run_id = '{id}'")), 80);
    assert!(!judged.stdout.contains("await a score"), "{}", judged.stdout);
}
