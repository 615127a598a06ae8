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

/// The own recent posts, as [`Memory`] and [`Recall`] both keep them.
fn keep_post(posts: &mut VecDeque<String>, text: String) {
    push_capped(posts, text, OWN_POSTS_CAP);
}

/// The knowledge passages used, each once, as [`Memory`] and [`Recall`] both keep them.
fn keep_knowledge(knowledge: &mut VecDeque<u32>, passage: u32) {
    if !knowledge.contains(&passage) {
        push_capped(knowledge, passage, KNOWLEDGE_CAP);
    }
}

impl Memory {
    pub fn remember(&mut self, entry: Entry) {
        push_capped(&mut self.short_term, entry, SHORT_TERM_CAP);
    }
    pub fn remember_post(&mut self, text: String) {
        keep_post(&mut self.own_posts, text);
    }
    pub fn remember_knowledge(&mut self, passage: u32) {
        keep_knowledge(&mut self.knowledge, passage);
    }
    pub fn remember_summary(&mut self, summary: String) {
        push_capped(&mut self.summaries, summary, SUMMARIES_CAP);
    }

    /// Entries with a like, reblog or comment made after `since` (all when `None`).
    pub fn engaged_since(&self, since: Option<Turn>) -> impl Iterator<Item = (usize, &Entry)> {
        self.short_term.iter().enumerate().filter(move |(_, e)| e.engaged() && since.is_none_or(|s| e.turn > s))
    }
}

/// What steps read of an agent's memory, kept apart from the rest: the
/// entries engaged with since the last reflection (while short-term memory
/// still holds them), the own recent posts, the knowledge used and when it
/// last reflected. The coordinator holds this for every agent and sends a
/// step the part it needs ([`Recall::for_step`]), so neither its memory nor
/// a turn's messages grow with the turns already run.
///
/// The coordinator's recalls hold no copy of the posts' texts (it calls
/// [`Recall::forget_post_texts`] on each after taking a step's changes in;
/// summaries stay): the platform holds every post's text, and a million
/// agents' copies of what they engaged with and wrote would be gigabytes.
/// [`Recall::for_step`] puts them back for the steps that read them: the
/// engaged entries' for a reflection, the own posts for a step that posts.
/// A step's own recall keeps the texts of what it reads and writes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recall {
    /// Entries ever read: the short-term place of the next one.
    pub read: u64,
    /// The entries engaged with since the last reflection that short-term
    /// memory still holds, each with its place.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engaged: Vec<(u64, Entry)>,
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub own_posts: VecDeque<String>,
    #[serde(default, skip_serializing_if = "VecDeque::is_empty")]
    pub knowledge: VecDeque<u32>,
    pub last_reflection: Option<Turn>,
}

impl Recall {
    /// What a step is sent: the own posts (from `own_posts`, oldest first)
    /// and knowledge when it posts, the engaged entries when it reflects,
    /// their forgotten texts read back with `text_of` (a post removed since
    /// shows [`REMOVED_POST`]).
    pub fn for_step<'p>(
        &self,
        posting: bool,
        reflecting: bool,
        text_of: impl Fn(PostId) -> Option<&'p str>,
        own_posts: impl FnOnce() -> VecDeque<String>,
    ) -> Recall {
        let recalled = |(at, e): &(u64, Entry)| {
            let mut e = e.clone();
            if e.text.is_empty() {
                e.text = text_of(e.post).unwrap_or(REMOVED_POST).to_string();
            }
            (*at, e)
        };
        Recall {
            read: self.read,
            engaged: if reflecting { self.engaged.iter().map(recalled).collect() } else { Vec::new() },
            own_posts: if posting { own_posts() } else { VecDeque::new() },
            knowledge: if posting { self.knowledge.clone() } else { VecDeque::new() },
            last_reflection: self.last_reflection,
        }
    }

    /// Drops the engaged entries' copies of their posts' texts (summaries
    /// stay) and the own posts. A post's text is never empty (the platform
    /// refuses it), so an empty one is a forgotten one; the own posts are
    /// the agent's latest posts on the platform, which [`Recall::for_step`]
    /// is given (an intervention's post under the agent's name counts
    /// there, a removed one does not).
    pub fn forget_post_texts(&mut self) {
        self.engaged.iter_mut().filter(|(_, e)| !e.summarised).for_each(|(_, e)| e.text = String::new());
        self.own_posts = VecDeque::new();
    }
}

/// What a reflection is shown of an entry whose post was removed since.
pub const REMOVED_POST: &str = "[this post was removed]";

impl From<&Memory> for Recall {
    fn from(m: &Memory) -> Recall {
        Recall {
            read: m.short_term.len() as u64,
            engaged: m.engaged_since(m.last_reflection).map(|(i, e)| (i as u64, e.clone())).collect(),
            own_posts: m.own_posts.clone(),
            knowledge: m.knowledge.clone(),
            last_reflection: m.last_reflection,
        }
    }
}

/// A memory that steps' changes are made to: the whole [`Memory`], or the
/// [`Recall`] that steps read.
pub trait Remembers: Default {
    /// Makes one change a step recorded.
    fn apply(&mut self, change: &Remembered);

    /// Takes the whole memory as rows written before steps recorded their
    /// changes held it.
    fn replace(&mut self, whole: Memory);

    /// Takes in a step's stored memory ([`Stored::read`]).
    fn absorb(&mut self, stored: &str) -> serde_json::Result<()> {
        self.take(Stored::read(stored)?);
        Ok(())
    }

    /// Takes in a step's stored memory, already read.
    fn take(&mut self, stored: Stored) {
        match stored {
            Stored::Changes(changes) => changes.iter().for_each(|c| self.apply(c)),
            Stored::Whole(memory) => self.replace(memory),
        }
    }
}

/// A step's stored memory: its list of changes, or (as rows written before
/// steps recorded changes) the whole memory after it. Read apart from
/// being taken in, so many steps' can be read at once.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    Changes(Vec<Remembered>),
    Whole(Memory),
}

impl Stored {
    pub fn read(stored: &str) -> serde_json::Result<Stored> {
        if stored.trim_start().starts_with('[') {
            Ok(Stored::Changes(serde_json::from_str(stored)?))
        } else {
            Ok(Stored::Whole(serde_json::from_str(stored)?))
        }
    }
}

impl Remembers for Memory {
    fn apply(&mut self, change: &Remembered) {
        match change {
            Remembered::Read(entry) => self.remember(entry.clone()),
            Remembered::Posted { text } => self.remember_post(text.clone()),
            Remembered::Adopted { passage } => self.remember_knowledge(*passage),
            Remembered::Summarised { turn, post, text } => {
                if let Some(e) = self.short_term.iter_mut().find(|e| e.turn == *turn && e.post == *post) {
                    e.text = text.clone();
                    e.summarised = true;
                }
            }
            Remembered::Reflected { turn, summary } => {
                self.last_reflection = Some(*turn);
                if let Some(s) = summary {
                    self.remember_summary(s.clone());
                }
            }
        }
    }

    fn replace(&mut self, whole: Memory) {
        *self = whole;
    }
}

impl Remembers for Recall {
    fn apply(&mut self, change: &Remembered) {
        match change {
            Remembered::Read(entry) => {
                if entry.engaged() {
                    // Held for every agent until it reflects: no doubling slack.
                    crate::platform::sorted::make_room(&mut self.engaged);
                    self.engaged.push((self.read, entry.clone()));
                }
                self.read += 1;
                let kept_from = self.read.saturating_sub(SHORT_TERM_CAP as u64);
                self.engaged.retain(|(at, _)| *at >= kept_from);
            }
            Remembered::Posted { text } => keep_post(&mut self.own_posts, text.clone()),
            Remembered::Adopted { passage } => keep_knowledge(&mut self.knowledge, *passage),
            Remembered::Summarised { turn, post, text } => {
                if let Some((_, e)) = self.engaged.iter_mut().find(|(_, e)| e.turn == *turn && e.post == *post) {
                    e.text = text.clone();
                    e.summarised = true;
                }
            }
            Remembered::Reflected { turn, .. } => {
                self.last_reflection = Some(*turn);
                self.engaged.retain(|(_, e)| e.turn > *turn);
            }
        }
    }

    fn replace(&mut self, whole: Memory) {
        *self = Recall::from(&whole);
    }
}

/// One change a step makes to its agent's memory. A step records these in
/// order; [`Remembers::apply`] makes them, on the coordinator and on replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum Remembered {
    /// A post shown, and what the agent did with it.
    Read(Entry),
    /// A post the agent wrote.
    Posted { text: String },
    /// A knowledge passage a post used.
    Adopted { passage: u32 },
    /// The summary that replaces the text of the entry read at `turn` of `post`.
    Summarised { turn: Turn, post: PostId, text: String },
    /// A reflection at `turn`, with its note when it got that far.
    Reflected { turn: Turn, summary: Option<String> },
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

    #[test]
    fn a_held_recall_keeps_no_post_texts_and_gets_them_back_for_a_reflection() {
        let mut held = Recall::default();
        let liked = |post: u64| Entry { post: PostId(post), text: format!("text of post {post}"), ..entry(1, vec![ActionKind::Like]) };
        [liked(1), liked(2), liked(3)].into_iter().for_each(|e| held.apply(&Remembered::Read(e)));
        held.apply(&Remembered::Summarised { turn: Turn(1), post: PostId(3), text: "a summary".into() });
        assert_eq!(held.engaged[0].1.text, "text of post 1", "a step's recall keeps what it reads");
        held.forget_post_texts();
        assert!(held.engaged.iter().take(2).all(|(_, e)| e.text.is_empty()), "{:?}", held.engaged);
        let platform = |p: PostId| (p.0 == 1).then_some("text of post 1");
        let texts = |r: &Recall| r.engaged.iter().map(|(_, e)| e.text.clone()).collect::<Vec<_>>();
        assert_eq!(texts(&held.for_step(false, true, platform, VecDeque::new)), ["text of post 1", REMOVED_POST, "a summary"]);
        assert!(held.for_step(true, false, platform, VecDeque::new).engaged.is_empty(), "only a reflection is sent the entries");
        let mut whole = Memory::default();
        [liked(1), liked(2)].into_iter().for_each(|e| whole.remember(e));
        assert_eq!(
            texts(&Recall::from(&whole).for_step(false, true, |_| None, VecDeque::new)),
            ["text of post 1", "text of post 2"],
            "texts held are kept"
        );
    }

    #[test]
    fn what_steps_read_follows_the_whole_memory_through_caps_and_reflections() {
        let (mut whole, mut held) = (Memory::default(), Recall::default());
        for i in 0..700u32 {
            let turn = i / 10;
            let mut changes = vec![Remembered::Read(Entry {
                turn: Turn(turn),
                post: PostId(u64::from(i)),
                author: AgentId(i % 13),
                text: format!("post {i}"),
                summarised: false,
                actions: if i % 7 == 0 { vec![ActionKind::Like] } else { vec![] },
                comment: None,
            })];
            if i % 9 == 0 {
                changes.push(Remembered::Posted { text: format!("mine {i}") });
                changes.push(Remembered::Adopted { passage: i % 60 });
            }
            if i % 250 == 249 {
                changes.push(Remembered::Summarised { turn: Turn(turn), post: PostId(u64::from(i - 6)), text: "short".into() });
                changes.push(Remembered::Reflected { turn: Turn(turn), summary: Some(format!("day {turn}")) });
            }
            for c in &changes {
                whole.apply(c);
                held.apply(c);
            }
            let expected = Recall::from(&whole);
            let entries = |r: &Recall| r.engaged.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
            assert_eq!(entries(&held), entries(&expected), "engaged entries after read {i}");
            assert_eq!(
                (&held.own_posts, &held.knowledge, held.last_reflection),
                (&expected.own_posts, &expected.knowledge, expected.last_reflection)
            );
        }
        assert!(whole.short_term.len() == SHORT_TERM_CAP && !held.engaged.is_empty());
        // A row written before steps recorded changes holds the whole memory.
        let (mut from_row, mut recall_from_row) = (Memory::default(), Recall::default());
        let stored = serde_json::to_string(&whole).unwrap();
        from_row.absorb(&stored).unwrap();
        recall_from_row.absorb(&stored).unwrap();
        assert_eq!((from_row, recall_from_row.engaged.len()), (whole, held.engaged.len()));
        assert!(Memory::default().absorb("{\"short_term\": 3}").is_err(), "a memory that does not read is an error");
    }
}
