//! Embedders: all-MiniLM-L6-v2 in-process on CPU, or any OpenAI-compatible
//! embeddings endpoint.

mod minilm;

pub use minilm::MiniLm;
