//! Deciding on a whole feed in one model call: the batched alternative to
//! asking per post ([`crate::agent::decide`]), for runs where calls per agent-turn
//! are the cost (one call per agent-turn instead of one per post shown).
//! The persona items are retrieved with the feed's posts together as the
//! query, and the plan's quotas are stated in the prompt and enforced again
//! on the reply. Prompt: `jobs/sim/prompts/decide_feed.txt` (ours).
//!
//! The question asks for `{"reactions": [{"post", "like", "reblog",
//! "comment"}]}` with one entry per post, under a JSON schema for endpoints
//! with structured output: a small model fills one entry per post more
//! reliably than it writes numbered lines. Replies from endpoints without
//! structured output may instead list only the posts reacted to, as JSON
//! or as `N: like, reblog, comment: text` lines, or say "none". A post
//! number outside the feed, or a reply in none of these forms, is an error.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::agent::decide::{Decision, FeedPost};
use crate::error::{Question, ReplyError, json_body};
use some_jobs::chat::JsonSchema;

const PROMPT: &str = include_str!("../../prompts/decide_feed.txt");
const WHAT: &str = "feed decision";

/// The question for a feed of `feed.len()` posts: [`prompt`] and [`json_schema`].
pub fn question(persona: &str, feed: &[FeedPost], quotas: (usize, usize, usize)) -> Question {
    Question { schema: Some(JsonSchema::new("reactions", json_schema(feed.len()))), ..Question::new(prompt(persona, feed, quotas)) }
}

/// The reply's schema: exactly one entry per post, numbered within the feed.
pub fn json_schema(n: usize) -> Value {
    let numbers: Vec<usize> = (1..=n).collect();
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["reactions"],
        "properties": {"reactions": {
            "type": "array", "minItems": n, "maxItems": n,
            "items": {
                "type": "object",
                "additionalProperties": false,
                "required": ["post", "like", "reblog", "comment"],
                "properties": {
                    "post": {"enum": numbers},
                    "like": {"type": "boolean"},
                    "reblog": {"type": "boolean"},
                    "comment": {"type": "string", "maxLength": crate::agent::decide::MAX_COMMENT_CHARS}
                }
            }
        }}
    })
}

pub fn prompt(persona: &str, feed: &[FeedPost], (likes, reblogs, comments): (usize, usize, usize)) -> String {
    let posts: Vec<String> = feed.iter().enumerate().map(|(i, p)| format!("{}. By user {}: {}", i + 1, p.author, p.content)).collect();
    PROMPT
        .replace("{likes}", &likes.to_string())
        .replace("{reblogs}", &reblogs.to_string())
        .replace("{comments}", &comments.to_string())
        .replace("{posts}", &posts.join("\n"))
        .replace("{persona}", persona)
}

fn line() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^\s*(?:post\s*)?\[?(\d+)\]?\s*[:.)\-]\s*(.*)$").unwrap_or_else(|e| panic!("{e}")))
}

fn post_number(k: usize, n: usize) -> Result<usize, ReplyError> {
    (1..=n).contains(&k).then(|| k - 1).ok_or_else(|| ReplyError::BadValue {
        what: WHAT,
        field: "post number".into(),
        cause: format!("{k} is not a post of the feed (1-{n})"),
    })
}

/// The decisions of a `{"reactions": [...]}` reply, if the reply is one.
/// A flag or comment left out is not done.
fn from_json(body: &str, n: usize) -> Option<Result<Vec<Decision>, ReplyError>> {
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(body) else { return None };
    let bad = |field: &str, cause: String| ReplyError::BadValue { what: WHAT, field: field.into(), cause };
    let read = || -> Result<Vec<Decision>, ReplyError> {
        let items = match o.get("reactions") {
            Some(Value::Array(items)) => items,
            Some(v) => return Err(bad("reactions", format!("is {}, not a list", some_jobs::json::type_name(v)))),
            None => return Err(ReplyError::MissingField { what: WHAT, field: "reactions".into() }),
        };
        let mut out = vec![Decision { like: false, reblog: false, comment: None }; n];
        for item in items {
            let Value::Object(r) = item else { return Err(bad("reactions", format!("holds {item}, not an object"))) };
            let k = r.get("post").and_then(Value::as_u64).ok_or_else(|| bad("post", format!("missing or not a number in {item}")))?;
            let d = &mut out[post_number(usize::try_from(k).unwrap_or(usize::MAX), n)?];
            let flag = |key: &str| match r.get(key) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(v) => Err(bad(key, format!("is {}, not true or false", some_jobs::json::type_name(v)))),
            };
            d.like |= flag("like")?;
            d.reblog |= flag("reblog")?;
            match r.get("comment") {
                None | Some(Value::Null) | Some(Value::Bool(false)) => {}
                Some(Value::String(s)) => d.comment = crate::agent::decide::comment_value(s).or(d.comment.take()),
                Some(v) => return Err(bad("comment", format!("is {}, not text", some_jobs::json::type_name(v)))),
            }
        }
        Ok(out)
    };
    Some(read())
}

/// One decision per post of a feed of `n` posts.
pub fn parse(reply: &str, n: usize) -> Result<Vec<Decision>, ReplyError> {
    if let Some(d) = from_json(json_body(reply), n) {
        return d;
    }
    let mut out = vec![Decision { like: false, reblog: false, comment: None }; n];
    let mut read = 0;
    for raw in reply.lines() {
        let l = raw.replace("**", "");
        let Some(c) = line().captures(&l) else { continue };
        let k: usize = c[1].parse().map_err(|_| ReplyError::BadValue {
            what: WHAT,
            field: "post number".into(),
            cause: format!("{:?} is not a number", &c[1]),
        })?;
        let d = &mut out[post_number(k, n)?];
        let rest = c[2].trim();
        let (flags, comment) = match rest.to_lowercase().find("comment") {
            Some(at) => (&rest[..at], rest[at + "comment".len()..].trim_start_matches([':', ' ']).trim()),
            None => (rest, ""),
        };
        let flags = flags.to_lowercase();
        d.like |= flags.split(|c: char| !c.is_alphanumeric()).any(|w| w == "like" || w == "liked");
        d.reblog |= ["reblog", "repost", "forward", "boost"].iter().any(|w| flags.contains(w));
        if !comment.is_empty() {
            d.comment = Some(comment.trim_matches('"').to_string());
        }
        read += 1;
    }
    if read == 0 && !reply.trim().trim_matches(|c: char| !c.is_alphanumeric()).eq_ignore_ascii_case("none") {
        return Err(ReplyError::Unreadable {
            what: WHAT,
            cause: "not a {\"reactions\": [...]} object, no \"N: ...\" line and not \"none\"".into(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::ids::{AgentId, PostId};

    #[test]
    fn feed_decisions_are_read_per_numbered_line() {
        let d = parse("1: like, reblog\n3: comment: \"So true!\"\n**2**: like, comment: Nice", 3).unwrap();
        assert_eq!(d[0], Decision { like: true, reblog: true, comment: None });
        assert_eq!(d[1], Decision { like: true, reblog: false, comment: Some("Nice".into()) });
        assert_eq!(d[2], Decision { like: false, reblog: false, comment: Some("So true!".into()) });
        assert_eq!(parse("None.", 2).unwrap(), vec![Decision { like: false, reblog: false, comment: None }; 2]);
        assert_eq!(
            parse("4: like", 3).unwrap_err().to_string(),
            "feed decision reply: field \"post number\" 4 is not a post of the feed (1-3)"
        );
        assert!(matches!(parse("I liked the second one", 3), Err(ReplyError::Unreadable { .. })));

        // The structured form, one entry per post; an empty comment is none.
        let json = r#"{"reactions": [{"post": 1, "like": true, "reblog": false, "comment": ""},
            {"post": 2, "like": false, "reblog": true, "comment": "Agreed."}, {"post": 3, "like": false, "reblog": false, "comment": "none"}]}"#;
        let d = parse(json, 3).unwrap();
        assert_eq!(d[0], Decision { like: true, reblog: false, comment: None });
        assert_eq!(d[1], Decision { like: false, reblog: true, comment: Some("Agreed.".into()) });
        assert_eq!(d[2], Decision { like: false, reblog: false, comment: None });
        // Only the posts reacted to, from an endpoint without the schema.
        assert_eq!(parse("```json\n{\"reactions\": [{\"post\": 2, \"like\": true}]}\n```", 2).unwrap()[1].like, true);
        assert_eq!(
            parse(r#"{"reactions": [{"post": 5, "like": true}]}"#, 3).unwrap_err().to_string(),
            "feed decision reply: field \"post number\" 5 is not a post of the feed (1-3)"
        );
        assert!(
            parse(r#"{"reactions": [{"post": 1, "like": "maybe"}]}"#, 3)
                .unwrap_err()
                .to_string()
                .contains("\"like\" is a string, not true or false")
        );
        assert!(matches!(parse(r#"{"liked": [1]}"#, 3), Err(ReplyError::MissingField { .. })));
        let feed = [FeedPost { id: PostId(1), author: AgentId(7), content: "Hi".into() }];
        let p = prompt("me", &feed, (1, 0, 2));
        assert!(p.contains("you like at most 1, reblog at most 0 and comment on at most 2") && p.contains("Posts:\n1. By user 7: Hi\n"));
        let schema = &question("me", &feed, (1, 0, 2)).schema.unwrap().schema;
        assert_eq!(schema["properties"]["reactions"]["minItems"], 1);
        assert_eq!(schema["properties"]["reactions"]["items"]["properties"]["post"]["enum"], serde_json::json!([1]));
    }
}
