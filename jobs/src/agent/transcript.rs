//! What an episode records: the conversation, and per model call and per
//! tool call what happened (for the results lake and the paper's analyses).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::chat::{ChatRequest, ChatResponse, Message, Place, Usage};
use crate::protocol::ParsedReply;

/// One model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub index: u32,
    pub latency_ms: u64,
    pub usage: Usage,
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
    pub model: String,
    pub finish_reason: Option<String>,
    /// Calls read from the reply, by format (`tool_call`, `json_fence`...).
    pub call_formats: Vec<String>,
    /// Tool calls the reply attempted but that could not be read.
    pub malformed: Vec<String>,
    pub error: Option<String>,
    /// Where it was answered and how long it waited for room there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub place: Option<Place>,
}

impl CallRecord {
    pub fn answered(index: u32, request: &ChatRequest, response: &ChatResponse, parsed: &ParsedReply, started: Instant) -> CallRecord {
        CallRecord {
            index,
            latency_ms: started.elapsed().as_millis() as u64,
            usage: response.usage,
            temperature: request.temperature,
            seed: request.seed,
            model: response.model.clone(),
            finish_reason: response.finish_reason.clone(),
            call_formats: parsed.calls.iter().map(|c| c.format.to_string()).collect(),
            malformed: parsed.malformed.iter().map(|m| format!("{}: {}", m.format, m.error)).collect(),
            error: None,
            place: response.place.clone(),
        }
    }

    pub fn failed(index: u32, request: &ChatRequest, started: Instant, error: String) -> CallRecord {
        CallRecord {
            index,
            latency_ms: started.elapsed().as_millis() as u64,
            usage: Usage::default(),
            temperature: request.temperature,
            seed: request.seed,
            model: String::new(),
            finish_reason: None,
            call_formats: Vec::new(),
            malformed: Vec::new(),
            error: Some(error),
            place: None,
        }
    }
}

/// One tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// The model call whose reply made this tool call.
    #[serde(default)]
    pub call_index: u32,
    pub name: String,
    pub arguments: serde_json::Value,
    pub format: String,
    pub error: bool,
    pub model_calls: u32,
    /// Length of the text the model read back.
    pub chars: usize,
}

/// The whole record of an episode, stored as JSON in `episodes.transcript`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Transcript {
    pub messages: Vec<Message>,
    pub calls: Vec<CallRecord>,
    pub tool_results: Vec<ToolRecord>,
}

impl Transcript {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\": \"unserializable transcript: {e}\"}}"))
    }
}
