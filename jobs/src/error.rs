//! Errors of jobs: bad input, named by file and position.

use std::fmt;
use std::path::{Path, PathBuf};

/// Input that cannot be used: what file, where in it, and what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    pub path: PathBuf,
    /// Where in the file: a key path (`"7391946667"[2].label`), a line, or empty.
    pub at: String,
    pub message: String,
}

impl InputError {
    pub fn new(path: impl AsRef<Path>, at: impl Into<String>, message: impl Into<String>) -> InputError {
        InputError { path: path.as_ref().to_path_buf(), at: at.into(), message: message.into() }
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            write!(f, "{}: {}", self.path.display(), self.message)
        } else {
            write!(f, "{}: at {}: {}", self.path.display(), self.at, self.message)
        }
    }
}

impl std::error::Error for InputError {}

/// The error of any job.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error(transparent)]
    Schema(#[from] some_schemas::SchemaError),
    #[error("{0}")]
    Invalid(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
