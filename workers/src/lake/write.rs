//! Write transactions: whole part files under names of their own, made
//! visible together by one commit of the lake's log.

use std::collections::BTreeMap;

use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use some_schemas::{Row, TableDef};

use super::Lake;
use super::log::{FileEntry, Removal};
use crate::error::{Error, Result};

/// Rows per row group: small enough that a point read (one user, one hour)
/// skips most of a file by its statistics.
const ROW_GROUP_ROWS: usize = 64 * 1024;

/// The Parquet writer settings of every lake file.
fn writer_properties() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(1).expect("level 1 is valid")))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("some {}", env!("CARGO_PKG_VERSION")))
        .build()
}

/// Encodes a batch of a table as one Parquet file. Partition columns, if the
/// batch has them, are dropped: they live in the path. CPU-bound; call it
/// from a blocking context for large batches.
pub fn encode_parquet(table: &TableDef, batch: &RecordBatch) -> Result<Bytes> {
    let file_schema = (table.file_schema)();
    let indices = file_schema
        .fields()
        .iter()
        .map(|f| {
            batch
                .schema()
                .index_of(f.name())
                .map_err(|_| Error::Table { table: table.name.to_string(), message: format!("the batch has no column {:?}", f.name()) })
        })
        .collect::<Result<Vec<_>>>()?;
    let projected = batch.project(&indices).map_err(|e| Error::Table { table: table.name.into(), message: e.to_string() })?;
    let projected = RecordBatch::try_new(file_schema.clone(), projected.columns().to_vec())
        .map_err(|e| Error::Table { table: table.name.into(), message: e.to_string() })?;
    let parquet_err = |source| Error::Parquet { path: table.name.to_string(), source };
    let mut out = Vec::with_capacity(projected.get_array_memory_size() / 3);
    let mut writer = ArrowWriter::try_new(&mut out, file_schema, Some(writer_properties())).map_err(parquet_err)?;
    writer.write(&projected).map_err(parquet_err)?;
    writer.close().map_err(parquet_err)?;
    Ok(Bytes::from(out))
}

/// Partition values become path segments, so only a safe alphabet is allowed.
fn check_partition_value(table: &str, value: &str) -> Result<()> {
    let ok = !value.is_empty() && !value.starts_with('.') && value.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Error::Table { table: table.to_string(), message: format!("partition value {value:?} is not a safe path segment") })
}

/// What a committed transaction made visible.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Committed {
    pub files: Vec<Path>,
    pub rows: u64,
    pub bytes: u64,
    /// The lake version it landed as; `None` if the log held the
    /// transaction already (nothing was committed twice), which includes a
    /// retried write of this very commit that had landed.
    pub version: Option<u64>,
}

/// A set of part files that become visible together on [`Txn::commit`].
#[derive(Debug)]
pub struct Txn {
    lake: Lake,
    /// The transaction's name in the log.
    name: String,
    /// The tag of a job's part of a shared transaction.
    tag: Option<String>,
    /// What part file names start with: unique to this writer, so no two
    /// writers (nor two attempts of one job) ever write the same file.
    prefix: String,
    seq: u32,
    added: Vec<FileEntry>,
    removal: Removal,
    /// Tables that must hold no rows when the commit lands.
    empty: Vec<String>,
}

fn unique_suffix() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..12].to_string()
}

/// Rows of one table as Parquet, one file's bytes per partition.
pub struct EncodedParts {
    table: TableDef,
    /// (partition values, bytes, rows)
    parts: Vec<(Vec<String>, Bytes, u64)>,
}

/// Encodes rows of one table on the blocking pool, apart from any
/// transaction, so that several tables can be encoded at once.
pub async fn encode_rows<R: Row>(rows: Vec<R>) -> Result<EncodedParts> {
    let mut groups: BTreeMap<Vec<String>, Vec<R>> = BTreeMap::new();
    for row in rows {
        groups.entry(row.partition_values()).or_default().push(row);
    }
    let table = TableDef::of::<R>();
    let batches =
        groups.into_iter().map(|(partition, rows)| Ok((partition, R::to_batch(&rows)?, rows.len() as u64))).collect::<Result<Vec<_>>>()?;
    let parts = tokio::task::spawn_blocking(move || {
        batches
            .into_iter()
            .map(|(partition, batch, rows)| Ok((partition, encode_parquet(&table, &batch)?, rows)))
            .collect::<Result<Vec<_>>>()
    })
    .await
    .map_err(|e| Error::Task(format!("encoding task failed: {e}")))??;
    Ok(EncodedParts { table, parts })
}

impl Txn {
    pub(super) fn new(lake: Lake) -> Txn {
        let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
        // Time first, so part files sort by when they were written.
        let name = format!("{millis:013x}-{}", unique_suffix());
        Txn {
            prefix: format!("part-{name}"),
            lake,
            name,
            tag: None,
            seq: 0,
            added: Vec::new(),
            removal: Removal::Nothing,
            empty: Vec::new(),
        }
    }

    pub(super) fn named(lake: Lake, name: String, tag: Option<&str>) -> Txn {
        let prefix = match tag {
            Some(tag) => format!("part-{name}-{tag}-{}", unique_suffix()),
            None => format!("part-{name}-{}", unique_suffix()),
        };
        Txn { lake, name, tag: tag.map(str::to_string), prefix, seq: 0, added: Vec::new(), removal: Removal::Nothing, empty: Vec::new() }
    }

    pub fn id(&self) -> &str {
        &self.name
    }

    /// What is written so far.
    pub fn staged(&self) -> Committed {
        Committed {
            files: self.added.iter().map(|f| self.lake.path(&f.path)).collect(),
            rows: self.added.iter().map(|f| f.rows).sum(),
            bytes: self.added.iter().map(|f| f.size).sum(),
            version: None,
        }
    }

    /// Writes rows of one table, one part file per partition.
    pub async fn write_rows<R: Row>(&mut self, rows: Vec<R>) -> Result<()> {
        let parts = encode_rows(rows).await?;
        self.write_parts(parts).await
    }

    /// Writes part files encoded by [`encode_rows`].
    pub async fn write_parts(&mut self, parts: EncodedParts) -> Result<()> {
        for (partition, encoded, rows) in parts.parts {
            self.put_part(&parts.table, &partition, encoded, rows).await?;
        }
        Ok(())
    }

    /// Writes one encoded part file of `table` in the given partition.
    pub async fn put_part(&mut self, table: &TableDef, partition: &[String], encoded: Bytes, rows: u64) -> Result<()> {
        if partition.len() != table.partition_columns.len() {
            return Err(Error::Table {
                table: table.name.to_string(),
                message: format!("expected {} partition values, got {}", table.partition_columns.len(), partition.len()),
            });
        }
        let mut relative = table.name.to_string();
        for (column, value) in table.partition_columns.iter().zip(partition) {
            check_partition_value(table.name, value)?;
            relative.push_str(&format!("/{column}={value}"));
        }
        let relative = format!("{relative}/{}-{:05}.parquet", self.prefix, self.seq);
        self.seq += 1;
        let path = self.lake.path(&relative);
        let size = encoded.len() as u64;
        let stats = super::delta::file_stats(table, &encoded);
        self.lake.store.put(&path, PutPayload::from(encoded)).await.map_err(Error::store("write", &path))?;
        self.added.push(FileEntry { path: relative, size, rows, written_ms: chrono::Utc::now().timestamp_millis(), stats });
        Ok(())
    }

    /// Adds a file already in the lake (one written by [`Lake::put_once`])
    /// holding `rows` rows.
    pub async fn adopt(&mut self, relative: &str, rows: u64) -> Result<()> {
        let path = self.lake.path(relative);
        let meta = self.lake.store.head(&path).await.map_err(Error::store("read", &path))?;
        let written_ms = meta.last_modified.timestamp_millis();
        self.added.push(FileEntry { path: relative.to_string(), size: meta.size, rows, written_ms, stats: None });
        Ok(())
    }

    /// On commit, also removes every file these tables hold then: the
    /// transaction replaces their contents.
    pub fn replace_tables(&mut self, tables: &[&str]) {
        self.removal = Removal::Tables(tables.iter().map(|t| t.to_string()).collect());
    }

    /// On commit, also removes these files (paths relative to the lake
    /// root); the commit fails if another removed one of them first.
    pub fn remove_files(&mut self, paths: Vec<String>) {
        self.removal = Removal::Files(paths);
    }

    /// On commit, refuses the whole transaction ([`Error::Filled`]) if one
    /// of these tables holds rows then: for a writer that may only fill an
    /// empty table and looked before it wrote, as another writer may have
    /// filled it since.
    pub fn require_empty(&mut self, tables: &[&str]) {
        self.empty = tables.iter().map(|t| t.to_string()).collect();
    }

    /// Makes everything written visible at once: one commit of the log.
    pub async fn commit(self) -> Result<Committed> {
        if self.tag.is_some() {
            return Err(Error::Invalid(format!(
                "transaction {}: a job's part of a shared transaction is staged, not committed",
                self.name
            )));
        }
        let mut committed = self.staged();
        committed.version = self.lake.commit_files(&self.name, self.added, &self.removal, &self.empty, None).await?;
        Ok(committed)
    }

    /// Records this job's part of a shared transaction (replacing what the
    /// same tag staged before); [`Lake::commit_staged`] commits them all.
    pub async fn stage(self) -> Result<Committed> {
        let Some(tag) = &self.tag else {
            return Err(Error::Invalid(format!("transaction {} is not shared: commit it", self.name)));
        };
        let path = self.lake.path(&format!("_staging/{}/{tag}.json", self.name));
        let bytes = serde_json::to_vec(&self.added).map_err(|e| Error::Invalid(format!("{path}: {e}")))?;
        self.lake.store.put(&path, PutPayload::from(bytes)).await.map_err(Error::store("write", &path))?;
        Ok(self.staged())
    }

    /// Deletes what was written. Nothing of it was ever visible.
    pub async fn abort(self) -> Result<()> {
        for file in &self.added {
            self.lake.delete_quietly(&self.lake.path(&file.path)).await?;
        }
        Ok(())
    }
}

/// What [`Lake::commit_staged`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Staged {
    Committed(Committed),
    /// These tags have no staged part: nothing was committed.
    Missing(Vec<String>),
}

/// The tag a staging manifest `_staging/<id>/<tag>.json` is of.
fn tag_of(manifest: &Path) -> Option<String> {
    manifest.filename()?.strip_suffix(".json").map(str::to_string)
}

impl Lake {
    /// Commits every part staged into the shared transaction `id`, and
    /// removes what `removal` names, as one commit. Safe to run again and
    /// by two processes at once: the transaction lands once.
    /// Every tag of `tags` must have staged its part: if some have not (a
    /// part deleted, or never written), nothing is committed and they are
    /// returned, so the caller stages them again rather than losing rows.
    /// The tables of `empty` must hold no rows when it lands, as
    /// [`Txn::require_empty`].
    pub async fn commit_staged(&self, id: &str, tags: &[String], removal: Removal, empty: &[String]) -> Result<Staged> {
        let parts = self.staged_parts(id).await?;
        if !self.snapshot().await?.has_txn(id) {
            let present: Vec<String> = parts.iter().filter_map(|(manifest, _)| tag_of(manifest)).collect();
            let missing: Vec<String> = tags.iter().filter(|t| !present.contains(t)).cloned().collect();
            if !missing.is_empty() {
                return Ok(Staged::Missing(missing));
            }
        }
        let added: Vec<FileEntry> = parts.into_iter().flat_map(|(_, files)| files).collect();
        Ok(Staged::Committed(Committed {
            files: added.iter().map(|f| self.path(&f.path)).collect(),
            rows: added.iter().map(|f| f.rows).sum(),
            bytes: added.iter().map(|f| f.size).sum(),
            version: self.commit_files(id, added, &removal, empty, None).await?,
        }))
    }

    /// Aborts the shared transaction `id` ([`Lake::abort_txn`]: refused if
    /// it committed, and it can never commit after) and deletes what its
    /// jobs staged. A job committing it at the same moment either lands
    /// first, and the abort is refused, or is refused itself.
    pub async fn abort_staged(&self, id: &str) -> Result<()> {
        self.abort_txn(id).await?;
        for (manifest, files) in self.staged_parts(id).await? {
            for file in files {
                self.delete_quietly(&self.path(&file.path)).await?;
            }
            self.delete_quietly(&manifest).await?;
        }
        Ok(())
    }

    /// The staged parts of the shared transaction `id`: each manifest's
    /// path and the files it names, in path order.
    async fn staged_parts(&self, id: &str) -> Result<Vec<(Path, Vec<FileEntry>)>> {
        let staging = self.path(&format!("_staging/{id}"));
        let mut manifests: Vec<object_store::ObjectMeta> =
            self.store.list(Some(&staging)).try_collect().await.map_err(Error::store("list", &staging))?;
        manifests.sort_by(|a, b| a.location.cmp(&b.location));
        let mut parts = Vec::with_capacity(manifests.len());
        for meta in manifests {
            let bytes = self.store.get(&meta.location).await.map_err(Error::store("read", &meta.location))?.bytes().await;
            let bytes = bytes.map_err(Error::store("read", &meta.location))?;
            let files: Vec<FileEntry> =
                serde_json::from_slice(&bytes).map_err(|e| Error::Invalid(format!("{}: unreadable staged part: {e}", meta.location)))?;
            parts.push((meta.location, files));
        }
        Ok(parts)
    }

    pub(super) async fn delete_quietly(&self, path: &Path) -> Result<()> {
        match self.store.delete(path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Error::store("delete", path)(e)),
        }
    }
}
