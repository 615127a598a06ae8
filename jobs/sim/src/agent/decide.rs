//! The action module's prompts and reply readers: reacting to a post
//! (like, reblog, comment), choosing post topics, writing a post.
//!
//! The paper asks one question per action and post (its Tables 5-7); we
//! ask the three together for each post shown (one call instead of three;
//! the persona items and the post are the same in all three). Topics follow
//! its Table 8 and posts its Tables 9 and 10, in our wording.
//!
//! Readers are tolerant of form and strict on content: a decision reply
//! must say something about each of like, reblog and comment, as
//! `Like: yes` lines, as JSON, or in the paper's words ("like", "no
//! operation", "forward", "no comment", "Comment content: ...").

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use some_jobs::chat::JsonSchema;
use some_jobs::prompts::fill;

use crate::error::{Question, ReplyError, json_body};
use crate::platform::ids::{AgentId, PostId};

/// A post as the agent is shown it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedPost {
    pub id: PostId,
    pub author: AgentId,
    pub content: String,
}

const DECIDE: &str = include_str!("../../prompts/decide.txt");
const TOPICS: &str = include_str!("../../prompts/topics.txt");
const POST: &str = include_str!("../../prompts/post.txt");
const POST_KNOWLEDGE: &str = include_str!("../../prompts/post_knowledge.txt");

/// Mastodon's post length limit, which the paper's prompt also states.
pub const MAX_POST_CHARS: usize = 500;

/// What the agent does with one post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub like: bool,
    pub reblog: bool,
    pub comment: Option<String>,
}

pub fn decide_prompt(persona: &str, author: &str, post: &str) -> String {
    fill(DECIDE, &[("{persona}", persona), ("{author}", author), ("{post}", post)])
}

/// A comment's length limit in the schemas, so a constrained model cannot
/// fill its reply limit with one comment.
pub const MAX_COMMENT_CHARS: usize = 280;

/// The question on one post: [`decide_prompt`] and [`decision_schema`].
pub fn decide_question(persona: &str, author: &str, post: &str) -> Question {
    // Asked for every post shown (the paper's browsing): built once.
    static SCHEMA: OnceLock<JsonSchema> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| JsonSchema::new("decision", decision_schema()));
    Question { schema: Some(schema.clone()), ..Question::new(decide_prompt(persona, author, post)) }
}

/// The schema of one post's decision; an empty comment is no comment.
pub fn decision_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["like", "reblog", "comment"],
        "properties": {
            "like": {"type": "boolean"},
            "reblog": {"type": "boolean"},
            "comment": {"type": "string", "maxLength": MAX_COMMENT_CHARS}
        }
    })
}

/// The topics prompt. The agent's recent posts are in it, so a model that
/// answers the same prompt the same way (temperature 0, a fixed seed) still
/// suggests new topics week after week instead of repeating the posts the
/// duplicate check (T_p) then refuses.
pub fn topics_prompt<S: AsRef<str>>(persona: &str, count: u32, recent: &[S]) -> String {
    let recent = if recent.is_empty() {
        "(nothing yet)".to_string()
    } else {
        recent.iter().map(|p| format!("- {}", crate::error::excerpt(p.as_ref(), 160))).collect::<Vec<_>>().join("\n")
    };
    fill(TOPICS, &[("{persona}", persona), ("{count}", &count.to_string()), ("{recent}", &recent)])
}

pub fn post_prompt(persona: &str, topic: &str, knowledge: &[String]) -> String {
    let template = if knowledge.is_empty() { POST } else { POST_KNOWLEDGE };
    fill(template, &[("{persona}", persona), ("{topic}", topic), ("{knowledge}", &knowledge.join("\n"))])
}

fn yes_no(value: &str) -> Option<bool> {
    let v = value.trim().trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
    if ["yes", "y", "true", "like", "forward", "reblog", "1"].contains(&v.as_str()) || v.starts_with("yes") {
        Some(true)
    } else if ["no", "n", "false", "no operation", "0", "none"].contains(&v.as_str()) || v.starts_with("no") {
        Some(false)
    } else {
        None
    }
}

pub(super) fn comment_value(value: &str) -> Option<String> {
    let v = value.trim().trim_matches('"').trim();
    let v = v.strip_prefix("Comment content:").map_or(v, str::trim);
    let lower = v.to_lowercase();
    let declined = v.is_empty() || ["none", "no", "no comment", "n/a", "null", "-"].contains(&lower.trim_end_matches('.'));
    (!declined).then(|| v.to_string())
}

fn from_json(body: &str) -> Option<Result<Decision, ReplyError>> {
    let Ok(Value::Object(o)) = serde_json::from_str::<Value>(body) else { return None };
    Some(decision_from(&o))
}

fn decision_from(o: &serde_json::Map<String, Value>) -> Result<Decision, ReplyError> {
    let flag = |k: &str| -> Result<bool, ReplyError> {
        match o.get(k) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::String(s)) => yes_no(s).ok_or_else(|| ReplyError::BadValue {
                what: "decision",
                field: k.into(),
                cause: format!("is not yes or no: {s:?}"),
            }),
            Some(v) => Err(ReplyError::BadValue {
                what: "decision",
                field: k.into(),
                cause: format!("is {}, not yes or no", some_jobs::json::type_name(v)),
            }),
            None => Err(ReplyError::MissingField { what: "decision", field: k.into() }),
        }
    };
    let comment = match o.get("comment") {
        None => return Err(ReplyError::MissingField { what: "decision", field: "comment".into() }),
        Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(Value::String(s)) => comment_value(s),
        Some(v) => {
            return Err(ReplyError::BadValue {
                what: "decision",
                field: "comment".into(),
                cause: format!("is {}", some_jobs::json::type_name(v)),
            });
        }
    };
    Ok(Decision { like: flag("like")?, reblog: flag("reblog")?, comment })
}

/// Reads a decision reply (see the module doc).
pub fn parse_decision(reply: &str) -> Result<Decision, ReplyError> {
    let body = json_body(reply);
    if let Some(d) = from_json(body) {
        return d;
    }
    let (mut like, mut reblog, mut comment): (Option<bool>, Option<bool>, Option<Option<String>>) = (None, None, None);
    for line in body.lines() {
        let line = line.trim().trim_start_matches(['-', '*', ' ']).replace("**", "");
        let lower = line.to_lowercase();
        if lower.starts_with("comment content") {
            comment = Some(comment_value(&line));
        } else if let Some((k, v)) = line.split_once(':') {
            let k = k.trim().to_lowercase();
            if k.starts_with("like") {
                like = yes_no(v);
            } else if ["reblog", "forward", "repost", "boost"].iter().any(|w| k.starts_with(w)) {
                reblog = yes_no(v);
            } else if k.starts_with("comment") {
                comment = Some(comment_value(v));
            }
        } else if lower == "no comment" {
            comment = Some(None);
        }
    }
    let missing = |field: &str| ReplyError::MissingField { what: "decision", field: field.into() };
    if like.is_none() && reblog.is_none() && comment.is_none() {
        return Err(ReplyError::Unreadable { what: "decision", cause: "it says nothing about like, reblog or comment".into() });
    }
    Ok(Decision {
        like: like.ok_or_else(|| missing("like"))?,
        reblog: reblog.ok_or_else(|| missing("reblog"))?,
        comment: comment.ok_or_else(|| missing("comment"))?,
    })
}

/// Reads a numbered (or bulleted) topic list; at least one topic.
pub fn parse_topics(reply: &str) -> Result<Vec<String>, ReplyError> {
    let topics: Vec<String> = reply
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.trim_start_matches(|c: char| c.is_ascii_digit());
            let numbered = rest.len() < l.len() && (rest.starts_with('.') || rest.starts_with(')'));
            let bulleted = l.starts_with("- ") || l.starts_with("* ");
            (numbered || bulleted).then(|| rest.get(1..).unwrap_or("").trim().trim_matches(['*', '"']).trim().to_string())
        })
        .filter(|t| !t.is_empty())
        .collect();
    if topics.is_empty() {
        return Err(ReplyError::Unreadable { what: "topics", cause: "no numbered or bulleted topic".into() });
    }
    Ok(topics)
}

/// The post text of a reply: quotes and a "Post:" label removed, cut to
/// [`MAX_POST_CHARS`]; an empty reply is an error.
pub fn clean_post(reply: &str) -> Result<String, ReplyError> {
    let t = reply.trim();
    let t = t.strip_prefix("Post:").map_or(t, str::trim);
    let t = t.strip_prefix('"').and_then(|x| x.strip_suffix('"')).unwrap_or(t).trim();
    if t.is_empty() {
        return Err(ReplyError::Unreadable { what: "post", cause: "the reply is empty".into() });
    }
    Ok(t.chars().take(MAX_POST_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(like: bool, reblog: bool, comment: Option<&str>) -> Decision {
        Decision { like, reblog, comment: comment.map(Into::into) }
    }

    #[test]
    fn a_persona_or_post_that_names_a_placeholder_is_kept_as_written() {
        let prompt = decide_prompt("I quote {post} and {author} for fun", "u7", "my {persona} post");
        assert!(prompt.contains("Post by user u7:\nmy {persona} post\n"), "{prompt}");
        assert!(prompt.contains("Who you are:\nI quote {post} and {author} for fun"), "{prompt}");
    }

    #[test]
    fn decisions_are_read_in_every_form_models_use() {
        assert_eq!(parse_decision("Like: yes\nReblog: no\nComment: Lovely trail!").unwrap(), d(true, false, Some("Lovely trail!")));
        assert_eq!(parse_decision("**Like:** No.\n**Reblog:** Yes\n**Comment:** none").unwrap(), d(false, true, None));
        assert_eq!(parse_decision(r#"{"like": true, "reblog": "no", "comment": null}"#).unwrap(), d(true, false, None));
        assert_eq!(
            parse_decision("Like: like\nForward: no operation\nComment content: So true.").unwrap(),
            d(true, false, Some("So true."))
        );
        assert_eq!(parse_decision("Like: no\nReblog: no\nno comment").unwrap(), d(false, false, None));
    }

    #[test]
    fn decisions_missing_a_part_or_unreadable_are_errors() {
        assert_eq!(
            parse_decision("Like: yes\nComment: none").unwrap_err(),
            ReplyError::MissingField { what: "decision", field: "reblog".into() }
        );
        assert!(matches!(parse_decision("What a post!"), Err(ReplyError::Unreadable { .. })));
        assert!(matches!(parse_decision(r#"{"like": 3, "reblog": false, "comment": null}"#), Err(ReplyError::BadValue { .. })));
    }

    #[test]
    fn topics_and_posts_are_cleaned() {
        assert_eq!(
            parse_topics("Sure:\n1. Dog training tips\n2) **Marathon prep**\n- \"Shelter stories\"").unwrap(),
            ["Dog training tips", "Marathon prep", "Shelter stories"]
        );
        assert!(parse_topics("no list here").is_err());
        assert_eq!(clean_post("\"Hello world\"").unwrap(), "Hello world");
        assert_eq!(clean_post(&"x".repeat(600)).unwrap().len(), MAX_POST_CHARS);
        assert!(clean_post("  ").is_err());
        let p = post_prompt("me", "dogs", &["Paul Owens wrote The Dog Whisperer.".into()]);
        assert!(p.contains("Topic: dogs\n") && p.ends_with("What you know about it:\nPaul Owens wrote The Dog Whisperer.\n"));
        assert!(!post_prompt("me", "dogs", &[]).contains("What you know"));
    }
}
