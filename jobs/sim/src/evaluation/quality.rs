//! The LLM-judge text quality rating (the paper's Table 2): a post or
//! comment rated 1-3 on informativeness, consistency and humanness against
//! the persona's personality, hobbies and content preferences only (as the
//! paper's evaluation does). Prompt: `jobs/sim/prompts/quality.txt`, our wording
//! of the paper's rubric. The parser takes `Name: N` lines (any case,
//! Markdown bold allowed) or a JSON object; a missing criterion or a rating
//! outside 1-3 is an error, never a default.

use serde::{Deserialize, Serialize};
use some_jobs::prompts::fill;

use crate::agent::persona::Persona;
use crate::error::{ReplyError, json_body};

const PROMPT: &str = include_str!("../../prompts/quality.txt");
const WHAT: &str = "quality rating";
const CRITERIA: [&str; 3] = ["informativeness", "consistency", "humanness"];

/// Ratings, 1-3 each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quality {
    pub informativeness: u8,
    pub consistency: u8,
    pub humanness: u8,
}

/// The rating prompt; `kind` is "post" or "comment".
pub fn prompt(persona: &Persona, kind: &str, text: &str) -> String {
    fill(PROMPT, &[("{persona}", &persona.evaluation_text()), ("{kind}", kind), ("{text}", text)])
}

fn rating_after(lower: &str, name: &str) -> Option<Result<u8, String>> {
    let at = lower.find(name)? + name.len();
    let rest = lower[at..].trim_start_matches(|c: char| c == '"' || c == ':' || c == '*' || c.is_whitespace());
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some(match digits.parse::<u8>() {
        Ok(n @ 1..=3) => Ok(n),
        _ => Err(format!("is not a rating from 1 to 3: {:?}", rest.chars().take(10).collect::<String>())),
    })
}

/// The reply's schema, for endpoints with structured output.
pub fn json_schema() -> serde_json::Value {
    let rating = serde_json::json!({"enum": [1, 2, 3]});
    let properties: serde_json::Map<String, serde_json::Value> = CRITERIA.iter().map(|c| (c.to_string(), rating.clone())).collect();
    serde_json::json!({"type": "object", "additionalProperties": false, "required": CRITERIA, "properties": properties})
}

/// Reads a judge reply.
pub fn parse(reply: &str) -> Result<Quality, ReplyError> {
    let lower = json_body(reply).to_lowercase();
    let mut got = [0u8; 3];
    for (i, name) in CRITERIA.iter().enumerate() {
        got[i] = match rating_after(&lower, name) {
            None => return Err(ReplyError::MissingField { what: WHAT, field: (*name).into() }),
            Some(Err(cause)) => return Err(ReplyError::BadValue { what: WHAT, field: (*name).into(), cause }),
            Some(Ok(n)) => n,
        };
    }
    Ok(Quality { informativeness: got[0], consistency: got[1], humanness: got[2] })
}

/// A post or a comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TextKind {
    Post,
    Comment,
}

impl TextKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TextKind::Post => "post",
            TextKind::Comment => "comment",
        }
    }
    pub(super) fn of(post: &some_schemas::sim::SimPostRow) -> TextKind {
        if post.parent_post_id.is_some() { TextKind::Comment } else { TextKind::Post }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratings_are_read_from_lines_or_json() {
        let q = Quality { informativeness: 2, consistency: 3, humanness: 3 };
        assert_eq!(parse("Informativeness: 2\nConsistency: 3\nHumanness: 3").unwrap(), q);
        assert_eq!(parse("**Informativeness**: 2\n**Consistency:** 3\n**Humanness:** 3").unwrap(), q);
        assert_eq!(parse(r#"{"informativeness": 2, "consistency": 3, "humanness": 3}"#).unwrap(), q);
    }

    #[test]
    fn missing_or_out_of_range_ratings_are_errors() {
        assert_eq!(
            parse("Informativeness: 2\nConsistency: 3").unwrap_err(),
            ReplyError::MissingField { what: WHAT, field: "humanness".into() }
        );
        let e = parse("Informativeness: 4\nConsistency: 3\nHumanness: 3").unwrap_err();
        assert_eq!(e.to_string(), "quality rating reply: field \"informativeness\" is not a rating from 1 to 3: \"4\\nconsiste\"");
        let p = prompt(&crate::agent::test_model::persona(1, "kind nurse"), "post", "Hello!");
        assert!(p.contains("Persona (personality, hobbies, content preferences):\nkind nurse\n\nText (post):\nHello!\n"));
    }
}
