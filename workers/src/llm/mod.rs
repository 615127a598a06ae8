//! Model clients: any OpenAI-compatible endpoint ([`OpenAiClient`]), and
//! the built-in model served in-process, which follows a request's JSON
//! schema through a grammar ([`gbnf`]).

mod client;
mod gbnf;
mod local;
mod select;
pub mod serve;
mod window;

pub use client::{ChatAnswer, ChatBody, ClientSettings, ClientStats, Endpoint, OpenAiClient, OpenAiEmbedder, chat_body, read_chat};
pub use local::{CONTEXT_TOKENS, DEFAULT_MAX_TOKENS, LocalModel};
pub use select::{QWEN3_QUERY_INSTRUCTION, chat_model, check_chat_model, embedder, installed_embedder};
