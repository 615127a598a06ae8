//! The human evaluation end to end through the `some` command: a small
//! simulation long enough for reflection to follow someone, its review
//! items exported, filled in as two annotators would (one in the JSONL,
//! one in the CSV's cells), imported, imported again without doubling,
//! malformed files refused with nothing stored, and the report's human
//! section.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};
use some_tests::fleet::scalar;
use some_tests::sim::sim_model;
use some_tests::{SomeRun, some};

const RUN: &str = "hv";
const COUNT: &str = "SELECT count(*) AS n FROM sim_reviews WHERE run_id = 'hv'";

/// 4 initial and 8 regular agents; stage one is 49 turns so the first
/// reflection (two simulated days in, turn 48) happens in it; the run stops
/// two turns into stage two.
fn simulate(lake: &str, endpoint: &str) {
    let args = [
        "sim",
        "run",
        "--model",
        "scripted",
        "--endpoint",
        endpoint,
        "--run-id",
        RUN,
        "--seed",
        "5",
        "--initial",
        "4",
        "--regular",
        "8",
        "--seed-posts",
        "8",
        "--stage-turns",
        "49",
        "--until",
        "52",
        "--feed-limit",
        "4",
        "--shard-size",
        "4",
        "--relevance",
        "tfidf",
        "--no-knowledge",
        "--no-enrich",
        "--browse",
        "batched",
    ];
    some(lake, &[], &args).ok();
}

fn squeezed(text: &str) -> Vec<String> {
    text.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect()
}

fn read_jsonl(path: &Path) -> Vec<Map<String, Value>> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

/// Annotator "ann": every action reasonable, texts 2/3/3, knowledge 1.
fn fill_jsonl(items: &[Map<String, Value>]) -> String {
    let mut out = String::new();
    for item in items {
        let mut item = item.clone();
        item.insert("annotator".into(), "ann".into());
        for (column, value) in
            [("rationality", 1), ("reflection", 1), ("informativeness", 2), ("consistency", 3), ("humanness", 3), ("knowledge", 1)]
        {
            if let Some(slot) = item.get_mut(column) {
                *slot = value.into();
            }
        }
        out.push_str(&Value::Object(item).to_string());
        out.push('\n');
    }
    out
}

/// Annotator "bo" fills the CSV's cells: every action unreasonable, texts 2/2/3.
/// The last seven cells of a row (annotator, six scores; empty or `n/a`)
/// end its last line: each kind's empty pattern is replaced by its scores.
fn fill_csv(csv: &str) -> String {
    let fills = [
        (",,,n/a,n/a,n/a,n/a,n/a", ",bo,0,n/a,n/a,n/a,n/a,n/a"),
        (",,n/a,,n/a,n/a,n/a,n/a", ",bo,n/a,0,n/a,n/a,n/a,n/a"),
        (",,n/a,n/a,,,,", ",bo,n/a,n/a,2,2,3,0"),
        (",,n/a,n/a,,,,n/a", ",bo,n/a,n/a,2,2,3,n/a"),
    ];
    let lines: Vec<String> = csv
        .lines()
        .map(|l| match fills.iter().find(|(empty, _)| l.ends_with(empty)) {
            Some((empty, filled)) => format!("{}{filled}", &l[..l.len() - empty.len()]),
            None => l.to_string(),
        })
        .collect();
    lines.join("\n") + "\n"
}

fn import(lake: &str, file: &Path) -> SomeRun {
    some(lake, &[], &["sim", "review", "import", RUN, file.to_str().unwrap()])
}

#[test]
fn reviews_are_exported_with_context_imported_strictly_once_and_reported_beside_the_papers() {
    let model = sim_model();
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    simulate(lake, &model.url);
    let follows = scalar(lake, "SELECT count(*) AS n FROM sim_actions WHERE run_id = 'hv' AND action = 'follow' AND status = 'applied'");
    assert!(follows > 0, "reflection followed someone");

    let out = dir.path().join("review");
    let args = ["sim", "review", "export", RUN, "--out", out.to_str().unwrap(), "--per-kind", "6", "--seed", "3"];
    let exported = some(lake, &[], &args).ok();
    let items = read_jsonl(&out.join("review.jsonl"));
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for item in &items {
        *kinds.entry(item["kind"].as_str().unwrap().to_string()).or_default() += 1;
    }
    for kind in ["like", "comment", "follow", "post_text", "comment_text"] {
        assert!(kinds.get(kind).is_some_and(|n| *n > 0 && *n <= 6), "{kind}: {kinds:?}");
    }
    assert!(exported.stdout.starts_with(&format!("exported {} of the run's ", items.len())), "{}", exported.stdout);
    let again = some(lake, &[], &args).ok();
    assert_eq!(again.stdout, exported.stdout, "the same seed exports the same sample");
    assert_eq!(read_jsonl(&out.join("review.jsonl")), items);

    // Enough context to judge each item.
    for item in &items {
        let has = |k: &str| item.get(k).and_then(Value::as_str).is_some_and(|v| !v.is_empty());
        assert!(has("persona") && has("question"), "{item:?}");
        match item["kind"].as_str().unwrap() {
            "follow" => assert!(has("followee") && has("history") && has("reflection_note"), "{item:?}"),
            "post_text" => assert!(has("text") && has("topic") && has("passages"), "{item:?}"),
            "comment_text" | "comment" => assert!(has("text") && has("target_text") && has("target_author"), "{item:?}"),
            _ => assert!(has("target_text") && has("target_author"), "{item:?}"),
        }
    }
    let history = items.iter().find(|i| i["kind"] == "follow").unwrap()["history"].as_str().unwrap();
    assert!(history.starts_with("1. A post by user "), "{history}");

    // Two annotators.
    let filled = dir.path().join("ann.jsonl");
    std::fs::write(&filled, fill_jsonl(&items)).unwrap();
    let first = import(lake, &filled).ok();
    let n = items.len();
    assert_eq!(
        first.stdout.trim(),
        format!(
            "imported {}: {n} scored rows ({n} new, 0 replacing earlier scores, 0 unchanged and not stored again); 0 rows left unscored",
            filled.display()
        )
    );
    let csv = dir.path().join("bo.csv");
    std::fs::write(&csv, fill_csv(&std::fs::read_to_string(out.join("review.csv")).unwrap())).unwrap();
    let second = import(lake, &csv).ok();
    assert!(second.stdout.contains(&format!("{n} scored rows ({n} new,")), "{}", second.stdout);
    assert_eq!(scalar(lake, COUNT), 2 * n);

    // The same file again adds nothing.
    let repeat = import(lake, &filled).ok();
    assert!(
        repeat.stdout.contains(&format!("(0 new, 0 replacing earlier scores, {n} unchanged and not stored again)")),
        "{}",
        repeat.stdout
    );
    assert_eq!(scalar(lake, COUNT), 2 * n);

    // Malformed files are refused whole, naming the line and field; nothing is stored.
    let text = fill_jsonl(&items);
    let post_line = text.lines().position(|l| l.contains("\"informativeness\":2")).unwrap() + 1;
    let off_scale = dir.path().join("off.jsonl");
    std::fs::write(&off_scale, text.replacen("\"informativeness\":2", "\"informativeness\":5", 1).replace("\"ann\"", "\"cy\"")).unwrap();
    let refused = import(lake, &off_scale);
    assert_ne!(refused.status, 0);
    let expected = format!("{}: at line {post_line}, field informativeness: 5 is off the scale: Info is scored 1-3", off_scale.display());
    assert!(refused.stderr.contains(&expected), "{}", refused.stderr);
    let truncated = dir.path().join("cut.jsonl");
    let cut = text.replace("\"ann\"", "\"cy\"");
    std::fs::write(&truncated, &cut[..cut.len() - 20]).unwrap();
    let refused = import(lake, &truncated);
    assert_ne!(refused.status, 0);
    assert!(
        refused.stderr.contains(&format!("cut.jsonl: at line {n}: is not one whole JSON object (a truncated line?)")),
        "{}",
        refused.stderr
    );
    assert_eq!(scalar(lake, COUNT), 2 * n, "a refused file stores nothing");

    // The report: ann says 1 and bo 0 to every like, so each stage's mean is 0.5.
    let report = some(lake, &[], &["sim", "report", RUN, "--no-embedder", "--judge-sample", "1"]).ok();
    let lines = squeezed(&report.stdout);
    let likes = items.iter().filter(|i| i["kind"] == "like" && i["stage"] == 1).count();
    let row = format!("stage 1 like {likes} {} 0.500 0.678", 2 * likes);
    assert!(lines.contains(&row), "{row}\n{}", report.stdout);
    let texts = items.iter().filter(|i| i["kind"].as_str().unwrap().ends_with("_text")).count();
    let all_info = lines.iter().find(|l| l.starts_with("post+comment Info ")).unwrap_or_else(|| panic!("{}", report.stdout));
    // Both annotators give 2: the human side does not vary.
    assert_eq!(all_info, &format!("post+comment Info {texts} - the human scores do not vary (all 2)"));
}
