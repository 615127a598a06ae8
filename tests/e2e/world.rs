//! A synthetic world: written, checked against every real query, exported
//! as a release, and read back from that release unchanged.

use some_tests::{BAD_USER, assert_same_world, csv as dump, some, tiny_release};

const POSTS: &str = "SELECT * FROM posts ORDER BY source, post_id";

#[test]
fn synth_covers_every_query_and_round_trips_through_the_release_layout() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let release = dir.path().join("release");

    some(a, &[], &["ingest", "queries"]).ok();
    let synth = some(a, &[], &["synth", "--scale", "small", "--seed", "11", "--release-out", release.to_str().unwrap()]).ok();
    assert!(synth.stdout.contains("posts/s"), "{}", synth.stdout);

    // Every real query's users, posts, topics, windows and SMQ answers are there.
    let check = some(a, &[], &["check", "--answers"]).ok();
    for task in ["RED", "SES", "MID", "UBP", "UEA", "UCS", "MCR", "SMQ"] {
        let line = check.stdout.lines().find(|l| l.starts_with(task)).unwrap();
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols[1], cols[2], "{line}");
        assert_eq!(cols[3], "0", "{line}");
    }

    assert!(release.join("database/raw_data").is_dir());
    assert!(release.join("database/post_data/all_posts.json").is_file());
    every_key_the_reference_reads_is_in_every_record(&release);
    some(b, &[], &["ingest", "queries"]).ok();
    some(b, &[], &["ingest", "release", release.to_str().unwrap()]).ok();
    assert_same_world(a, b);
    some(b, &[], &["check", "--answers"]).ok();

    // A second world is refused unless asked for, and the first stays whole.
    let count = |lake: &str| dump(lake, "SELECT count(*) AS n FROM posts");
    let before = count(a);
    let again = some(a, &[], &["synth"]);
    assert_eq!(again.status, 1);
    assert!(again.stderr.contains("already holds a world"), "{}", again.stderr);
    assert_eq!(count(a), before);
    some(a, &[], &["synth", "--seed", "12", "--replace"]).ok();
    assert_eq!(count(a), before, "same queries, same volume");
    assert_ne!(dump(a, POSTS), dump(b, POSTS), "another seed, another world");
}

#[test]
fn a_release_with_a_missing_part_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let release = tiny_release(dir.path(), None);
    let run = some(lake, &[], &["ingest", "release", release.to_str().unwrap()]);
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("user_data/123: missing part: a user folder must hold 123.json"), "{}", run.stderr);

    // A bad file after good ones: the good ones are not left behind either.
    tiny_release(dir.path(), Some(BAD_USER));
    let run = some(lake, &[], &["ingest", "release", release.to_str().unwrap()]);
    assert!(run.stderr.contains("123.json: at weibo: expected a list of posts, found a number"), "{}", run.stderr);
    assert_eq!(dump(lake, "SELECT count(*) AS n FROM posts"), "n\n0\n");
    assert_eq!(dump(lake, "SELECT count(*) AS n FROM users"), "n\n0\n");
}

/// The records of a release, by kind (raw, topic, user, weibo): where each
/// is and its keys.
fn records(release: &std::path::Path) -> Vec<(&'static str, String, std::collections::BTreeSet<String>)> {
    use serde_json::Value;
    let db = release.join("database");
    let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    let files = |dir: &str| -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![db.join(dir)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.path().is_dir() { stack.push(e.path()) } else { out.push(e.path()) }
            }
        }
        out
    };
    let mut out = Vec::new();
    for f in files("raw_data") {
        for (i, line) in std::fs::read_to_string(&f).unwrap().lines().enumerate() {
            out.push(("raw", format!("{}:{}", f.display(), i + 1), keys(&serde_json::from_str(line).unwrap())));
        }
    }
    for f in files("topic_data") {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        for (id, post) in v["media_info"].as_object().unwrap() {
            out.push(("topic", format!("{} {id}", f.display()), keys(post)));
        }
    }
    for f in files("user_data").into_iter().filter(|f| f.extension().is_some_and(|e| e == "json")) {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        out.push(("user", f.display().to_string(), keys(&v["user"])));
        for (i, post) in v["weibo"].as_array().into_iter().flatten().enumerate() {
            out.push(("weibo", format!("{} weibo[{i}]", f.display()), keys(post)));
        }
    }
    out
}

/// A release we write is one the reference's tools read: every key its
/// records carry in the reference's own release (`../shared/reference/parity`,
/// whose README says each holds every key the reference reads) is in every
/// record of ours.
fn every_key_the_reference_reads_is_in_every_record(release: &std::path::Path) {
    let parity = some_jobs::testing::shared_dir().join("reference/parity/release");
    let mut needed: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> = Default::default();
    for (kind, _, keys) in records(&parity) {
        needed.entry(kind).or_default().extend(keys);
    }
    assert_eq!(needed.len(), 4, "the parity release has raw, topic, user and weibo records");
    let ours = records(release);
    for kind in ["raw", "topic", "user", "weibo"] {
        assert!(ours.iter().any(|(k, _, _)| *k == kind), "our release has no {kind} record");
    }
    for (kind, at, keys) in ours {
        let missing: Vec<&String> = needed[kind].iter().filter(|k| !keys.contains(*k)).collect();
        assert!(missing.is_empty(), "{at}: the reference reads {missing:?}, which the record lacks");
    }
}
