//! DataFusion over the lake: every table registered as a listing table on
//! the lake's own object store, with hive partitions and known schemas.

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::prelude::{DataFrame, Expr, SessionConfig, SessionContext};
use some_schemas::sim::SIM_TABLES;
use some_schemas::{ALL_TABLES, Row, TableDef};

use super::Lake;
use crate::error::{Error, Result};

impl Lake {
    /// A SQL session with every lake table registered. Sessions are cheap to
    /// query repeatedly; keep one per process rather than one per query.
    pub fn session(&self) -> Result<SessionContext> {
        let config = SessionConfig::new()
            .with_information_schema(true)
            // Point reads (one hour of one location, one user) decode only
            // the rows that pass the filter.
            .set_bool("datafusion.execution.parquet.pushdown_filters", true)
            .set_bool("datafusion.execution.parquet.reorder_filters", true);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_object_store(&self.store_url, self.store.clone());
        for table in ALL_TABLES.iter().chain(SIM_TABLES) {
            ctx.register_table(table.name, self.listing_table(table)?)?;
        }
        Ok(ctx)
    }

    fn listing_table(&self, table: &TableDef) -> Result<Arc<ListingTable>> {
        let url = ListingTableUrl::parse(self.table_url(table.name))?;
        let options = ListingOptions::new(Arc::new(ParquetFormat::default()))
            .with_file_extension(".parquet")
            .with_table_partition_cols(table.partition_columns.iter().map(|c| (c.to_string(), arrow::datatypes::DataType::Utf8)).collect());
        let config = ListingTableConfig::new(url).with_listing_options(options).with_schema((table.file_schema)());
        Ok(Arc::new(ListingTable::try_new(config)?))
    }

    /// Runs one SQL statement and collects its result; an empty result is
    /// one empty batch, so it still has its columns.
    pub async fn sql(&self, query: &str) -> Result<Vec<RecordBatch>> {
        let df = self.session()?.sql(query).await?;
        let schema = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await?;
        if batches.is_empty() {
            return Ok(vec![RecordBatch::new_empty(schema)]);
        }
        Ok(batches)
    }

    /// Reads the rows of a table that match `filter` (all rows if `None`).
    pub async fn read<R: Row>(&self, ctx: &SessionContext, filter: Option<Expr>) -> Result<Vec<R>> {
        let mut df: DataFrame = ctx.table(R::TABLE).await?;
        if let Some(filter) = filter {
            df = df.filter(filter)?;
        }
        let mut rows = Vec::new();
        for batch in df.collect().await? {
            rows.extend(R::from_batch(&batch)?);
        }
        Ok(rows)
    }
}

/// How `some sql` prints a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// An aligned text table.
    #[default]
    Table,
    /// CSV with a header row.
    Csv,
    /// One JSON object per row, one per line.
    Json,
}

impl std::str::FromStr for OutputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "table" => Ok(OutputFormat::Table),
            "csv" => Ok(OutputFormat::Csv),
            "json" => Ok(OutputFormat::Json),
            _ => Err(format!("unknown format {s:?}: expected table, csv or json")),
        }
    }
}

/// Renders batches in the given format.
pub fn format_batches(batches: &[RecordBatch], format: OutputFormat) -> Result<String> {
    let err = |e: arrow::error::ArrowError| Error::Invalid(format!("formatting the result: {e}"));
    match format {
        OutputFormat::Table => Ok(arrow::util::pretty::pretty_format_batches(batches).map_err(err)?.to_string()),
        OutputFormat::Csv => {
            let mut out = Vec::new();
            {
                let mut w = arrow::csv::WriterBuilder::new().with_header(true).build(&mut out);
                for b in batches {
                    w.write(b).map_err(err)?;
                }
            }
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
        OutputFormat::Json => {
            let mut out = Vec::new();
            {
                let mut w = arrow::json::LineDelimitedWriter::new(&mut out);
                for b in batches {
                    w.write(b).map_err(err)?;
                }
                w.finish().map_err(err)?;
            }
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::LakeLocation;
    use some_schemas::{KnowledgeRow, PostRow, PostSource, buckets};

    fn knowledge(i: i64) -> KnowledgeRow {
        KnowledgeRow { doc_index: i, content: format!("report {i}"), link: None, extra: None }
    }

    #[tokio::test]
    async fn committed_rows_are_queryable_and_aborted_rows_never_appear() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&LakeLocation::Local(dir.path().to_path_buf())).await.unwrap();

        let mut txn = lake.txn();
        txn.write_rows(vec![knowledge(0), knowledge(1)]).await.unwrap();
        let count = |lake: Lake| async move {
            let b = lake.sql("SELECT count(*) AS n FROM knowledge").await.unwrap();
            format_batches(&b, OutputFormat::Csv).unwrap()
        };
        assert_eq!(count(lake.clone()).await, "n\n0\n", "staged files are invisible");
        let committed = txn.commit().await.unwrap();
        assert_eq!((committed.rows, committed.files.len()), (2, 1));
        assert_eq!(count(lake.clone()).await, "n\n2\n");

        let mut txn = lake.txn();
        txn.write_rows(vec![knowledge(2)]).await.unwrap();
        txn.abort().await.unwrap();
        assert_eq!(count(lake.clone()).await, "n\n2\n");
        let staging = dir.path().join("_staging");
        let leftovers = walk(&staging);
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[tokio::test]
    async fn a_shared_transaction_commits_once_however_often_it_is_committed() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&LakeLocation::Local(dir.path().to_path_buf())).await.unwrap();
        for (tag, docs) in [("u1", vec![knowledge(0), knowledge(1)]), ("u2", vec![knowledge(2)])] {
            let mut txn = lake.txn_in("ingest-t", tag);
            txn.write_rows(docs).await.unwrap();
        }
        // Staging a unit again replaces its files rather than adding copies.
        let mut again = lake.txn_in("ingest-t", "u2");
        again.write_rows(vec![knowledge(2)]).await.unwrap();
        assert_eq!(again.staged().files.len(), 1);
        let count =
            || async { format_batches(&lake.sql("SELECT count(*) AS n FROM knowledge").await.unwrap(), OutputFormat::Csv).unwrap() };
        assert_eq!(count().await, "n\n0\n", "nothing is visible before the commit");

        let moved = lake.commit_staged("ingest-t").await.unwrap();
        assert_eq!(moved.len(), 2);
        assert!(moved.iter().all(|p| p.filename().unwrap().starts_with("part-ingest-t-u")), "{moved:?}");
        assert_eq!(count().await, "n\n3\n");
        // A second committer (or a redelivered job) finds nothing left to move.
        assert!(lake.commit_staged("ingest-t").await.unwrap().is_empty());
        assert_eq!(count().await, "n\n3\n");
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else { return vec![] };
        entries.flatten().flat_map(|e| if e.path().is_dir() { walk(&e.path()) } else { vec![e.path()] }).collect()
    }

    #[tokio::test]
    async fn partitions_become_hive_folders_and_columns() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&LakeLocation::Local(dir.path().to_path_buf())).await.unwrap();
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

        let ctx = lake.session().unwrap();
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
        let lake = Lake::open(&LakeLocation::Local(dir.path().to_path_buf())).await.unwrap();
        let mut txn = lake.txn();
        let table = TableDef::of::<PostRow>();
        let err = txn.put_part(&table, &["raw".into(), "../x".into()], bytes::Bytes::new(), 0).await.unwrap_err();
        assert_eq!(err.to_string(), "table posts: partition value \"../x\" is not a safe path segment");
    }

    #[tokio::test]
    async fn a_lake_of_another_schema_version_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("_lake.json"), r#"{"schema_version": 1}"#).unwrap();
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
}
