//! Files written once at a name fixed by the work they hold (a simulation
//! shard's results): the first writer wins, atomically (a conditional put),
//! so a redelivered or duplicated job can never add a second answer, and a
//! reader that knows the name reads it without listing. Tables show such a
//! file once a transaction adopts it ([`super::Txn::adopt`]).

use arrow::array::{ArrayRef, StringArray};
use arrow::record_batch::RecordBatch;
use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use some_schemas::{Row, TableDef};

use super::Lake;
use super::write::encode_parquet;
use crate::error::{Error, Result};

impl Lake {
    /// The lake-relative path of the part file `name` of one partition of `R`.
    pub fn part_path<R: Row>(partition: &[&str], name: &str) -> String {
        let mut relative = R::TABLE.to_string();
        for (column, value) in R::PARTITION_COLUMNS.iter().zip(partition) {
            relative.push_str(&format!("/{column}={value}"));
        }
        format!("{relative}/{name}.parquet")
    }

    /// Writes `rows` (all of one partition) as the file `relative` unless
    /// one is there already; returns whether this call wrote it.
    pub async fn put_once<R: Row>(&self, relative: &str, rows: Vec<R>) -> Result<bool> {
        let table = TableDef::of::<R>();
        let batch = R::to_batch(&rows)?;
        let encoded = tokio::task::spawn_blocking(move || encode_parquet(&table, &batch))
            .await
            .map_err(|e| Error::Task(format!("encoding task failed: {e}")))??;
        let path = self.path(relative);
        let opts = PutOptions { mode: PutMode::Create, ..Default::default() };
        match self.store.put_opts(&path, PutPayload::from(encoded), opts).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) | Err(object_store::Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(Error::store("write", &path)(e)),
        }
    }

    /// Whether the file `relative` exists.
    pub async fn exists(&self, relative: &str) -> Result<bool> {
        let path = self.path(relative);
        match self.store.head(&path).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(Error::store("read", &path)(e)),
        }
    }

    /// The files under the folder `folder` whose names start with `name`
    /// that the latest version does not hold (written, not committed).
    pub async fn uncommitted_files(&self, folder: &str, name: &str) -> Result<Vec<String>> {
        use futures::TryStreamExt;
        let snapshot = self.snapshot().await?;
        let prefix = self.path(folder);
        let found: Vec<object_store::ObjectMeta> =
            self.store.list(Some(&prefix)).try_collect().await.map_err(Error::store("list", &prefix))?;
        let mut out: Vec<String> = found
            .iter()
            .filter(|m| m.location.filename().is_some_and(|f| f.starts_with(name)))
            .filter_map(|m| m.location.filename().map(|f| format!("{folder}/{f}")))
            .filter(|relative| snapshot.file(relative).is_none())
            .collect();
        out.sort();
        Ok(out)
    }

    /// Reads the rows of the file `relative` written by [`Lake::put_once`]
    /// in `partition`; `None` if it is not there yet.
    pub async fn read_once<R: Row>(&self, relative: &str, partition: &[&str]) -> Result<Option<Vec<R>>> {
        let path = self.path(relative);
        let bytes = match self.store.get(&path).await {
            Ok(got) => got.bytes().await.map_err(Error::store("read", &path))?,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(Error::store("read", &path)(e)),
        };
        let parquet_err = |source| Error::Parquet { path: path.to_string(), source };
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes).map_err(parquet_err)?.build().map_err(parquet_err)?;
        let schema = R::schema();
        let mut rows = Vec::new();
        for batch in reader {
            let batch = batch.map_err(|e| Error::Table { table: R::TABLE.into(), message: format!("{path}: {e}") })?;
            // The partition values live in the path: put them back as columns.
            let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
            for value in partition {
                columns.push(std::sync::Arc::new(StringArray::from(vec![*value; batch.num_rows()])));
            }
            let full = RecordBatch::try_new(schema.clone(), columns)
                .map_err(|e| Error::Table { table: R::TABLE.into(), message: format!("{path}: {e}") })?;
            rows.extend(R::from_batch(&full)?);
        }
        Ok(Some(rows))
    }
}
