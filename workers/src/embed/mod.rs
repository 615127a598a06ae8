//! Embedding: the built-in embedder (all-MiniLM-L6-v2 in-process on CPU,
//! [`MiniLm`]) and storing vectors of the lake's posts and knowledge, one
//! partition per job ([`partitions`]). A served embedding model is an
//! OpenAI-compatible endpoint, reached through [`crate::llm::OpenAiClient`].

mod minilm;
pub mod partitions;

pub use minilm::MiniLm;
pub use partitions::{EmbedPartition, EmbedReport, EmbedTarget, embed, embed_partition, partitions};
