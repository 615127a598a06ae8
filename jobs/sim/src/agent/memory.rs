//! The memory module: what an agent remembers between turns, bounded so a
//! week-long run never outgrows a prompt.
//!
//! - Short-term memory is the action log: for each post the agent was
//!   shown, the post's author, its text (or its summary, once made) and
//!   what the agent did with it, at most [`SHORT_TERM_CAP`] entries (the
//!   oldest go first).
//! - Long-term memory holds the agent's own recent posts (for the T_p
//!   de-duplication, at most [`OWN_POSTS_CAP`]), the knowledge passages it
//!   adopted (at most [`KNOWLEDGE_CAP`]) and its reflection summaries (at
//!   most [`SUMMARIES_CAP`]). The paper's long-term memory is the persona's
//!   external knowledge (the passage store itself); the ids kept here say
//!   which passages the agent has used.
//!
//! The caps are ours. At 24 turns a day and the paper's feed sizes, 200
//! entries hold about two days of browsing, the span a reflection reads.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use some_schemas::sim::ActionKind;

use crate::platform::ids::{AgentId, PostId, Turn};

pub const SHORT_TERM_CAP: usize = 200;
pub const OWN_POSTS_CAP: usize = 50;
pub const KNOWLEDGE_CAP: usize = 50;
pub const SUMMARIES_CAP: usize = 14;

/// What the agent did with one post it was shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub turn: Turn,
    pub post: PostId,
    pub author: AgentId,
    /// The post's text, replaced by its summary when reflection made one.
    pub text: String,
    pub summarised: bool,
    /// Like, reblog and/or comment; empty when only browsed.
    pub actions: Vec<ActionKind>,
    pub comment: Option<String>,
}

impl Entry {
    pub fn engaged(&self) -> bool {
        !self.actions.is_empty()
    }
}

/// One agent's memory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub short_term: VecDeque<Entry>,
    pub own_posts: VecDeque<String>,
    pub knowledge: VecDeque<u32>,
    pub summaries: VecDeque<String>,
    pub last_reflection: Option<Turn>,
}

fn push_capped<T>(queue: &mut VecDeque<T>, item: T, cap: usize) {
    queue.push_back(item);
    while queue.len() > cap {
        queue.pop_front();
    }
}

impl Memory {
    pub fn remember(&mut self, entry: Entry) {
        push_capped(&mut self.short_term, entry, SHORT_TERM_CAP);
    }
    pub fn remember_post(&mut self, text: String) {
        push_capped(&mut self.own_posts, text, OWN_POSTS_CAP);
    }
    pub fn remember_knowledge(&mut self, passage: u32) {
        if !self.knowledge.contains(&passage) {
            push_capped(&mut self.knowledge, passage, KNOWLEDGE_CAP);
        }
    }
    pub fn remember_summary(&mut self, summary: String) {
        push_capped(&mut self.summaries, summary, SUMMARIES_CAP);
    }

    /// Entries with a like, reblog or comment made after `since` (all when `None`).
    pub fn engaged_since(&self, since: Option<Turn>) -> impl Iterator<Item = (usize, &Entry)> {
        self.short_term.iter().enumerate().filter(move |(_, e)| e.engaged() && since.is_none_or(|s| e.turn > s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(turn: u32, actions: Vec<ActionKind>) -> Entry {
        Entry {
            turn: Turn(turn),
            post: PostId(turn.into()),
            author: AgentId(1),
            text: "t".into(),
            summarised: false,
            actions,
            comment: None,
        }
    }

    #[test]
    fn memory_is_bounded_and_drops_the_oldest() {
        let mut m = Memory::default();
        for t in 0..(SHORT_TERM_CAP as u32 + 5) {
            m.remember(entry(t, vec![]));
        }
        assert_eq!(m.short_term.len(), SHORT_TERM_CAP);
        assert_eq!(m.short_term.front().unwrap().turn, Turn(5));
        for i in 0..60 {
            m.remember_post(format!("p{i}"));
            m.remember_knowledge(i % 55);
        }
        assert_eq!((m.own_posts.len(), m.own_posts.front().unwrap().as_str()), (OWN_POSTS_CAP, "p10"));
        assert_eq!(m.knowledge.len(), KNOWLEDGE_CAP);
        (0..20).for_each(|i| m.remember_summary(i.to_string()));
        assert_eq!(m.summaries.len(), SUMMARIES_CAP);
    }

    #[test]
    fn engaged_entries_since_the_last_reflection() {
        let mut m = Memory::default();
        m.remember(entry(1, vec![ActionKind::Like]));
        m.remember(entry(2, vec![]));
        m.remember(entry(3, vec![ActionKind::Comment]));
        assert_eq!(m.engaged_since(None).map(|(_, e)| e.turn.0).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(m.engaged_since(Some(Turn(1))).map(|(i, _)| i).collect::<Vec<_>>(), [2]);
    }
}
