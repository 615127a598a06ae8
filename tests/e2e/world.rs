//! A synthetic world: written, checked against every real query, exported
//! as a release, and read back from that release unchanged.

use some_tests::some;

/// Each world table, ordered so two lakes can be compared row for row.
const TABLES: [(&str, &str); 4] = [
    ("posts", "SELECT * FROM posts ORDER BY source, post_id"),
    ("users", "SELECT * FROM users ORDER BY uid"),
    ("ref_posts", "SELECT * FROM ref_posts ORDER BY post_id"),
    ("knowledge", "SELECT * FROM knowledge ORDER BY doc_index"),
];

fn dump(lake: &str, query: &str) -> String {
    some(lake, &[], &["sql", "--format", "csv", query]).ok().stdout
}

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
    some(b, &[], &["ingest", "queries"]).ok();
    some(b, &[], &["ingest", "release", release.to_str().unwrap()]).ok();
    for (table, query) in TABLES {
        let (left, right) = (dump(a, query), dump(b, query));
        assert!(left.lines().count() > 1, "{table} is empty");
        assert!(left == right, "{table} differs after the release round trip");
    }
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
    assert_ne!(dump(a, TABLES[0].1), dump(b, TABLES[0].1), "another seed, another world");
}

#[test]
fn a_release_with_a_missing_part_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let db = dir.path().join("release/database");
    std::fs::create_dir_all(db.join("raw_data")).unwrap();
    std::fs::write(db.join("raw_data/2025-05-01_北京_sensitive.jsonl"), "{\"unique_id\": \"1\", \"content\": \"早\"}\n").unwrap();
    std::fs::create_dir_all(db.join("user_data/123")).unwrap();
    let run = some(lake, &[], &["ingest", "release", dir.path().join("release").to_str().unwrap()]);
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("user_data/123: missing part: a user folder must hold 123.json"), "{}", run.stderr);

    // A bad file after good ones: the good ones are not left behind either.
    std::fs::write(db.join("user_data/123/123.json"), "{\"user\": {\"id\": \"123\"}, \"weibo\": 5}").unwrap();
    let run = some(lake, &[], &["ingest", "release", dir.path().join("release").to_str().unwrap()]);
    assert!(run.stderr.contains("123.json: at weibo: expected a list of posts, found a number"), "{}", run.stderr);
    assert_eq!(dump(lake, "SELECT count(*) AS n FROM posts"), "n\n0\n");
    assert_eq!(dump(lake, "SELECT count(*) AS n FROM users"), "n\n0\n");
}
