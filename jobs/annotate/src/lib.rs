//! The paper's annotation pipelines: SoMe-style queries and their ground
//! truth made from social-media data, written in the reference's layout
//! under an output folder: `datasets/<task folder>/ground_truth.json`, read
//! by `some ingest queries OUT/datasets` as the release's own files are, and
//! world data under `database/`, read by `some ingest release OUT`.
//!
//! - [`interactions`] and [`sampling`]: UBP, UCS and MCR, drawn from who
//!   interacted with what, no model involved;
//! - [`events`]: RED, a location-day's posts clustered, each cluster kept
//!   or dropped and summarised by a model, linked to one-hour windows;
//! - [`summaries`]: SES, a summary per topic refined over check rounds;
//! - [`emotions`]: UEA, each comment's emotion by a majority of model votes;
//! - [`questions`]: SMQ, question-answer pairs from a user's or a topic's
//!   posts, without the vague ones and those that need no data;
//! - [`claims`]: MID, imported from LIAR-RAW and RAWFC;
//! - [`review`]: the model-made annotations (RED, UEA) out to annotators
//!   and their corrections back, each change recorded.

pub mod claims;
pub mod emotions;
pub mod events;
pub mod interactions;
pub mod questions;
pub mod review;
pub mod sampling;
pub mod summaries;

use std::path::{Path, PathBuf};

use serde_json::Value;
use some_jobs::InputError;
use some_jobs::chat::{ChatModel, ChatRequest, JsonSchema, Message, ModelError, Usage};
use some_schemas::Task;

/// Writes `value` as `<out>/<relative>`, refusing to replace a file that is
/// there unless `replace`; written whole or not at all.
pub fn write_json(out: &Path, relative: &str, value: &Value, replace: bool) -> Result<PathBuf, InputError> {
    let path = out.join(relative);
    if path.exists() && !replace {
        return Err(InputError::new(&path, "", "the file exists; pass --replace to overwrite it"));
    }
    let mut bytes = serde_json::to_vec_pretty(value).expect("JSON values serialise");
    bytes.push(b'\n');
    write_whole(&path, &bytes)?;
    Ok(path)
}

/// Writes `bytes` as `path` (its folder made if need be), whole or not at
/// all: a partial file is renamed into place.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<(), InputError> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|e| InputError::new(folder, "", format!("cannot create: {e}")))?;
    }
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, bytes).map_err(|e| InputError::new(&partial, "", format!("cannot write: {e}")))?;
    std::fs::rename(&partial, path).map_err(|e| InputError::new(path, "", format!("cannot write: {e}")))
}

/// The folder of the query files under an output folder.
pub const DATASETS: &str = "datasets";

/// Where a task's ground truth goes under an output folder.
pub fn ground_truth_path(task: Task) -> String {
    format!("{DATASETS}/{}/ground_truth.json", task.folder())
}

/// Where the knowledge base goes under an output folder: the release's
/// place, so `some ingest release` imports it.
pub const KNOWLEDGE_PATH: &str = "database/knowledge_data/knowledge_base.json";

#[cfg(test)]
mod tests;

/// One model call as every pipeline makes it: the prompt as the user's
/// message, a temperature, a seed, a token cap and, where given, a JSON
/// schema the reply must follow. [`Call::ask`] adds its tokens to `usage`
/// and returns the reply's text.
pub(crate) struct Call<'a> {
    pub schema: Option<(&'a str, Value)>,
    pub temperature: f32,
    pub seed: u64,
    pub max_tokens: u32,
}

impl Call<'_> {
    pub(crate) async fn ask(self, model: &dyn ChatModel, prompt: String, usage: &mut Usage) -> Result<String, ModelError> {
        let request = ChatRequest {
            messages: vec![Message::user(prompt)],
            temperature: Some(self.temperature),
            seed: Some(self.seed),
            max_tokens: Some(self.max_tokens),
            response_format: self.schema.map(|(name, schema)| JsonSchema::new(name, schema)),
            ..ChatRequest::default()
        };
        let response = model.chat(&request).await?;
        *usage += response.usage;
        Ok(response.content)
    }
}

/// The JSON object in a model's reply: from its first `{` to its last `}`
/// (small models wrap it in prose or a code fence).
pub(crate) fn reply_object(text: &str) -> Option<serde_json::Map<String, Value>> {
    serde_json::from_str(text.get(text.find('{')?..=text.rfind('}')?)?).ok()
}

/// A text on one line, at most `n` characters (an ellipsis where cut).
pub(crate) fn one_line(text: &str, n: usize) -> String {
    some_jobs::render::cut(&text.split_whitespace().collect::<Vec<_>>().join(" "), n)
}

/// The first `shown` posts as a numbered list for a prompt, one a line.
pub(crate) fn numbered(posts: &[String], shown: usize) -> String {
    posts.iter().take(shown).enumerate().map(|(i, p)| format!("{}. {}", i + 1, one_line(p, usize::MAX))).collect::<Vec<_>>().join("\n")
}

/// A prompt's identity in provenance: the first 12 hex digits of its SHA-256.
pub fn prompt_id(template: &str) -> String {
    use sha2::{Digest, Sha256};
    hex_prefix(&Sha256::digest(template.as_bytes()), 6)
}

fn hex_prefix(bytes: &[u8], n: usize) -> String {
    bytes.iter().take(n).map(|b| format!("{b:02x}")).collect()
}
