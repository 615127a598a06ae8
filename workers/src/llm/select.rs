//! Choosing a chat model by name: a built-in model in-process, or any
//! OpenAI-compatible endpoint pool when endpoints are given.

use std::sync::Arc;

use some_jobs::chat::ChatModel;
use some_jobs::embed::Embedder;

use super::{ClientSettings, Endpoint, LocalModel, OpenAiClient};
use crate::embed::MiniLm;
use crate::error::{Error, Result};
use crate::models::{MINILM, ModelKind, ModelSpec, installed, model};

/// A chat model: `endpoints` empty means the built-in model `name`, run in
/// this process on `threads` CPU threads.
pub fn chat_model(name: &str, endpoints: &[String], settings: &ClientSettings, threads: usize) -> Result<Arc<dyn ChatModel>> {
    if endpoints.is_empty() {
        return Ok(Arc::new(LocalModel::load(built_in_chat_model(name)?, threads)?));
    }
    let pool = endpoints.iter().map(|e| Endpoint::new(e)).collect();
    Ok(Arc::new(OpenAiClient::new(name, pool, settings.clone()).map_err(|e| Error::Invalid(e.to_string()))?))
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
    let pool = endpoints.iter().map(|e| Endpoint::new(e)).collect();
    OpenAiClient::new(name, pool, ClientSettings::default()).map(drop).map_err(|e| Error::Invalid(e.to_string()))
}

/// The built-in embedder if it is installed. Without it the tools that
/// need embeddings answer with an error the model can read; the rest work.
pub fn installed_embedder() -> Result<Option<Arc<dyn Embedder>>> {
    match installed(&MINILM) {
        Some(dir) => Ok(Some(Arc::new(MiniLm::load(&dir)?))),
        None => {
            tracing::warn!("{} is not installed: retrieval and clustering tools will report it", MINILM.name);
            Ok(None)
        }
    }
}
