//! The chat model interface jobs talk to. Implementations (any
//! OpenAI-compatible endpoint, the built-in model) live in `workers`; jobs
//! see only this trait, so the agent loop and the tools are tested with a
//! scripted model.
//!
//! A request may carry a JSON schema for the reply ([`JsonSchema`]): an
//! endpoint that supports structured output (vLLM, llama.cpp's server, the
//! built-in model) then writes only replies that follow it. The schema is a
//! constraint, not a protocol: the caller reads the reply with the same
//! parser whether the endpoint honoured it or not.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::protocol::NativeToolCall;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Native tool calls an assistant message made (native protocol only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<NativeCallRecord>,
    /// The call a tool message answers (native protocol only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

/// A native tool call as it is replayed to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NativeCallRecord {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

impl Message {
    pub fn new(role: Role, content: impl Into<String>) -> Message {
        Message { role, content: content.into(), tool_calls: Vec::new(), tool_call_id: None }
    }
    pub fn system(content: impl Into<String>) -> Message {
        Message::new(Role::System, content)
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message::new(Role::User, content)
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message::new(Role::Assistant, content)
    }
}

/// A JSON schema the reply must follow: OpenAI's `response_format` of type
/// `json_schema` (sent with `"strict": true`).
///
/// The schema is held as its JSON text, shared: most are sent on every call
/// of their kind (a feed question's on every agent-turn), so a caller builds
/// one once and clones it, a client writes it as it is, and a server passes
/// it on without a tree of maps; [`JsonSchema::value`] reads it for the
/// few that look inside (the built-in model's grammar).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JsonSchema {
    /// A name for the schema (`[a-zA-Z0-9_-]`, as OpenAI requires).
    pub name: String,
    #[serde(with = "raw_json")]
    schema: Arc<RawValue>,
}

impl JsonSchema {
    pub fn new(name: &str, schema: serde_json::Value) -> JsonSchema {
        let text = serde_json::value::to_raw_value(&schema).expect("a JSON value serializes");
        JsonSchema { name: name.to_string(), schema: Arc::from(text) }
    }

    /// A schema as a client sent it, already known to be JSON.
    pub fn from_raw(name: String, schema: Box<RawValue>) -> JsonSchema {
        JsonSchema { name, schema: Arc::from(schema) }
    }

    /// The schema's JSON text.
    pub fn raw(&self) -> &RawValue {
        &self.schema
    }

    /// The schema as a JSON value.
    pub fn value(&self) -> serde_json::Value {
        serde_json::from_str(self.schema.get()).expect("a schema is JSON text")
    }
}

/// Two schemas are equal when they say the same, however their texts are spaced.
impl PartialEq for JsonSchema {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && (self.schema.get() == other.schema.get() || self.value() == other.value())
    }
}

/// A schema field as JSON text: read from any deserializer (through a value), written as it is.
mod raw_json {
    use std::sync::Arc;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use serde_json::value::RawValue;

    pub fn serialize<S: Serializer>(schema: &Arc<RawValue>, s: S) -> Result<S::Ok, S::Error> {
        schema.as_ref().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<RawValue>, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        serde_json::value::to_raw_value(&value).map(Arc::from).map_err(serde::de::Error::custom)
    }
}

/// A chat completion request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    /// OpenAI function schemas (native protocol); empty for the text protocol.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<serde_json::Value>,
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    /// The schema the reply must follow, where the endpoint can constrain it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<JsonSchema>,
}

/// Token counts of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Of the prompt tokens, those the endpoint took from its prompt cache
    /// instead of computing them (OpenAI's
    /// `usage.prompt_tokens_details.cached_tokens`; 0 where not reported).
    #[serde(default)]
    pub cached_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

/// A chat completion.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatResponse {
    pub content: String,
    pub tool_calls: Vec<NativeToolCall>,
    pub usage: Usage,
    /// The model that answered, as the endpoint names it.
    pub model: String,
    pub latency_ms: u64,
    pub finish_reason: Option<String>,
    /// Where the call was answered, for clients that pace their calls per
    /// endpoint (none: in-process models and cached replies).
    pub place: Option<Place>,
}

/// The endpoint that answered a call, how many calls at once it was
/// allowed then, and how long the call waited for room in all.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Place {
    pub endpoint: String,
    pub window: u32,
    pub waited_ms: u64,
}

/// Why a model call failed, and whether trying again may help.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    /// Rate limits, 5xx, time-outs, dropped connections: retried by the client.
    #[error("model endpoint {endpoint}: {message} (transient)")]
    Transient { endpoint: String, message: String },
    /// Bad request, unknown model, authentication: retrying will not help.
    #[error("model endpoint {endpoint}: {message}")]
    Permanent { endpoint: String, message: String },
}

/// Something that answers chat requests.
#[async_trait::async_trait]
pub trait ChatModel: Send + Sync {
    /// The model's name, as recorded with results.
    fn name(&self) -> &str;
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError>;
}
