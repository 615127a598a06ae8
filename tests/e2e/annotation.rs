//! `some annotate`: queries made from a world's interactions and from
//! LIAR-RAW/RAWFC files, written in the release's layout and read back by
//! `some ingest queries` as the release's own files are.

use std::time::Duration;

use some_tests::fleet::{Cluster, worker};
use some_tests::scripted::{Reply, ScriptedEndpoint};
use some_tests::{Background, csv, lake_with_world, some, wait_until};

/// Rows of `queries` per task and label, as CSV.
const PER_LABEL: &str = "SELECT task, label, count(*) AS n FROM queries GROUP BY task, label ORDER BY task, label";

#[test]
fn queries_drawn_from_a_world_s_interactions_keep_their_rules_and_import_as_written() {
    let (dir, lake) = lake_with_world();
    let out = dir.path().join("annotated");
    let out = out.to_str().unwrap();
    let args = ["annotate", "interactions", "--out", out, "--ubp-per-type", "40", "--ucs", "60", "--mcr", "60", "--seed", "5"];
    let made = some(&lake, &[], &args).ok();
    for line in ["UBP like: 40 of 40", "UBP repost: 40 of 40", "UCS ucs: 60 of 60", "MCR mcr: 60 of 60", "UBP: 240 queries"] {
        assert!(made.stdout.contains(line), "{line:?} not in:\n{}", made.stdout);
    }
    assert_eq!(made.stdout.matches("rules checked on every one: 0 breaches").count(), 3, "{}", made.stdout);

    let again = some(&lake, &[], &args);
    assert_ne!(again.status, 0, "an existing file is not overwritten without --replace");
    assert!(again.stderr.contains("--replace"), "{}", again.stderr);

    let fresh = dir.path().join("fresh").to_str().unwrap().to_string();
    let datasets = format!("{out}/datasets");
    let ingested = some(&fresh, &[], &["ingest", "queries", &datasets]).ok();
    assert!(ingested.stdout.contains("read 480 queries (UBP 240, UCS 120, MCR 120)"), "{}", ingested.stdout);
    assert_eq!(
        csv(&fresh, PER_LABEL),
        "task,label,n\nMCR,否,60\nMCR,是,60\nUBP,否,120\nUBP,是,120\nUCS,否,60\nUCS,是,60\n",
        "balanced, as written"
    );
}

#[test]
fn a_bad_interactions_file_is_refused_whole_and_nothing_is_written() {
    let (dir, lake) = lake_with_world();
    let file = dir.path().join("interactions.jsonl");
    std::fs::write(
        &file,
        "{\"uid\": \"1\", \"post_id\": \"2\", \"kind\": \"like\"}\n{\"uid\": \"1\", \"post_id\": \"2\", \"kind\": \"love\"}\n",
    )
    .unwrap();
    let out = dir.path().join("annotated");
    let run = some(&lake, &[], &["annotate", "interactions", "--interactions", file.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_ne!(run.status, 0);
    assert!(run.stderr.contains("line 2.kind") && run.stderr.contains("unknown kind \"love\""), "{}", run.stderr);
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn claims_from_liar_raw_and_rawfc_become_mid_queries_and_a_knowledge_base() {
    let dir = tempfile::tempdir().unwrap();
    let liar = dir.path().join("test.json");
    std::fs::write(
        &liar,
        r#"[{"event_id": "11972.json", "claim": "Building a wall will take years.", "label": "mostly-true", "explain": "",
             "reports": [{"content": "Engineers say a wall takes years.", "link": "https://a.example/1"},
                         {"content": "Border wall costs rise.", "link": "https://a.example/2"}]},
            {"event_id": "11685.json", "claim": "Layoffs will double this year.", "label": "pants-fire", "explain": "",
             "reports": [{"content": "Layoffs fell this year.", "link": "https://b.example/1"}]}]"#,
    )
    .unwrap();
    let rawfc = dir.path().join("rawfc");
    std::fs::create_dir(&rawfc).unwrap();
    std::fs::write(
        rawfc.join("195391.json"),
        r#"{"event_id": "195391", "claim": "A town banned snow.", "label": "half", "original_label": "mixture",
            "reports": [{"content": "The town limited snow machines.", "link": "https://c.example/1"}]}"#,
    )
    .unwrap();
    let out = dir.path().join("mid");
    let lake = dir.path().join("lake").to_str().unwrap().to_string();
    let made = some(
        &lake,
        &[],
        &["annotate", "claims", "--liar-raw", liar.to_str().unwrap(), "--rawfc", rawfc.to_str().unwrap(), "--out", out.to_str().unwrap()],
    )
    .ok();
    assert!(made.stdout.contains("MID: 3 claims (false 1, half 1, true 1)"), "{}", made.stdout);
    assert!(made.stdout.contains("knowledge base: 4 reports"), "{}", made.stdout);

    some(&lake, &[], &["ingest", "queries", out.join("datasets").to_str().unwrap()]).ok();
    some(&lake, &[], &["ingest", "release", out.to_str().unwrap()]).ok();
    assert_eq!(
        csv(&lake, "SELECT source_key, label, claim FROM queries ORDER BY source_key"),
        "source_key,label,claim\n11685.json,false,Layoffs will double this year.\n11972.json,true,Building a wall will take years.\n195391,half,A town banned snow.\n"
    );
    assert_eq!(
        csv(&lake, "SELECT doc_index, link FROM knowledge ORDER BY doc_index"),
        "doc_index,link\n0,https://a.example/1\n1,https://a.example/2\n2,https://b.example/1\n3,https://c.example/1\n"
    );
}

/// A stand-in for a model that reads a cluster well: an event when the
/// first post shown tells of one (a date in it), summarised as that post.
fn summarise_first_post(_: usize, body: &serde_json::Value) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
    let first = prompt.lines().find_map(|l| l.strip_prefix("1. ")).unwrap_or_default();
    let text = first.split_once("] ").map_or(first, |(_, t)| t);
    let reply = if text.contains('月') && text.contains('日') {
        serde_json::json!({"event": true, "title": text.chars().take(20).collect::<String>(), "content": text, "time": "", "location": ""})
    } else {
        serde_json::json!({"event": false, "title": "", "content": "", "time": "", "location": ""})
    };
    Reply::Text(reply.to_string())
}

#[test]
fn a_location_day_becomes_red_queries_measured_against_the_world_s_events() {
    let (dir, lake) = lake_with_world();
    some(&lake, &[], &["models", "fetch", "multilingual-e5-small"]).ok();
    let endpoint = ScriptedEndpoint::start(summarise_first_post);
    let out = dir.path().join("red");
    let args = ["annotate", "events", "--location", "江西", "--days", "2025-06-01", "--model", "scripted", "--endpoint", &endpoint.url];
    let made = some(&lake, &[], &[&args[..], &["--out", out.to_str().unwrap()]].concat()).ok();
    assert!(made.stdout.contains("江西 2025-06-01: ") && made.stdout.contains("0 unreadable replies"), "{}", made.stdout);
    let figures = made.stdout.lines().find(|l| l.starts_with("against the lake's RED queries")).expect("the truth's figures");
    let percent = |after: &str| -> f64 { figures.split(after).nth(1).and_then(|r| r.split('%').next()).unwrap().trim().parse().unwrap() };
    assert!(percent("recall") >= 50.0 && percent("precision") >= 80.0, "{figures}");
    let bodies = endpoint.bodies();
    assert!(!bodies.is_empty() && bodies.iter().all(|b| b["response_format"]["type"] == "json_schema"), "asked under the reply's schema");

    let fresh = dir.path().join("fresh").to_str().unwrap().to_string();
    let read = some(&fresh, &[], &["ingest", "queries", out.join("datasets").to_str().unwrap()]).ok();
    assert!(read.stdout.contains("(RED "), "{}", read.stdout);
    let windows = csv(&fresh, "SELECT count(*) AS n FROM queries WHERE task = 'RED' AND location = '江西'");
    assert_ne!(windows, "n\n0\n");
}

#[test]
fn emotions_are_voted_on_and_measured_against_the_world_s() {
    let (dir, lake) = lake_with_world();
    // A model that hears sadness everywhere: right on the sad posts only.
    let endpoint = ScriptedEndpoint::start(|_, _| Reply::Text("{\"emotion\": \"悲伤\"}".into()));
    let out = dir.path().join("uea");
    let args = ["annotate", "emotions", "--per-emotion", "4", "--model", "scripted", "--endpoint", &endpoint.url, "--cap", "悲伤=3"];
    let made = some(&lake, &[], &[&args[..], &["--out", out.to_str().unwrap()]].concat()).ok();
    assert!(made.stdout.contains("UEA: 24 comments labelled by scripted with 3 votes each: 24 with a majority, 0 ties"), "{}", made.stdout);
    assert!(made.stdout.contains("4 of 24 majorities agree (16.7%)") && made.stdout.contains("悲伤 4/4, 恐惧 0/4"), "{}", made.stdout);
    assert!(made.stdout.contains("UEA: 3 queries (积极 0, 愤怒 0, 悲伤 3,"), "capped at 3: {}", made.stdout);
    assert_eq!(endpoint.requests(), 72, "three votes a comment");
    let fresh = dir.path().join("fresh").to_str().unwrap().to_string();
    some(&fresh, &[], &["ingest", "queries", out.join("datasets").to_str().unwrap()]).ok();
    assert_eq!(csv(&fresh, "SELECT label, count(*) AS n FROM queries GROUP BY label"), "label,n\n悲伤,3\n");

    // An annotator corrects one label and drops another, in the CSV.
    let out_arg = out.to_str().unwrap();
    let exported = some(&lake, &[], &["annotate", "review", "export", out_arg, "--task", "uea"]).ok();
    assert!(exported.stdout.starts_with("3 UEA annotations for review"), "{}", exported.stdout);
    let sheet = std::fs::read_to_string(out.join("review/uea.csv")).unwrap();
    assert!(sheet.starts_with("item,key,weibo_id,emotion,keep,sources,provenance\n") && sheet.contains("uea-votes"), "{sheet}");
    let ground_truth = out.join("datasets/user_emotion_analysis/ground_truth.json");
    let before = std::fs::read(&ground_truth).unwrap();

    let bad = out.join("review/bad.csv");
    std::fs::write(&bad, sheet.replacen(",悲伤,", ",开心,", 1)).unwrap();
    let refused =
        some(&lake, &[], &["annotate", "review", "import", out_arg, bad.to_str().unwrap(), "--task", "uea", "--annotator", "ann"]);
    assert_ne!(refused.status, 0);
    assert!(refused.stderr.contains("line 2.emotion") && refused.stderr.contains("unknown label \"开心\""), "{}", refused.stderr);
    assert_eq!(std::fs::read(&ground_truth).unwrap(), before, "a refused file changes nothing");
    assert!(!out.join("review/changes.jsonl").exists());

    let edited = out.join("review/edited.csv");
    std::fs::write(&edited, sheet.replacen(",悲伤,", ",恐惧,", 1).replacen(",yes,", ",no,", 2).replacen(",no,", ",yes,", 1)).unwrap();
    let imported =
        some(&lake, &[], &["annotate", "review", "import", out_arg, edited.to_str().unwrap(), "--task", "uea", "--annotator", "ann"]).ok();
    assert!(imported.stdout.contains("3 lines reviewed by ann: 2 changes recorded"), "{}", imported.stdout);
    let changes = std::fs::read_to_string(out.join("review/changes.jsonl")).unwrap();
    let changes: Vec<serde_json::Value> = changes.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(
        (changes[0]["field"].as_str(), changes[0]["old"].as_str(), changes[0]["new"].as_str()),
        (Some("emotion"), Some("悲伤"), Some("恐惧"))
    );
    assert_eq!(
        (changes[1]["field"].as_str(), changes[1]["new"].as_str(), changes[1]["annotator"].as_str()),
        (Some("keep"), Some("no"), Some("ann"))
    );
    let again = dir.path().join("again").to_str().unwrap().to_string();
    some(&again, &[], &["ingest", "queries", out.join("datasets").to_str().unwrap()]).ok();
    assert_eq!(
        csv(&again, "SELECT label, count(*) AS n FROM queries GROUP BY label ORDER BY label"),
        "label,n\n恐惧,1\n悲伤,1\n",
        "UTF-8 byte order"
    );
}

/// A stand-in model for SMQ: one question per subject, specific, unknown
/// without the posts, and supported by them.
fn questioner(_: usize, body: &serde_json::Value) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
    let text = if prompt.contains("请根据这些帖子提出") {
        r#"{"pairs": [{"question": "最常提到的是什么？", "answer": "第一条帖子的内容"}]}"#
    } else if prompt.contains("是否具体") {
        r#"{"specific": true}"#
    } else if prompt.contains("请直接回答") {
        "不知道"
    } else if prompt.contains("同一件事") {
        r#"{"same": false}"#
    } else {
        r#"{"supported": true}"#
    };
    Reply::Text(text.into())
}

#[test]
fn questions_about_users_and_topics_become_balanced_smq_queries() {
    let (dir, lake) = lake_with_world();
    let endpoint = ScriptedEndpoint::start(questioner);
    let out = dir.path().join("smq");
    let args = ["annotate", "questions", "--users", "3", "--topics", "2", "--model", "scripted", "--endpoint", &endpoint.url];
    let made = some(&lake, &[], &[&args[..], &["--out", out.to_str().unwrap()]].concat()).ok();
    assert!(
        made.stdout.contains("SMQ: 5 subjects (3 users, 2 topics) asked by scripted: 5 questions, 0 vague, 0 answered alike without the posts, 1 dropped to balance, 4 kept"),
        "{}",
        made.stdout
    );
    assert!(made.stdout.contains("support, by scripted: kept 4 of 4, dropped to balance 1 of 1"), "{}", made.stdout);
    let fresh = dir.path().join("fresh").to_str().unwrap().to_string();
    some(&fresh, &[], &["ingest", "queries", out.join("datasets").to_str().unwrap()]).ok();
    assert_eq!(
        csv(&fresh, "SELECT uid IS NOT NULL AS about_a_user, count(*) AS n FROM queries GROUP BY uid IS NOT NULL ORDER BY 1"),
        "about_a_user,n\nfalse,2\ntrue,2\n",
        "the reader finds each question's user or topic"
    );
}

#[test]
fn a_red_annotation_through_rabbitmq_survives_a_killed_worker_and_matches_one_made_here() {
    let c = Cluster::shared();
    let (lake, queue) = (&c.lake, &c.queue);
    some(lake, &[], &["models", "fetch", "multilingual-e5-small"]).ok();
    // Slow enough that a day is half done when its worker dies.
    let endpoint = ScriptedEndpoint::start(|n, body| match summarise_first_post(n, body) {
        Reply::Text(text) => Reply::Delayed(Duration::from_millis(400), text),
        other => other,
    });
    let dir = tempfile::tempdir().unwrap();
    let days = "2025-06-01,2025-06-02,2025-06-03";
    let args = |out: &str| -> Vec<String> {
        ["annotate", "events", "--location", "江西", "--days", days, "--model", "scripted", "--endpoint", &endpoint.url, "--out", out]
            .map(str::to_string)
            .to_vec()
    };
    let (here, there) = (dir.path().join("here"), dir.path().join("there"));

    // The same world in another lake, annotated on one process without a break.
    let (_other, other_lake) = lake_with_world();
    let uninterrupted: Vec<String> = [args(here.to_str().unwrap()), vec!["--queue".into(), "memory".into()]].concat();
    some(&other_lake, &[], &uninterrupted.iter().map(String::as_str).collect::<Vec<_>>()).ok();

    let through_broker: Vec<String> = [args(there.to_str().unwrap()), vec!["--queue".into(), queue.clone()]].concat();
    let mut coordinator = Background::start(lake, &[], &through_broker.iter().map(String::as_str).collect::<Vec<_>>());
    let mut workers = [worker(lake, queue), worker(lake, queue)];
    assert!(wait_until(Duration::from_secs(120), || endpoint.requests() >= 2), "no model call");
    workers[0].kill();
    assert!(coordinator.child.try_wait().unwrap().is_none(), "the annotation finished before the worker died");
    let finished = wait_until(Duration::from_secs(300), || coordinator.child.try_wait().unwrap().is_some());
    assert!(finished, "the annotation did not finish: {}", coordinator.log());
    assert!(coordinator.child.wait().unwrap().success(), "{}", coordinator.log());

    for file in ["datasets/realtime_event_detection/ground_truth.json", "datasets/realtime_event_detection/annotations.jsonl"] {
        let (a, b) = (std::fs::read_to_string(here.join(file)).unwrap(), std::fs::read_to_string(there.join(file)).unwrap());
        assert!(a.len() > 100 && a == b, "{file} differs between the uninterrupted run and the one through the broker");
    }
    assert_eq!(csv(lake, "SELECT count(*) AS n FROM annotation_shards"), "n\n3\n", "one file a day, none twice");
}

/// A stand-in model for SES: a first draft, a check that misses a detail
/// in it, a revision, a check that finds nothing.
fn summariser(_: usize, body: &serde_json::Value) -> Reply {
    let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
    let text = if prompt.contains("请对照帖子检查") {
        if prompt.contains("初稿") { r#"{"inaccuracies": [], "missing": ["时间"]}"# } else { r#"{"inaccuracies": [], "missing": []}"# }
    } else if prompt.contains("请改写") {
        "改好的摘要"
    } else {
        "初稿"
    };
    Reply::Text(text.into())
}

#[test]
fn topic_summaries_are_refined_over_recorded_rounds() {
    let (dir, lake) = lake_with_world();
    let endpoint = ScriptedEndpoint::start(summariser);
    let out = dir.path().join("ses");
    let args = ["annotate", "summaries", "--topics", "2", "--model", "scripted", "--endpoint", &endpoint.url];
    let made = some(&lake, &[], &[&args[..], &["--out", out.to_str().unwrap()]].concat()).ok();
    let rounds =
        made.stdout.matches("2 check rounds (0 inaccurate, 1 missing; 0 inaccurate, 0 missing); similarity to the world's summary").count();
    assert_eq!(rounds, 2, "{}", made.stdout);
    let recorded = std::fs::read_to_string(out.join("datasets/streaming_event_summary/rounds.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(recorded.lines().next().unwrap()).unwrap();
    assert_eq!((first["rounds"][0]["draft"].as_str(), first["summary"].as_str()), (Some("初稿"), Some("改好的摘要")));
    let fresh = dir.path().join("fresh").to_str().unwrap().to_string();
    some(&fresh, &[], &["ingest", "queries", out.join("datasets").to_str().unwrap()]).ok();
    assert_eq!(
        csv(&fresh, "SELECT reference, count(*) AS n FROM queries WHERE task = 'SES' GROUP BY reference"),
        "reference,n\n改好的摘要,2\n"
    );
}
