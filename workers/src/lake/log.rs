//! The lake's transaction log: which files make up every table, as of every
//! version.
//!
//! ```text
//! _log/00000000000000000000.json             version 0: the lake's creation (schema version)
//! _log/00000000000000000001.json             one commit: files added and removed, in any tables
//! _log/00000000000000000100.checkpoint.json  the whole state as of version 100
//! _log/_last_checkpoint                      the latest checkpoint's version (a hint)
//! ```
//!
//! A commit is written with a conditional put (create if absent): of two
//! writers racing for the same version exactly one wins, and the other
//! reads what won and tries the next version; appends never conflict, and a
//! commit that removes a file someone else removed first fails. Data files
//! are written before their commit, under names no other transaction uses,
//! and nothing reads a file the log does not name: a crash anywhere leaves
//! either the whole transaction or none of it. A transaction has a name,
//! and a name the log holds already is not committed again, so a job that
//! died after its commit landed and runs again commits nothing twice.
//!
//! Why not Delta Lake's log: it is per table, and the lake's transactions
//! span tables (a release, a simulation turn, an episode with its scores);
//! one log for the lake makes them atomic together, and costs no new crate.
//! The format is Delta's in spirit: dense versions, add and remove actions,
//! checkpoints, tombstones kept for `some vacuum`'s retention.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use super::Lake;
use crate::error::{Error, Result};

/// How many commits a refused transaction looks back through for the one
/// that filled the table it needed empty (only to name it).
const FILLED_LOOK_BACK: u64 = 1000;

/// How many versions apart checkpoints are written; `SOME_LAKE_CHECKPOINT_INTERVAL`
/// overrides it (a reader replays the commits after the latest checkpoint:
/// this many, unless a checkpoint write failed, which only costs time).
const CHECKPOINT_INTERVAL: u64 = 100;

/// How long the log remembers a removed file (its tombstone, which `some
/// vacuum` reads) and a transaction's name (which keeps a job that runs
/// again from committing twice): 30 days, well past vacuum's default
/// retention and any job's deadline.
const FORGET_AFTER_MS: i64 = 30 * 24 * 3600 * 1000;

/// Every this many versions the state forgets what is older than
/// [`FORGET_AFTER_MS`]: at fixed versions, so every reader, from any
/// checkpoint, holds the same state at the same version.
const FORGET_EVERY: u64 = 100;

/// One data file of a table, as the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the lake root: `<table>/<column>=<value>/…/<name>.parquet`.
    pub path: String,
    pub size: u64,
    pub rows: u64,
    /// When it was written, in milliseconds since the epoch.
    pub written_ms: i64,
    /// Its column statistics as a Delta `add` action carries them (JSON),
    /// read from its footer when it was written; none for files adopted
    /// or converted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<String>,
}

impl FileEntry {
    pub fn table(&self) -> &str {
        table_of(&self.path)
    }
}

/// The table a path relative to the lake root belongs to.
pub(super) fn table_of(path: &str) -> &str {
    path.split('/').next().unwrap_or_default()
}

/// One version of the lake.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Commit {
    pub version: u64,
    pub timestamp_ms: i64,
    /// The transaction's name.
    pub txn: String,
    /// Only in version 0: the schema version the lake was created with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<u32>,
    #[serde(default)]
    pub add: Vec<FileEntry>,
    #[serde(default)]
    pub remove: Vec<String>,
}

impl Commit {
    /// The tables whose files it adds or removes, each once, in name order.
    pub fn tables(&self) -> BTreeSet<&str> {
        self.add.iter().map(|f| f.table()).chain(self.remove.iter().map(|p| table_of(p))).collect()
    }
}

/// A table's line of Delta versions (crate::lake::delta): how many lake
/// commits touched it, the latest one, and the first one, which names the
/// Delta table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableLine {
    /// Delta versions so far; the latest is one less.
    pub versions: u64,
    /// The lake version of the latest.
    pub lake_version: u64,
    /// The first commit's transaction and time.
    pub first_txn: String,
    pub created_ms: i64,
}

/// The lake's state as of one version: every live file, the files removed
/// (with when), and the names of the transactions committed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Snapshot {
    /// Commits applied so far (the version is one less).
    applied: u64,
    timestamp_ms: i64,
    schema_version: u32,
    files: BTreeMap<String, FileEntry>,
    /// Files no longer live, with when they were removed.
    removed: BTreeMap<String, i64>,
    txns: BTreeSet<String>,
    /// When each transaction committed (names from checkpoints of earlier
    /// builds have none, and are kept).
    #[serde(default)]
    txn_at: BTreeMap<String, i64>,
    /// Each table's Delta line. `None` only in a checkpoint written by a
    /// build before the Delta logs, which is then not used (the log is
    /// replayed from version 0 instead).
    #[serde(default)]
    tables: Option<BTreeMap<String, TableLine>>,
}

impl Snapshot {
    pub fn version(&self) -> u64 {
        self.applied.saturating_sub(1)
    }

    /// When the version was committed (milliseconds since the epoch).
    pub fn timestamp_ms(&self) -> i64 {
        self.timestamp_ms
    }

    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }

    pub fn has_txn(&self, name: &str) -> bool {
        self.txns.contains(name)
    }

    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files.get(path)
    }

    /// The Delta line of every table a commit has touched.
    pub fn table_lines(&self) -> impl Iterator<Item = (&str, &TableLine)> {
        self.tables.iter().flatten().map(|(t, line)| (t.as_str(), line))
    }

    pub fn table_line(&self, table: &str) -> Option<&TableLine> {
        self.tables.as_ref()?.get(table)
    }

    /// The files removed from `table` and not yet deleted by the log's
    /// account, with when.
    pub(super) fn removed_under<'a>(&'a self, table: &'a str) -> impl Iterator<Item = (&'a str, i64)> + 'a {
        self.removed.iter().filter(move |(p, _)| table_of(p) == table).map(|(p, at)| (p.as_str(), *at))
    }

    /// The live files whose path starts with the folder `folder` (no
    /// trailing slash; "" is every file).
    pub fn files_under<'a>(&'a self, folder: &str) -> impl Iterator<Item = &'a FileEntry> + 'a {
        let start = if folder.is_empty() { String::new() } else { format!("{folder}/") };
        let end = start.clone();
        self.files.range(start..).take_while(move |(path, _)| path.starts_with(&end)).map(|(_, entry)| entry)
    }

    /// When a commit removed `path` (milliseconds since the epoch), if one did.
    pub(super) fn removed_at(&self, path: &str) -> Option<i64> {
        self.removed.get(path).copied()
    }

    /// Whether `commit` applies to this state: the next version, each file
    /// it removes live and named once, each file it adds named once.
    fn check(&self, commit: &Commit) -> Result<()> {
        if commit.version != self.applied {
            return Err(Error::Invalid(format!("lake log: expected version {}, read version {}", self.applied, commit.version)));
        }
        let mut seen = BTreeSet::new();
        for path in &commit.remove {
            if !self.files.contains_key(path) || !seen.insert(path.as_str()) {
                return Err(Error::Invalid(format!("lake log version {}: removes {path}, which is not live", commit.version)));
            }
        }
        let mut added = BTreeSet::new();
        if let Some(twice) = commit.add.iter().find(|e| !added.insert(e.path.as_str())) {
            return Err(Error::Invalid(format!("lake log version {}: adds {} twice", commit.version, twice.path)));
        }
        Ok(())
    }

    /// Applies `commit` whole, or not at all.
    pub(super) fn apply(&mut self, commit: &Commit) -> Result<()> {
        self.check(commit)?;
        if let Some(v) = commit.schema_version {
            self.schema_version = v;
        }
        for path in &commit.remove {
            self.files.remove(path);
            self.removed.insert(path.clone(), commit.timestamp_ms);
        }
        for entry in &commit.add {
            self.removed.remove(&entry.path);
            self.files.insert(entry.path.clone(), entry.clone());
        }
        if self.applied == 0 {
            self.tables = Some(BTreeMap::new());
        }
        if let Some(lines) = &mut self.tables {
            for table in commit.tables() {
                let line = lines.entry(table.to_string()).or_insert_with(|| TableLine {
                    versions: 0,
                    lake_version: commit.version,
                    first_txn: commit.txn.clone(),
                    created_ms: commit.timestamp_ms,
                });
                line.versions += 1;
                line.lake_version = commit.version;
            }
        }
        self.txns.insert(commit.txn.clone());
        self.txn_at.insert(commit.txn.clone(), commit.timestamp_ms);
        self.timestamp_ms = commit.timestamp_ms;
        self.applied += 1;
        if commit.version > 0 && commit.version.is_multiple_of(FORGET_EVERY) {
            self.forget_before(commit.timestamp_ms.saturating_sub(FORGET_AFTER_MS));
        }
        Ok(())
    }

    /// Drops the tombstones and transaction names older than `cutoff_ms`.
    fn forget_before(&mut self, cutoff_ms: i64) {
        self.removed.retain(|_, at| *at >= cutoff_ms);
        let txns = &mut self.txns;
        self.txn_at.retain(|name, at| {
            let keep = *at >= cutoff_ms;
            if !keep {
                txns.remove(name);
            }
            keep
        });
    }
}

/// What a transaction removes besides adding its files.
#[derive(Debug, Clone, Default)]
pub enum Removal {
    #[default]
    Nothing,
    /// These files, each of which must still be live when the commit lands
    /// (a file another writer removed first fails the commit).
    Files(Vec<String>),
    /// Every file of these tables live just before the commit (whichever
    /// version it lands as): the transaction replaces their contents.
    Tables(Vec<String>),
}

impl Removal {
    fn resolve(&self, snapshot: &Snapshot, txn: &str) -> Result<Vec<String>> {
        match self {
            Removal::Nothing => Ok(Vec::new()),
            Removal::Files(paths) => {
                let mut paths = paths.clone();
                paths.sort();
                paths.dedup();
                if let Some(gone) = paths.iter().find(|p| snapshot.file(p).is_none()) {
                    return Err(Error::Invalid(format!(
                        "transaction {txn} removes {gone}, which another commit removed first (lake version {}): run it again",
                        snapshot.version()
                    )));
                }
                Ok(paths.clone())
            }
            Removal::Tables(tables) => Ok(tables.iter().flat_map(|t| snapshot.files_under(t)).map(|entry| entry.path.clone()).collect()),
        }
    }
}

/// A version of the lake to read: a version number or a moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOf {
    Version(u64),
    /// The last version committed at or before this moment (milliseconds
    /// since the epoch).
    Timestamp(i64),
}

impl std::str::FromStr for AsOf {
    type Err = String;

    /// A version number, or an RFC 3339 time (`2026-11-24T08:00:00Z`), or a
    /// UTC date and time (`2026-11-24 08:00:00`, `2026-11-24`).
    fn from_str(s: &str) -> Result<AsOf, String> {
        if let Ok(v) = s.parse::<u64>() {
            return Ok(AsOf::Version(v));
        }
        if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
            return Ok(AsOf::Timestamp(t.timestamp_millis()));
        }
        for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S"] {
            if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, format) {
                return Ok(AsOf::Timestamp(t.and_utc().timestamp_millis()));
            }
        }
        if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            return Ok(AsOf::Timestamp(d.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc().timestamp_millis()));
        }
        Err(format!("{s:?} is neither a lake version (a number) nor a time (2026-11-24T08:00:00Z, 2026-11-24 08:00:00, 2026-11-24)"))
    }
}

/// Where the process waits to be killed, when `SOME_FAULT_PAUSE` names this
/// point: the crash-injection tests SIGKILL it there, at every step of a
/// commit.
pub(crate) fn fault_point(point: &str) {
    if std::env::var("SOME_FAULT_PAUSE").is_ok_and(|p| p == point) {
        eprintln!("fault point {point}: paused");
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

pub(super) fn checkpoint_interval() -> u64 {
    std::env::var("SOME_LAKE_CHECKPOINT_INTERVAL").ok().and_then(|v| v.parse().ok()).filter(|v| *v > 0).unwrap_or(CHECKPOINT_INTERVAL)
}

/// The transaction that marks `txn` aborted.
fn aborted_name(txn: &str) -> String {
    format!("abort-{txn}")
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[derive(Serialize, Deserialize)]
struct LastCheckpoint {
    version: u64,
}

impl Lake {
    /// Whether the object store answers within `within`: a read of the
    /// log's first commit that finds it, or finds it missing, is an answer;
    /// an error or silence is not (the store is down or out of reach). The
    /// worker asks this when a job fails, to tell an outage from a failing
    /// job.
    pub async fn store_answers(&self, within: std::time::Duration) -> bool {
        match tokio::time::timeout(within, self.store.head(&self.commit_path(0))).await {
            Ok(Ok(_)) | Ok(Err(object_store::Error::NotFound { .. })) => true,
            Ok(Err(_)) | Err(_) => false,
        }
    }

    fn commit_path(&self, version: u64) -> Path {
        self.path(&format!("_log/{version:020}.json"))
    }

    fn checkpoint_path(&self, version: u64) -> Path {
        self.path(&format!("_log/{version:020}.checkpoint.json"))
    }

    async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &Path) -> Result<Option<T>> {
        let bytes = match self.store.get(path).await {
            Ok(got) => got.bytes().await.map_err(Error::store("read", path))?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(Error::store("read", path)(e)),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| Error::Invalid(format!("{path}: unreadable lake log file: {e}")))
    }

    pub(super) async fn read_commit(&self, version: u64) -> Result<Option<Commit>> {
        self.get_json(&self.commit_path(version)).await
    }

    /// The checkpoint of `version`, unless there is none or an earlier build
    /// wrote it (without the tables' Delta lines: replaying is exact).
    async fn read_checkpoint(&self, version: u64) -> Result<Option<Snapshot>> {
        Ok(self.get_json::<Snapshot>(&self.checkpoint_path(version)).await?.filter(|c| c.tables.is_some()))
    }

    /// Writes version 0 unless some process did; returns it.
    pub(super) async fn create_log(&self, schema_version: u32) -> Result<Commit> {
        let commit = Commit {
            version: 0,
            timestamp_ms: now_ms(),
            txn: "create".into(),
            schema_version: Some(schema_version),
            add: vec![],
            remove: vec![],
        };
        match self.put_commit(&commit).await? {
            true => Ok(commit),
            false => {
                self.read_commit(0).await?.ok_or_else(|| Error::Invalid(format!("{}: version 0 exists and cannot be read", self.location)))
            }
        }
    }

    /// Writes `commit` if its version is free; false if another writer took it.
    async fn put_commit(&self, commit: &Commit) -> Result<bool> {
        let path = self.commit_path(commit.version);
        let bytes = serde_json::to_vec(commit).map_err(|e| Error::Invalid(format!("{path}: {e}")))?;
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        match self.store.put_opts(&path, PutPayload::from(bytes), opts).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(Error::store("commit", &path)(e)),
        }
    }

    /// Applies the commits after `snapshot`'s version, up to `last`.
    async fn catch_up(&self, snapshot: &mut Snapshot, last: Option<u64>) -> Result<()> {
        while last.is_none_or(|last| snapshot.applied <= last) {
            match self.read_commit(snapshot.applied).await? {
                Some(commit) => snapshot.apply(&commit)?,
                None => break,
            }
        }
        Ok(())
    }

    /// The latest state, from the latest checkpoint the hint names (or
    /// from version 0) and the commits after it.
    pub(super) async fn load_latest(&self) -> Result<Snapshot> {
        let hint: Option<LastCheckpoint> = self.get_json(&self.path("_log/_last_checkpoint")).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "lake log: unreadable checkpoint hint; replaying from version 0");
            None
        });
        let mut snapshot = match hint {
            Some(h) => self.read_checkpoint(h.version).await?.unwrap_or_default(),
            None => Snapshot::default(),
        };
        self.catch_up(&mut snapshot, None).await?;
        Ok(snapshot)
    }

    /// The lake as of `at`, from the nearest checkpoint before it.
    pub(super) async fn load_as_of(&self, at: AsOf, latest: &Snapshot) -> Result<Snapshot> {
        let version = match at {
            AsOf::Version(v) if v > latest.version() => {
                return Err(Error::Invalid(format!("the lake at {} has versions 0 to {}, not {v}", self.location, latest.version())));
            }
            AsOf::Version(v) if v == latest.version() => return Ok(latest.clone()),
            AsOf::Version(v) => v,
            AsOf::Timestamp(t) if t >= latest.timestamp_ms => return Ok(latest.clone()),
            AsOf::Timestamp(_) => latest.version(),
        };
        let interval = checkpoint_interval();
        let mut base = Snapshot::default();
        let mut candidate = version - version % interval;
        while candidate > 0 {
            if let Some(checkpoint) = self.read_checkpoint(candidate).await? {
                let before = match at {
                    AsOf::Timestamp(t) => checkpoint.timestamp_ms <= t,
                    AsOf::Version(_) => true,
                };
                if before {
                    base = checkpoint;
                    break;
                }
            }
            candidate -= interval;
        }
        loop {
            if base.applied > version {
                break;
            }
            let Some(commit) = self.read_commit(base.applied).await? else { break };
            if let AsOf::Timestamp(t) = at
                && commit.timestamp_ms > t
            {
                break;
            }
            base.apply(&commit)?;
        }
        if base.applied == 0 {
            let created = self.read_commit(0).await?.map_or(0, |c| c.timestamp_ms);
            return Err(Error::Invalid(format!(
                "the lake at {} was created at {}, after the time asked for",
                self.location,
                chrono::DateTime::from_timestamp_millis(created).map_or_else(|| created.to_string(), |t| t.to_rfc3339())
            )));
        }
        Ok(base)
    }

    /// The latest state (refreshed), or the pinned one of a lake opened
    /// [`Lake::as_of`] a version.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>> {
        if let Some(pinned) = &self.pinned {
            return Ok(pinned.clone());
        }
        let mut latest = self.latest.lock().await;
        self.catch_up(Arc::make_mut(&mut latest), None).await?;
        Ok(latest.clone())
    }

    /// The lake as it was at `at`: reads see that version; writes are refused.
    pub async fn as_of(&self, at: AsOf) -> Result<Lake> {
        let latest = self.snapshot().await?;
        let snapshot = self.load_as_of(at, &latest).await?;
        Ok(Lake { pinned: Some(Arc::new(snapshot)), ..self.clone() })
    }

    /// The lake pinned at its latest version: every read through it sees
    /// that version, whatever commits land meanwhile.
    pub async fn pinned(&self) -> Result<Lake> {
        Ok(Lake { pinned: Some(self.snapshot().await?), ..self.clone() })
    }

    /// Commits `add` and `removal` as transaction `txn`, at the next free
    /// version, provided the tables of `empty` hold no rows in the version
    /// before it ([`Error::Filled`] if one does: checked against the very
    /// version the commit follows, so a writer that filled the table
    /// first, however late, is seen). Returns the version, or `None` if the
    /// log already holds `txn` (nothing is written again).
    /// A transaction aborted with [`Lake::abort_txn`] is refused too, and
    /// so is one whose `refuse_if` transaction the log holds.
    pub(super) async fn commit_files(
        &self,
        txn: &str,
        add: Vec<FileEntry>,
        removal: &Removal,
        empty: &[String],
        refuse_if: Option<&str>,
    ) -> Result<Option<u64>> {
        if self.pinned.is_some() {
            return Err(Error::Invalid(format!("the lake at {} is opened as of an earlier version: it cannot be written", self.location)));
        }
        fault_point("before-commit");
        let mut latest = self.latest.lock().await;
        let snapshot = Arc::make_mut(&mut latest);
        let aborted = aborted_name(txn);
        loop {
            self.catch_up(snapshot, None).await?;
            if snapshot.has_txn(txn) {
                return Ok(None);
            }
            if snapshot.has_txn(&aborted) {
                return Err(Error::Invalid(format!("transaction {txn} was aborted (the log holds {aborted}): it cannot commit")));
            }
            if let Some(other) = refuse_if.filter(|other| snapshot.has_txn(other)) {
                return Err(Error::Invalid(format!("transaction {txn} is refused: transaction {other} committed first")));
            }
            if let Some(table) = empty.iter().find(|t| snapshot.files_under(t).any(|f| f.rows > 0)) {
                let (by, version) = self.filled_by(table, snapshot.version()).await?;
                return Err(Error::Filled { table: table.clone(), txn: txn.to_string(), by, version });
            }
            let commit = Commit {
                version: snapshot.applied,
                // Never before the previous version: time travel by time
                // needs timestamps in version order.
                timestamp_ms: now_ms().max(snapshot.timestamp_ms),
                txn: txn.to_string(),
                schema_version: None,
                add: add.clone(),
                remove: removal.resolve(snapshot, txn)?,
            };
            // A commit that would not apply is never written: every reader
            // after it would fail.
            snapshot.check(&commit)?;
            if !self.put_commit(&commit).await? {
                continue;
            }
            snapshot.apply(&commit)?;
            fault_point("after-commit");
            if let Err(e) = self.publish_delta(&commit, snapshot).await {
                tracing::warn!(error = %e, version = commit.version, "lake: Delta versions not written (the Delta view lags until the next open catches up)");
            }
            let interval = checkpoint_interval();
            if commit.version.is_multiple_of(interval)
                && let Err(e) = self.write_checkpoint(snapshot).await
            {
                tracing::warn!(error = %e, version = commit.version, "lake log: checkpoint not written (readers replay more commits)");
            }
            return Ok(Some(commit.version));
        }
    }

    /// Makes sure transaction `txn` never commits: commits, in the same
    /// log, a transaction that says so, unless `txn` committed first (an
    /// error then). Whichever of the two lands first wins; the other is
    /// refused. Safe to run again.
    pub async fn abort_txn(&self, txn: &str) -> Result<()> {
        match self.commit_files(&aborted_name(txn), Vec::new(), &Removal::Nothing, &[], Some(txn)).await {
            Ok(_) => Ok(()),
            Err(Error::Invalid(_)) if self.snapshot().await?.has_txn(txn) => {
                Err(Error::Invalid(format!("transaction {txn} is committed: its files are part of the lake")))
            }
            Err(e) => Err(e),
        }
    }

    /// The latest commit at or before `version` that added rows to `table`:
    /// its transaction (if the log holds it within [`FILLED_LOOK_BACK`]
    /// commits) and version.
    async fn filled_by(&self, table: &str, version: u64) -> Result<(Option<String>, u64)> {
        let oldest = version.saturating_sub(FILLED_LOOK_BACK).max(1);
        for v in (oldest..=version).rev() {
            if let Some(commit) = self.read_commit(v).await?
                && commit.add.iter().any(|f| f.table() == table && f.rows > 0)
            {
                return Ok((Some(commit.txn), v));
            }
        }
        Ok((None, version))
    }

    async fn write_checkpoint(&self, snapshot: &Snapshot) -> Result<()> {
        let path = self.checkpoint_path(snapshot.version());
        let bytes = serde_json::to_vec(snapshot).map_err(|e| Error::Invalid(format!("{path}: {e}")))?;
        self.store.put(&path, PutPayload::from(bytes)).await.map_err(Error::store("write", &path))?;
        fault_point("after-checkpoint");
        let hint = self.path("_log/_last_checkpoint");
        let bytes = serde_json::to_vec(&LastCheckpoint { version: snapshot.version() }).expect("plain struct");
        self.store.put(&hint, PutPayload::from(bytes)).await.map_err(Error::store("write", &hint))?;
        Ok(())
    }

    /// The commits from `from` on (at most `limit`), newest last.
    pub async fn history(&self, from: u64, limit: usize) -> Result<Vec<CommitInfo>> {
        let mut out = Vec::new();
        let mut version = from;
        while out.len() < limit {
            let Some(commit) = self.read_commit(version).await? else { break };
            out.push(CommitInfo {
                version,
                timestamp_ms: commit.timestamp_ms,
                txn: commit.txn,
                added: commit.add.len(),
                rows: commit.add.iter().map(|f| f.rows).sum(),
                removed: commit.remove.len(),
            });
            version += 1;
        }
        Ok(out)
    }
}

/// One line of `some lake history`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    pub version: u64,
    pub timestamp_ms: i64,
    pub txn: String,
    pub added: usize,
    pub rows: u64,
    pub removed: usize,
}

impl CommitInfo {
    /// When it was committed, RFC 3339 in UTC.
    pub fn committed_at(&self) -> String {
        rfc3339(self.timestamp_ms)
    }
}

/// Milliseconds since the epoch as RFC 3339 in UTC.
pub(super) fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(path: &str) -> FileEntry {
        FileEntry { path: path.into(), size: 1, rows: 1, written_ms: 0, stats: None }
    }

    fn commit(version: u64, txn: &str, add: &[&str], remove: &[&str]) -> Commit {
        Commit {
            version,
            timestamp_ms: version as i64,
            txn: txn.into(),
            schema_version: None,
            add: add.iter().map(|p| entry(p)).collect(),
            remove: remove.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_snapshot_applies_commits_in_order_and_refuses_gaps_and_unknown_removals() {
        let mut s = Snapshot::default();
        s.apply(&commit(0, "create", &[], &[])).unwrap();
        s.apply(&commit(1, "a", &["t/x=1/a.parquet", "t/x=2/b.parquet", "u/c.parquet"], &[])).unwrap();
        assert_eq!(s.files_under("t").count(), 2);
        assert_eq!(s.files_under("t/x=1").count(), 1);
        assert_eq!(s.files_under("t/x=").count(), 0, "folders match whole segments");
        assert_eq!(s.files_under("").count(), 3);
        assert!(s.apply(&commit(3, "gap", &[], &[])).is_err());
        assert!(s.apply(&commit(2, "bad", &[], &["t/none.parquet"])).is_err());
        s.apply(&commit(2, "swap", &["t/x=1/d.parquet"], &["t/x=1/a.parquet"])).unwrap();
        assert!(s.file("t/x=1/a.parquet").is_none());
        assert_eq!(s.removed_at("t/x=1/a.parquet"), Some(2));
        assert_eq!(s.removed_at("t/x=2/b.parquet"), None);
        assert!(s.has_txn("swap") && s.version() == 2);
    }

    #[test]
    fn a_removal_of_files_another_commit_removed_fails_and_tables_take_what_is_live() {
        let mut s = Snapshot::default();
        s.apply(&commit(0, "create", &[], &[])).unwrap();
        s.apply(&commit(1, "a", &["t/a.parquet", "t/b.parquet", "u/c.parquet"], &[])).unwrap();
        let err = Removal::Files(vec!["t/a.parquet".into(), "t/z.parquet".into()]).resolve(&s, "compact").unwrap_err();
        assert!(err.to_string().contains("t/z.parquet") && err.to_string().contains("run it again"), "{err}");
        let mut all = Removal::Tables(vec!["t".into()]).resolve(&s, "replace").unwrap();
        all.sort();
        assert_eq!(all, ["t/a.parquet", "t/b.parquet"]);
    }

    #[test]
    fn tombstones_and_transaction_names_are_forgotten_at_fixed_versions_after_thirty_days() {
        let day = 24 * 3600 * 1000;
        let mut s = Snapshot::default();
        let mut at = |version: u64, ms: i64, txn: &str, add: &[&str], remove: &[&str]| {
            s.apply(&Commit { timestamp_ms: ms, ..commit(version, txn, add, remove) }).unwrap();
        };
        at(0, 0, "create", &[], &[]);
        at(1, 0, "old", &["t/a.parquet", "t/b.parquet"], &[]);
        at(2, day, "drop-a", &[], &["t/a.parquet"]);
        for v in 3..100 {
            at(v, 40 * day, &format!("recent-{v}"), &[], &[]);
        }
        at(100, 40 * day, "late", &[], &["t/b.parquet"]);
        assert!(!s.has_txn("old") && !s.has_txn("drop-a"), "names older than 30 days are forgotten at version 100");
        assert!(s.has_txn("recent-3") && s.has_txn("late"));
        assert_eq!((s.removed_at("t/a.parquet"), s.removed_at("t/b.parquet")), (None, Some(40 * day)));
        assert_eq!(s.table_line("t").map(|l| l.versions), Some(3), "the tables' lines are kept");
    }

    #[test]
    fn as_of_reads_versions_and_times() {
        assert_eq!("12".parse::<AsOf>(), Ok(AsOf::Version(12)));
        assert_eq!("1970-01-01T00:00:01Z".parse::<AsOf>(), Ok(AsOf::Timestamp(1000)));
        assert_eq!("1970-01-01 00:00:02".parse::<AsOf>(), Ok(AsOf::Timestamp(2000)));
        assert_eq!("1970-01-02".parse::<AsOf>(), Ok(AsOf::Timestamp(86_400_000)));
        assert!("yesterday".parse::<AsOf>().unwrap_err().contains("neither"));
    }
}
