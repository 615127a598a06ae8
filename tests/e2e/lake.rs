//! The lake on a real S3 server (s3s-fs): the same commands, the same
//! results as on a local folder; and its commits under crashes and
//! concurrent writers.

use std::process::Command;
use std::time::Duration;

use some_tests::{Background, S3Server, Vhost, some, tiny_release, wait_until};

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
    assert!(root.join("_log/00000000000000000000.json").is_file());
    assert!(root.join("posts/source=raw").is_dir());
    let leftover = files_under(&root.join("_staging"));
    assert!(leftover.is_empty(), "staged objects left behind: {leftover:?}");
}

/// The posts and users a query of the lake sees: the tiny release's
/// ingestion adds one of each, in one transaction.
fn world_rows(lake: &str, env: &[(String, String)]) -> String {
    let query = "SELECT (SELECT count(*) FROM posts) AS posts, (SELECT count(*) FROM users) AS users";
    some(lake, env, &["sql", "--format", "csv", query]).ok().stdout.lines().nth(1).unwrap_or_default().to_string()
}

/// Kills a compute worker at each step of an ingestion's commit; a reader
/// sees all of the transaction or none, and the redelivered job, taken by
/// another worker, completes it exactly once.
fn crash_at_every_step(lake_of: impl Fn(&str) -> String, env: &[(String, String)]) {
    let scratch = tempfile::tempdir().unwrap();
    let release = tiny_release(scratch.path(), Some(r#"{"user": {"id": "123", "screen_name": "u"}, "weibo": []}"#));
    let release = release.to_str().unwrap();
    // Every commit writes a checkpoint, so the checkpoint step is crossed too.
    let fault_env = |point: &str| {
        let mut env = env.to_vec();
        env.push(("SOME_FAULT_PAUSE".into(), point.into()));
        env.push(("SOME_LAKE_CHECKPOINT_INTERVAL".into(), "1".into()));
        env
    };
    for (point, visible) in [("before-commit", "0,0"), ("after-commit", "1,1"), ("after-checkpoint", "1,1")] {
        let lake = lake_of(point);
        let vhost = Vhost::create();
        let planned = some(&lake, env, &["ingest", "release", release, "--queue", &vhost.url()]).ok().stdout;
        let line = planned.lines().find(|l| l.starts_with("ingestion ")).unwrap_or_else(|| panic!("{planned}"));
        let id = line.split_whitespace().nth(1).unwrap().trim_end_matches(':').to_string();
        let args = ["worker", "--kind", "compute", "--queue", &vhost.url()];
        let mut doomed = Background::start(&lake, &fault_env(point), &args);
        let paused = format!("fault point {point}: paused");
        assert!(wait_until(Duration::from_secs(60), || doomed.log().contains(&paused)), "{point}: never reached\n{}", doomed.log());
        doomed.kill();
        assert_eq!(world_rows(&lake, env), visible, "{point}: a reader sees part of the transaction, or the wrong side of it");

        let _healthy = Background::start(&lake, env, &args);
        let committed = || some(&lake, env, &["ingest", "status", &id]).ok().stdout.contains("\ncommitted: ");
        assert!(wait_until(Duration::from_secs(60), committed), "{point}: the ingestion did not commit after the crash");
        assert_eq!(world_rows(&lake, env), "1,1", "{point}");
        let history = some(&lake, env, &["lake", "history"]).ok().stdout;
        assert_eq!(history.lines().filter(|l| l.ends_with(&id)).count(), 1, "{point}: committed once\n{history}");
    }
}

#[test]
fn a_commit_killed_at_any_step_is_all_or_nothing_on_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    crash_at_every_step(|point| dir.path().join(point).to_str().unwrap().to_string(), &[]);
}

#[test]
fn a_commit_killed_at_any_step_is_all_or_nothing_on_s3() {
    let s3 = S3Server::start("some-bucket");
    crash_at_every_step(|point| format!("s3://some-bucket/{point}"), &s3.env());
}

/// Two processes commit `each` transactions apiece to one run: every one
/// lands, at its own version.
fn two_writers_lose_nothing(lake: &str, env: &[(String, String)], each: u32) {
    some(lake, env, &["sql", "SELECT 1"]).ok();
    let writer = |first: u32| {
        Command::new(env!("CARGO_BIN_EXE_lake_writer"))
            .args([lake, "r1", &first.to_string(), &each.to_string()])
            .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .spawn()
            .unwrap()
    };
    let (mut a, mut b) = (writer(0), writer(each));
    assert!(a.wait().unwrap().success() && b.wait().unwrap().success());
    let query = "SELECT count(*) AS n, count(DISTINCT episode_id) AS distinct_ids, count(DISTINCT worker) AS writers FROM episodes WHERE run_id = 'r1'";
    let out = some(lake, env, &["sql", "--format", "csv", query]).ok().stdout;
    let n = 2 * each;
    assert_eq!(out.lines().nth(1), Some(format!("{n},{n},2").as_str()), "{out}");
    let history = some(lake, env, &["lake", "history", "--limit", "1"]).ok().stdout;
    assert!(history.lines().nth(1).is_some_and(|l| l.trim_start().starts_with(&format!("{n} "))), "{history}");
}

#[test]
fn two_processes_committing_to_one_run_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    two_writers_lose_nothing(dir.path().join("lake").to_str().unwrap(), &[], 1000);
}

#[test]
fn two_processes_committing_to_one_run_on_s3_lose_nothing() {
    let s3 = S3Server::start("lake");
    two_writers_lose_nothing("s3://lake/runs", &s3.env(), 150);
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

#[test]
fn a_lake_of_the_folder_layout_is_refused_with_the_command_that_converts_it() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().to_str().unwrap();
    std::fs::write(dir.path().join("_lake.json"), format!(r#"{{"schema_version": {}}}"#, some_schemas::SCHEMA_VERSION)).unwrap();
    let run = some(lake, &[], &["sql", "SELECT 1"]);
    assert_eq!(run.status, 1);
    assert!(run.stderr.contains("some lake convert"), "{}", run.stderr);
    some(lake, &[], &["lake", "convert"]).ok();
    some(lake, &[], &["sql", "SELECT count(*) FROM posts"]).ok();
}

/// The commit protocol's one requirement of a store: a create-if-absent put
/// that exactly one of any number of racing writers wins. The S3 test
/// server must honour it (s3s-fs alone lets several win).
#[test]
fn the_s3_server_lets_one_of_many_racing_creates_of_an_object_win() {
    use object_store::{ObjectStore, PutMode, PutOptions, PutPayload};
    let s3 = S3Server::start("some-bucket");
    let env = s3.env();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let location = "s3://some-bucket/cas".parse().unwrap();
        let lake =
            some_workers::Lake::open_with_env(&location, |k| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone())).await.unwrap();
        // Uploads of some size, so each create is open a while.
        let payload = PutPayload::from(vec![7u8; 4 << 20]);
        let create = |store: std::sync::Arc<dyn ObjectStore>, payload: PutPayload| async move {
            let path = object_store::path::Path::from("cas/_log/00000000000000000001.json");
            match store.put_opts(&path, payload, PutOptions { mode: PutMode::Create, ..Default::default() }).await {
                Ok(_) => true,
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => false,
                Err(e) => panic!("{e}"),
            }
        };
        let racers: Vec<_> = (0..16).map(|_| tokio::spawn(create(lake.store().clone(), payload.clone()))).collect();
        let mut won = Vec::new();
        for racer in racers {
            won.push(racer.await.unwrap());
        }
        assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
        assert!(!create(lake.store().clone(), payload).await, "a later create must fail");
    });
}
