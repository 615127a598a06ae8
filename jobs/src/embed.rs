//! The text embedding interface the retrieval tools use. Implementations
//! (the built-in embedders in-process, any OpenAI-compatible embeddings
//! endpoint) live in `workers`.

/// The built-in embedder used unless a run names another model: a
/// multilingual model, since the posts are Chinese (README, "Fidelity").
pub const DEFAULT_EMBEDDING_MODEL: &str = "multilingual-e5-small";

/// The reference's clustering threshold θ, tuned for its embedder
/// (Qwen3-Embedding-4B).
pub const REFERENCE_CLUSTER_THRESHOLD: f32 = 0.5;

/// The clustering threshold of each built-in embedder, measured on the RED
/// windows' reference events (`workers/benches/embedders.rs`, README
/// "Fidelity"). A test in `workers` checks it lists exactly the built-in
/// embedders.
pub const MEASURED_CLUSTER_THRESHOLDS: &[(&str, f32)] = &[("multilingual-e5-small", 0.94), ("all-minilm-l6-v2", 0.80)];

/// The clustering threshold for vectors of `model`: its measured one, the
/// reference's for any other model.
pub fn cluster_threshold(model: &str) -> f32 {
    MEASURED_CLUSTER_THRESHOLDS.iter().find(|(m, _)| *m == model).map_or(REFERENCE_CLUSTER_THRESHOLD, |(_, theta)| *theta)
}

/// What a text is embedded as: retrieval models embed queries and documents
/// differently (Qwen3-Embedding prefixes queries with an instruction).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    Query,
    Document,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("embedding model {model}: {message}")]
pub struct EmbedError {
    pub model: String,
    pub message: String,
}

/// Turns texts into vectors.
#[async_trait::async_trait]
pub trait Embedder: Send + Sync {
    /// The name stored with the vectors (`embeddings.model`).
    fn model(&self) -> &str;
    fn dim(&self) -> usize;
    /// One vector per text, in order, L2-normalised.
    async fn embed(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError>;
}
