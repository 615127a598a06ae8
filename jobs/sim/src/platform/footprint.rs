//! What a platform holds, counted: where a long run's memory goes. The
//! platform keeps its whole history (every post with its text, who saw and
//! engaged with what), so it grows with the turns run; this says by how
//! much, part by part.

use std::fmt;

use super::Platform;
use super::sorted::SortedSet;

/// A platform's parts in heap bytes: the items' own sizes, vectors by
/// their capacity. The allocator's rounding and the B-trees' nodes (one
/// entry per agent, whatever the turns) are not counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Posts and comments.
    pub posts: usize,
    /// Their slots (ids, authors, turns, counts, pointers).
    pub slots: usize,
    pub texts: usize,
    /// Who liked and reblogged them.
    pub likes: usize,
    /// The posts' ids in order, for feeds.
    pub timeline: usize,
    /// Followees and followers.
    pub follows: usize,
    /// The posts each agent was shown.
    pub seen: usize,
    /// The posts each agent liked or reblogged.
    pub engaged: usize,
    /// The posts each agent wrote.
    pub authored: usize,
}

impl Footprint {
    pub fn bytes(&self) -> usize {
        let Footprint { posts: _, slots, texts, likes, timeline, follows, seen, engaged, authored } = *self;
        slots + texts + likes + timeline + follows + seen + engaged + authored
    }
}

/// Bytes in MB, for reading.
pub fn mb(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

impl fmt::Display for Footprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} posts and comments: slots {}, texts {}, likes and reblogs {}; timeline {}; follows {}; seen {}; engaged {}; authored {}",
            self.posts,
            mb(self.slots),
            mb(self.texts),
            mb(self.likes),
            mb(self.timeline),
            mb(self.follows),
            mb(self.seen),
            mb(self.engaged),
            mb(self.authored)
        )
    }
}

fn sets<K, T>(map: &std::collections::BTreeMap<K, SortedSet<T>>) -> usize {
    map.values().map(SortedSet::heap_bytes).sum()
}

impl Platform {
    /// Counts what the platform holds: a pass over every post and agent.
    pub fn footprint(&self) -> Footprint {
        let mut out = Footprint { slots: self.posts.heap_bytes(), ..Footprint::default() };
        for post in self.posts.iter().flatten() {
            out.posts += 1;
            out.texts += post.content.len();
            if let Some(e) = &post.engagement {
                out.likes += size_of_val(&**e) + e.likes.heap_bytes() + e.reblogs.heap_bytes();
            }
        }
        out.timeline = self.timeline.capacity() * size_of::<super::ids::PostId>();
        out.follows = sets(&self.following) + sets(&self.followers);
        out.seen = sets(&self.seen);
        out.engaged = sets(&self.engaged);
        out.authored = sets(&self.authored);
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::platform::{Action, AgentAction, Platform};
    use crate::{AgentId, PostId, Turn};

    #[test]
    fn the_footprint_counts_each_part_the_turns_add() {
        let mut p = Platform::new();
        (0..3).for_each(|a| p.register(AgentId(a)));
        let act = |agent, seq, action| AgentAction { agent: AgentId(agent), seq, action };
        p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "hello".into() }), act(0, 1, Action::Post { text: "world!".into() })]);
        let before = p.footprint();
        assert_eq!((before.posts, before.texts, before.likes, before.seen), (2, 11, 0, 0));
        assert!(before.slots >= 2 * size_of::<Option<crate::platform::Post>>() && before.timeline >= 16 && before.authored >= 8);
        p.apply_turn(
            Turn(1),
            vec![
                act(1, 0, Action::Browse { posts: vec![PostId(0), PostId(1)] }),
                act(1, 1, Action::Like { post: PostId(0) }),
                act(1, 2, Action::Comment { post: PostId(1), text: "nice".into() }),
                act(1, 3, Action::Follow { agent: AgentId(0) }),
            ],
        );
        let after = p.footprint();
        assert_eq!((after.posts, after.texts), (3, 15), "the comment is a post with its text");
        assert!(after.likes > 0 && after.seen >= 8 && after.engaged >= 4 && after.follows >= 8, "{after:?}");
        assert!(after.bytes() > before.bytes());
        assert!(after.to_string().starts_with("3 posts and comments: slots "), "{after}");
    }
}
