//! Write transactions: whole part files, staged, then moved into place.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use object_store::path::Path;
use object_store::{ObjectStoreExt, PutPayload};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use some_schemas::{Row, TableDef};

use super::Lake;
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
}

/// A set of part files that become visible together on [`Txn::commit`].
#[derive(Debug)]
pub struct Txn {
    lake: Lake,
    id: String,
    /// What part file names start with: `part-<id>` (or `part-<id>-<tag>`).
    prefix: String,
    seq: AtomicU32,
    staged: Vec<(Path, Path)>,
    rows: u64,
    bytes: u64,
}

impl Txn {
    pub(super) fn new(lake: Lake) -> Txn {
        let millis = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_millis();
        let random = uuid::Uuid::new_v4().simple().to_string();
        // Time first, so part files sort by when they were written.
        let id = format!("{millis:013x}-{}", &random[..12]);
        Txn::shared(lake, id, None)
    }

    /// A writer of part files into the staging folder of transaction `id`,
    /// named `part-<id>-<tag>-NNNNN`: several jobs stage into one
    /// transaction, which [`Lake::commit_staged`] makes visible.
    pub(super) fn shared(lake: Lake, id: String, tag: Option<&str>) -> Txn {
        let prefix = match tag {
            Some(tag) => format!("part-{id}-{tag}"),
            None => format!("part-{id}"),
        };
        Txn { lake, id, prefix, seq: AtomicU32::new(0), staged: Vec::new(), rows: 0, bytes: 0 }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// What is staged so far (the files under their final names).
    pub fn staged(&self) -> Committed {
        Committed { files: self.staged.iter().map(|(_, target)| target.clone()).collect(), rows: self.rows, bytes: self.bytes }
    }

    /// Writes rows of one table, one part file per partition.
    pub async fn write_rows<R: Row>(&mut self, rows: Vec<R>) -> Result<()> {
        let mut groups: BTreeMap<Vec<String>, Vec<R>> = BTreeMap::new();
        for row in rows {
            groups.entry(row.partition_values()).or_default().push(row);
        }
        let table = TableDef::of::<R>();
        for (partition, rows) in groups {
            let batch = R::to_batch(&rows)?;
            let encoded = tokio::task::spawn_blocking(move || encode_parquet(&table, &batch))
                .await
                .map_err(|e| Error::Task(format!("encoding task failed: {e}")))??;
            self.put_part(&table, &partition, encoded, rows.len() as u64).await?;
        }
        Ok(())
    }

    /// Stages one encoded part file of `table` in the given partition.
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
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let file = format!("{}-{seq:05}.parquet", self.prefix);
        let staged = self.lake.path(&format!("_staging/{}/{relative}/{file}", self.id));
        let target = self.lake.path(&format!("{relative}/{file}"));
        let size = encoded.len() as u64;
        self.lake.store.put(&staged, PutPayload::from(encoded)).await.map_err(Error::store("write", &staged))?;
        self.staged.push((staged, target));
        self.rows += rows;
        self.bytes += size;
        Ok(())
    }

    /// Moves every staged file into its table. Readers see each file whole;
    /// a crash during this loop can leave some of the transaction visible.
    pub async fn commit(self) -> Result<Committed> {
        let mut files = Vec::with_capacity(self.staged.len());
        for (staged, target) in &self.staged {
            self.lake.store.rename(staged, target).await.map_err(Error::store("commit", target))?;
            files.push(target.clone());
        }
        Ok(Committed { files, rows: self.rows, bytes: self.bytes })
    }

    /// Deletes what was staged. Nothing of it was ever visible.
    pub async fn abort(self) -> Result<()> {
        for (staged, _) in &self.staged {
            match self.lake.store.delete(staged).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(Error::store("delete", staged)(e)),
            }
        }
        Ok(())
    }
}

impl Lake {
    /// Moves every file staged under transaction `id` into its table;
    /// returns where they are now. Idempotent: a file already moved (by an
    /// earlier, interrupted call, or by another process doing the same) is
    /// skipped.
    pub async fn commit_staged(&self, id: &str) -> Result<Vec<Path>> {
        use futures::TryStreamExt;
        let staging = self.path(&format!("_staging/{id}"));
        let staged: Vec<object_store::ObjectMeta> =
            self.store.list(Some(&staging)).try_collect().await.map_err(Error::store("list", &staging))?;
        let mut moved = Vec::with_capacity(staged.len());
        for meta in staged {
            let Some(relative) = meta.location.prefix_match(&staging) else { continue };
            let target = relative.fold(self.root.clone(), |p, part| p.join(part));
            match self.store.rename(&meta.location, &target).await {
                Ok(()) => {}
                Err(object_store::Error::NotFound { .. }) if self.store.head(&target).await.is_ok() => {}
                Err(e) => return Err(Error::store("commit", &target)(e)),
            }
            moved.push(target);
        }
        Ok(moved)
    }
}
