//! The lake's tables read by engines no one here wrote: the `deltalake`
//! Python package (delta-rs) and Polars read each table's Delta log and see
//! the rows `some sql` sees, at the latest version and at older ones, on a
//! folder and on S3; and a crash between a lake commit and its Delta
//! versions only makes the Delta view lag until the next open.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use some_tests::scripted::{Reply, ScriptedEndpoint};
use some_tests::{Background, S3Server, some, wait_until};

/// The Python with `deltalake`, Polars and pyarrow (infra/test.sh installs them).
fn python() -> String {
    std::env::var("SOME_DELTA_PYTHON")
        .unwrap_or_else(|_| panic!("SOME_DELTA_PYTHON is not set: run the tests through infra/test.sh, which installs the Delta readers"))
}

/// What the readers see: per table, per version read, their row counts.
fn read_delta(uri: &str, tables: &BTreeMap<String, Vec<u64>>, options: Option<&Value>) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/e2e/delta_readers.py");
    let mut cmd = Command::new(python());
    cmd.arg(script).arg(uri).arg(serde_json::to_string(tables).unwrap());
    if let Some(options) = options {
        cmd.arg(options.to_string());
    }
    let out = cmd.output().expect("run the Delta readers");
    assert!(out.status.success(), "the Delta readers failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The lake's tables that a commit has touched (the Delta logs `some` publishes).
fn tables_of(lake: &str, env: &[(String, String)]) -> Vec<String> {
    let touched = |t: &str| some(lake, env, &["lake", "history", "--table", t, "--limit", "1"]).ok().stdout.lines().count() > 1;
    some_schemas::ALL_TABLES.iter().map(|t| t.name.to_string()).filter(|t| touched(t)).collect()
}

/// Table version -> lake version, from `some lake history --table`.
fn table_versions(lake: &str, env: &[(String, String)], table: &str) -> Vec<(u64, u64)> {
    let out = some(lake, env, &["lake", "history", "--table", table, "--limit", "100000"]).ok().stdout;
    out.lines()
        .skip(1)
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (cols[0].parse().unwrap(), cols[1].parse().unwrap())
        })
        .collect()
}

fn count(lake: &str, env: &[(String, String)], table: &str, as_of: Option<u64>) -> u64 {
    let query = format!("SELECT count(*) AS n FROM {table}");
    let version = as_of.map(|v| v.to_string());
    let mut args = vec!["sql", "--format", "csv"];
    if let Some(v) = &version {
        args.extend(["--as-of", v]);
    }
    args.push(&query);
    some(lake, env, &args).ok().stdout.lines().nth(1).unwrap().parse().unwrap()
}

fn pairs(lake: &str, env: &[(String, String)], table: &str, as_of: u64) -> Value {
    let query = format!("SELECT query_id || '/' || CAST(attempt AS VARCHAR) AS p FROM {table} ORDER BY p");
    let out = some(lake, env, &["sql", "--format", "csv", "--as-of", &as_of.to_string(), &query]).ok().stdout;
    let mut pairs: Vec<String> = out.lines().skip(1).map(str::to_string).collect();
    pairs.sort();
    Value::from(pairs)
}

/// A world, a run whose episodes all failed and were rerun, a second
/// judging, a simulation, a compaction and a vacuum: every kind of commit
/// the lake takes (appends, replacements, removals).
fn busy_lake(lake: &str, env: &[(String, String)]) {
    some(lake, env, &["ingest", "queries"]).ok();
    some(lake, env, &["synth", "--scale", "small"]).ok();
    let broken = ScriptedEndpoint::start(|_, _| Reply::Status(500, None));
    let run = ["run", "--tasks", "SMQ,UBP", "--sample", "3", "--model", "m", "--run-id", "r1", "--retries", "0", "--shard-size", "2"];
    some(lake, env, &[&run[..], &["--endpoint", &broken.url]].concat()).ok();
    let healthy = ScriptedEndpoint::start(|_, _| Reply::Text("是".into()));
    some(lake, env, &["rerun", "r1", "--endpoint", &healthy.url]).ok();
    let judge = ScriptedEndpoint::start(|_, _| Reply::Text("Accuracy: 4".into()));
    some(lake, env, &["judge", "r1", "--judging", "generous", "--judge-model", "rater", "--judge-endpoint", &judge.url]).ok();
    // A small simulation: its tables hold the other column types.
    let sim = some_tests::sim::sim_model();
    let args = crate::sim::small(&sim.url, "memory", "s1", "7");
    some(lake, env, &args.iter().map(String::as_str).collect::<Vec<_>>()).ok();
    some(lake, env, &["compact", "r1"]).ok();
    some(lake, env, &["vacuum", "--retain-hours", "1"]).ok();
}

/// Every table, at its latest version and at its first and middle ones,
/// reads the same rows through both readers as through `some sql` at the
/// matching lake version.
fn readers_agree(lake: &str, env: &[(String, String)], uri: &str, options: Option<&Value>) {
    let tables = tables_of(lake, env);
    for expected in ["posts", "users", "queries", "runs", "episodes", "scores", "sim_steps", "sim_turns", "sim_posts"] {
        assert!(tables.iter().any(|t| t == expected), "{expected} missing from {tables:?}");
    }
    let lines: BTreeMap<String, Vec<(u64, u64)>> = tables.iter().map(|t| (t.clone(), table_versions(lake, env, t))).collect();
    let asked: BTreeMap<String, Vec<u64>> = lines.iter().map(|(t, line)| (t.clone(), vec![line[0].0, line[line.len() / 2].0])).collect();
    let seen = read_delta(uri, &asked, options);
    let mut checked = 0;
    for (table, line) in &lines {
        let got = &seen[table];
        assert_eq!(got["latest"].as_u64(), Some(line.last().unwrap().0), "{table}: latest Delta version");
        for (version, read) in got["versions"].as_object().unwrap() {
            let version: u64 = version.parse().unwrap();
            let lake_version = line.iter().find(|(v, _)| *v == version).unwrap().1;
            let rows = count(lake, env, table, Some(lake_version));
            assert_eq!(read["deltalake"].as_u64(), Some(rows), "{table} version {version} (lake {lake_version}) through deltalake");
            assert_eq!(read["polars"].as_u64(), Some(rows), "{table} version {version} (lake {lake_version}) through Polars");
            if !read["pairs"].is_null() {
                assert_eq!(read["pairs"], pairs(lake, env, table, lake_version), "{table} version {version}: not the same rows");
            }
            checked += 1;
        }
        assert_eq!(line.last().map(|(_, lv)| count(lake, env, table, Some(*lv))), Some(count(lake, env, table, None)));
    }
    assert!(checked >= 2 * tables.len().min(6), "{checked} versions checked");
    if options.is_none() {
        let files: u64 = seen.as_object().unwrap().values().map(|t| t["stats_checked"].as_u64().unwrap()).sum();
        assert!(files > 20, "{files} files' statistics checked");
    }
}

#[test]
fn delta_readers_read_every_table_as_some_sql_does_on_a_folder() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    // Checkpoints every 3 versions, so the readers start from them.
    let env = [("SOME_LAKE_CHECKPOINT_INTERVAL".to_string(), "3".to_string())];
    busy_lake(lake, &env);
    let checkpoints = |t: &str| {
        let folder = dir.path().join(format!("lake/{t}/_delta_log"));
        std::fs::read_dir(folder)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".checkpoint.parquet"))
            .count()
    };
    assert!(checkpoints("episodes") >= 1 && checkpoints("scores") >= 1, "no checkpoint to read from");
    readers_agree(lake, &env, lake, None);

    // A rebuild from the lake log writes the same logs the commits did.
    let log = |t: &str, v: u64| std::fs::read_to_string(dir.path().join(format!("lake/{t}/_delta_log/{v:020}.json"))).unwrap();
    let before = (log("episodes", 1), log("posts", 0), checkpoints("episodes"));
    let exported = some(lake, &env, &["lake", "export-delta"]).ok().stdout;
    assert!(exported.contains("wrote the Delta logs of"), "{exported}");
    assert_eq!((log("episodes", 1), log("posts", 0), checkpoints("episodes")), before);
    readers_agree(lake, &env, lake, None);
}

#[test]
fn delta_readers_read_every_table_as_some_sql_does_on_s3() {
    let s3 = S3Server::start("delta-bucket");
    let mut env = s3.env();
    env.push(("SOME_LAKE_CHECKPOINT_INTERVAL".into(), "3".into()));
    let lake = "s3://delta-bucket/lakes/one";
    busy_lake(lake, &env);
    let options: serde_json::Map<String, Value> = s3
        .env()
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .chain([("AWS_ALLOW_HTTP".to_string(), Value::String("true".into()))])
        .collect();
    readers_agree(lake, &env, lake, Some(&Value::Object(options)));
}

#[test]
fn a_crash_after_a_lake_commit_leaves_the_delta_view_behind_until_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake");
    let lake = lake.to_str().unwrap();
    some(lake, &[], &["ingest", "queries"]).ok();
    some(lake, &[], &["synth", "--scale", "small"]).ok();
    let tables = tables_of(lake, &[]);
    let asked: BTreeMap<String, Vec<u64>> = tables.iter().map(|t| (t.clone(), vec![])).collect();
    let latest =
        |seen: &Value| -> BTreeMap<String, u64> { tables.iter().map(|t| (t.clone(), seen[t]["latest"].as_u64().unwrap())).collect() };
    let before = latest(&read_delta(lake, &asked, None));

    // The commit of the world's replacement lands; the process dies before
    // it writes the Delta versions.
    let env = [("SOME_FAULT_PAUSE".to_string(), "after-commit".to_string())];
    let mut doomed = Background::start(lake, &env, &["synth", "--scale", "small", "--seed", "3", "--replace"]);
    assert!(wait_until(Duration::from_secs(120), || doomed.log().contains("fault point after-commit: paused")), "{}", doomed.log());
    doomed.kill();
    let log = std::fs::read_dir(dir.path().join("lake/_log")).unwrap().filter_map(|e| e.ok()?.file_name().into_string().ok());
    let last = log.filter_map(|n| n.strip_suffix(".json")?.parse::<u64>().ok()).max().unwrap();
    assert!(last > 0);
    assert_eq!(latest(&read_delta(lake, &asked, None)), before, "the Delta view moved before its versions were written");

    // Any open catches up: each table the commit touched is one version on.
    some(lake, &[], &["lake", "history", "--limit", "1"]).ok();
    let after = latest(&read_delta(lake, &asked, None));
    let touched: Vec<String> = tables.iter().filter(|t| after[*t] != before[*t]).cloned().collect();
    assert!(touched.iter().any(|t| t == "posts"), "the world's tables did not move: {touched:?}");
    for t in &tables {
        let expected = before[t] + u64::from(touched.contains(t));
        assert_eq!(after[t], expected, "{t}");
    }
    assert_eq!(
        count(lake, &[], "posts", None),
        read_delta(lake, &asked, None)["posts"]["versions"][after["posts"].to_string()]["deltalake"].as_u64().unwrap()
    );
}
