//! Model clients: any OpenAI-compatible endpoint ([`OpenAiClient`]), and
//! the built-in model served in-process.

mod client;
mod local;
pub mod serve;

pub use client::{ClientSettings, ClientStats, Endpoint, OpenAiClient, OpenAiEmbedder, chat_body, read_chat};
pub use local::{CONTEXT_TOKENS, DEFAULT_MAX_TOKENS, LocalModel};
