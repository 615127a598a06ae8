//! Identifier newtypes, so a run id is never passed where a query id belongs.

use std::fmt;

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::row::ColumnValue;
use crate::task::Task;

macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        /// Shown as the quoted string, as errors name it.
        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(&self.0, f)
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                Self(s.to_owned())
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                Self(s)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl ColumnValue for $name {
            fn data_type() -> DataType {
                DataType::Utf8
            }
            fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
                String::to_array(values.map(|v| &v.0))
            }
            fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
                Ok(String::from_array(array)?.into_iter().map(|v| v.map(Self)).collect())
            }
        }
    };
}

string_id!(
    /// A query's id: the task code and a digest of the query's content, so the
    /// same query imported again, anywhere, gets the same id.
    QueryId
);
string_id!(
    /// A benchmark or simulation run.
    RunId
);
string_id!(
    /// One unit of queued work within a run.
    ShardId
);
string_id!(
    /// One episode row, which the scores of that episode name.
    EpisodeId
);

impl EpisodeId {
    /// A fresh, random episode id.
    pub fn new_random() -> EpisodeId {
        EpisodeId(uuid::Uuid::new_v4().simple().to_string())
    }
}

impl RunId {
    /// A fresh run id: the UTC time and a random suffix, so ids sort by age.
    pub fn new_dated() -> RunId {
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        RunId(format!("{}-{}", chrono::Utc::now().format("%Y%m%dT%H%M%S"), &suffix[..6]))
    }
}

impl QueryId {
    /// Derives the id from what identifies the query in its source file: the
    /// task, the top-level key, the entry's canonical JSON, and how many
    /// identical entries came before it under that key (the release has a few
    /// exact duplicates, and each is a query of its own).
    pub fn derive(task: Task, source_key: &str, entry_json: &str, occurrence: u32) -> QueryId {
        let mut h = Sha256::new();
        for part in [task.code(), source_key, entry_json, &occurrence.to_string()] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        let digest = h.finalize();
        QueryId(format!("{}-{}", task.code().to_ascii_lowercase(), hex::encode(&digest[..8])))
    }

    /// The task, read back from the id's prefix.
    pub fn task(&self) -> Option<Task> {
        self.0.split('-').next().and_then(|code| code.parse().ok())
    }
}

/// The attempt number of an episode or score: 1 for the first try, then 2, 3...
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Attempt(pub i32);

impl Attempt {
    pub const FIRST: Attempt = Attempt(1);

    pub fn next(self) -> Attempt {
        Attempt(self.0 + 1)
    }
}

impl ColumnValue for Attempt {
    fn data_type() -> DataType {
        DataType::Int32
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
        i32::to_array(values.map(|v| &v.0))
    }
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
        Ok(i32::from_array(array)?.into_iter().map(|v| v.map(Attempt)).collect())
    }
}

impl fmt::Display for Attempt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The repetition of a query within a run (`some run --epochs N`): 1, 2...
/// Each epoch is a sample of its own with its own attempts and final result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Epoch(pub i32);

impl Epoch {
    pub const FIRST: Epoch = Epoch(1);

    /// Epochs 1..=n.
    pub fn all(n: u32) -> impl Iterator<Item = Epoch> {
        (1..=n as i32).map(Epoch)
    }
}

impl Default for Epoch {
    fn default() -> Epoch {
        Epoch::FIRST
    }
}

/// Stored as an integer column that may be null: rows written before runs
/// had epochs read as the first epoch.
impl ColumnValue for Epoch {
    fn data_type() -> DataType {
        DataType::Int32
    }
    fn nullable() -> bool {
        true
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> ArrayRef {
        i32::to_array(values.map(|v| &v.0))
    }
    fn from_array(array: &dyn Array) -> Result<Vec<Option<Self>>, String> {
        Ok(i32::from_array(array)?.into_iter().map(|v| Some(v.map_or(Epoch::FIRST, Epoch))).collect())
    }
}

impl fmt::Display for Epoch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_ids_are_stable_and_distinguish_duplicates() {
        let a = QueryId::derive(Task::Ucs, "7391946667", r#"{"weibo_id":"1"}"#, 0);
        assert_eq!(a, QueryId::derive(Task::Ucs, "7391946667", r#"{"weibo_id":"1"}"#, 0));
        assert_ne!(a, QueryId::derive(Task::Ucs, "7391946667", r#"{"weibo_id":"1"}"#, 1));
        assert_ne!(a, QueryId::derive(Task::Mcr, "7391946667", r#"{"weibo_id":"1"}"#, 0));
        assert!(a.as_str().starts_with("ucs-") && a.as_str().len() == 4 + 16);
        assert_eq!(a.task(), Some(Task::Ucs));
    }
}

#[cfg(test)]
mod epoch_tests {
    use super::*;

    #[test]
    fn a_null_epoch_reads_as_the_first() {
        let array: ArrayRef = std::sync::Arc::new(arrow::array::Int32Array::from(vec![Some(2), None]));
        assert_eq!(Epoch::from_array(array.as_ref()).unwrap(), vec![Some(Epoch(2)), Some(Epoch::FIRST)]);
        assert_eq!(Epoch::all(3).collect::<Vec<_>>(), [Epoch(1), Epoch(2), Epoch(3)]);
    }
}
