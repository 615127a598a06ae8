//! The text embedding interface the retrieval tools use. Implementations
//! (all-MiniLM-L6-v2 in-process, any OpenAI-compatible embeddings endpoint)
//! live in `workers`.

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
