//! Ingesting a release as queue jobs, committed together.
//!
//! The SoMe database is thousands of files (a location stream per day and
//! place, a file per topic and per user), so `some ingest release` plans an
//! *ingestion*: it checks the release's layout, groups its files into
//! *units* (the files that fill one partition: a location stream, a topic,
//! the users of one timeline bucket, an embeddings file), records them in
//! the lake (`_ingest/<id>/manifest.json`) and publishes one job per unit to
//! `some.ingest`. A compute worker reads its unit and stages the rows as part
//! files in the ingestion's staging folder (`_staging/<id>/`, which no table
//! lists), named after the unit, then records the unit as done. Names are
//! fixed by the unit, so a redelivered job overwrites its files rather than
//! adding copies. The worker that records the last unit commits the
//! ingestion: every staged file moves into its table, the world it replaces
//! (with `--replace`) is deleted, and `_ingest/<id>/committed.json` is
//! written. Each step of the commit can be done again, so a worker that dies
//! inside it leaves its job unacknowledged and the redelivered job finishes
//! the commit.
//!
//! A file that cannot be read fails its unit's job for good: it is
//! dead-lettered with the file and position and recorded under
//! `_ingest/<id>/failed/`. The ingestion then never commits and nothing of it
//! is visible. [`status`] tells what is done and what failed, [`resume`]
//! publishes the units not done (once the bad file is fixed), [`abort`]
//! deletes what was staged.
//!
//! Release files are read from the path recorded at planning, so every
//! compute worker must see the release at that path (a shared volume).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use object_store::PutPayload;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use some_jobs::release::{Release, ReleaseFile, ReleasePart};
use some_schemas::{Job, JobKind, JobMessage, PostRow, Row, buckets};

use super::{WORLD_TABLES, guard_world, second_world};
use crate::error::{Error, Result};
use crate::handler::JobContext;
use crate::lake::{Lake, Removal, Staged};
use crate::queue::Queue;

/// What an ingestion reads, recorded when it is planned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub id: String,
    /// The release's `database` folder, absolute.
    pub root: PathBuf,
    /// Whether the commit deletes the world the lake held before.
    pub replace: bool,
    /// The files of each unit; a job names its unit by index.
    pub units: Vec<Vec<ReleaseFile>>,
    pub planned_at: i64,
}

/// A unit's rows, staged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UnitDone {
    pub rows: u64,
    pub bytes: u64,
    pub parts: usize,
}

/// What a committed ingestion added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CommitRecord {
    pub rows: u64,
    pub bytes: u64,
    pub parts: usize,
    pub committed_at: i64,
}

/// An ingestion as the lake records it.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestionStatus {
    pub manifest: Manifest,
    pub done: usize,
    /// Failed units by index, with the error.
    pub failed: BTreeMap<u32, String>,
    pub committed: Option<CommitRecord>,
}

/// What one unit's job did.
#[derive(Debug, Clone, PartialEq)]
pub enum UnitOutcome {
    /// The unit's rows are staged; the ingestion waits for other units.
    Staged,
    /// This job found every unit staged and committed the ingestion.
    Committed(CommitRecord),
    /// The ingestion was committed before this job ran: nothing to do.
    AlreadyCommitted,
}

/// Groups a release's files by the partition they fill: user files by
/// timeline bucket (64 units, not one per user), every other file alone.
fn units(files: Vec<ReleaseFile>) -> Vec<Vec<ReleaseFile>> {
    let mut by_bucket: BTreeMap<String, Vec<ReleaseFile>> = BTreeMap::new();
    let mut units = Vec::new();
    for file in files {
        match &file {
            ReleaseFile::User { uid, .. } => by_bucket.entry(buckets::weibo(uid)).or_default().push(file),
            _ => units.push(vec![file]),
        }
    }
    units.extend(by_bucket.into_values());
    units
}

fn check_id(id: &str) -> Result<()> {
    let ok = id.starts_with("ingest-") && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if ok { Ok(()) } else { Err(Error::Unknown(format!("{id:?} is not an ingestion id (ingest-<time>-<hex>)"))) }
}

fn state_path(lake: &Lake, id: &str, name: &str) -> object_store::path::Path {
    lake.path(&format!("_ingest/{id}/{name}"))
}

/// The tag of a unit's part of the ingestion's shared transaction.
fn unit_tag(unit: u32) -> String {
    format!("u{unit:06}")
}

fn marker(folder: &str, unit: u32) -> String {
    format!("{folder}/{unit:06}.json")
}

async fn get_json<T: DeserializeOwned>(lake: &Lake, path: &object_store::path::Path) -> Result<Option<T>> {
    match lake.store().get(path).await {
        Ok(got) => {
            let bytes = got.bytes().await.map_err(Error::store("read", path))?;
            serde_json::from_slice(&bytes).map(Some).map_err(|e| Error::Invalid(format!("{path}: unreadable ingestion record: {e}")))
        }
        Err(object_store::Error::NotFound { .. }) => Ok(None),
        Err(e) => Err(Error::store("read", path)(e)),
    }
}

async fn put_json<T: Serialize>(lake: &Lake, path: &object_store::path::Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::Invalid(format!("{path}: {e}")))?;
    lake.store().put(path, PutPayload::from(bytes)).await.map_err(Error::store("write", path))?;
    Ok(())
}

/// The unit indices recorded under `_ingest/<id>/<folder>/` (a listing; no
/// record is read).
async fn recorded(lake: &Lake, id: &str, folder: &str) -> Result<Vec<u32>> {
    let prefix = state_path(lake, id, folder);
    let paths: Vec<_> =
        lake.store().list(Some(&prefix)).map_ok(|m| m.location).try_collect().await.map_err(Error::store("list", &prefix))?;
    Ok(paths.iter().filter_map(|p| p.filename()?.strip_suffix(".json")?.parse().ok()).collect())
}

async fn manifest(lake: &Lake, id: &str) -> Result<Manifest> {
    check_id(id)?;
    get_json(lake, &state_path(lake, id, "manifest.json"))
        .await?
        .ok_or_else(|| Error::Unknown(format!("no ingestion {id} in the lake at {}", lake.location())))
}

/// Checks the release under `root` and records an ingestion of it.
pub async fn plan(lake: &Lake, root: &Path, replace: bool) -> Result<Manifest> {
    guard_world(lake, replace).await?;
    let root = std::fs::canonicalize(root).map_err(Error::io(root.display()))?;
    let release = tokio::task::spawn_blocking(move || Release::open(&root)).await??;
    let now = chrono::Utc::now();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let manifest = Manifest {
        id: format!("ingest-{}-{}", now.format("%Y%m%dT%H%M%S"), &suffix[..8]),
        root: release.root,
        replace,
        units: units(release.files),
        planned_at: now.timestamp(),
    };
    put_json(lake, &state_path(lake, &manifest.id, "manifest.json"), &manifest).await?;
    Ok(manifest)
}

/// Publishes a job for each of `units`.
pub async fn publish(queue: &dyn Queue, id: &str, units: &[u32]) -> Result<()> {
    for &unit in units {
        let job = Job::Ingest { ingestion: id.to_string(), unit };
        queue.publish(JobKind::Ingest, JobMessage::new(job).to_bytes()).await?;
    }
    Ok(())
}

pub async fn status(lake: &Lake, id: &str) -> Result<IngestionStatus> {
    let manifest = manifest(lake, id).await?;
    let mut failed = BTreeMap::new();
    for unit in recorded(lake, id, "failed").await? {
        if let Some(error) = get_json::<String>(lake, &state_path(lake, id, &marker("failed", unit))).await? {
            failed.insert(unit, error);
        }
    }
    Ok(IngestionStatus {
        done: recorded(lake, id, "done").await?.len(),
        failed,
        committed: get_json(lake, &state_path(lake, id, "committed.json")).await?,
        manifest,
    })
}

/// Publishes the units that are not done (clearing their failures); if
/// every unit is done but the commit never finished, publishes one job,
/// which finishes it. Returns how many jobs.
pub async fn resume(lake: &Lake, queue: &dyn Queue, id: &str) -> Result<usize> {
    let status = status(lake, id).await?;
    if status.committed.is_some() {
        return Ok(0);
    }
    for unit in status.failed.keys() {
        let path = state_path(lake, id, &marker("failed", *unit));
        lake.store().delete(&path).await.map_err(Error::store("delete", &path))?;
    }
    let done = recorded(lake, id, "done").await?;
    let mut todo: Vec<u32> = (0..status.manifest.units.len() as u32).filter(|u| !done.contains(u)).collect();
    if todo.is_empty() {
        todo.push(0);
    }
    publish(queue, id, &todo).await?;
    Ok(todo.len())
}

/// Deletes an uncommitted ingestion: its staged files and its records.
pub async fn abort(lake: &Lake, id: &str) -> Result<()> {
    let status = status(lake, id).await?;
    if status.committed.is_some() {
        return Err(Error::Invalid(format!("ingestion {id} is committed; its rows are part of the world now")));
    }
    lake.abort_staged(id).await?;
    let prefix = lake.path(&format!("_ingest/{id}"));
    let paths: Vec<_> =
        lake.store().list(Some(&prefix)).map_ok(|m| m.location).try_collect().await.map_err(Error::store("list", &prefix))?;
    for path in paths {
        match lake.store().delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(Error::store("delete", &path)(e)),
        }
    }
    Ok(())
}

/// The job of one unit: stage its rows, record it done, and commit the
/// ingestion if every unit is done.
pub async fn run_unit(lake: &Lake, id: &str, unit: u32) -> Result<UnitOutcome> {
    let manifest = manifest(lake, id).await?;
    let Some(files) = manifest.units.get(unit as usize).cloned() else {
        return Err(Error::Unknown(format!("ingestion {id} has {} units, not a unit {unit}", manifest.units.len())));
    };
    if get_json::<CommitRecord>(lake, &state_path(lake, id, "committed.json")).await?.is_some() {
        return Ok(UnitOutcome::AlreadyCommitted);
    }
    let done_path = state_path(lake, id, &marker("done", unit));
    if get_json::<UnitDone>(lake, &done_path).await?.is_none() {
        let done = match stage(lake, id, unit, files).await {
            Ok(done) => done,
            Err(Error::Input(e)) => {
                if let Err(record) = put_json(lake, &state_path(lake, id, &marker("failed", unit)), &e.to_string()).await {
                    tracing::warn!(error = %record, "could not record a failed unit");
                }
                return Err(Error::Input(e));
            }
            Err(e) => return Err(e),
        };
        put_json(lake, &done_path, &done).await?;
    }
    if recorded(lake, id, "done").await?.len() < manifest.units.len() {
        return Ok(UnitOutcome::Staged);
    }
    commit(lake, &manifest).await.map(UnitOutcome::Committed)
}

/// Reads one unit's files and stages their rows under the ingestion.
async fn stage(lake: &Lake, id: &str, unit: u32, files: Vec<ReleaseFile>) -> Result<UnitDone> {
    let part = tokio::task::spawn_blocking(move || {
        let mut all = ReleasePart::default();
        for file in &files {
            all.extend(Release::read(file)?);
        }
        Ok::<_, some_jobs::InputError>(all)
    })
    .await??;
    let mut txn = lake.txn_in(id, &unit_tag(unit));
    txn.write_rows(part.posts).await?;
    txn.write_rows(part.users).await?;
    txn.write_rows(part.ref_posts).await?;
    txn.write_rows(part.knowledge).await?;
    txn.write_rows(part.embeddings).await?;
    let staged = txn.stage().await?;
    Ok(UnitDone { rows: staged.rows, bytes: staged.bytes, parts: staged.files.len() })
}

/// Commits everything staged, and for `--replace` removes the world it
/// replaces in the same commit; then records the commit. Safe to run
/// again, and by two workers at once: the log takes the ingestion once.
async fn commit(lake: &Lake, manifest: &Manifest) -> Result<CommitRecord> {
    let mut record = CommitRecord { committed_at: chrono::Utc::now().timestamp(), ..Default::default() };
    for unit in 0..manifest.units.len() as u32 {
        let done: UnitDone = get_json(lake, &state_path(lake, &manifest.id, &marker("done", unit)))
            .await?
            .ok_or_else(|| Error::Invalid(format!("ingestion {}: unit {unit} is not staged", manifest.id)))?;
        record.rows += done.rows;
        record.bytes += done.bytes;
        record.parts += done.parts;
    }
    let tags: Vec<String> = (0..manifest.units.len() as u32).map(unit_tag).collect();
    // Without --replace, another world may have landed since `plan` looked:
    // the commit is refused then, rather than adding a second world.
    let (removal, empty) = if manifest.replace {
        (Removal::Tables(WORLD_TABLES.map(str::to_string).to_vec()), vec![])
    } else {
        (Removal::Nothing, vec![PostRow::TABLE.to_string()])
    };
    let staged = lake.commit_staged(&manifest.id, &tags, removal, &empty).await.map_err(|e| match e {
        Error::Filled { .. } => Error::Context {
            doing: format!("ingestion {} (`some ingest abort {}` deletes what it staged)", manifest.id, manifest.id),
            source: Box::new(second_world(lake, e)),
        },
        e => e,
    })?;
    if let Staged::Missing(lost) = staged {
        // Units recorded done whose staged parts are gone are staged again
        // by `resume`, not committed without their rows.
        let units: Vec<u32> = (0..manifest.units.len() as u32).filter(|u| lost.contains(&unit_tag(*u))).collect();
        for unit in &units {
            let done = state_path(lake, &manifest.id, &marker("done", *unit));
            lake.store().delete(&done).await.map_err(Error::store("delete", &done))?;
        }
        return Err(Error::Invalid(format!(
            "ingestion {}: units {units:?} were recorded staged but their staged parts are gone; `some ingest resume {}` stages them again",
            manifest.id, manifest.id
        )));
    }
    put_json(lake, &state_path(lake, &manifest.id, "committed.json"), &record).await?;
    Ok(record)
}

/// The handler of ingestion units: stages one unit, and commits the
/// ingestion if it was the last.
pub async fn run_job(ctx: &JobContext<'_>, ingestion: &str, unit: u32) -> Result<()> {
    let outcome = run_unit(ctx.lake, ingestion, unit).await?;
    ctx.progress.advance(1);
    if let UnitOutcome::Committed(record) = outcome {
        tracing::info!(ingestion, rows = record.rows, parts = record.parts, "ingestion committed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_share_a_unit_per_timeline_bucket_and_other_files_stand_alone() {
        let user = |uid: &str| ReleaseFile::User { path: format!("user_data/{uid}/{uid}.json").into(), uid: uid.into() };
        let topic = ReleaseFile::Topic { path: "topic_data/t.json".into(), topic: "t".into() };
        let uids: Vec<String> = (0..500).map(|i| format!("{}", 1_000_000 + i)).collect();
        let mut files = vec![topic.clone()];
        files.extend(uids.iter().map(|u| user(u)));
        let grouped = units(files);
        assert_eq!(grouped[0], vec![topic]);
        assert_eq!(grouped.len(), 1 + 64, "500 users fill every one of the 64 buckets");
        for unit in &grouped[1..] {
            let buckets: std::collections::BTreeSet<String> = unit
                .iter()
                .map(|f| match f {
                    ReleaseFile::User { uid, .. } => buckets::weibo(uid),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(buckets.len(), 1);
        }
        assert_eq!(grouped[1..].iter().map(Vec::len).sum::<usize>(), 500);
    }

    /// An ingestion planned on an empty lake (no `--replace`) whose commit
    /// comes after another world landed is refused whole, naming that
    /// world, and says how to drop what it staged.
    #[tokio::test]
    async fn an_ingestion_is_refused_at_its_commit_if_a_world_landed_since_its_plan() {
        use some_schemas::PostSource;
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&crate::LakeLocation::Local(dir.path().join("lake"))).await.unwrap();
        let post = |id: &str| PostRow::new(id, "x", PostSource::Topic, buckets::topic("t"));
        let id = "ingest-20261125T170000-0a1b2c3d";
        guard_world(&lake, false).await.unwrap();
        let manifest = Manifest { id: id.into(), root: dir.path().into(), replace: false, units: vec![vec![]], planned_at: 0 };
        let mut part = lake.txn_in(id, &unit_tag(0));
        part.write_rows(vec![post("a")]).await.unwrap();
        let staged = part.stage().await.unwrap();
        let done = UnitDone { rows: staged.rows, bytes: staged.bytes, parts: staged.files.len() };
        put_json(&lake, &state_path(&lake, id, &marker("done", 0)), &done).await.unwrap();

        // A synth lands while the ingestion's units run.
        let mut synth = lake.txn();
        synth.write_rows(vec![post("s")]).await.unwrap();
        synth.require_empty(&[PostRow::TABLE]);
        let synth_id = synth.id().to_string();
        synth.commit().await.unwrap();

        let err = commit(&lake, &manifest).await.unwrap_err().to_string();
        assert!(err.contains(&format!("transaction {synth_id}")), "{err}");
        assert!(err.contains(&format!("`some ingest abort {id}`")), "{err}");
        assert_eq!(super::super::world_posts(&lake).await.unwrap(), 1);
        assert!(get_json::<CommitRecord>(&lake, &state_path(&lake, id, "committed.json")).await.unwrap().is_none());
    }

    #[test]
    fn ingestion_ids_never_leave_their_folder() {
        assert!(check_id("ingest-20261123T101010-0a1b2c3d").is_ok());
        for bad in ["../x", "ingest-../../etc", "ingest-a/b", "runs", ""] {
            assert!(matches!(check_id(bad), Err(Error::Unknown(_))), "{bad}");
        }
    }
}
