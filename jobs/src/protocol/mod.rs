//! How a model's reply becomes tool calls.
//!
//! Two protocols: the reference's text protocol (tool schemas in the system
//! prompt, calls in `<tool_call>` blocks or any of the fallback formats the
//! reference accepts) and native function calling (`tool_calls` in the
//! OpenAI response). [`parse_reply`] handles the text protocol;
//! [`from_native`] the native one. Neither ever panics: what cannot be read
//! is reported in [`ParsedReply::malformed`] for the agent loop to return
//! to the model as an error.

mod call;
mod fallback;
mod nous;
mod parse;
#[cfg(test)]
mod proptests;
#[cfg(test)]
mod tests;

pub use parse::{from_native, parse_reply, strip_think};

/// One tool call: the tool's name and its arguments (a JSON object).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: serde_json::Map<String, serde_json::Value>,
    /// Which format it was found in (`tool_call`, `json_fence`, `native`, ...).
    pub format: &'static str,
}

/// A tool call the reply attempted but that could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Malformed {
    /// The format it was found in.
    pub format: &'static str,
    /// The offending text (at most 200 characters).
    pub snippet: String,
    /// What was wrong, for the error message sent back to the model.
    pub error: String,
}

/// A model reply, read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedReply {
    /// The reply with `<think>...</think>` removed.
    pub content: String,
    /// The calls, in the order they appear.
    pub calls: Vec<ToolCall>,
    pub malformed: Vec<Malformed>,
}

/// A tool call as an OpenAI-compatible response carries it natively.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them: JSON text, possibly invalid.
    pub arguments: String,
}
