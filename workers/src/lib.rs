//! The processes and backends of `some`: the lake (Parquet on an object
//! store, DataFusion SQL), and, as they arrive, the queues, model clients and
//! compute kernels that jobs run against.

pub mod backend;
pub mod check;
pub mod compare;
pub mod coordinator;
pub mod embed;
pub mod embedding;
pub mod error;
pub mod ingestion;
pub mod judging;
pub mod lake;
pub mod llm;
pub mod mcp;
pub mod models;
pub mod queue;
pub mod report;
pub mod runner;
pub mod runs;
pub mod worker;
pub mod world;

pub use error::{Error, Result};
pub use lake::{Lake, LakeLocation};
