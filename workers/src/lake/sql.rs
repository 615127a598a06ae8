//! DataFusion over the lake: every table registered as a listing table, with
//! hive partitions and known schemas, on a view of the store that shows one
//! snapshot of the log (so a session reads one version of the lake).

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::prelude::{DataFrame, Expr, SessionConfig, SessionContext};
use some_schemas::{ALL_TABLES, Row, TableDef};

use super::view::SnapshotView;
use super::{Lake, Snapshot};
use crate::error::{Error, Result};

impl Lake {
    /// A SQL session with every lake table registered, reading the latest
    /// version of the lake (or the pinned one, for a lake opened
    /// [`Lake::as_of`]). It keeps reading that version: take a new session
    /// to see later commits.
    pub async fn session(&self) -> Result<SessionContext> {
        self.session_of(self.snapshot().await?)
    }

    /// A SQL session reading `snapshot`.
    pub fn session_of(&self, snapshot: Arc<Snapshot>) -> Result<SessionContext> {
        let config = SessionConfig::new()
            .with_information_schema(true)
            // Point reads (one hour of one location, one user) decode only
            // the rows that pass the filter.
            .set_bool("datafusion.execution.parquet.pushdown_filters", true)
            .set_bool("datafusion.execution.parquet.reorder_filters", true);
        let ctx = SessionContext::new_with_config(config);
        ctx.register_object_store(&self.store_url, Arc::new(SnapshotView::new(self.store.clone(), self.root.clone(), snapshot)));
        for table in ALL_TABLES {
            ctx.register_table(table.name, self.listing_table(table)?)?;
        }
        Ok(ctx)
    }

    pub(super) fn listing_table(&self, table: &TableDef) -> Result<Arc<ListingTable>> {
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
        let df = self.session().await?.sql(query).await?;
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
