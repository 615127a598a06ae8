//! Choosing a chat model by name: a built-in model in-process, or any
//! OpenAI-compatible endpoint pool when endpoints are given.

use std::sync::Arc;

use some_jobs::chat::ChatModel;
use some_jobs::embed::Embedder;

use super::{ClientSettings, Endpoint, LocalModel, OpenAiClient, OpenAiEmbedder};
use crate::embed::BuiltinEmbedder;
use crate::error::{Error, Result};
use crate::models::{ModelKind, ModelSpec, model};

/// A chat model: `endpoints` empty means the built-in model `name`, run in
/// this process on `threads` CPU threads.
pub fn chat_model(name: &str, endpoints: &[String], settings: &ClientSettings, threads: usize) -> Result<Arc<dyn ChatModel>> {
    if endpoints.is_empty() {
        return Ok(Arc::new(LocalModel::load(built_in_chat_model(name)?, threads)?));
    }
    let pool = pool(endpoints);
    Ok(Arc::new(OpenAiClient::new(name, pool, settings.clone()).map_err(|e| Error::Invalid(e.to_string()))?))
}

/// The endpoints at these URLs, each sent the key of
/// [`crate::access::TOKEN_ENV`] when it is set.
fn pool(endpoints: &[String]) -> Vec<Endpoint> {
    let key = crate::access::api_key();
    endpoints.iter().map(|e| Endpoint { api_key: key.clone(), ..Endpoint::new(e) }).collect()
}

/// The built-in chat model called `name`; no such model is an unknown
/// name, which asking again cannot fix.
fn built_in_chat_model(name: &str) -> Result<&'static ModelSpec> {
    let spec = model(name).map_err(|e| Error::Unknown(format!("{e} (or give --endpoint URL for a served model)")))?;
    if spec.kind != ModelKind::Chat {
        return Err(Error::Unknown(format!("{name} is an embedding model, not a chat model")));
    }
    Ok(spec)
}

/// Checks what [`chat_model`] would need, without loading anything: the
/// built-in model exists and is installed, or the endpoints are URLs.
pub fn check_chat_model(name: &str, endpoints: &[String]) -> Result<()> {
    if endpoints.is_empty() {
        return crate::models::require(built_in_chat_model(name)?).map(drop);
    }
    let pool = pool(endpoints);
    OpenAiClient::new(name, pool, ClientSettings::default()).map(drop).map_err(|e| Error::Invalid(e.to_string()))
}

/// The query instruction of Qwen3-Embedding models, which the reference
/// prepends to retrieval queries (not to documents).
pub const QWEN3_QUERY_INSTRUCTION: &str = "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery:";

/// The embedder that embeds retrieval queries: the model `name` at
/// `endpoints` (OpenAI-compatible; a Qwen3-Embedding model gets its query
/// instruction), or the built-in embedder `name` when no endpoint is given.
pub fn embedder(name: &str, endpoints: &[String], settings: &ClientSettings) -> Result<Option<Arc<dyn Embedder>>> {
    if endpoints.is_empty() {
        return installed_embedder(name);
    }
    let pool = pool(endpoints);
    let client = OpenAiClient::new(name, pool, settings.clone()).map_err(|e| Error::Invalid(e.to_string()))?;
    let mut embedder = OpenAiEmbedder::new(client, 0);
    if name.to_ascii_lowercase().contains("qwen3-embedding") {
        embedder.query_prefix = QWEN3_QUERY_INSTRUCTION.to_string();
    }
    Ok(Some(Arc::new(embedder)))
}

/// The built-in embedder `name` if it is installed. Without it the tools
/// that need embeddings answer with an error the model can read; the rest
/// work.
pub fn installed_embedder(name: &str) -> Result<Option<Arc<dyn Embedder>>> {
    let loaded = BuiltinEmbedder::load_if_installed(name)?;
    if loaded.is_none() {
        tracing::warn!("{name} is not installed: retrieval and clustering tools will report it");
    }
    Ok(loaded.map(|e| Arc::new(e) as Arc<dyn Embedder>))
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use some_jobs::embed::{EmbedError, Purpose};

    use super::*;
    use crate::llm::serve::{Served, serve};

    /// An embedder behind `some llm serve` that records what it was sent.
    struct Recording(&'static str, Mutex<Vec<String>>);

    #[async_trait::async_trait]
    impl Embedder for Recording {
        fn model(&self) -> &str {
            self.0
        }
        fn dim(&self) -> usize {
            3
        }
        async fn embed(&self, texts: &[String], _: Purpose) -> std::result::Result<Vec<Vec<f32>>, EmbedError> {
            self.1.lock().unwrap().extend(texts.iter().cloned());
            Ok(texts.iter().map(|_| vec![1.0, 0.0, 0.0]).collect())
        }
    }

    #[tokio::test]
    async fn a_qwen3_embedding_endpoint_gets_the_query_instruction_on_queries_only() {
        for (name, instructed) in [("Qwen3-Embedding-4B", true), ("bge-m3", false)] {
            let recording = Arc::new(Recording(name, Mutex::new(Vec::new())));
            let chat = Arc::new(some_jobs::testing::ScriptedModel::new("chat", |_| Ok(Default::default())));
            let served = Served { chat, embedder: Some(recording.clone()) };
            let addr = serve(
                served,
                "127.0.0.1:0".parse().unwrap(),
                &crate::access::Access::open(crate::llm::serve::MAX_REQUEST_BYTES),
                std::future::pending(),
            )
            .await
            .unwrap();
            let e = embedder(name, &[format!("http://{addr}/v1")], &ClientSettings::default()).unwrap().unwrap();
            let v = e.embed(&["火锅".into()], Purpose::Query).await.unwrap();
            assert_eq!(v, vec![vec![1.0, 0.0, 0.0]]);
            e.embed(&["帖子".into()], Purpose::Document).await.unwrap();
            let seen = recording.1.lock().unwrap().clone();
            let query = if instructed { format!("{QWEN3_QUERY_INSTRUCTION}火锅") } else { "火锅".to_string() };
            assert_eq!(seen, [query, "帖子".to_string()], "{name}");
        }
    }
}
