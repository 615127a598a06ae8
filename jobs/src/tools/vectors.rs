//! The vectors of a folder's posts: stored ones from the lake, the rest
//! embedded on the spot when an embedder is available (the reference only
//! uses stored vectors; embedding what is missing lets a world be used
//! before `some embed` has covered it).

use super::folders::Record;
use super::{PostKey, ToolContext, ToolError};
use crate::embed::Purpose;

/// The text a post is embedded from: its content, as the reference embeds it.
fn content(record: &Record) -> String {
    record.iter().find(|(k, _)| *k == "内容").map(|(_, v)| v.clone()).unwrap_or_default()
}

/// One row per key, flattened; and the dimension.
pub(super) async fn folder_vectors(ctx: &ToolContext<'_>, keys: &[PostKey], records: &[Record]) -> Result<(Vec<f32>, usize), ToolError> {
    let model = &ctx.settings.embedding_model;
    let mut stored = ctx.backend.post_vectors(model, keys).await?;
    let missing: Vec<usize> = (0..stored.len()).filter(|i| stored[*i].is_none()).collect();
    if !missing.is_empty() {
        let Some(embedder) = ctx.embedder.filter(|e| e.model() == model) else {
            return Err(ToolError::value(format!(
                "{} of {} posts have no {model} vectors and no {model} embedder is available (run `some embed posts`)",
                missing.len(),
                keys.len()
            )));
        };
        let texts: Vec<String> = missing.iter().map(|i| content(&records[*i])).collect();
        let vectors = embedder.embed(&texts, Purpose::Document).await.map_err(|e| ToolError::new("RuntimeError", e.to_string()))?;
        for (i, v) in missing.into_iter().zip(vectors) {
            stored[i] = Some(v);
        }
    }
    let dim = stored.first().and_then(|v| v.as_ref()).map_or(0, Vec::len);
    let mut flat = Vec::with_capacity(dim * stored.len());
    for (i, v) in stored.into_iter().enumerate() {
        let v = v.unwrap_or_default();
        if v.len() != dim {
            return Err(ToolError::value(format!("post {} has a {}-d vector, others {dim}-d", keys[i].1, v.len())));
        }
        flat.extend(v);
    }
    Ok((flat, dim))
}

/// Embeds one retrieval query.
pub(super) async fn query_vector(ctx: &ToolContext<'_>, query: &str) -> Result<Vec<f32>, ToolError> {
    let model = &ctx.settings.embedding_model;
    let embedder = ctx
        .embedder
        .filter(|e| e.model() == model)
        .ok_or_else(|| ToolError::new("RuntimeError", format!("no {model} embedder is configured for retrieval")))?;
    let mut v = embedder.embed(&[query.to_string()], Purpose::Query).await.map_err(|e| ToolError::new("RuntimeError", e.to_string()))?;
    v.pop().ok_or_else(|| ToolError::new("RuntimeError", "the embedder returned no vector"))
}
