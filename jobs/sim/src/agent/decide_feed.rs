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
use serde::Deserialize;
use serde_json::Value;

use crate::agent::decide::{Decision, FeedPost};
use crate::error::{Question, ReplyError, json_body};
use some_jobs::chat::JsonSchema;
use some_jobs::prompts::fill;

const PROMPT: &str = include_str!("../../prompts/decide_feed.txt");
const WHAT: &str = "feed decision";

/// The question for a feed of `feed.len()` posts: [`prompt`] and [`json_schema`].
pub fn question(persona: &str, feed: &[FeedPost], quotas: (usize, usize, usize)) -> Question {
    Question { schema: Some(schema_for(feed.len())), ..Question::new(prompt(persona, feed, quotas)) }
}

/// Feed lengths whose schemas are kept once built (feeds show 10 posts by default).
const KEPT_SCHEMAS: usize = 64;

/// The schema of a feed of `n` posts: asked on every agent-turn, so built
/// once per length.
fn schema_for(n: usize) -> JsonSchema {
    static KEPT: OnceLock<Vec<OnceLock<JsonSchema>>> = OnceLock::new();
    let build = || JsonSchema::new("reactions", json_schema(n));
    match KEPT.get_or_init(|| (0..KEPT_SCHEMAS).map(|_| OnceLock::new()).collect()).get(n) {
        Some(kept) => kept.get_or_init(build).clone(),
        None => build(),
    }
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
    use std::fmt::Write;
    let mut posts = String::with_capacity(feed.iter().map(|p| p.content.len() + 24).sum());
    for (i, p) in feed.iter().enumerate() {
        let sep = if i == 0 { "" } else { "\n" };
        write!(posts, "{sep}{}. By user {}: {}", i + 1, p.author, p.content).expect("writing to a String cannot fail");
    }
    fill(
        PROMPT,
        &[
            ("{likes}", &likes.to_string()),
            ("{reblogs}", &reblogs.to_string()),
            ("{comments}", &comments.to_string()),
            ("{posts}", &posts),
            ("{persona}", persona),
        ],
    )
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

/// One entry of a `{"reactions": [...]}` reply, its fields as sent
/// (`Null` when left out); other fields are ignored.
#[derive(Default)]
struct Reaction {
    post: Value,
    like: Value,
    reblog: Value,
    comment: Value,
}

/// Only from an object: serde's derive would also take a list of the
/// fields in order, which the reply's form does not allow.
impl<'de> Deserialize<'de> for Reaction {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Reaction;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Reaction, A::Error> {
                #[derive(Deserialize)]
                #[serde(field_identifier, rename_all = "lowercase")]
                enum Field {
                    Post,
                    Like,
                    Reblog,
                    Comment,
                    #[serde(other)]
                    Other,
                }
                let mut r = Reaction::default();
                while let Some(key) = map.next_key::<Field>()? {
                    let field = match key {
                        Field::Post => &mut r.post,
                        Field::Like => &mut r.like,
                        Field::Reblog => &mut r.reblog,
                        Field::Comment => &mut r.comment,
                        Field::Other => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                            continue;
                        }
                    };
                    *field = map.next_value()?;
                }
                Ok(r)
            }
        }
        deserializer.deserialize_map(Fields)
    }
}

/// The reply as structured output sends it; read first, since a tree of
/// the whole reply costs a map per entry.
#[derive(Deserialize)]
struct Reactions {
    reactions: Vec<Reaction>,
}

/// The decisions of a `{"reactions": [...]}` reply, if the reply is one.
/// A flag or comment left out is not done.
fn from_json(body: &str, n: usize) -> Option<Result<Vec<Decision>, ReplyError>> {
    // (A derived struct would also read from a list: only an object is one.)
    if body.starts_with('{')
        && let Ok(reply) = serde_json::from_str::<Reactions>(body)
    {
        return Some(decisions(&reply.reactions, n));
    }
    // Not that shape: read it whole to say what is wrong, or that it is no
    // JSON object at all.
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(body) else { return None };
    let items = match o.get("reactions") {
        Some(Value::Array(items)) => items,
        Some(v) => return Some(Err(bad("reactions", format!("is {}, not a list", some_jobs::json::type_name(v))))),
        None => return Some(Err(ReplyError::MissingField { what: WHAT, field: "reactions".into() })),
    };
    let reactions: Result<Vec<Reaction>, ReplyError> = items
        .iter()
        .map(|item| match item {
            Value::Object(_) => Reaction::deserialize(item).map_err(|e| bad("reactions", format!("holds {item}: {e}"))),
            _ => Err(bad("reactions", format!("holds {item}, not an object"))),
        })
        .collect();
    Some(reactions.and_then(|r| decisions(&r, n)))
}

fn bad(field: &str, cause: String) -> ReplyError {
    ReplyError::BadValue { what: WHAT, field: field.into(), cause }
}

/// The decisions the entries of a reply make.
fn decisions(reactions: &[Reaction], n: usize) -> Result<Vec<Decision>, ReplyError> {
    let mut out = vec![Decision { like: false, reblog: false, comment: None }; n];
    for r in reactions {
        let k = r.post.as_u64().ok_or_else(|| bad("post", format!("missing or not a number in {}", r.shown())))?;
        let d = &mut out[post_number(usize::try_from(k).unwrap_or(usize::MAX), n)?];
        let flag = |key: &str, v: &Value| match v {
            Value::Null => Ok(false),
            Value::Bool(b) => Ok(*b),
            v => Err(bad(key, format!("is {}, not true or false", some_jobs::json::type_name(v)))),
        };
        d.like |= flag("like", &r.like)?;
        d.reblog |= flag("reblog", &r.reblog)?;
        match &r.comment {
            Value::Null | Value::Bool(false) => {}
            Value::String(s) => d.comment = crate::agent::decide::comment_value(s).or(d.comment.take()),
            v => return Err(bad("comment", format!("is {}, not text", some_jobs::json::type_name(v)))),
        }
    }
    Ok(out)
}

impl Reaction {
    /// The entry's fields that were given, for errors.
    fn shown(&self) -> Value {
        let given = [("post", &self.post), ("like", &self.like), ("reblog", &self.reblog), ("comment", &self.comment)];
        Value::Object(given.into_iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.to_string(), v.clone())).collect())
    }
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
        assert!(parse("```json\n{\"reactions\": [{\"post\": 2, \"like\": true}]}\n```", 2).unwrap()[1].like);
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
        // An entry must be an object, and only the fields given are named.
        assert_eq!(
            parse(r#"{"reactions": [[1, true, false, ""]]}"#, 3).unwrap_err().to_string(),
            "feed decision reply: field \"reactions\" holds [1,true,false,\"\"], not an object"
        );
        assert_eq!(
            parse(r#"{"reactions": [{"like": true, "why": "fun"}]}"#, 3).unwrap_err().to_string(),
            "feed decision reply: field \"post\" missing or not a number in {\"like\":true}"
        );
        assert_eq!(
            parse(r#"{"reactions": null}"#, 3).unwrap_err().to_string(),
            "feed decision reply: field \"reactions\" is null, not a list"
        );
        // Fields not asked for are passed over; a repeated one counts as last given.
        let d = parse(r#"{"reactions": [{"post": 2, "like": false, "mood": {"x": [1]}, "like": true}], "note": "ok"}"#, 2).unwrap();
        assert_eq!(d[1], Decision { like: true, reblog: false, comment: None });
        let feed = [FeedPost { id: PostId(1), author: AgentId(7), content: "Hi".into() }];
        let p = prompt("me", &feed, (1, 0, 2));
        assert!(p.contains("you like at most 1, reblog at most 0 and comment on at most 2") && p.contains("Posts:\n1. By user 7: Hi\n"));
        // Placeholders are the template's only: a post's text is kept as written.
        let two = [feed[0].clone(), FeedPost { id: PostId(2), author: AgentId(8), content: "Who is {persona}? {likes}".into() }];
        let p = prompt("me", &two, (1, 0, 2));
        assert!(p.contains("Posts:\n1. By user 7: Hi\n2. By user 8: Who is {persona}? {likes}\n\nWho you are:\nme"), "{p}");
        assert!(p.contains(r#"{"reactions": [{"post": 1,"#) && !p.contains("{posts}"));
        let schema = question("me", &feed, (1, 0, 2)).schema.unwrap().value();
        assert_eq!(schema["properties"]["reactions"]["minItems"], 1);
        assert_eq!(schema["properties"]["reactions"]["items"]["properties"]["post"]["enum"], serde_json::json!([1]));
    }
}
