//! Files no version needs any more, and lakes of the folder layout.

use std::collections::HashSet;
use std::time::Duration;

use futures::TryStreamExt;
use object_store::ObjectStoreExt;
use some_schemas::ALL_TABLES;

use super::log::{FileEntry, Removal};
use super::{FOLDER_LAYOUT_MARKER, Lake, LakeLocation};
use crate::error::{Error, Result};

/// What `some vacuum` did (or, dry, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vacuumed {
    /// Files removed by a commit older than the retention.
    pub removed: usize,
    /// Files no commit names (a transaction that never committed, a job's
    /// earlier attempt), older than the retention.
    pub orphans: usize,
    /// Staged parts of transactions committed or older than the retention.
    pub staged: usize,
    pub bytes: u64,
}

fn table_names() -> impl Iterator<Item = &'static str> {
    ALL_TABLES.iter().map(|t| t.name)
}

impl Lake {
    /// Deletes the data files the latest version does not hold that are
    /// older than `retain` (removed before it, or written before it and
    /// never committed), and the staged parts of committed transactions.
    /// The parts of a shared transaction not committed yet, and their
    /// files, are kept whatever their age (`some ingest abort` deletes
    /// them). A version older than `retain` may no longer be readable
    /// afterwards, and a file written by a job longer ago than `retain` and
    /// not yet committed (a simulation shard's steps) is taken for an
    /// orphan: keep `retain` well above the longest job.
    pub async fn vacuum(&self, retain: Duration, dry_run: bool) -> Result<Vacuumed> {
        let snapshot = self.snapshot().await?;
        let cutoff = chrono::Utc::now() - chrono::Duration::from_std(retain).unwrap_or(chrono::Duration::MAX);
        let cutoff_ms = cutoff.timestamp_millis();
        let mut done = Vacuumed::default();
        let mut doomed = Vec::new();

        let staging = self.path("_staging");
        let staged: Vec<object_store::ObjectMeta> =
            self.store.list(Some(&staging)).try_collect().await.map_err(Error::store("list", &staging))?;
        let mut pending: HashSet<String> = HashSet::new();
        for meta in staged {
            let txn = meta.location.prefix_match(&staging).and_then(|mut parts| parts.next()).map(|p| p.as_ref().to_string());
            if txn.is_some_and(|t| snapshot.has_txn(&t)) {
                done.staged += 1;
                doomed.push(meta.location);
                continue;
            }
            let bytes = self.store.get(&meta.location).await.map_err(Error::store("read", &meta.location))?.bytes().await;
            let files: Vec<FileEntry> = serde_json::from_slice(&bytes.map_err(Error::store("read", &meta.location))?)
                .map_err(|e| Error::Invalid(format!("{}: unreadable staged part: {e}", meta.location)))?;
            pending.extend(files.into_iter().map(|f| f.path));
        }

        for table in table_names() {
            let prefix = self.path(table);
            let files: Vec<object_store::ObjectMeta> =
                self.store.list(Some(&prefix)).try_collect().await.map_err(Error::store("list", &prefix))?;
            for meta in files {
                let Some(relative) = self.relative(&meta.location) else { continue };
                // The table's Delta log (crate::lake::delta) is no data file.
                if relative.split('/').nth(1) == Some("_delta_log") {
                    continue;
                }
                if snapshot.file(&relative).is_some() || pending.contains(&relative) {
                    continue;
                }
                if let Some(at) = snapshot.removed_at(&relative) {
                    if at >= cutoff_ms {
                        continue;
                    }
                    done.removed += 1;
                } else if meta.last_modified < cutoff {
                    done.orphans += 1;
                } else {
                    continue;
                }
                done.bytes += meta.size;
                doomed.push(meta.location);
            }
        }
        // A commit that landed while the store was listed may name a file
        // taken for an orphan above: the latest version has the last word.
        let latest = self.snapshot().await?;
        doomed.retain(|path| self.relative(path).is_none_or(|r| latest.file(&r).is_none()));
        if !dry_run {
            for path in &doomed {
                self.delete_quietly(path).await?;
            }
        }
        Ok(done)
    }

    fn relative(&self, path: &object_store::path::Path) -> Option<String> {
        let parts: Vec<String> = path.prefix_match(&self.root)?.map(|p| p.as_ref().to_string()).collect();
        Some(parts.join("/"))
    }

    /// Converts a lake of the folder layout of earlier builds in place: one
    /// commit adds every Parquet file its table folders hold (files still
    /// under `_staging/` were never committed there and stay out).
    pub async fn convert(location: &LakeLocation) -> Result<(Lake, u64)> {
        let lake = Lake::open_store(location, |key| std::env::var(key).ok())?;
        let marker = lake.path(FOLDER_LAYOUT_MARKER);
        let bytes = match lake.store.get(&marker).await {
            Ok(got) => got.bytes().await.map_err(Error::store("read", &marker))?,
            Err(object_store::Error::NotFound { .. }) => {
                return Err(Error::Invalid(format!("the lake at {location} has no {FOLDER_LAYOUT_MARKER}: there is nothing to convert")));
            }
            Err(e) => return Err(Error::store("read", &marker)(e)),
        };
        let version =
            serde_json::from_slice::<serde_json::Value>(&bytes).ok().and_then(|m| m.get("schema_version").and_then(|v| v.as_u64()));
        if version != Some(u64::from(some_schemas::SCHEMA_VERSION)) {
            return Err(Error::Invalid(format!(
                "the lake at {location} has schema version {version:?}; this build converts only version {}",
                some_schemas::SCHEMA_VERSION
            )));
        }
        let mut added = Vec::new();
        for table in table_names() {
            let prefix = lake.path(table);
            let files: Vec<object_store::ObjectMeta> =
                lake.store.list(Some(&prefix)).try_collect().await.map_err(Error::store("list", &prefix))?;
            for meta in files.into_iter().filter(|m| m.location.extension() == Some("parquet")) {
                let Some(path) = lake.relative(&meta.location) else { continue };
                // Row counts live in the files' footers; the log's count is
                // informative only, so a conversion does not read every file.
                added.push(FileEntry { path, size: meta.size, rows: 0, written_ms: meta.last_modified.timestamp_millis(), stats: None });
            }
        }
        let files = added.len() as u64;
        lake.create_log(some_schemas::SCHEMA_VERSION).await?;
        *lake.latest.lock().await = std::sync::Arc::new(lake.load_latest().await?);
        lake.commit_files("convert-folder-layout", added, &Removal::Nothing, &[], None).await?;
        lake.delete_quietly(&marker).await?;
        Ok((lake, files))
    }
}
