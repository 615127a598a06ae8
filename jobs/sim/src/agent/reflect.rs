//! The reflection module: every two simulated days an agent looks back at
//! the posts it liked, reblogged or commented on and decides whom to
//! follow; long posts are first shortened by the summary component.
//!
//! Prompts: `jobs/sim/prompts/reflect.txt` (the paper's Table 12 content, our
//! wording), the history lines of [`history_line`] (Table 13) and
//! `jobs/sim/prompts/summary.txt` (Table 14: at most 50 words). Posts of 50
//! words or fewer are used as they are (choice: summarising them would
//! cost a call and shorten nothing).
//!
//! [`parse_follow`] reads the reply: "do not follow" (or "none") is no
//! follow; otherwise the user ids named, which must be authors in the
//! history shown (a model naming someone it never saw is an error, not a
//! follow). The paper asks for one id; up to [`MAX_FOLLOWS`] are taken.
//! Endpoints with structured output are sent [`json_schema`], an object
//! `{"follow": [ids]}` whose ids can only be the authors shown; the parser
//! reads that form too, an empty list being no follow.

use std::sync::OnceLock;

use regex::Regex;
use some_jobs::prompts::fill;
use some_schemas::sim::ActionKind;

use crate::agent::memory::Entry;
use crate::error::{ReplyError, json_body};
use crate::platform::ids::{AgentId, TURNS_PER_DAY, Turn};

const REFLECT: &str = include_str!("../../prompts/reflect.txt");
const SUMMARY: &str = include_str!("../../prompts/summary.txt");
const WHAT: &str = "reflection";

/// Reflection happens every two simulated days.
pub const REFLECTION_EVERY: u32 = 2 * TURNS_PER_DAY;
/// Follows taken from one reflection, at most.
pub const MAX_FOLLOWS: usize = 3;
/// Posts longer than this (in words) are summarised before reflection.
pub const SUMMARY_OVER_WORDS: usize = 50;
/// Reacted-to posts shown in one reflection, at most (the latest).
pub const HISTORY_CAP: usize = 30;

/// Whether a reflection is due at `turn`: `every` turns after the last, or
/// `every` turns into the run for the first (the paper: two days,
/// [`REFLECTION_EVERY`]).
pub fn due(last: Option<Turn>, turn: Turn, every: u32) -> bool {
    turn.0 >= last.map_or(0, |t| t.0) + every
}

pub fn needs_summary(text: &str) -> bool {
    text.split_whitespace().count() > SUMMARY_OVER_WORDS
}

pub fn summary_prompt(post: &str) -> String {
    SUMMARY.replace("{post}", post)
}

/// What the agent did, in words.
fn described(entry: &Entry) -> String {
    let mut parts: Vec<String> = entry
        .actions
        .iter()
        .filter(|a| **a != ActionKind::Comment)
        .map(|a| match a {
            ActionKind::Like => "you liked it".to_string(),
            ActionKind::Reblog => "you reblogged it".to_string(),
            other => other.as_str().to_string(),
        })
        .collect();
    if let Some(c) = &entry.comment {
        parts.push(format!("you commented \"{c}\""));
    }
    if parts.is_empty() { "you only read it".into() } else { parts.join(", ") }
}

/// One history line (the paper's Table 13): the k-th post, its author, its
/// text or summary, and the agent's action.
pub fn history_line(k: usize, entry: &Entry) -> String {
    format!("{k}. A post by user {} says: {} What you did: {}.", entry.author, entry.text, described(entry))
}

pub fn reflect_prompt(persona: &str, entries: &[&Entry]) -> String {
    let history: Vec<String> = entries.iter().enumerate().map(|(i, e)| history_line(i + 1, e)).collect();
    fill(REFLECT, &[("{persona}", persona), ("{history}", &history.join("\n"))])
}

/// The JSON schema of a reflection reply: the users to follow, each one of
/// `authors` (the authors of the posts shown), at most [`MAX_FOLLOWS`].
/// `None` when there is no author to follow: no id could be valid.
pub fn json_schema(authors: &[AgentId]) -> Option<serde_json::Value> {
    if authors.is_empty() {
        return None;
    }
    let ids: Vec<u32> = authors.iter().map(|a| a.0).collect();
    Some(serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["follow"],
        "properties": {"follow": {"type": "array", "items": {"type": "integer", "enum": ids}, "maxItems": MAX_FOLLOWS}}
    }))
}

/// The ids of a `{"follow": [...]}` reply, if the reply is one.
fn json_follows(reply: &str) -> Option<Result<Vec<AgentId>, ReplyError>> {
    let value: serde_json::Value = serde_json::from_str(json_body(reply)).ok()?;
    let list = value.as_object()?.get("follow")?;
    let bad = |cause: String| ReplyError::BadValue { what: WHAT, field: "follow".into(), cause };
    let Some(items) = list.as_array() else {
        return Some(Err(bad(format!("is {}, not a list of user ids", some_jobs::json::type_name(list)))));
    };
    Some(
        items
            .iter()
            .map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()).map(AgentId).ok_or_else(|| bad(format!("holds {v}, not a user id"))))
            .collect(),
    )
}

fn ids() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\d+").unwrap_or_else(|e| panic!("{e}")))
}

/// The users to follow named in a reflection reply; `authors` are those of
/// the history shown.
pub fn parse_follow(reply: &str, authors: &[AgentId]) -> Result<Vec<AgentId>, ReplyError> {
    let lower = reply.trim().to_lowercase();
    let (named, json) = match json_follows(reply) {
        Some(ids) => (ids?, true),
        None => (ids().find_iter(&lower).filter_map(|m| m.as_str().parse::<u32>().ok()).map(AgentId).collect(), false),
    };
    if named.is_empty() && !json {
        if ["not follow", "don't follow", "no one", "nobody", "none"].iter().any(|w| lower.contains(w)) {
            return Ok(Vec::new());
        }
        return Err(ReplyError::Unreadable { what: WHAT, cause: "it names no user id and does not decline".into() });
    }
    let mut out: Vec<AgentId> = Vec::new();
    for id in named {
        if !authors.contains(&id) {
            return Err(ReplyError::BadValue {
                what: WHAT,
                field: "user id".into(),
                cause: format!("{id} is not an author of the posts shown"),
            });
        }
        if !out.contains(&id) && out.len() < MAX_FOLLOWS {
            out.push(id);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::ids::PostId;

    fn entry(author: u32, actions: Vec<ActionKind>, comment: Option<&str>) -> Entry {
        Entry {
            turn: Turn(1),
            post: PostId(4),
            author: AgentId(author),
            text: "Trail run at dawn.".into(),
            summarised: false,
            actions,
            comment: comment.map(Into::into),
        }
    }

    #[test]
    fn reflection_is_due_every_two_days() {
        assert!(!due(None, Turn(47), REFLECTION_EVERY) && due(None, Turn(48), REFLECTION_EVERY));
        assert!(!due(Some(Turn(48)), Turn(95), REFLECTION_EVERY) && due(Some(Turn(48)), Turn(96), REFLECTION_EVERY));
        assert!(!due(Some(Turn(3)), Turn(4), 2) && due(Some(Turn(3)), Turn(5), 2));
    }

    #[test]
    fn history_lines_say_who_posted_what_and_what_the_agent_did() {
        let e = entry(17, vec![ActionKind::Like, ActionKind::Comment], Some("Great pace!"));
        assert_eq!(
            history_line(2, &e),
            "2. A post by user 17 says: Trail run at dawn. What you did: you liked it, you commented \"Great pace!\"."
        );
        let p = reflect_prompt("a runner", &[&e]);
        assert!(p.contains("Who you are:\na runner\n") && p.ends_with("you commented \"Great pace!\".\n"), "{p}");
        assert!(needs_summary(&"word ".repeat(51)) && !needs_summary(&"word ".repeat(50)));
        assert_eq!(
            summary_prompt("x"),
            "Summarise the social media post below in no more than 50 words. Reply with the summary only.\n\nPost: x\n"
        );
    }

    #[test]
    fn follow_replies_are_ids_from_the_history_or_a_refusal() {
        let authors = [AgentId(17), AgentId(4)];
        assert_eq!(parse_follow("17", &authors).unwrap(), [AgentId(17)]);
        assert_eq!(parse_follow("I want to follow user 4 and user17.", &authors).unwrap(), [AgentId(4), AgentId(17)]);
        assert_eq!(parse_follow("Do not follow", &authors).unwrap(), []);
        let e = parse_follow("user 99", &authors).unwrap_err();
        assert_eq!(e.to_string(), "reflection reply: field \"user id\" 99 is not an author of the posts shown");
        assert!(matches!(parse_follow("Hmm, maybe.", &authors), Err(ReplyError::Unreadable { .. })));
    }

    #[test]
    fn the_schemas_form_is_read_and_offers_only_the_authors_shown() {
        let authors = [AgentId(17), AgentId(4)];
        assert_eq!(parse_follow(r#"{"follow": [4, 17, 4]}"#, &authors).unwrap(), [AgentId(4), AgentId(17)]);
        assert_eq!(parse_follow(r#"{"follow": []}"#, &authors).unwrap(), []);
        let e = parse_follow(r#"{"follow": [99]}"#, &authors).unwrap_err();
        assert_eq!(e.to_string(), "reflection reply: field \"user id\" 99 is not an author of the posts shown");
        let e = parse_follow(r#"{"follow": "17"}"#, &authors).unwrap_err();
        assert_eq!(e.to_string(), "reflection reply: field \"follow\" is a string, not a list of user ids");
        let schema = json_schema(&authors).unwrap();
        assert_eq!(schema["properties"]["follow"]["items"]["enum"], serde_json::json!([17, 4]));
        assert_eq!(schema["properties"]["follow"]["maxItems"], 3);
        assert_eq!(json_schema(&[]), None);
    }
}
