//! The processes and backends of `some`.
//!
//! Services, each behind one module, which jobs run against:
//! - [`lake`]: Parquet tables on one object store (a local folder or S3),
//!   read with DataFusion through that same store;
//! - [`queue`]: RabbitMQ and the in-process queue, with the same semantics;
//! - [`llm`]: chat and embedding clients for OpenAI-compatible endpoints,
//!   the built-in chat models in-process, and serving them over HTTP;
//! - [`models`]: the built-in models' files (which, from where, installed);
//! - [`embed`]: the built-in embedder and storing vectors in the lake;
//! - [`compute`]: compute workers serving the tools' kernels to LLM
//!   workers over the broker;
//! - [`world`]: filling the lake with queries and worlds, checking it, and
//!   reading it for the tools; [`mcp`] serves the tools over MCP;
//! - [`access`]: who may call those servers and the served models;
//! - [`process`]: settings of the process the binary and benchmarks share.
//!
//! The lifecycle of work:
//! - [`runs`]: a run's record and results, running and judging its shards,
//!   its report and comparisons;
//! - [`sim`]: a simulation run: its record, the coordinator of its turns,
//!   the shards its workers run, its state as the lake holds it;
//! - [`coordinator`]: publishes runs, judgings and embeddings as jobs;
//! - [`executor`]: where a command's jobs run (here or on a broker's
//!   workers) and the one wait for them;
//! - [`worker`]: the loop that takes a job, hands it to its kind's
//!   handler ([`handler`]), which commits, and acknowledges.
//!
//! Every fallible call returns the one [`Error`], which says whether trying
//! again may help.

pub mod access;
pub mod annotate;
pub mod compute;
pub mod coordinator;
pub mod embed;
pub mod error;
pub mod executor;
pub mod handler;
pub mod lake;
pub mod llm;
pub mod mcp;
pub mod models;
pub mod process;
pub mod queue;
pub mod runs;
pub mod sim;
pub mod worker;
pub mod world;

pub use error::{Error, Result};
pub use lake::{Lake, LakeLocation};
