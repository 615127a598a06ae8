//! What can be wrong with a model's reply in the simulation.
//!
//! A reply that cannot be used is never replaced by a default: the caller
//! retries it or records it as a failure, with this error as the cause.

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
