//! Every table of the lake published as a Delta table, so engines that read
//! Delta Lake (Spark, Trino, DuckDB, Polars, pandas through `deltalake`)
//! read the lake without this build.
//!
//! ```text
//! posts/_delta_log/00000000000000000000.json              the first lake commit that touched `posts`
//! posts/_delta_log/00000000000000000007.json              the 8th one
//! posts/_delta_log/00000000000000000100.checkpoint.parquet
//! posts/_delta_log/_last_checkpoint
//! ```
//!
//! The lake's own log stays the source of truth: its commits span tables
//! atomically, which no open table format gives to the readers above.
//! Version k of table T's Delta log is the k-th lake commit that touches T,
//! with the same files added and removed, and the lake version in a `txn`
//! action (app id [`APP_ID`]) and in `commitInfo`. Its content follows from
//! the lake log alone, so any process can write or repair it, with the same
//! create-if-absent put as the lake's commits. It is written after its
//! lake commit lands and caught up when a lake is opened: a crash only
//! makes the Delta view lag, it never shows a file the lake did not commit.
//!
//! Timestamps: the lake's are wall-clock times without a zone (Arrow
//! `Timestamp(Second, None)`), so they are Delta `timestamp_ntz` (reader
//! version 3 with the `timestampNtz` feature), not UTC instants.

use std::collections::{BTreeMap, HashMap};

use arrow::datatypes::{DataType, Field, Fields, Schema};
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use parquet::file::statistics::Statistics;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use some_schemas::{ALL_TABLES, TableDef};

use super::Lake;
use super::log::{Commit, FileEntry, Snapshot, TableLine, table_of};
use crate::error::{Error, Result};

/// The `appId` of the `txn` action that carries the lake version.
pub const APP_ID: &str = "some-lake";

/// Longest string kept as a min or max statistic (longer ones are left out:
/// a truncated maximum would be below the true one).
const MAX_STAT_CHARS: usize = 64;

/// One table version, as `some lake history --table` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableVersion {
    pub table_version: u64,
    pub lake_version: u64,
    pub timestamp_ms: i64,
    pub txn: String,
    pub added: usize,
    pub rows: u64,
    pub removed: usize,
}

impl TableVersion {
    /// When it was committed, RFC 3339 in UTC.
    pub fn committed_at(&self) -> String {
        super::log::rfc3339(self.timestamp_ms)
    }
}

/// What `some lake export-delta` wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeltaExport {
    pub tables: usize,
    pub versions: u64,
    pub checkpoints: u64,
}

/// A Delta type name for an Arrow type of the lake's tables.
fn delta_type(table: &str, field: &Field) -> Result<&'static str> {
    Ok(match field.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "string",
        DataType::Int64 => "long",
        DataType::Int32 => "integer",
        DataType::Int16 => "short",
        DataType::Float64 => "double",
        DataType::Float32 => "float",
        DataType::Boolean => "boolean",
        DataType::Binary | DataType::LargeBinary => "binary",
        DataType::Date32 => "date",
        DataType::Timestamp(_, None) => "timestamp_ntz",
        DataType::Timestamp(_, Some(_)) => "timestamp",
        other => {
            return Err(Error::Table {
                table: table.to_string(),
                message: format!("column {} has type {other}, which has no Delta type here", field.name()),
            });
        }
    })
}

/// The table's Delta schema (partition columns included) and whether it
/// needs `timestamp_ntz`.
fn schema_string(def: &TableDef) -> Result<(String, bool)> {
    let schema = (def.schema)();
    let mut ntz = false;
    let fields = schema
        .fields()
        .iter()
        .map(|f| {
            let kind = delta_type(def.name, f)?;
            ntz |= kind == "timestamp_ntz";
            Ok(json!({"name": f.name(), "type": kind, "nullable": f.is_nullable(), "metadata": {}}))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((json!({"type": "struct", "fields": fields}).to_string(), ntz))
}

fn protocol(ntz: bool) -> Value {
    if ntz {
        json!({"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"], "writerFeatures": ["timestampNtz"]})
    } else {
        json!({"minReaderVersion": 1, "minWriterVersion": 2})
    }
}

/// The table's `metaData`: its id follows from its first commit, so every
/// writer derives the same one.
fn metadata(def: &TableDef, first_txn: &str, created_ms: i64, schema: String) -> Value {
    let digest = Sha256::digest(format!("{}\n{first_txn}", def.name).as_bytes());
    let id = uuid::Builder::from_custom_bytes(digest[..16].try_into().expect("16 bytes")).into_uuid();
    json!({
        "id": id.to_string(),
        "name": def.name,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": schema,
        "partitionColumns": def.partition_columns,
        "configuration": {},
        "createdTime": created_ms,
    })
}

/// The partition values a path relative to the lake root carries
/// (`<table>/<column>=<value>/…/<file>`).
fn partition_values(path: &str) -> Map<String, Value> {
    let segments: Vec<&str> = path.split('/').collect();
    let folders = segments.get(1..segments.len().saturating_sub(1)).unwrap_or_default();
    folders.iter().filter_map(|s| s.split_once('=')).map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect()
}

/// A path relative to its table's folder, as Delta actions name files.
fn in_table(path: &str) -> &str {
    path.split_once('/').map_or(path, |(_, rest)| rest)
}

fn add_action(entry: &FileEntry) -> Value {
    let mut add = json!({
        "path": in_table(&entry.path),
        "partitionValues": partition_values(&entry.path),
        "size": entry.size,
        "modificationTime": entry.written_ms,
        "dataChange": true,
    });
    if let Some(stats) = &entry.stats {
        add["stats"] = Value::String(stats.clone());
    }
    json!({"add": add})
}

fn remove_action(path: &str, at_ms: i64) -> Value {
    json!({"remove": {
        "path": in_table(path),
        "deletionTimestamp": at_ms,
        "dataChange": true,
        "extendedFileMetadata": false,
        "partitionValues": partition_values(path),
    }})
}

fn txn_action(lake_version: u64, at_ms: i64) -> Value {
    json!({"txn": {"appId": APP_ID, "version": lake_version, "lastUpdated": at_ms}})
}

/// The actions of `def`'s table version `version`, which is lake commit
/// `commit` (the table's first commit names the table when `version` is 0).
fn commit_actions(def: &TableDef, commit: &Commit, version: u64) -> Result<Vec<Value>> {
    let mut actions = vec![json!({"commitInfo": {
        "timestamp": commit.timestamp_ms,
        "operation": "WRITE",
        "operationParameters": {"mode": if commit.remove.is_empty() { "Append" } else { "Overwrite" }},
        "isBlindAppend": commit.remove.is_empty(),
        "engineInfo": format!("some {}", env!("CARGO_PKG_VERSION")),
        "lakeVersion": commit.version,
        "lakeTransaction": commit.txn,
    }})];
    if version == 0 {
        let (schema, ntz) = schema_string(def)?;
        actions.push(json!({"protocol": protocol(ntz)}));
        actions.push(json!({"metaData": metadata(def, &commit.txn, commit.timestamp_ms, schema)}));
    }
    actions.push(txn_action(commit.version, commit.timestamp_ms));
    actions.extend(commit.remove.iter().filter(|p| table_of(p) == def.name).map(|p| remove_action(p, commit.timestamp_ms)));
    actions.extend(commit.add.iter().filter(|f| f.table() == def.name).map(add_action));
    Ok(actions)
}

fn ndjson(actions: &[Value]) -> Bytes {
    let mut out = String::new();
    for action in actions {
        out.push_str(&action.to_string());
        out.push('\n');
    }
    Bytes::from(out)
}

fn table_def(table: &str) -> Result<TableDef> {
    TableDef::named(table).ok_or_else(|| Error::Invalid(format!("the lake log names files of {table:?}, which is no table of this build")))
}

/// Column statistics of an encoded Parquet file of `def`, as a Delta `add`
/// action's `stats`: row count, null counts, and minima and maxima of
/// numbers and of short exact strings (timestamps and bytes have none:
/// readers then read the file rather than skip it wrongly).
pub(super) fn file_stats(def: &TableDef, encoded: &Bytes) -> Option<String> {
    let metadata = parquet::file::metadata::ParquetMetaDataReader::new().parse_and_finish(encoded).ok()?;
    let schema = (def.file_schema)();
    let mut nulls: BTreeMap<String, u64> = BTreeMap::new();
    let mut mins: BTreeMap<String, Value> = BTreeMap::new();
    let mut maxs: BTreeMap<String, Value> = BTreeMap::new();
    let mut no_bound: std::collections::HashSet<String> = Default::default();
    for group in metadata.row_groups() {
        for column in group.columns() {
            let name = column.column_descr().name().to_string();
            let stats = column.statistics();
            let Some(count) = stats.and_then(Statistics::null_count_opt) else {
                no_bound.insert(name.clone());
                nulls.insert(name, u64::MAX);
                continue;
            };
            let total = nulls.entry(name.clone()).or_insert(0);
            *total = total.saturating_add(count);
            let bounded = schema
                .field_with_name(&name)
                .is_ok_and(|f| matches!(f.data_type(), DataType::Int32 | DataType::Int64 | DataType::Float64 | DataType::Utf8));
            let bounds = stats.filter(|_| bounded).and_then(bounds);
            match bounds {
                Some((lo, hi)) => {
                    merge(&mut mins, &name, lo, std::cmp::Ordering::Less);
                    merge(&mut maxs, &name, hi, std::cmp::Ordering::Greater);
                }
                // A group whose rows are all null has no bounds and needs
                // none; any other group without them leaves the file without.
                None if count as i64 == group.num_rows() => {}
                None => {
                    no_bound.insert(name);
                }
            }
        }
    }
    for name in &no_bound {
        mins.remove(name);
        maxs.remove(name);
    }
    nulls.retain(|_, n| *n != u64::MAX);
    let stats = json!({
        "numRecords": metadata.file_metadata().num_rows(),
        "minValues": mins,
        "maxValues": maxs,
        "nullCount": nulls,
    });
    Some(stats.to_string())
}

fn merge(into: &mut BTreeMap<String, Value>, name: &str, value: Value, keep: std::cmp::Ordering) {
    match into.get(name) {
        Some(old) if compare(&value, old) != Some(keep) => {}
        _ => {
            into.insert(name.to_string(), value);
        }
    }
}

fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (Value::Number(a), Value::Number(b)) => a.as_f64()?.partial_cmp(&b.as_f64()?),
        _ => None,
    }
}

/// A row group's exact (min, max) of one column, where the Delta stats
/// keep one.
fn bounds(stats: &Statistics) -> Option<(Value, Value)> {
    match stats {
        Statistics::Int32(s) => Some((json!(*s.min_opt()?), json!(*s.max_opt()?))),
        Statistics::Int64(s) => Some((json!(*s.min_opt()?), json!(*s.max_opt()?))),
        Statistics::Double(s) => {
            let (lo, hi) = (*s.min_opt()?, *s.max_opt()?);
            (lo.is_finite() && hi.is_finite()).then(|| (json!(lo), json!(hi)))
        }
        Statistics::ByteArray(s) if s.min_is_exact() && s.max_is_exact() => {
            let (lo, hi) = (s.min_opt()?.as_utf8().ok()?, s.max_opt()?.as_utf8().ok()?);
            let short = lo.chars().count() <= MAX_STAT_CHARS && hi.chars().count() <= MAX_STAT_CHARS;
            short.then(|| (json!(lo), json!(hi)))
        }
        _ => None,
    }
}

/// The Arrow schema of a Delta checkpoint file, the actions this module
/// writes and no more (readers take absent optional fields as null).
fn checkpoint_schema() -> Schema {
    let string = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    let long = |name: &str| Field::new(name, DataType::Int64, true);
    let map = |name: &str| {
        let entries = Fields::from(vec![Field::new("key", DataType::Utf8, false), Field::new("value", DataType::Utf8, true)]);
        Field::new(name, DataType::Map(std::sync::Arc::new(Field::new("key_value", DataType::Struct(entries), false)), false), true)
    };
    let strings = |name: &str| Field::new(name, DataType::List(std::sync::Arc::new(Field::new("element", DataType::Utf8, true))), true);
    let boolean = |name: &str| Field::new(name, DataType::Boolean, true);
    let strukt = |name: &str, fields: Vec<Field>| Field::new(name, DataType::Struct(Fields::from(fields)), true);
    Schema::new(vec![
        strukt("txn", vec![string("appId", true), long("version"), long("lastUpdated")]),
        strukt(
            "add",
            vec![
                string("path", true),
                map("partitionValues"),
                long("size"),
                long("modificationTime"),
                boolean("dataChange"),
                string("stats", true),
            ],
        ),
        strukt(
            "remove",
            vec![
                string("path", true),
                long("deletionTimestamp"),
                boolean("dataChange"),
                boolean("extendedFileMetadata"),
                map("partitionValues"),
            ],
        ),
        strukt(
            "metaData",
            vec![
                string("id", true),
                string("name", true),
                string("description", true),
                strukt("format", vec![string("provider", true), map("options")]),
                string("schemaString", true),
                strings("partitionColumns"),
                map("configuration"),
                long("createdTime"),
            ],
        ),
        strukt(
            "protocol",
            vec![
                Field::new("minReaderVersion", DataType::Int32, true),
                Field::new("minWriterVersion", DataType::Int32, true),
                strings("readerFeatures"),
                strings("writerFeatures"),
            ],
        ),
    ])
}

/// A checkpoint of `def` as of `snapshot` (whose latest commit is the
/// table's latest version): Parquet bytes and the number of actions.
fn checkpoint(def: &TableDef, snapshot: &Snapshot, line: &TableLine) -> Result<(Bytes, usize)> {
    let (schema_string, ntz) = schema_string(def)?;
    let mut actions = vec![
        json!({"protocol": protocol(ntz)}),
        json!({"metaData": metadata(def, &line.first_txn, line.created_ms, schema_string)}),
        txn_action(line.lake_version, snapshot.timestamp_ms()),
    ];
    actions.extend(snapshot.files_under(def.name).map(add_action));
    actions.extend(snapshot.removed_under(def.name).map(|(path, at)| remove_action(path, at)));
    let schema = std::sync::Arc::new(checkpoint_schema());
    let bad = |e: &dyn std::fmt::Display| Error::Table { table: def.name.to_string(), message: format!("Delta checkpoint: {e}") };
    let mut decoder =
        arrow::json::ReaderBuilder::new(schema.clone()).with_batch_size(actions.len().max(1)).build_decoder().map_err(|e| bad(&e))?;
    decoder.serialize(&actions).map_err(|e| bad(&e))?;
    let batch = decoder.flush().map_err(|e| bad(&e))?.ok_or_else(|| bad(&"no rows"))?;
    let mut out = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, schema, None).map_err(|e| bad(&e))?;
    writer.write(&batch).map_err(|e| bad(&e))?;
    writer.close().map_err(|e| bad(&e))?;
    Ok((Bytes::from(out), actions.len()))
}

/// How a Delta file is put: a commit never replaces one (two writers derive
/// the same content; the first wins), a rebuild does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Put {
    IfAbsent,
    Replace,
}

impl Lake {
    fn delta_path(&self, table: &str, file: &str) -> Path {
        self.path(&format!("{table}/_delta_log/{file}"))
    }

    fn delta_commit_path(&self, table: &str, version: u64) -> Path {
        self.delta_path(table, &format!("{version:020}.json"))
    }

    async fn put_delta(&self, path: &Path, bytes: Bytes, put: Put) -> Result<()> {
        let mode = match put {
            Put::IfAbsent => PutMode::Create,
            Put::Replace => PutMode::Overwrite,
        };
        match self.store.put_opts(path, PutPayload::from(bytes), PutOptions { mode, ..Default::default() }).await {
            Ok(_) | Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => Ok(()),
            Err(e) => Err(Error::store("write", path)(e)),
        }
    }

    async fn write_table_version(&self, def: &TableDef, commit: &Commit, version: u64, put: Put) -> Result<()> {
        let bytes = ndjson(&commit_actions(def, commit, version)?);
        self.put_delta(&self.delta_commit_path(def.name, version), bytes, put).await
    }

    async fn write_delta_checkpoint(&self, def: &TableDef, snapshot: &Snapshot, line: &TableLine) -> Result<()> {
        let version = line.versions - 1;
        let (bytes, size) = checkpoint(def, snapshot, line)?;
        self.put_delta(&self.delta_path(def.name, &format!("{version:020}.checkpoint.parquet")), bytes, Put::Replace).await?;
        let hint = Bytes::from(json!({"version": version, "size": size}).to_string());
        self.put_delta(&self.delta_path(def.name, "_last_checkpoint"), hint, Put::Replace).await
    }

    /// Publishes `commit`, just applied to `snapshot`, to the Delta log of
    /// every table it touches, first filling any versions before it that
    /// are missing (another process's commits, or a crash before their
    /// Delta versions were written).
    pub(super) async fn publish_delta(&self, commit: &Commit, snapshot: &Snapshot) -> Result<()> {
        for table in commit.tables() {
            let def = table_def(table)?;
            let line = snapshot.table_line(table).expect("the commit was applied").clone();
            let version = line.versions - 1;
            let known = self.delta_written.lock().expect("not poisoned").get(table).copied();
            if version > 0 && known != Some(version - 1) {
                self.fill_delta(&[table], commit.version - 1).await?;
            }
            self.write_table_version(&def, commit, version, Put::IfAbsent).await?;
            self.delta_written.lock().expect("not poisoned").insert(table.to_string(), version);
            if version > 0 && version.is_multiple_of(super::log::checkpoint_interval()) {
                self.write_delta_checkpoint(&def, snapshot, &line).await?;
            }
        }
        Ok(())
    }

    /// Writes the Delta versions of every table whose log lags `snapshot`
    /// (a crash between a lake commit and its Delta versions, or a lake
    /// written by an earlier build). One look per table when none lags.
    pub(super) async fn catch_up_delta(&self, snapshot: &Snapshot) -> Result<()> {
        let mut lagging = Vec::new();
        for (table, line) in snapshot.table_lines() {
            let latest = line.versions - 1;
            if self.delta_written.lock().expect("not poisoned").get(table).is_some_and(|v| *v >= latest) {
                continue;
            }
            match self.store.head(&self.delta_commit_path(table, latest)).await {
                Ok(_) => {
                    self.delta_written.lock().expect("not poisoned").insert(table.to_string(), latest);
                }
                Err(object_store::Error::NotFound { .. }) => lagging.push(table),
                Err(e) => return Err(Error::store("read", &self.delta_commit_path(table, latest))(e)),
            }
        }
        if !lagging.is_empty() {
            tracing::info!(tables = ?lagging, "lake: writing the Delta versions these tables lack");
            self.fill_delta(&lagging, snapshot.version()).await?;
        }
        Ok(())
    }

    /// The latest Delta version in `table`'s log and the lake version it
    /// holds, if it has one.
    async fn latest_delta(&self, table: &str) -> Result<Option<(u64, u64)>> {
        let folder = self.path(&format!("{table}/_delta_log"));
        let files: Vec<object_store::ObjectMeta> =
            self.store.list(Some(&folder)).try_collect().await.map_err(Error::store("list", &folder))?;
        let latest = files.iter().filter_map(|m| m.location.filename()?.strip_suffix(".json")?.parse::<u64>().ok()).max();
        let Some(version) = latest else { return Ok(None) };
        let path = self.delta_commit_path(table, version);
        let bytes = self.store.get(&path).await.map_err(Error::store("read", &path))?.bytes().await.map_err(Error::store("read", &path))?;
        let lake_version = std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| {
                text.lines()
                    .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                    .find_map(|a| a.get("txn").filter(|t| t["appId"] == APP_ID).and_then(|t| t["version"].as_u64()))
            })
            .ok_or_else(|| {
                Error::Invalid(format!("{path}: a Delta version without the lake's txn action: rebuild with `some lake export-delta`"))
            })?;
        Ok(Some((version, lake_version)))
    }

    /// Writes the missing Delta versions of `tables` for the lake commits
    /// up to `until`, in order, reading the lake log once from the oldest
    /// version one of them lacks.
    async fn fill_delta(&self, tables: &[&str], until: u64) -> Result<()> {
        // Per table: the next Delta version to write and the lake version
        // after which its commits are missing.
        let mut next: HashMap<&str, (u64, u64)> = HashMap::new();
        for &table in tables {
            let (version, after) = match self.latest_delta(table).await? {
                Some((v, lake)) => (v + 1, lake + 1),
                None => (0, 0),
            };
            next.insert(table, (version, after));
        }
        let Some(from) = next.values().map(|(_, after)| *after).min() else { return Ok(()) };
        for lake_version in from..=until {
            let commit = self.read_commit(lake_version).await?.ok_or_else(|| {
                Error::Invalid(format!("the lake log has no version {lake_version} while publishing Delta versions of {tables:?}"))
            })?;
            for table in commit.tables() {
                let Some((version, after)) = next.get_mut(table) else { continue };
                if commit.version < *after {
                    continue;
                }
                self.write_table_version(&table_def(table)?, &commit, *version, Put::IfAbsent).await?;
                self.delta_written.lock().expect("not poisoned").insert(table.to_string(), *version);
                *version += 1;
            }
        }
        Ok(())
    }

    /// Rewrites every table's Delta log from the lake log: each version,
    /// and a checkpoint every checkpoint interval. For a lake written
    /// before the Delta logs, or one whose Delta files were damaged or
    /// deleted. Readers may see a table's log half rewritten meanwhile.
    pub async fn export_delta(&self) -> Result<DeltaExport> {
        let latest = self.snapshot().await?;
        let mut done = DeltaExport::default();
        for def in ALL_TABLES {
            let folder = self.path(&format!("{}/_delta_log", def.name));
            let files: Vec<object_store::ObjectMeta> =
                self.store.list(Some(&folder)).try_collect().await.map_err(Error::store("list", &folder))?;
            for meta in files {
                self.delete_quietly(&meta.location).await?;
            }
        }
        self.delta_written.lock().expect("not poisoned").clear();
        let interval = super::log::checkpoint_interval();
        let mut snapshot = Snapshot::default();
        for lake_version in 0..=latest.version() {
            let commit = self.read_commit(lake_version).await?.ok_or_else(|| {
                Error::Invalid(format!("the lake log has no version {lake_version} of the {} it should have", latest.version() + 1))
            })?;
            snapshot.apply(&commit)?;
            for table in commit.tables() {
                let def = table_def(table)?;
                let line = snapshot.table_line(table).expect("applied").clone();
                let version = line.versions - 1;
                self.write_table_version(&def, &commit, version, Put::Replace).await?;
                done.versions += 1;
                if version > 0 && version.is_multiple_of(interval) {
                    self.write_delta_checkpoint(&def, &snapshot, &line).await?;
                    done.checkpoints += 1;
                }
                self.delta_written.lock().expect("not poisoned").insert(table.to_string(), version);
            }
        }
        done.tables = snapshot.table_lines().count();
        Ok(done)
    }

    /// The Delta versions of `table`, newest last (at most `limit`, the
    /// latest ones): which lake version each one is.
    pub async fn table_history(&self, table: &str, limit: usize) -> Result<Vec<TableVersion>> {
        table_def(table)?;
        let snapshot = self.snapshot().await?;
        let Some(line) = snapshot.table_line(table) else { return Ok(Vec::new()) };
        let mut out = Vec::new();
        let mut table_version = line.versions;
        let mut lake_version = line.lake_version;
        while out.len() < limit && table_version > 0 {
            let commit = self
                .read_commit(lake_version)
                .await?
                .ok_or_else(|| Error::Invalid(format!("the lake log has no version {lake_version}")))?;
            if commit.tables().contains(table) {
                table_version -= 1;
                out.push(TableVersion {
                    table_version,
                    lake_version,
                    timestamp_ms: commit.timestamp_ms,
                    added: commit.add.iter().filter(|f| f.table() == table).count(),
                    rows: commit.add.iter().filter(|f| f.table() == table).map(|f| f.rows).sum(),
                    removed: commit.remove.iter().filter(|p| table_of(p) == table).count(),
                    txn: commit.txn,
                });
            }
            if lake_version == 0 {
                break;
            }
            lake_version -= 1;
        }
        out.reverse();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_values_come_from_the_folders_between_table_and_file() {
        let values = partition_values("posts/source=raw/bucket=2025-05-01.l3/part-x-00000.parquet");
        assert_eq!(Value::Object(values), json!({"source": "raw", "bucket": "2025-05-01.l3"}));
        assert!(partition_values("users/part-x.parquet").is_empty());
        assert_eq!(in_table("posts/source=raw/p.parquet"), "source=raw/p.parquet");
    }

    #[test]
    fn every_table_has_a_delta_schema_and_timestamps_are_without_zone() {
        for def in ALL_TABLES {
            let (schema, ntz) = schema_string(def).unwrap();
            let parsed: Value = serde_json::from_str(&schema).unwrap();
            let fields = parsed["fields"].as_array().unwrap();
            assert_eq!(fields.len(), (def.schema)().fields().len(), "{}", def.name);
            for column in def.partition_columns {
                assert!(fields.iter().any(|f| f["name"] == *column), "{}: partition column {column} in the schema", def.name);
            }
            assert_eq!(ntz, schema.contains("timestamp_ntz"));
        }
        let (posts, ntz) = schema_string(&TableDef::named("posts").unwrap()).unwrap();
        assert!(ntz && posts.contains(r#"{"name":"published_at","type":"timestamp_ntz","nullable":true,"metadata":{}}"#), "{posts}");
    }
}
