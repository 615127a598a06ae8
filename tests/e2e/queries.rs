//! Importing the real SoMe queries, and refusing broken query files.

use some_tests::some;

fn per_task(lake: &str) -> String {
    some(lake, &[], &["sql", "--format", "csv", "SELECT task, count(*) AS n FROM queries GROUP BY task ORDER BY task"]).ok().stdout
}

#[test]
fn the_real_queries_import_once_with_the_published_counts() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let datasets = concat!(env!("CARGO_MANIFEST_DIR"), "/../datasets/some");
    let first = some(lake, &[], &["ingest", "queries", datasets]).ok();
    assert!(first.stdout.contains("added 17869, already present 0"), "{}", first.stdout);
    let expected = "task,n\nMCR,4000\nMID,1451\nRED,568\nSES,154\nSMQ,2000\nUBP,3000\nUCS,4000\nUEA,2696\n";
    assert_eq!(per_task(lake), expected);
    // The copy built into the binary is the same release: nothing new.
    let again = some(lake, &[], &["ingest", "queries"]).ok();
    assert!(again.stdout.contains("added 0, already present 17869"), "{}", again.stdout);
    assert_eq!(per_task(lake), expected);
}

#[test]
fn a_broken_query_file_fails_clearly_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    let data = dir.path().join("datasets");
    let write = |folder: &str, text: &str| {
        std::fs::create_dir_all(data.join(folder)).unwrap();
        std::fs::write(data.join(folder).join("ground_truth.json"), text).unwrap();
    };
    write("misinformation_detection", r#"{"1.json": {"claim": "c", "label": "true"}}"#);
    write("media_content_recommend", r#"{"7": [{"weibo_id": "1", "label": "是"}, {"weibo_id": "2", "label": "也许"}]}"#);
    let run = some(lake, &[], &["ingest", "queries", data.to_str().unwrap()]);
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("media_content_recommend/ground_truth.json: at \"7\"[1].label: unknown label \"也许\""), "{}", run.stderr);
    assert_eq!(per_task(lake), "task,n\n", "the valid MID file was not imported either");

    write("media_content_recommend", r#"{"7": [{"weibo_id": "1", "label": "是"}"#);
    let run = some(lake, &[], &["ingest", "queries", data.to_str().unwrap()]);
    assert!(run.stderr.contains("at line 1 column 40: invalid JSON: the JSON ends early (truncated file?)"), "{}", run.stderr);

    std::fs::remove_dir_all(data.join("media_content_recommend")).unwrap();
    std::fs::create_dir_all(data.join("media_recommend")).unwrap();
    let run = some(lake, &[], &["ingest", "queries", data.to_str().unwrap()]);
    assert!(run.stderr.contains("media_recommend: unknown task \"media_recommend\""), "{}", run.stderr);
    assert_eq!(per_task(lake), "task,n\n");
}
