//! What evaluation teams run every night, through the `some` command and a
//! scripted endpoint over HTTP: repeated samples (`--epochs`) whose figures
//! are checked exactly, and a token budget that stops a run and a rerun
//! that finishes it with a new one.

use some_tests::scripted::{Reply, ScriptedEndpoint, is_agent};
use some_tests::{lake_with_world, some};

fn sql(lake: &str, query: &str) -> Vec<Vec<String>> {
    let out = some(lake, &[], &["sql", "--format", "csv", query]).ok().stdout;
    out.lines().skip(1).map(|l| l.split(',').map(str::to_string).collect()).collect()
}

fn run_id(stderr: &str) -> String {
    let line = stderr.lines().find(|l| l.starts_with("run ")).unwrap_or_else(|| panic!("no run line in:\n{stderr}"));
    line["run ".len()..].split(':').next().unwrap().to_string()
}

/// The figures of the task's row in the epochs table, as text cells.
fn epochs_row(report: &str, task: &str) -> Vec<String> {
    let table = &report[report.find("Over 3 epochs").unwrap_or_else(|| panic!("no epochs table in {report}"))..];
    let row = table.lines().find(|l| l.starts_with(task)).unwrap_or_else(|| panic!("no {task} row in {table}"));
    row.split_whitespace().filter(|c| *c != "±").map(str::to_string).collect()
}

#[test]
fn three_epochs_give_each_epochs_mean_an_interval_pass_at_k_and_pass_hat_k() {
    let (_dir, lake) = lake_with_world();
    // The agent answers at once, by its epoch (read from the request's
    // seed: epoch e samples from 0 + (e - 1) * 1,000,000): "yes" in epochs
    // 1 and 3, "no" in epoch 2. UBP reads yes/no without the extractor.
    let endpoint = ScriptedEndpoint::start(|_, body| {
        assert!(is_agent(body), "no judge call is needed for yes/no: {body}");
        let epoch = body["seed"].as_u64().expect("every epoch sends its seed") / 1_000_000 + 1;
        Reply::Text(if epoch == 2 { "否" } else { "是" }.into())
    });
    let run = some(
        &lake,
        &[],
        &["run", "--tasks", "UBP", "--sample", "4", "--epochs", "3", "--seed", "0", "--model", "scripted", "--endpoint", &endpoint.url],
    )
    .ok();
    let id = run_id(&run.stderr);
    assert_eq!(endpoint.requests(), 12, "4 queries × 3 epochs, one call each");
    let rows = sql(&lake, &format!("SELECT epoch, answer, count(*) AS n FROM episodes WHERE run_id = '{id}' GROUP BY 1, 2 ORDER BY 1"));
    assert_eq!(rows, [["1", "是", "4"], ["2", "否", "4"], ["3", "是", "4"]]);

    // What each query's label makes of those answers.
    let labels = sql(
        &lake,
        &format!("SELECT DISTINCT q.query_id, q.label FROM episodes e JOIN queries q ON e.query_id = q.query_id WHERE e.run_id = '{id}'"),
    );
    assert_eq!(labels.len(), 4);
    let yes = labels.iter().filter(|r| r[1] == "是").count() as f64;
    // A "yes" query is right in 2 of 3 epochs, a "no" query in 1 of 3.
    let right: Vec<f64> = labels.iter().map(|r| if r[1] == "是" { 2.0 } else { 1.0 }).collect();
    let means: Vec<f64> = right.iter().map(|c| 100.0 * c / 3.0).collect();
    let score = means.iter().sum::<f64>() / 4.0;
    let sd = (means.iter().map(|m| (m - score).powi(2)).sum::<f64>() / 3.0).sqrt();
    let half = 3.182 * sd / 2.0; // t(3) × sd / √4
    // Every query's scores across epochs are (100, 0, 100) or (0, 100, 0): sd 100 / √3.
    let spread = 100.0 / 3f64.sqrt();
    let pass_at_2 = 100.0 * right.iter().map(|c| if *c == 2.0 { 1.0 } else { 2.0 / 3.0 }).sum::<f64>() / 4.0;
    let pass_all_2 = 100.0 * right.iter().map(|c| if *c == 2.0 { 1.0 / 3.0 } else { 0.0 }).sum::<f64>() / 4.0;
    let f = |v: f64| format!("{v:.2}");
    let expected: Vec<String> = vec![
        "UBP".into(),
        "4".into(),
        f(score),
        f(half),
        f(100.0 * yes / 4.0),
        f(100.0 * (4.0 - yes) / 4.0),
        f(100.0 * yes / 4.0),
        f(spread),
        f(score),
        f(pass_at_2),
        f(100.0),
        f(score),
        f(pass_all_2),
        f(0.0),
        "0.0%".into(),
    ];
    let report = some(&lake, &[], &["report", &id]).ok().stdout;
    assert_eq!(epochs_row(&report, "UBP"), expected, "{report}");
    assert!(report.contains("samples: 12 of 12 (4 queries × 3 epochs) have a final result"), "{report}");
    assert!(report.contains("Over 3 epochs (seeds [0, 1000000, 2000000])"), "{report}");
    // The paper's table shows the same reduced score.
    let table = report.lines().find(|l| l.starts_with("this run: scripted")).unwrap();
    assert!(table.contains(&f(score)), "{table}");

    // Compared with itself, every query pairs once (not once per epoch).
    let compared = some(&lake, &[], &["compare", &id, &id]).ok().stdout;
    let line = compared.lines().find(|l| l.starts_with("UBP")).unwrap();
    assert_eq!(line.split_whitespace().nth(1), Some("4"), "{compared}");
}

#[test]
fn a_run_stops_at_its_token_budget_and_a_rerun_with_a_new_budget_finishes_it() {
    let (_dir, lake) = lake_with_world();
    // Each episode is one call of 15 tokens (the endpoint's usage).
    let endpoint = ScriptedEndpoint::start(|_, _| Reply::Text("是".into()));
    let args = |extra: &[&str]| -> Vec<String> {
        let base = ["--model", "scripted", "--endpoint", &endpoint.url, "--concurrency", "1", "--calls", "1"];
        extra.iter().chain(base.iter()).map(|s| s.to_string()).collect()
    };
    let run_args = args(&["run", "--tasks", "UBP", "--sample", "8", "--shard-size", "2", "--max-run-tokens", "40"]);
    let run = some(&lake, &[], &run_args.iter().map(String::as_str).collect::<Vec<_>>());
    // Shards of two episodes (30 tokens) run one after the other: the
    // third finds 60 spent and stops the run; the rest are dropped.
    assert_eq!(run.status, 1, "a stopped run is not a finished one:\n{}\n{}", run.stdout, run.stderr);
    let id = run_id(&run.stderr);
    assert!(run.stderr.contains("run stopped with 4 samples not run: token budget reached: 60 of 40 tokens spent"), "{}", run.stderr);
    assert!(run.stdout.contains("stopped: token budget reached: 60 of 40 tokens spent"), "{}", run.stdout);
    assert_eq!(endpoint.requests(), 4);
    let status = some(&lake, &[], &["status", &id]).ok().stdout;
    assert!(status.contains("budget: 40 tokens") && status.contains("stopped: token budget reached"), "{status}");
    assert_eq!(sql(&lake, &format!("SELECT event FROM runs WHERE run_id = '{id}' AND event = 'stopped'")).len(), 1);

    // Without a new budget a rerun is refused; with one it runs the rest.
    let refused = some(&lake, &[], &["rerun", &id]);
    assert!(refused.status != 0 && refused.stderr.contains("give it a new budget"), "{}", refused.stderr);
    // The model and its endpoint are the run's, read from its record.
    let rerun = some(&lake, &[], &["rerun", &id, "--max-run-tokens", "1000", "--concurrency", "1", "--calls", "1"]).ok();
    assert!(rerun.stderr.contains("rerunning 4 queries"), "{}", rerun.stderr);
    assert!(
        rerun.stdout.contains("queries: 8 of 8 have a final result") && rerun.stdout.contains("budget: 1000 tokens"),
        "{}",
        rerun.stdout
    );
    assert!(!rerun.stdout.contains("stopped:"), "{}", rerun.stdout);
    assert_eq!(endpoint.requests(), 8, "no query ran twice");
    let per_query =
        sql(&lake, &format!("SELECT query_id, count(*) AS n, max(attempt) AS a FROM episodes WHERE run_id = '{id}' GROUP BY 1"));
    assert_eq!(per_query.len(), 8);
    assert!(per_query.iter().all(|r| r[1] == "1" && r[2] == "1"), "{per_query:?}");
}
