//! Embedding: the built-in embedders (in-process on CPU with candle:
//! multilingual-e5-small, [`E5Small`], and all-MiniLM-L6-v2, [`MiniLm`];
//! [`BuiltinEmbedder`] picks one by name) and storing vectors of the lake's
//! posts and knowledge, one partition per job ([`partitions`]). A served
//! embedding model is an OpenAI-compatible endpoint, reached through
//! [`crate::llm::OpenAiClient`].

mod builtin;
mod e5;
mod minilm;
pub mod partitions;

pub use builtin::BuiltinEmbedder;
pub use e5::E5Small;
pub use minilm::MiniLm;
pub use partitions::{EmbedJobs, EmbedPartition, EmbedReport, EmbedTarget, embed, embed_partition, partitions};
