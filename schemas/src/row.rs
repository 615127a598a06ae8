//! Typed rows over Arrow record batches.
//!
//! Every lake table is declared once with [`table!`](crate::table): the macro
//! generates the Rust row type, its Arrow schema and the conversions both ways,
//! so a column's name and type live in exactly one place. Conversions are
//! column-wise (one Arrow builder per field), which keeps them cheap enough for
//! the synthetic world generator that writes millions of rows.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, Float64Builder, Int32Builder, Int64Builder, StringBuilder,
    TimestampSecondBuilder,
};
use arrow::datatypes::{DataType, Field, Float64Type, Int32Type, Int64Type, Schema, SchemaRef, TimeUnit, TimestampSecondType};
use arrow::record_batch::RecordBatch;

use crate::error::SchemaError;

/// Seconds since the Unix epoch, read as a naive local time.
///
/// SoMe's timestamps (`%Y-%m-%d %H:%M:%S` in posts, tool arguments and query
/// keys) carry no zone; storing them as zone-less seconds keeps comparisons
/// exact and round trips lossless.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const FORMAT: &'static str = "%Y-%m-%d %H:%M:%S";

    /// Parses `%Y-%m-%d %H:%M:%S` (the format of tool arguments and raw posts)
    /// and `%Y-%m-%d %H:%M` (the format seen in query-embedded posts).
    pub fn parse(text: &str) -> Option<Timestamp> {
        let text = text.trim();
        chrono::NaiveDateTime::parse_from_str(text, Self::FORMAT)
            .or_else(|_| chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M"))
            .ok()
            .map(|t| Timestamp(t.and_utc().timestamp()))
    }

    pub fn from_naive(t: chrono::NaiveDateTime) -> Timestamp {
        Timestamp(t.and_utc().timestamp())
    }

    pub fn naive(self) -> chrono::NaiveDateTime {
        chrono::DateTime::from_timestamp(self.0, 0).unwrap_or_default().naive_utc()
    }

    /// The current time, to the second.
    pub fn now() -> Timestamp {
        Timestamp(chrono::Utc::now().timestamp())
    }

    /// The day as `YYYY-MM-DD`.
    pub fn day(self) -> String {
        self.naive().format("%Y-%m-%d").to_string()
    }
}

impl std::fmt::Display for Timestamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.naive().format(Self::FORMAT))
    }
}

/// A Rust value that maps to one Arrow column type.
pub trait ColumnValue: Sized {
    fn data_type() -> DataType;
    fn nullable() -> bool {
        false
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef
    where
        Self: 'a;
    /// Decodes a whole column; `None` at index `i` means row `i` was null in a
    /// non-nullable column.
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String>;
}

fn as_utf8(array: &dyn Array) -> Result<arrow::array::StringArray, String> {
    let cast = arrow::compute::cast(array, &DataType::Utf8).map_err(|e| e.to_string())?;
    Ok(cast.as_string::<i32>().clone())
}

impl ColumnValue for String {
    fn data_type() -> DataType {
        DataType::Utf8
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
        let mut b = StringBuilder::with_capacity(values.len(), values.len() * 32);
        values.for_each(|v| b.append_value(v));
        Arc::new(b.finish())
    }
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
        Ok(as_utf8(array)?.iter().map(|v| v.map(str::to_owned)).collect())
    }
}

macro_rules! primitive_column {
    ($rust:ty, $arrow:ty, $builder:ty, $dt:expr) => {
        impl ColumnValue for $rust {
            fn data_type() -> DataType {
                $dt
            }
            fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
                let mut b = <$builder>::with_capacity(values.len());
                values.for_each(|v| b.append_value(*v));
                Arc::new(b.finish())
            }
            fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
                let cast = arrow::compute::cast(array, &$dt).map_err(|e| e.to_string())?;
                Ok(cast.as_primitive::<$arrow>().iter().collect())
            }
        }
    };
}
primitive_column!(i64, Int64Type, Int64Builder, DataType::Int64);
primitive_column!(i32, Int32Type, Int32Builder, DataType::Int32);
primitive_column!(f64, Float64Type, Float64Builder, DataType::Float64);

impl ColumnValue for bool {
    fn data_type() -> DataType {
        DataType::Boolean
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
        let mut b = BooleanBuilder::with_capacity(values.len());
        values.for_each(|v| b.append_value(*v));
        Arc::new(b.finish())
    }
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
        let cast = arrow::compute::cast(array, &DataType::Boolean).map_err(|e| e.to_string())?;
        Ok(cast.as_boolean().iter().collect())
    }
}

impl ColumnValue for Timestamp {
    fn data_type() -> DataType {
        DataType::Timestamp(TimeUnit::Second, None)
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
        let mut b = TimestampSecondBuilder::with_capacity(values.len());
        values.for_each(|v| b.append_value(v.0));
        Arc::new(b.finish())
    }
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
        let cast = arrow::compute::cast(array, &Self::data_type()).map_err(|e| e.to_string())?;
        Ok(cast.as_primitive::<TimestampSecondType>().iter().map(|v| v.map(Timestamp)).collect())
    }
}

impl ColumnValue for Vec<u8> {
    fn data_type() -> DataType {
        DataType::Binary
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
        let mut b = BinaryBuilder::with_capacity(values.len(), values.len() * 64);
        values.for_each(|v| b.append_value(v));
        Arc::new(b.finish())
    }
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
        let cast = arrow::compute::cast(array, &DataType::Binary).map_err(|e| e.to_string())?;
        Ok(cast.as_binary::<i32>().iter().map(|v| v.map(<[u8]>::to_vec)).collect())
    }
}

/// Nullable columns: `Option<T>` of any non-null column type.
impl<T: ColumnValue + Clone> ColumnValue for Option<T> {
    fn data_type() -> DataType {
        T::data_type()
    }
    fn nullable() -> bool {
        true
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef
    where
        Self: 'a,
    {
        // Encode the present values densely, then scatter them with a null mask:
        // one code path per inner type instead of one per nullable type.
        let len = values.len();
        let mut present = Vec::with_capacity(len);
        let mut mask = Vec::with_capacity(len);
        for v in values {
            mask.push(v.is_some());
            if let Some(v) = v {
                present.push(v);
            }
        }
        let dense = T::to_array(present.into_iter());
        let mut indices = arrow::array::UInt32Builder::with_capacity(len);
        let mut next = 0u32;
        for is_present in mask {
            if is_present {
                indices.append_value(next);
                next += 1;
            } else {
                indices.append_null();
            }
        }
        let indices = indices.finish();
        // `take` with null indices yields nulls: infallible for in-range indices.
        arrow::compute::take(dense.as_ref(), &indices, None).unwrap_or(dense)
    }
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
        Ok(T::from_array(array)?.into_iter().map(Some).collect())
    }
}

/// A row type of one lake table. Generated by [`table!`](crate::table).
pub trait Row: Sized {
    /// The table's name in the lake and in SQL.
    const TABLE: &'static str;
    /// Hive partition columns, in path order; always the schema's last fields.
    const PARTITION_COLUMNS: &'static [&'static str];
    /// The schema readers see: file columns, then partition columns.
    fn schema() -> SchemaRef;
    /// The schema of the Parquet files: partition columns are in the path only.
    fn file_schema() -> SchemaRef {
        let full = Self::schema();
        let fields: Vec<Field> =
            full.fields().iter().filter(|f| !Self::PARTITION_COLUMNS.contains(&f.name().as_str())).map(|f| f.as_ref().clone()).collect();
        Arc::new(Schema::new(fields))
    }
    /// The values of the partition columns of this row, in path order.
    fn partition_values(&self) -> Vec<String>;
    fn to_batch(rows: &[Self]) -> Result<RecordBatch, SchemaError>;
    /// Reads rows from a batch that has every column of [`Row::schema`] (by
    /// name, so extra columns and any order are fine).
    fn from_batch(batch: &RecordBatch) -> Result<Vec<Self>, SchemaError>;
}

/// Looks a column up by name for [`Row::from_batch`], with an error naming it.
pub fn column<'b>(batch: &'b RecordBatch, table: &'static str, name: &'static str) -> Result<&'b ArrayRef, SchemaError> {
    batch.column_by_name(name).ok_or(SchemaError::MissingColumn { table, column: name })
}

/// Declares a lake table: the row struct, its schema and its conversions,
/// and a module named after the table holding the table's and every
/// column's name, so no other crate spells them.
///
/// ```
/// some_schemas::table! {
///     /// A demo table.
///     pub struct Demo in demo partitioned by [kind] {
///         id: String,
///         score: Option<i64>,
///         kind: String,
///     }
/// }
/// use some_schemas::Row;
/// let rows = vec![Demo { id: "a".into(), score: None, kind: "x".into() }];
/// let batch = Demo::to_batch(&rows).unwrap();
/// assert_eq!(Demo::from_batch(&batch).unwrap(), rows);
/// assert_eq!(Demo::file_schema().fields().len(), 2);
/// assert_eq!((demo::TABLE, demo::score), ("demo", "score"));
/// ```
#[macro_export]
macro_rules! table {
    (
        $(#[$meta:meta])*
        pub struct $name:ident in $table:ident partitioned by [$($part:ident),*] {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        #[doc = concat!("Names of the `", stringify!($table), "` table and its columns, for SQL and filters.")]
        #[allow(non_upper_case_globals)]
        pub mod $table {
            pub const TABLE: &str = stringify!($table);
            $( pub const $field: &str = stringify!($field); )*
        }

        impl $crate::row::Row for $name {
            const TABLE: &'static str = stringify!($table);
            const PARTITION_COLUMNS: &'static [&'static str] = &[$(stringify!($part)),*];

            fn schema() -> ::arrow::datatypes::SchemaRef {
                static SCHEMA: ::std::sync::OnceLock<::arrow::datatypes::SchemaRef> = ::std::sync::OnceLock::new();
                SCHEMA.get_or_init(|| {
                    let mut metadata = ::std::collections::HashMap::new();
                    metadata.insert($crate::SCHEMA_VERSION_KEY.to_string(), $crate::SCHEMA_VERSION.to_string());
                    ::std::sync::Arc::new(::arrow::datatypes::Schema::new_with_metadata(vec![
                        $( ::arrow::datatypes::Field::new(
                            stringify!($field),
                            <$ty as $crate::row::ColumnValue>::data_type(),
                            <$ty as $crate::row::ColumnValue>::nullable(),
                        ), )*
                    ], metadata))
                }).clone()
            }

            fn partition_values(&self) -> Vec<String> {
                vec![$(self.$part.to_string()),*]
            }

            fn to_batch(rows: &[Self]) -> Result<::arrow::record_batch::RecordBatch, $crate::SchemaError> {
                let columns: Vec<::arrow::array::ArrayRef> = vec![
                    $( <$ty as $crate::row::ColumnValue>::to_array(rows.iter().map(|r| &r.$field)), )*
                ];
                Ok(::arrow::record_batch::RecordBatch::try_new(<Self as $crate::row::Row>::schema(), columns)?)
            }

            fn from_batch(batch: &::arrow::record_batch::RecordBatch) -> Result<Vec<Self>, $crate::SchemaError> {
                $(
                    let $field = <$ty as $crate::row::ColumnValue>::from_array(
                        $crate::row::column(batch, stringify!($table), stringify!($field))?.as_ref(),
                    ).map_err(|message| $crate::SchemaError::ColumnType {
                        table: stringify!($table), column: stringify!($field), message,
                    })?;
                    let mut $field = $field.into_iter();
                )*
                let mut rows = Vec::with_capacity(batch.num_rows());
                for row in 0..batch.num_rows() {
                    rows.push(Self { $(
                        $field: $field.next().flatten().ok_or($crate::SchemaError::Null {
                            table: stringify!($table), column: stringify!($field), row,
                        })?,
                    )* });
                }
                Ok(rows)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_parse_both_formats_and_print_the_tool_format() {
        let t = Timestamp::parse("2025-05-06 07:00:00").unwrap();
        assert_eq!(t.to_string(), "2025-05-06 07:00:00");
        assert_eq!(Timestamp::parse("2025-05-06 07:00").unwrap(), t);
        assert_eq!(t.day(), "2025-05-06");
        assert_eq!(Timestamp::parse("2025-05-06T07:00:00"), None);
    }

    #[test]
    fn nullable_columns_keep_their_nulls() {
        let values = [Some(3i64), None, Some(5)];
        let array = <Option<i64>>::to_array(values.iter());
        assert_eq!(array.null_count(), 1);
        let back = <Option<i64>>::from_array(array.as_ref()).unwrap();
        assert_eq!(back, vec![Some(Some(3)), Some(None), Some(Some(5))]);
    }
}
