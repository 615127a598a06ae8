//! The lake on a real S3 server (s3s-fs): the same commands, the same
//! results as on a local folder.

use some_tests::{S3Server, some};

#[test]
fn the_lake_works_the_same_on_s3() {
    let s3 = S3Server::start("some-bucket");
    let env = s3.env();
    let lake = "s3://some-bucket/lakes/one";
    some(lake, &env, &["ingest", "queries"]).ok();
    some(lake, &env, &["synth", "--seed", "5"]).ok();
    some(lake, &env, &["check", "--answers"]).ok();

    let local = tempfile::tempdir().unwrap();
    let local = local.path().to_str().unwrap();
    some(local, &[], &["ingest", "queries"]).ok();
    some(local, &[], &["synth", "--seed", "5"]).ok();
    let query = "SELECT source, count(*) AS n, min(post_id) AS first FROM posts GROUP BY source ORDER BY source";
    let on_s3 = some(lake, &env, &["sql", "--format", "csv", query]).ok().stdout;
    assert_eq!(on_s3, some(local, &[], &["sql", "--format", "csv", query]).ok().stdout);

    // The objects are in the bucket under the prefix, and no staged object is
    // left (s3s-fs keeps emptied folders on its disk; they are not objects).
    let root = s3.dir.path().join("some-bucket/lakes/one");
    assert!(root.join("_lake.json").is_file());
    assert!(root.join("posts/source=raw").is_dir());
    let leftover = files_under(&root.join("_staging"));
    assert!(leftover.is_empty(), "staged objects left behind: {leftover:?}");
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(files_under(&path)) } else { files.push(path) }
    }
    files
}

#[test]
fn wrong_credentials_fail_with_the_object_named() {
    let s3 = S3Server::start("some-bucket");
    let mut env = s3.env();
    env[2].1 = "wrong-secret".into();
    let run = some("s3://some-bucket/x", &env, &["sql", "SELECT 1"]);
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("lake read x/_lake.json"), "{}", run.stderr);
}
