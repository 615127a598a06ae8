//! Errors of the data model: a batch that does not fit its table.

/// A record batch or file that does not match a table's schema.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("table {table}: column {column:?} is missing")]
    MissingColumn { table: &'static str, column: &'static str },
    #[error("table {table}: column {column:?} has the wrong type: {message}")]
    ColumnType { table: &'static str, column: &'static str, message: String },
    #[error("table {table}: column {column:?} is null in row {row}, and it may not be")]
    Null { table: &'static str, column: &'static str, row: usize },
    #[error(transparent)]
    Arrow(#[from] arrow::error::ArrowError),
}
