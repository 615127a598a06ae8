use std::time::Duration;

use some_schemas::{KnowledgeRow, PostRow, PostSource, Row, TableDef, buckets};

use super::*;

fn knowledge(i: i64) -> KnowledgeRow {
    KnowledgeRow { doc_index: i, content: format!("report {i}"), link: None, extra: None }
}

async fn open(dir: &std::path::Path) -> Lake {
    Lake::open(&LakeLocation::Local(dir.to_path_buf())).await.unwrap()
}

/// Commits knowledge documents `docs`, one transaction each.
async fn commit_one_by_one(lake: &Lake, docs: std::ops::Range<i64>) {
    for i in docs {
        let mut txn = lake.txn();
        txn.write_rows(vec![knowledge(i)]).await.unwrap();
        txn.commit().await.unwrap();
    }
}

async fn count(lake: &Lake, table: &str) -> String {
    let batches = lake.sql(&format!("SELECT count(*) AS n FROM {table}")).await.unwrap();
    format_batches(&batches, OutputFormat::Csv).unwrap().trim().trim_start_matches("n\n").to_string()
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
    entries.flatten().flat_map(|e| if e.path().is_dir() { walk(&e.path()) } else { vec![e.path()] }).collect()
}

fn parquet_files(dir: &std::path::Path) -> usize {
    walk(dir).iter().filter(|p| p.extension().is_some_and(|e| e == "parquet")).count()
}

#[tokio::test]
async fn committed_rows_are_queryable_and_aborted_rows_never_appear() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let mut txn = lake.txn();
    txn.write_rows(vec![knowledge(0), knowledge(1)]).await.unwrap();
    assert_eq!(count(&lake, "knowledge").await, "0", "written files are invisible until the commit");
    let committed = txn.commit().await.unwrap();
    assert_eq!((committed.rows, committed.files.len(), committed.version), (2, 1, Some(1)));
    assert_eq!(count(&lake, "knowledge").await, "2");

    let mut txn = lake.txn();
    txn.write_rows(vec![knowledge(2)]).await.unwrap();
    txn.abort().await.unwrap();
    assert_eq!(count(&lake, "knowledge").await, "2");
    assert_eq!(parquet_files(dir.path()), 1, "an aborted transaction leaves no file");
}

#[tokio::test]
async fn a_shared_transaction_commits_once_however_often_it_is_committed() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    for (tag, docs) in [("u1", vec![knowledge(0), knowledge(1)]), ("u2", vec![knowledge(2)])] {
        let mut txn = lake.txn_in("ingest-t", tag);
        txn.write_rows(docs).await.unwrap();
        txn.stage().await.unwrap();
    }
    // Staging a unit again replaces what it staged rather than adding copies.
    let mut again = lake.txn_in("ingest-t", "u2");
    again.write_rows(vec![knowledge(2)]).await.unwrap();
    again.stage().await.unwrap();
    assert_eq!(count(&lake, "knowledge").await, "0", "nothing is visible before the commit");
    // Vacuum keeps what a transaction not committed yet staged, and takes
    // only the file the re-staged unit replaced.
    assert_eq!(parquet_files(dir.path()), 3);
    let done = lake.vacuum(Duration::ZERO, false).await.unwrap();
    assert_eq!((done.orphans, done.staged), (1, 0));
    assert_eq!(parquet_files(dir.path()), 2);

    let tags = ["u1".to_string(), "u2".to_string()];
    let missing = lake.commit_staged("ingest-t", &[tags.to_vec(), vec!["u3".into()]].concat(), Removal::Nothing, &[]).await.unwrap();
    assert_eq!(missing, Staged::Missing(vec!["u3".into()]));
    assert_eq!(count(&lake, "knowledge").await, "0", "a transaction missing a part commits nothing");
    let Staged::Committed(committed) = lake.commit_staged("ingest-t", &tags, Removal::Nothing, &[]).await.unwrap() else {
        panic!("all parts are staged")
    };
    assert_eq!((committed.files.len(), committed.rows), (2, 3));
    assert!(committed.files.iter().all(|p| p.filename().unwrap().starts_with("part-ingest-t-u")), "{:?}", committed.files);
    assert_eq!(count(&lake, "knowledge").await, "3");
    assert_eq!(lake.vacuum(Duration::ZERO, false).await.unwrap().staged, 2, "a committed transaction's staged parts go");
    // A second committer (or a redelivered job) commits nothing.
    let again = lake.commit_staged("ingest-t", &tags, Removal::Nothing, &[]).await.unwrap();
    assert!(matches!(again, Staged::Committed(Committed { version: None, .. })), "{again:?}");
    assert_eq!(count(&lake, "knowledge").await, "3");
    assert!(lake.abort_staged("ingest-t").await.unwrap_err().to_string().contains("is committed"));
    // A job's part is staged, never committed on its own.
    assert!(lake.txn_in("ingest-t", "u3").commit().await.is_err());
}

#[tokio::test]
async fn a_replacement_swaps_tables_in_one_version_and_earlier_versions_stay_readable() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let mut txn = lake.txn();
    txn.write_rows(vec![knowledge(0), knowledge(1)]).await.unwrap();
    let first = txn.commit().await.unwrap().version.unwrap();
    let before = lake.snapshot().await.unwrap().timestamp_ms();

    tokio::time::sleep(Duration::from_millis(5)).await;
    let mut txn = lake.txn();
    txn.write_rows(vec![knowledge(7)]).await.unwrap();
    txn.replace_tables(&[KnowledgeRow::TABLE]);
    let second = txn.commit().await.unwrap().version.unwrap();
    assert_eq!(second, first + 1);
    assert_eq!(count(&lake, "knowledge").await, "1");

    let old = lake.as_of(AsOf::Version(first)).await.unwrap();
    assert_eq!(count(&old, "knowledge").await, "2");
    let by_time = lake.as_of(AsOf::Timestamp(before)).await.unwrap();
    assert_eq!(count(&by_time, "knowledge").await, "2");
    assert!(old.txn().commit().await.unwrap_err().to_string().contains("cannot be written"));
    let err = lake.as_of(AsOf::Version(99)).await.unwrap_err().to_string();
    assert!(err.contains("has versions 0 to 2, not 99"), "{err}");
    let err = lake.as_of(AsOf::Timestamp(0)).await.unwrap_err().to_string();
    assert!(err.contains("was created at"), "{err}");

    // The replaced file is kept for the retention, then vacuumed.
    assert_eq!(lake.vacuum(Duration::from_secs(3600), false).await.unwrap(), Vacuumed::default());
    let done = lake.vacuum(Duration::ZERO, true).await.unwrap();
    assert_eq!((done.removed, done.orphans), (1, 0));
    assert_eq!(parquet_files(dir.path()), 2, "a dry run deletes nothing");
    lake.vacuum(Duration::ZERO, false).await.unwrap();
    assert_eq!(parquet_files(dir.path()), 1);
    assert_eq!(count(&lake, "knowledge").await, "1");
}

#[tokio::test]
async fn writers_with_their_own_handles_lose_no_commit_and_readers_catch_up_through_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (open(dir.path()).await, open(dir.path()).await);
    let write = |lake: Lake, from: i64| async move {
        for i in from..from + 110 {
            let mut txn = lake.txn();
            txn.write_rows(vec![knowledge(i)]).await.unwrap();
            txn.commit().await.unwrap();
        }
    };
    tokio::join!(write(a.clone(), 0), write(b.clone(), 1000));
    assert_eq!(count(&a, "knowledge").await, "220");
    assert_eq!(a.snapshot().await.unwrap().version(), 220);
    assert!(dir.path().join("_log/00000000000000000200.checkpoint.json").is_file());
    // A new reader starts from the checkpoint and replays what follows it.
    let c = open(dir.path()).await;
    assert_eq!(count(&c, "knowledge").await, "220");
    assert_eq!(count(&c.as_of(AsOf::Version(150)).await.unwrap(), "knowledge").await, "150");
    assert_eq!(c.history(219, 10).await.unwrap().len(), 2);
}

#[tokio::test]
async fn a_compaction_racing_another_fails_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    commit_one_by_one(&lake, 0..3).await;
    let parts: Vec<String> = lake.snapshot().await.unwrap().files_under("knowledge").map(|f| f.path.clone()).collect();
    let mut first = lake.txn();
    first.write_rows((0..3).map(knowledge).collect()).await.unwrap();
    first.remove_files(parts.clone());
    let mut second = lake.txn();
    second.write_rows((0..3).map(knowledge).collect()).await.unwrap();
    second.remove_files(parts);
    first.commit().await.unwrap();
    let err = second.commit().await.unwrap_err().to_string();
    assert!(err.contains("another commit removed first"), "{err}");
    assert_eq!(count(&lake, "knowledge").await, "3");
}

#[tokio::test]
async fn partitions_become_hive_folders_and_columns() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let bucket = buckets::raw("2025-05-01", "北京");
    let post = |id: &str, source: PostSource| PostRow {
        published_at: some_schemas::Timestamp::parse("2025-05-01 08:00:00"),
        area: Some("北京".into()),
        ..PostRow::new(id, format!("内容 {id}"), source, bucket.clone())
    };
    let mut txn = lake.txn();
    txn.write_rows(vec![post("a", PostSource::Raw), post("b", PostSource::Raw), post("c", PostSource::Topic)]).await.unwrap();
    txn.commit().await.unwrap();
    assert!(dir.path().join(format!("posts/source=raw/bucket={bucket}")).is_dir());

    let ctx = lake.session().await.unwrap();
    let rows: Vec<PostRow> = lake
        .read(&ctx, Some(datafusion::prelude::col(some_schemas::posts::source).eq(datafusion::prelude::lit(PostSource::Raw.as_str()))))
        .await
        .unwrap();
    let mut ids: Vec<_> = rows.iter().map(|r| r.post_id.as_str()).collect();
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    assert_eq!(rows[0], post(rows[0].post_id.as_str(), PostSource::Raw));
}

#[tokio::test]
async fn unsafe_partition_values_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let mut txn = lake.txn();
    let table = TableDef::of::<PostRow>();
    let err = txn.put_part(&table, &["raw".into(), "../x".into()], bytes::Bytes::new(), 0).await.unwrap_err();
    assert_eq!(err.to_string(), "table posts: partition value \"../x\" is not a safe path segment");
}

#[tokio::test]
async fn a_lake_of_the_folder_layout_is_refused_by_name_and_converts_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("knowledge");
    std::fs::create_dir_all(&folder).unwrap();
    let batch = KnowledgeRow::to_batch(&[knowledge(0), knowledge(1)]).unwrap();
    let bytes = encode_parquet(&TableDef::of::<KnowledgeRow>(), &batch).unwrap();
    std::fs::write(folder.join("part-old-00000.parquet"), &bytes).unwrap();
    std::fs::write(dir.path().join("_lake.json"), format!(r#"{{"schema_version": {}}}"#, some_schemas::SCHEMA_VERSION)).unwrap();

    let location = LakeLocation::Local(dir.path().to_path_buf());
    let err = Lake::open(&location).await.unwrap_err().to_string();
    assert!(err.contains("written by an earlier build") && err.contains("some lake convert"), "{err}");
    let (lake, files) = Lake::convert(&location).await.unwrap();
    assert_eq!(files, 1);
    assert_eq!(count(&lake, "knowledge").await, "2");
    assert_eq!(count(&open(dir.path()).await, "knowledge").await, "2");
}

#[tokio::test]
async fn a_lake_of_another_schema_version_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("_log")).unwrap();
    std::fs::write(
        dir.path().join("_log/00000000000000000000.json"),
        r#"{"version": 0, "timestamp_ms": 0, "txn": "create", "schema_version": 1}"#,
    )
    .unwrap();
    let err = Lake::open(&LakeLocation::Local(dir.path().to_path_buf())).await.unwrap_err().to_string();
    assert!(err.contains(&format!("the lake at {} has schema version 1", dir.path().display())), "{err}");
    assert!(err.contains(&format!("this build reads version {}", some_schemas::SCHEMA_VERSION)), "{err}");
}

#[test]
fn lake_locations_parse() {
    assert_eq!(
        "s3://b/some/prefix/".parse::<LakeLocation>().unwrap(),
        LakeLocation::S3 { bucket: "b".into(), prefix: "some/prefix".into() }
    );
    assert_eq!("file:///tmp/x".parse::<LakeLocation>().unwrap(), LakeLocation::Local("/tmp/x".into()));
    assert!("gs://b".parse::<LakeLocation>().unwrap_err().to_string().contains("expected a folder path"));
    assert!("s3:///x".parse::<LakeLocation>().unwrap_err().to_string().contains("needs a bucket"));
}

/// A table as an older build wrote it, and as this one reads it: a nullable
/// column added since.
mod widened {
    pub mod before {
        some_schemas::table! {
            pub struct Before in widened partitioned by [run_id] { a: i64, run_id: some_schemas::RunId }
        }
    }
    pub mod after {
        some_schemas::table! {
            pub struct After in widened partitioned by [run_id] { a: i64, b: Option<i64>, run_id: some_schemas::RunId }
        }
    }
}

#[tokio::test]
async fn a_nullable_column_added_later_reads_as_null_from_older_files() {
    use widened::after::After;
    use widened::before::Before;
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let mut txn = lake.txn();
    txn.write_rows(vec![Before { a: 1, run_id: "r".into() }]).await.unwrap();
    txn.commit().await.unwrap();
    let mut txn = lake.txn();
    txn.write_rows(vec![After { a: 2, b: Some(5), run_id: "r".into() }]).await.unwrap();
    txn.commit().await.unwrap();
    let ctx = lake.session().await.unwrap();
    ctx.register_table("widened", lake.listing_table(&TableDef::of::<After>()).unwrap()).unwrap();
    let mut rows: Vec<After> = lake.read(&ctx, None).await.unwrap();
    rows.sort_by_key(|r| r.a);
    assert_eq!(rows, vec![After { a: 1, b: None, run_id: "r".into() }, After { a: 2, b: Some(5), run_id: "r".into() }]);
}

/// Two writers that may only fill an empty table, prepared together: the
/// first to commit lands, the second is refused whole, naming the first
/// (commits of other tables in between do not hide it); a redelivered
/// commit of the first commits nothing and is not refused by its own rows;
/// a shared transaction is refused the same way.
#[tokio::test]
async fn a_writer_that_needs_an_empty_table_is_refused_once_another_filled_it() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let mut first = lake.txn_named("world-a");
    let mut second = lake.txn_named("world-b");
    let mut shared = lake.txn_in("ingest-c", "u1");
    for (txn, i) in [(&mut first, 0), (&mut second, 1), (&mut shared, 2)] {
        txn.write_rows(vec![knowledge(i)]).await.unwrap();
        txn.require_empty(&[KnowledgeRow::TABLE]);
    }
    shared.stage().await.unwrap();
    let landed = first.commit().await.unwrap().version.unwrap();
    let mut other = lake.txn();
    other.write_rows(vec![PostRow::new("p", "x", PostSource::Topic, buckets::topic("t"))]).await.unwrap();
    other.commit().await.unwrap();

    let err = second.commit().await.unwrap_err();
    assert!(matches!(&err, crate::error::Error::Filled { by: Some(by), version, .. } if by == "world-a" && *version == landed), "{err:?}");
    let said = err.to_string();
    assert!(said.contains("transaction world-a (lake version 1)") && said.contains("nothing of world-b was committed"), "{said}");
    assert_eq!(count(&lake, "knowledge").await, "1");

    let mut again = lake.txn_named("world-a");
    again.write_rows(vec![knowledge(0)]).await.unwrap();
    again.require_empty(&[KnowledgeRow::TABLE]);
    assert_eq!(again.commit().await.unwrap().version, None, "a redelivered commit is refused by its own rows");

    let err = lake.commit_staged("ingest-c", &["u1".into()], Removal::Nothing, &[KnowledgeRow::TABLE.into()]).await.unwrap_err();
    assert!(matches!(&err, crate::error::Error::Filled { by: Some(by), .. } if by == "world-a"), "{err:?}");
    assert_eq!(count(&lake, "knowledge").await, "1");
    // Replacing the table needs nothing empty.
    let mut replace = lake.txn();
    replace.write_rows(vec![knowledge(3)]).await.unwrap();
    replace.replace_tables(&[KnowledgeRow::TABLE]);
    replace.commit().await.unwrap();
    assert_eq!(count(&lake, "knowledge").await, "1");
}

fn delta_log(dir: &std::path::Path, table: &str, version: u64) -> Option<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(dir.join(format!("{table}/_delta_log/{version:020}.json"))).ok()?;
    Some(text.lines().map(|l| serde_json::from_str(l).unwrap()).collect())
}

fn action<'a>(actions: &'a [serde_json::Value], kind: &str) -> Vec<&'a serde_json::Value> {
    actions.iter().filter_map(|a| a.get(kind)).collect()
}

#[tokio::test]
async fn each_commit_is_a_delta_version_of_the_tables_it_touches_and_vacuum_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let mut txn = lake.txn();
    txn.write_rows(vec![knowledge(0), knowledge(1)]).await.unwrap();
    txn.commit().await.unwrap();
    let mut txn = lake.txn();
    txn.write_rows(vec![knowledge(2)]).await.unwrap();
    txn.replace_tables(&["knowledge"]);
    let replaced = txn.commit().await.unwrap();

    let first = delta_log(dir.path(), "knowledge", 0).expect("version 0");
    assert_eq!(action(&first, "protocol")[0]["minReaderVersion"], 1, "no timestamp column: the plainest protocol");
    let meta = action(&first, "metaData")[0];
    assert!(meta["schemaString"].as_str().unwrap().contains(r#""name":"doc_index","type":"long""#), "{meta}");
    let add = action(&first, "add")[0];
    let stats: serde_json::Value = serde_json::from_str(add["stats"].as_str().unwrap()).unwrap();
    assert_eq!(stats["numRecords"], 2);
    assert_eq!((stats["minValues"]["doc_index"].clone(), stats["maxValues"]["doc_index"].clone()), (0.into(), 1.into()));
    assert_eq!(stats["nullCount"]["link"], 2);
    assert_eq!(action(&first, "txn")[0]["version"], 1, "the lake version it is");

    let second = delta_log(dir.path(), "knowledge", 1).expect("version 1");
    assert_eq!(action(&second, "remove").len(), 1);
    assert_eq!(action(&second, "add").len(), 1);
    assert!(action(&second, "metaData").is_empty());
    assert_eq!(action(&second, "txn")[0]["version"], replaced.version.unwrap());
    assert!(delta_log(dir.path(), "posts", 0).is_none(), "an untouched table has no log");

    lake.vacuum(Duration::ZERO, false).await.unwrap();
    assert!(delta_log(dir.path(), "knowledge", 1).is_some(), "vacuum took the Delta log for orphans");
    assert_eq!(
        lake.table_history("knowledge", 10).await.unwrap().iter().map(|v| (v.table_version, v.lake_version)).collect::<Vec<_>>(),
        [(0, 1), (1, 2)]
    );
}

#[tokio::test]
async fn missing_delta_versions_are_written_again_on_open_and_by_export() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    commit_one_by_one(&lake, 0..3).await;
    let versions: Vec<_> = (0..3).map(|v| delta_log(dir.path(), "knowledge", v).unwrap()).collect();
    // As if a process died after lake commits 2 and 3 and before their Delta versions.
    for v in [1, 2] {
        std::fs::remove_file(dir.path().join(format!("knowledge/_delta_log/{v:020}.json"))).unwrap();
    }
    let reopened = open(dir.path()).await;
    assert_eq!((0..3).map(|v| delta_log(dir.path(), "knowledge", v).unwrap()).collect::<Vec<_>>(), versions);

    // A commit by a process that missed a version fills the gap first.
    std::fs::remove_file(dir.path().join(format!("knowledge/_delta_log/{:020}.json", 2))).unwrap();
    let mut txn = lake.txn();
    txn.write_rows(vec![knowledge(9)]).await.unwrap();
    lake.delta_written.lock().unwrap().remove("knowledge");
    txn.commit().await.unwrap();
    assert_eq!(delta_log(dir.path(), "knowledge", 2).unwrap(), versions[2]);
    assert!(delta_log(dir.path(), "knowledge", 3).is_some());

    std::fs::remove_dir_all(dir.path().join("knowledge/_delta_log")).unwrap();
    let done = reopened.export_delta().await.unwrap();
    assert_eq!((done.tables, done.versions), (1, 4));
    assert_eq!((0..3).map(|v| delta_log(dir.path(), "knowledge", v).unwrap()).collect::<Vec<_>>(), versions);
}

#[tokio::test]
async fn an_aborted_shared_transaction_never_commits_however_late_its_last_job() {
    let dir = tempfile::tempdir().unwrap();
    let lake = open(dir.path()).await;
    let mut txn = lake.txn_in("ingest-a", "u1");
    txn.write_rows(vec![knowledge(0)]).await.unwrap();
    txn.stage().await.unwrap();
    // The abort lands first (and again: it is safe to repeat) and deletes
    // what was staged.
    lake.abort_staged("ingest-a").await.unwrap();
    lake.abort_staged("ingest-a").await.unwrap();
    assert_eq!(parquet_files(dir.path()), 0, "the abort deleted what was staged");
    // A last job that staged its part as the abort ran commits a moment
    // later: refused, nothing visible.
    let mut txn = lake.txn_in("ingest-a", "u1");
    txn.write_rows(vec![knowledge(0)]).await.unwrap();
    txn.stage().await.unwrap();
    let late = lake.commit_staged("ingest-a", &["u1".into()], Removal::Nothing, &[]).await.unwrap_err();
    assert!(late.to_string().contains("was aborted"), "{late}");
    assert_eq!(count(&lake, "knowledge").await, "0");
}
