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
/// last reflected. A step is sent the part it needs ([`Held::for_step`]),
/// so a turn's messages do not grow with the turns already run; a step's
/// recall keeps the texts of what it reads and writes.
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

/// What the coordinator holds of an agent's [`Recall`] between turns, for
/// every agent: no post's text (the platform holds every post's, and
/// [`Held::for_step`] reads back what a step needs: the engaged entries'
/// for a reflection, the agent's latest posts for a step that posts), and
/// each engaged entry packed. A million agents hold some four million
/// engaged entries between reflections: 64 bytes each here, against 104
/// and an allocation for its actions as an [`Entry`] with its place.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    read: u64,
    engaged: Vec<(u64, HeldEntry)>,
    knowledge: VecDeque<u32>,
    pub last_reflection: Option<Turn>,
}

/// An engaged [`Entry`] as a [`Held`] keeps it: its post's text left to
/// the platform (a summary, which the platform does not hold, kept), its
/// actions as one bit per [`ActionKind`]. A step records each action of an
/// entry once, in [`ActionKind::ALL`]'s order, so the bits give them back
/// as recorded.
#[derive(Debug, Clone, PartialEq)]
struct HeldEntry {
    turn: Turn,
    author: AgentId,
    post: PostId,
    actions: u8,
    summary: Option<Box<str>>,
    comment: Option<Box<str>>,
}

fn action_bit(kind: ActionKind) -> u8 {
    1 << ActionKind::ALL.iter().position(|k| *k == kind).unwrap_or_default()
}

impl HeldEntry {
    /// The entry a step is sent, its text read back with `text_of`.
    fn entry<'p>(&self, text_of: impl Fn(PostId) -> Option<&'p str>) -> Entry {
        let text = match &self.summary {
            Some(summary) => summary.to_string(),
            None => text_of(self.post).unwrap_or(REMOVED_POST).to_string(),
        };
        Entry {
            turn: self.turn,
            post: self.post,
            author: self.author,
            text,
            summarised: self.summary.is_some(),
            actions: ActionKind::ALL.into_iter().filter(|k| self.actions & action_bit(*k) != 0).collect(),
            comment: self.comment.as_deref().map(str::to_string),
        }
    }
}

/// An engaged entry as a memory that steps read holds it: an [`Entry`] in a
/// [`Recall`], a [`HeldEntry`] in a [`Held`].
trait EngagedEntry {
    fn hold(entry: &Entry) -> Self;
    /// When it was read, and which post.
    fn read_at(&self) -> (Turn, PostId);
    fn summarise(&mut self, summary: &str);
}

impl EngagedEntry for Entry {
    fn hold(entry: &Entry) -> Entry {
        entry.clone()
    }
    fn read_at(&self) -> (Turn, PostId) {
        (self.turn, self.post)
    }
    fn summarise(&mut self, summary: &str) {
        self.text = summary.to_string();
        self.summarised = true;
    }
}

impl EngagedEntry for HeldEntry {
    fn hold(e: &Entry) -> HeldEntry {
        HeldEntry {
            turn: e.turn,
            author: e.author,
            post: e.post,
            actions: e.actions.iter().fold(0, |bits, k| bits | action_bit(*k)),
            summary: e.summarised.then(|| e.text.as_str().into()),
            comment: e.comment.as_deref().map(Into::into),
        }
    }
    fn read_at(&self) -> (Turn, PostId) {
        (self.turn, self.post)
    }
    fn summarise(&mut self, summary: &str) {
        self.summary = Some(summary.into());
    }
}

/// Makes `change` to the engaged entries (each with its short-term place)
/// of a memory that has read `read` entries: what [`Recall`] and [`Held`]
/// both do, each with its own form of entry.
fn apply_engaged<E: EngagedEntry>(read: &mut u64, engaged: &mut Vec<(u64, E)>, last_reflection: &mut Option<Turn>, change: &Remembered) {
    match change {
        Remembered::Read(entry) => {
            if entry.engaged() {
                // Held for every agent until it reflects: no doubling slack.
                crate::platform::sorted::make_room(engaged);
                engaged.push((*read, E::hold(entry)));
            }
            *read += 1;
            let kept_from = read.saturating_sub(SHORT_TERM_CAP as u64);
            engaged.retain(|(at, _)| *at >= kept_from);
        }
        Remembered::Summarised { turn, post, text } => {
            if let Some((_, e)) = engaged.iter_mut().find(|(_, e)| e.read_at() == (*turn, *post)) {
                e.summarise(text);
            }
        }
        Remembered::Reflected { turn, .. } => {
            *last_reflection = Some(*turn);
            engaged.retain(|(_, e)| e.read_at().0 > *turn);
        }
        Remembered::Posted { .. } | Remembered::Adopted { .. } => {}
    }
}

impl Held {
    /// What a step is sent: the own posts (`own_posts`, oldest first) and
    /// knowledge when it posts, the engaged entries when it reflects, their
    /// texts read back with `text_of` (a post removed since shows
    /// [`REMOVED_POST`]).
    pub fn for_step<'p>(
        &self,
        posting: bool,
        reflecting: bool,
        text_of: impl Fn(PostId) -> Option<&'p str>,
        own_posts: impl FnOnce() -> VecDeque<String>,
    ) -> Recall {
        Recall {
            read: self.read,
            engaged: if reflecting { self.engaged.iter().map(|(at, e)| (*at, e.entry(&text_of))).collect() } else { Vec::new() },
            own_posts: if posting { own_posts() } else { VecDeque::new() },
            knowledge: if posting { self.knowledge.clone() } else { VecDeque::new() },
            last_reflection: self.last_reflection,
        }
    }

    /// Heap bytes held: the entries (by capacity), summaries, comments and
    /// knowledge.
    pub fn heap_bytes(&self) -> usize {
        let texts = |e: &HeldEntry| e.summary.as_deref().map_or(0, str::len) + e.comment.as_deref().map_or(0, str::len);
        self.engaged.capacity() * size_of::<(u64, HeldEntry)>()
            + self.engaged.iter().map(|(_, e)| texts(e)).sum::<usize>()
            + self.knowledge.capacity() * size_of::<u32>()
    }
}

impl From<&Memory> for Held {
    fn from(m: &Memory) -> Held {
        Held {
            read: m.short_term.len() as u64,
            engaged: m.engaged_since(m.last_reflection).map(|(i, e)| (i as u64, HeldEntry::hold(e))).collect(),
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
        apply_engaged(&mut self.read, &mut self.engaged, &mut self.last_reflection, change);
        match change {
            Remembered::Posted { text } => keep_post(&mut self.own_posts, text.clone()),
            Remembered::Adopted { passage } => keep_knowledge(&mut self.knowledge, *passage),
            _ => {}
        }
    }

    fn replace(&mut self, whole: Memory) {
        *self = Recall::from(&whole);
    }
}

impl Remembers for Held {
    fn apply(&mut self, change: &Remembered) {
        apply_engaged(&mut self.read, &mut self.engaged, &mut self.last_reflection, change);
        if let Remembered::Adopted { passage } = change {
            keep_knowledge(&mut self.knowledge, *passage);
        }
    }

    fn replace(&mut self, whole: Memory) {
        *self = Held::from(&whole);
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
    fn a_held_entry_is_packed() {
        assert!(size_of::<(u64, HeldEntry)>() <= 64, "{} bytes", size_of::<(u64, HeldEntry)>());
    }

    #[test]
    fn a_held_recall_keeps_no_post_texts_and_gets_them_back_for_a_reflection() {
        let mut held = Held::default();
        let liked = |post: u64| Entry { post: PostId(post), text: format!("text of post {post}"), ..entry(1, vec![ActionKind::Like]) };
        let commented = Entry {
            actions: vec![ActionKind::Like, ActionKind::Reblog, ActionKind::Comment],
            comment: Some("well said".into()),
            ..liked(4)
        };
        [liked(1), liked(2), liked(3), commented.clone()].into_iter().for_each(|e| held.apply(&Remembered::Read(e)));
        held.apply(&Remembered::Summarised { turn: Turn(1), post: PostId(3), text: "a summary".into() });
        let summaries: Vec<_> = held.engaged.iter().map(|(_, e)| e.summary.as_deref()).collect();
        assert_eq!(summaries, [None, None, Some("a summary"), None], "only a summary's text is held");
        let platform = |p: PostId| match p.0 {
            1 => Some("text of post 1"),
            4 => Some("text of post 4"),
            _ => None,
        };
        let sent = held.for_step(false, true, platform, VecDeque::new);
        let texts: Vec<_> = sent.engaged.iter().map(|(_, e)| e.text.as_str()).collect();
        assert_eq!(texts, ["text of post 1", REMOVED_POST, "a summary", "text of post 4"]);
        assert_eq!(sent.engaged[3], (3, commented), "actions and comment come back as recorded");
        assert!(sent.engaged[2].1.summarised && !sent.engaged[0].1.summarised);
        assert!(held.for_step(true, false, platform, VecDeque::new).engaged.is_empty(), "only a reflection is sent the entries");
        let mut whole = Memory::default();
        [liked(1), liked(2)].into_iter().for_each(|e| whole.remember(e));
        assert_eq!(
            Held::from(&whole).for_step(false, true, platform, VecDeque::new).engaged,
            sent.engaged[..2],
            "a whole memory is held alike"
        );
    }

    #[test]
    fn what_steps_read_follows_the_whole_memory_through_caps_and_reflections() {
        let (mut whole, mut recall, mut held) = (Memory::default(), Recall::default(), Held::default());
        let posts: Vec<String> = (0..700).map(|i| format!("post {i}")).collect();
        let text_of = |p: PostId| posts.get(p.0 as usize).map(String::as_str);
        for i in 0..700u32 {
            let turn = i / 10;
            let mut changes = vec![Remembered::Read(Entry {
                turn: Turn(turn),
                post: PostId(u64::from(i)),
                author: AgentId(i % 13),
                text: format!("post {i}"),
                summarised: false,
                actions: match i % 7 {
                    0 => vec![ActionKind::Like],
                    3 => vec![ActionKind::Reblog, ActionKind::Comment],
                    _ => vec![],
                },
                comment: (i % 7 == 3).then(|| format!("comment {i}")),
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
                recall.apply(c);
                held.apply(c);
            }
            // Places differ: a whole memory's count from its oldest entry kept.
            let expected = Recall::from(&whole);
            let entries = |r: &Recall| r.engaged.iter().map(|(_, e)| e.clone()).collect::<Vec<_>>();
            assert_eq!(entries(&recall), entries(&expected), "engaged entries after read {i}");
            assert_eq!(
                (&recall.own_posts, &recall.knowledge, recall.last_reflection),
                (&expected.own_posts, &expected.knowledge, expected.last_reflection)
            );
            let sent = held.for_step(true, true, text_of, || expected.own_posts.clone());
            assert_eq!((sent.read, &sent.engaged), (recall.read, &recall.engaged), "a held recall's entries after read {i}");
            assert_eq!((&sent.knowledge, sent.last_reflection), (&expected.knowledge, expected.last_reflection));
        }
        assert!(whole.short_term.len() == SHORT_TERM_CAP && !recall.engaged.is_empty());
        // A row written before steps recorded changes holds the whole memory.
        let (mut from_row, mut recall_from_row) = (Memory::default(), Recall::default());
        let stored = serde_json::to_string(&whole).unwrap();
        from_row.absorb(&stored).unwrap();
        recall_from_row.absorb(&stored).unwrap();
        assert_eq!((from_row, recall_from_row.engaged.len()), (whole, recall.engaged.len()));
        assert!(Memory::default().absorb("{\"short_term\": 3}").is_err(), "a memory that does not read is an error");
    }
}
