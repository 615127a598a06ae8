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
