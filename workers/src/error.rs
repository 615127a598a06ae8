//! The one error of the workers crate. Each says which object, table, query
//! or endpoint failed, and [`Error::is_retryable`] says whether trying the
//! same thing again may help: the worker loop requeues or dead-letters a job
//! by it, release ingestion records a unit as failed by it, and model errors
//! keep the kind their client gave them.

use some_jobs::chat::ModelError;
use some_jobs::embed::EmbedError;

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
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    /// A tool's read of the world failed (the store is down, a file is
    /// corrupt): the episode is tried again, never recorded with it.
    #[error(transparent)]
    World(#[from] some_jobs::tools::BackendError),
    /// A file or socket of this machine.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The broker refused or dropped an operation.
    #[error("queue: {0}")]
    Queue(String),
    /// A download (model files) that failed on the way.
    #[error("download {url}: {message}")]
    Download { url: String, message: String },
    /// A run, judging, ingestion, model or other name that does not exist.
    #[error("{0}")]
    Unknown(String),
    /// A request that cannot be done as asked: bad settings, a state that
    /// forbids it, data that contradicts itself.
    #[error("{0}")]
    Invalid(String),
    /// A transaction that may only fill empty tables found `table` filled
    /// by another that landed first (`by`, at lake `version`, where the
    /// log still names it): nothing of it was committed.
    #[error("transaction {txn} may only fill an empty {table} table, but {} filled it: nothing of {txn} was committed", filler(.by, *.version))]
    Filled { table: String, txn: String, by: Option<String>, version: u64 },
    /// Work that did not finish: a background task that panicked, a job
    /// past its deadline, episodes the judge could not be reached for.
    #[error("{0}")]
    Task(String),
    /// What was being done when `source` happened.
    #[error("{doing}: {source}")]
    Context {
        doing: String,
        #[source]
        source: Box<Error>,
    },
}

impl Error {
    pub(crate) fn store(op: &'static str, path: impl std::fmt::Display) -> impl FnOnce(object_store::Error) -> Error {
        let path = path.to_string();
        move |source| Error::Store { op, path, source }
    }

    pub(crate) fn io(what: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
        let what = what.to_string();
        move |source| Error::Io { what, source }
    }

    /// The same error, saying what was being done; its kind is kept.
    pub fn context(self, doing: impl Into<String>) -> Error {
        Error::Context { doing: doing.into(), source: Box::new(self) }
    }

    /// Whether trying the same operation again may succeed: the store, the
    /// broker, an endpoint or the network was down. Unknown names, bad input
    /// and bad requests fail the same way every time.
    pub fn is_retryable(&self) -> bool {
        use datafusion::error::DataFusionError as D;
        match self {
            Error::Store { .. }
            | Error::Parquet { .. }
            | Error::Queue(_)
            | Error::Download { .. }
            | Error::Embed(_)
            | Error::World(_)
            | Error::Task(_) => true,
            Error::Io { source, .. } => !matches!(
                source.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::InvalidData
            ),
            Error::Model(e) => matches!(e, ModelError::Transient { .. }),
            // A query's plan fails the same way again; its reading may not
            // (the store behind it was down).
            Error::Sql(e) => !matches!(e, D::Plan(_) | D::SQL(..) | D::SchemaError(..) | D::NotImplemented(_) | D::Configuration(_)),
            Error::Context { source, .. } => source.is_retryable(),
            Error::Location { .. }
            | Error::Table { .. }
            | Error::Schema(_)
            | Error::Job(_)
            | Error::Input(_)
            | Error::Unknown(_)
            | Error::Filled { .. }
            | Error::Invalid(_) => false,
        }
    }
}

/// Who filled a table, as [`Error::Filled`] says it.
fn filler(by: &Option<String>, version: u64) -> String {
    match by {
        Some(txn) => format!("transaction {txn} (lake version {version})"),
        None => format!("a transaction committed at or before lake version {version}"),
    }
}

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Error {
        Error::Task(format!("a background task failed: {e}"))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_say_whether_trying_again_may_help_and_keep_it_under_context() {
        let down = Error::store("get", "lake/x")(object_store::Error::Generic { store: "S3", source: "connection refused".into() });
        assert!(down.is_retryable());
        let unknown = Error::Unknown("unknown run \"r\"".into());
        assert!(!unknown.is_retryable());
        let wrapped = unknown.context("loading shard s1");
        assert!(!wrapped.is_retryable());
        assert_eq!(wrapped.to_string(), "loading shard s1: unknown run \"r\"");
        assert!(down.context("committing").is_retryable());
        let rate_limited = Error::from(ModelError::Transient { endpoint: "http://e".into(), message: "429".into() });
        assert!(rate_limited.is_retryable());
        assert!(!Error::from(ModelError::Permanent { endpoint: "http://e".into(), message: "401".into() }).is_retryable());
        let missing = Error::io("release /r")(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert!(!missing.is_retryable());
        let plan = Error::Sql(datafusion::error::DataFusionError::Plan("no table x".into()));
        assert!(!plan.is_retryable());
    }
}
