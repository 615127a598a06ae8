//! Deciding on a whole feed in one model call: the batched alternative to
//! asking per post ([`super::decide`]), for runs where calls per agent-turn
//! are the cost (one call per agent-turn instead of one per post shown).
//! The persona items are retrieved with the feed's posts together as the
//! query, and the plan's quotas are stated in the prompt and enforced again
//! on the reply. Prompt: `prompts/sim/decide_feed.txt` (ours).
//!
//! The reply is one `N: like, reblog, comment: text` line per post reacted
//! to, or "none". A number outside the feed, or a reply with no such line
//! that is not "none", is an error.

use std::sync::OnceLock;

use regex::Regex;

use super::decide::{Decision, FeedPost};
use super::error::ReplyError;

const PROMPT: &str = include_str!("../../prompts/sim/decide_feed.txt");
const WHAT: &str = "feed decision";

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

/// One decision per post of a feed of `n` posts.
pub fn parse(reply: &str, n: usize) -> Result<Vec<Decision>, ReplyError> {
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
        let d = out.get_mut(k.wrapping_sub(1)).ok_or_else(|| ReplyError::BadValue {
            what: WHAT,
            field: "post number".into(),
            cause: format!("{k} is not a post of the feed (1-{n})"),
        })?;
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
        return Err(ReplyError::Unreadable { what: WHAT, cause: "no \"N: ...\" line and not \"none\"".into() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::ids::{AgentId, PostId};

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
        let feed = [FeedPost { id: PostId(1), author: AgentId(7), content: "Hi".into() }];
        let p = prompt("me", &feed, (1, 0, 2));
        assert!(p.contains("you like at most 1, reblog at most 0 and comment on at most 2") && p.contains("Posts:\n1. By user 7: Hi\n"));
    }
}
