//! Ingestion: reading source files into lake rows.
//!
//! - [`queries`]: the SoMe query files, one per task.
//! - [`release`]: the SoMe database layout (posts, users, topics, knowledge,
//!   embeddings), for users who have the real release.
//!
//! Readers validate everything they return; the caller writes only once a
//! whole input has been read, so bad input never leaves half a table.

pub mod queries;
