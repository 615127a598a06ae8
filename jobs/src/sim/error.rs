//! What can be wrong with a model's reply in the simulation.
//!
//! A reply that cannot be used is never replaced by a default: the caller
//! retries it or records it as a failure, with this error as the cause.

use crate::chat::{ChatModel, ChatRequest, Message, ModelError, Usage};

/// A model reply that is not what the prompt asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("{what} reply is not valid JSON: {cause}")]
    InvalidJson { what: &'static str, cause: String },
    #[error("{what} reply has an unknown field {field:?}")]
    UnknownField { what: &'static str, field: String },
    #[error("{what} reply lacks the field {field:?}")]
    MissingField { what: &'static str, field: String },
    #[error("{what} reply: field {field:?} {cause}")]
    BadValue { what: &'static str, field: String, cause: String },
    /// The reply has none of the shape asked for (e.g. a reply that is not a plan).
    #[error("{what} reply cannot be read: {cause}")]
    Unreadable { what: &'static str, cause: String },
}

/// Why a question to the model got no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    /// The model could not be reached (the job is retried).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Every reply was unreadable (recorded as a failure with the cause).
    #[error("no usable reply in {attempts} attempts; last: {last} (reply: {reply:?})")]
    Reply { attempts: u32, last: ReplyError, reply: String },
}

/// A read answer and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered<T> {
    pub value: T,
    pub calls: u32,
    pub usage: Usage,
}

/// Sends `prompt` as one user message until `parse` reads the reply, up to
/// `max_attempts` times.
pub async fn ask<T>(
    model: &dyn ChatModel,
    prompt: String,
    max_attempts: u32,
    seed: Option<u64>,
    parse: impl Fn(&str) -> Result<T, ReplyError>,
) -> Result<Answered<T>, AskError> {
    let request = ChatRequest { messages: vec![Message::user(prompt)], seed, ..Default::default() };
    let mut usage = Usage::default();
    let mut last = None;
    for attempt in 1..=max_attempts.max(1) {
        let reply = model.chat(&request).await?;
        usage += reply.usage;
        match parse(&reply.content) {
            Ok(value) => return Ok(Answered { value, calls: attempt, usage }),
            Err(e) => last = Some((e, excerpt(&reply.content, 200))),
        }
    }
    let (last, reply) = last.unwrap_or((ReplyError::Unreadable { what: "reply", cause: "no attempt was made".into() }, String::new()));
    Err(AskError::Reply { attempts: max_attempts.max(1), last, reply })
}

/// Cuts a reply to a length fit for an error message or a log row.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let mut out: String = text.chars().take(max_chars).collect();
    if text.chars().count() > max_chars {
        out.push('…');
    }
    out
}

/// The JSON object in a reply: the whole reply, or the body of one Markdown
/// code fence around it (models add fences even when told not to). Text
/// outside a fence is not searched for braces: that would accept replies
/// that are not the object asked for.
pub fn json_body(reply: &str) -> &str {
    let t = reply.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.strip_prefix("json").or_else(|| rest.strip_prefix("JSON")).unwrap_or(rest);
        if let Some(body) = rest.trim_end().strip_suffix("```") {
            return body.trim();
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_are_removed_and_nothing_else() {
        assert_eq!(json_body("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(json_body("  {\"a\": 1} "), "{\"a\": 1}");
        assert_eq!(json_body("Sure! {\"a\": 1}"), "Sure! {\"a\": 1}");
        assert_eq!(excerpt("abcdef", 3), "abc…");
    }
}
