//! The eight SoMe tools, as the model sees them and as the reference runs
//! them.
//!
//! | tool (paper name) | reads | writes folder |
//! |---|---|---|
//! | `data_folder` (DataFolder) | a folder, `[start_idx, end_idx)` | — |
//! | `post_search` (SearchPost) | one location stream, one window | `{location}_{start}_{end}` and `…_idx` |
//! | `topic_search` (SearchTopic) | one topic collection | `{topic}` |
//! | `user_search` (SearchUser) | one profile and timeline | `{uid}_weibo` |
//! | `post_retrieve` (RetrievePost) | a post folder's vectors | — (returns top-k posts) |
//! | `knowledge_retrieve` (RetrieveKnowledge) | the knowledge base's vectors | — (returns top-k reports) |
//! | `topic_clustering` (PostClustering) | a `post_search` folder's vectors | `…_cluster`, `…_cluster_key` |
//! | `topic_summarization` (PostSummarization) | a `…_cluster` folder; calls the chat model | `…_summarization` |
//!
//! Every tool reads the world through [`WorldBackend`] (DataFusion over the
//! lake in production, a map in unit tests) and keeps its results in the
//! episode's [`Folders`]. Tool arguments are values in filters, never parts
//! of paths or SQL text. A tool never panics: every failure becomes the text
//! the model reads, formatted as the reference formats exceptions.
//!
//! `reference_quirks` keeps the reference's known bugs (listed in each
//! tool's module doc and in [`folders`]) for exact-parity runs; the default
//! fixes them.

mod backend;
mod compute;
mod data_folder;
pub mod folders;
mod knowledge_retrieve;
mod post_retrieve;
mod post_search;
pub mod spec;
mod topic_clustering;
mod topic_search;
mod topic_summarization;
mod user_search;
mod vectors;

use std::fmt;

use serde_json::{Map, Value};

pub use backend::{BackendError, KnowledgeIndex, MemoryBackend, PostKey, StreamWindow, WorldBackend, WorldVersion};
pub use compute::{KernelService, SearchCorpus};
pub use folders::{FolderData, Folders};
pub use spec::{Param, ParamType, ToolSpec, text_protocol_block};

use crate::chat::{ChatModel, Usage};
use crate::embed::{DEFAULT_EMBEDDING_MODEL, Embedder, REFERENCE_CLUSTER_THRESHOLD, cluster_threshold};

pub use data_folder::SPEC as DATA_FOLDER;
pub use knowledge_retrieve::SPEC as KNOWLEDGE_RETRIEVE;
pub use post_retrieve::SPEC as POST_RETRIEVE;
pub use post_search::SPEC as POST_SEARCH;
pub use topic_clustering::SPEC as TOPIC_CLUSTERING;
pub use topic_search::SPEC as TOPIC_SEARCH;
pub use topic_summarization::SPEC as TOPIC_SUMMARIZATION;
pub use user_search::SPEC as USER_SEARCH;

/// Every tool, in the paper's order.
pub const ALL_TOOLS: [&ToolSpec; 8] =
    [&DATA_FOLDER, &POST_SEARCH, &TOPIC_SEARCH, &USER_SEARCH, &POST_RETRIEVE, &KNOWLEDGE_RETRIEVE, &TOPIC_CLUSTERING, &TOPIC_SUMMARIZATION];

pub fn tool(name: &str) -> Option<&'static ToolSpec> {
    ALL_TOOLS.into_iter().find(|t| t.name == name)
}

/// A tool failure as the model reads it: a Python-style exception name and
/// its message, as the reference's agent reports tool exceptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub kind: &'static str,
    pub message: String,
    /// Set when the world could not be read: [`call_tool`] fails the call
    /// instead of showing the model an outage as if it were an answer.
    world: Option<BackendError>,
}

impl ToolError {
    pub fn new(kind: &'static str, message: impl Into<String>) -> ToolError {
        ToolError { kind, message: message.into(), world: None }
    }
    pub fn value(message: impl Into<String>) -> ToolError {
        ToolError::new("ValueError", message)
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl From<BackendError> for ToolError {
    fn from(e: BackendError) -> ToolError {
        ToolError { kind: "RuntimeError", message: e.to_string(), world: Some(e) }
    }
}

/// How tools behave.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ToolSettings {
    /// Keep the reference's known bugs (see the module docs).
    pub reference_quirks: bool,
    /// The embedding model whose stored vectors clustering and retrieval read.
    pub embedding_model: String,
    /// `topic_clustering`'s θ, chosen for the embedding model when a run is
    /// submitted ([`cluster_threshold`]); runs recorded before it was a
    /// setting used the reference's.
    #[serde(default = "reference_threshold")]
    pub cluster_threshold: f32,
    /// Sampling temperature of `topic_summarization`'s model calls (the
    /// reference sets none; `None` keeps the endpoint's default).
    pub summarization_temperature: Option<f32>,
}

impl Default for ToolSettings {
    fn default() -> Self {
        ToolSettings::for_embedding_model(DEFAULT_EMBEDDING_MODEL)
    }
}

impl ToolSettings {
    /// The defaults, reading vectors of `model` with its θ.
    pub fn for_embedding_model(model: &str) -> ToolSettings {
        ToolSettings {
            reference_quirks: false,
            embedding_model: model.into(),
            cluster_threshold: cluster_threshold(model),
            summarization_temperature: None,
        }
    }
}

fn reference_threshold() -> f32 {
    REFERENCE_CLUSTER_THRESHOLD
}

/// What a tool call works with.
#[derive(Clone, Copy)]
pub struct ToolContext<'a> {
    pub backend: &'a dyn WorldBackend,
    /// Similarity and clustering, here or on a compute worker.
    pub kernels: &'a dyn KernelService,
    /// Embeds retrieval queries, and posts that have no stored vector.
    pub embedder: Option<&'a dyn Embedder>,
    /// The episode's own model, for `topic_summarization`.
    pub chat: Option<&'a dyn ChatModel>,
    pub settings: &'a ToolSettings,
}

/// The result of one tool call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ToolOutcome {
    /// What the model reads.
    pub text: String,
    pub error: bool,
    /// Model calls the tool made itself (summarization).
    pub model_calls: u32,
    pub usage: Usage,
}

impl ToolOutcome {
    fn ok(text: String) -> ToolOutcome {
        ToolOutcome { text, ..Default::default() }
    }
}

/// The text a failed call returns, as the reference's agent words it
/// (without the Python traceback the reference appends).
pub fn error_text(tool: &str, e: &ToolError) -> String {
    format!("An error occurred when calling tool `{tool}`:\n{e}")
}

/// Runs one tool call. `allowed` is the task's tool set: any other name is
/// answered as the reference answers an unknown tool. A mistake of the
/// call is the model's to read; a world that cannot be read (the store is
/// down, a file is corrupt) is the caller's error, so that an outage never
/// shapes an answer.
pub async fn call_tool(
    ctx: &ToolContext<'_>,
    folders: &mut Folders,
    allowed: &[&ToolSpec],
    name: &str,
    args: &Map<String, Value>,
) -> Result<ToolOutcome, BackendError> {
    let Some(spec) = allowed.iter().find(|t| t.name == name) else {
        return Ok(ToolOutcome { text: format!("Tool {name} does not exists."), error: true, ..Default::default() });
    };
    let args = Args { map: args, lenient: !ctx.settings.reference_quirks };
    let result = match spec.name {
        "data_folder" => data_folder::run(ctx, folders, &args).map(ToolOutcome::ok),
        "post_search" => post_search::run(ctx, folders, &args).await.map(ToolOutcome::ok),
        "topic_search" => topic_search::run(ctx, folders, &args).await.map(ToolOutcome::ok),
        "user_search" => user_search::run(ctx, folders, &args).await.map(ToolOutcome::ok),
        "post_retrieve" => post_retrieve::run(ctx, folders, &args).await.map(ToolOutcome::ok),
        "knowledge_retrieve" => knowledge_retrieve::run(ctx, &args).await.map(ToolOutcome::ok),
        "topic_clustering" => topic_clustering::run(ctx, folders, &args).await.map(ToolOutcome::ok),
        "topic_summarization" => topic_summarization::run(ctx, folders, &args).await,
        other => Err(ToolError::new("NotImplementedError", other.to_string())),
    };
    match result {
        Ok(outcome) => Ok(outcome),
        Err(ToolError { world: Some(e), .. }) => Err(e),
        Err(e) => Ok(ToolOutcome { text: error_text(name, &e), error: true, ..Default::default() }),
    }
}

/// A call's arguments, read with the reference's errors.
pub(crate) struct Args<'a> {
    map: &'a Map<String, Value>,
    /// Accept `"5"` and `5.0` for an int (fixed behaviour); the reference
    /// fails on them.
    lenient: bool,
}

impl Args<'_> {
    fn get(&self, name: &str) -> Result<&Value, ToolError> {
        self.map.get(name).ok_or_else(|| ToolError::new("KeyError", format!("'{name}'")))
    }

    pub fn str(&self, name: &str) -> Result<String, ToolError> {
        match self.get(name)? {
            Value::String(s) => Ok(s.clone()),
            Value::Number(n) if self.lenient => Ok(n.to_string()),
            other => Err(ToolError::new("TypeError", format!("parameter '{name}' must be a string, got {other}"))),
        }
    }

    pub fn int(&self, name: &str) -> Result<i64, ToolError> {
        let v = self.get(name)?;
        let parsed = match v {
            Value::Number(n) => n.as_i64().or_else(|| n.as_f64().filter(|f| self.lenient && f.fract() == 0.0).map(|f| f as i64)),
            Value::String(s) if self.lenient => s.trim().parse().ok(),
            _ => None,
        };
        parsed.ok_or_else(|| ToolError::new("TypeError", format!("parameter '{name}' must be an integer, got {v}")))
    }
}

#[cfg(test)]
mod tests;
