//! Errors of the workers crate. Each says which object, table or query failed.

/// The error of any worker-side operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("lake {op} {path}: {source}")]
    Store {
        op: &'static str,
        path: String,
        #[source]
        source: object_store::Error,
    },
    #[error("lake location {location:?}: {message}")]
    Location { location: String, message: String },
    #[error("table {table}: {message}")]
    Table { table: String, message: String },
    #[error("writing {path}: {source}")]
    Parquet {
        path: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("sql: {0}")]
    Sql(#[from] datafusion::error::DataFusionError),
    #[error(transparent)]
    Schema(#[from] some_schemas::SchemaError),
    #[error(transparent)]
    Job(#[from] some_jobs::Error),
    #[error(transparent)]
    Input(#[from] some_jobs::InputError),
    /// A run, judging, ingestion, model or other name that does not exist:
    /// asking again cannot help.
    #[error("{0}")]
    Unknown(String),
    #[error("{0}")]
    Other(String),
}

impl Error {
    pub(crate) fn store(op: &'static str, path: impl std::fmt::Display) -> impl FnOnce(object_store::Error) -> Error {
        let path = path.to_string();
        move |source| Error::Store { op, path, source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
