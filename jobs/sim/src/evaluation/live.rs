//! What a run did in its last committed turns, for `some sim status` and
//! its live view: the actions applied per kind in each turn, and the posts
//! that drew the most likes, reblogs and comments in those turns.
//!
//! A browse is a row per post shown; it is counted once, like the stage
//! figures of [`super::health`] count it.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use some_schemas::sim::{ActionKind, ActionStatus, SimActionRow, SimPostRow};

/// One turn's actions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnCounts {
    pub turn: i64,
    /// Applied actions by kind (a browse once, however many posts it showed).
    pub applied: BTreeMap<ActionKind, u64>,
    /// Actions the platform refused.
    pub refused: u64,
}

impl TurnCounts {
    pub fn applied(&self, kind: ActionKind) -> u64 {
        self.applied.get(&kind).copied().unwrap_or(0)
    }
}

/// A post and what it drew in the turns looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BusyPost {
    pub post_id: i64,
    pub likes: u64,
    pub reblogs: u64,
    pub comments: u64,
    /// The post as `sim_posts` holds it (absent if it is not there).
    pub author_id: Option<i64>,
    pub author: Option<String>,
    pub turn: Option<i64>,
    pub content: Option<String>,
    /// Whether the post is itself a comment.
    pub is_comment: bool,
}

impl BusyPost {
    /// Likes, reblogs and comments.
    pub fn engagement(&self) -> u64 {
        self.likes + self.reblogs + self.comments
    }
}

/// The last committed turns of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Recent {
    /// In turn order; a turn without actions has a row of zeros.
    pub turns: Vec<TurnCounts>,
    /// Most engaged first, ties by post id.
    pub busiest: Vec<BusyPost>,
}

/// Counts `actions` (of the given turns; rows of other turns are left out)
/// and ranks the posts they engaged with, keeping the `top` busiest. The
/// posts' authors and texts are filled in by [`Recent::describe_posts`].
pub fn recent(turns: &[i64], actions: &[SimActionRow], top: usize) -> Recent {
    let mut counts: BTreeMap<i64, TurnCounts> = turns.iter().map(|&turn| (turn, TurnCounts { turn, ..TurnCounts::default() })).collect();
    let mut posts: HashMap<i64, BusyPost> = HashMap::new();
    for a in actions {
        let Some(c) = counts.get_mut(&a.turn) else { continue };
        let Some(kind) = ActionKind::parse(&a.action) else { continue };
        if kind == ActionKind::Browse && a.item != 0 {
            continue;
        }
        if ActionStatus::parse(&a.status) != Some(ActionStatus::Applied) {
            c.refused += 1;
            continue;
        }
        *c.applied.entry(kind).or_default() += 1;
        let Some(post_id) = a.post_id else { continue };
        if !matches!(kind, ActionKind::Like | ActionKind::Reblog | ActionKind::Comment) {
            continue;
        }
        let p = posts.entry(post_id).or_insert_with(|| BusyPost { post_id, ..BusyPost::default() });
        match kind {
            ActionKind::Like => p.likes += 1,
            ActionKind::Reblog => p.reblogs += 1,
            _ => p.comments += 1,
        }
    }
    let mut busiest: Vec<BusyPost> = posts.into_values().collect();
    busiest.sort_by_key(|p| (std::cmp::Reverse(p.engagement()), p.post_id));
    busiest.truncate(top);
    Recent { turns: counts.into_values().collect(), busiest }
}

impl Recent {
    /// The ids of the busiest posts, to read them from `sim_posts`.
    pub fn post_ids(&self) -> Vec<i64> {
        self.busiest.iter().map(|p| p.post_id).collect()
    }

    /// Fills in the busiest posts' authors (`names`: agent id to username)
    /// and texts.
    pub fn describe_posts(&mut self, posts: &[SimPostRow], names: &HashMap<i64, String>) {
        let by_id: HashMap<i64, &SimPostRow> = posts.iter().map(|p| (p.post_id, p)).collect();
        for b in &mut self.busiest {
            let Some(p) = by_id.get(&b.post_id) else { continue };
            b.author_id = Some(p.author_id);
            b.author = names.get(&p.author_id).cloned();
            b.turn = Some(p.turn);
            b.content = Some(p.content.clone());
            b.is_comment = p.parent_post_id.is_some();
        }
    }

    /// A table of the turns (a column per kind, then the refused) with a
    /// total row, and a line per busy post.
    pub fn render(&self, text_chars: usize) -> String {
        let (Some(first), Some(last)) = (self.turns.first(), self.turns.last()) else { return String::new() };
        let span = if first.turn == last.turn { format!("turn {}", first.turn) } else { format!("turns {}-{}", first.turn, last.turn) };
        let mut out = format!("actions applied in {span} (a browse counted once per feed):\n");
        let head: Vec<String> = ActionKind::ALL.iter().map(|k| format!("{:>9}", k.as_str())).collect();
        out.push_str(&format!("{:<6}{} {:>9}\n", "turn", head.concat(), "refused"));
        let row = |label: String, counts: &dyn Fn(ActionKind) -> u64, refused: u64| {
            let cells: Vec<String> = ActionKind::ALL.iter().map(|k| format!("{:>9}", counts(*k))).collect();
            format!("{label:<6}{} {refused:>9}\n", cells.concat())
        };
        for t in &self.turns {
            out.push_str(&row(t.turn.to_string(), &|k| t.applied(k), t.refused));
        }
        if self.turns.len() > 1 {
            let total = |k: ActionKind| self.turns.iter().map(|t| t.applied(k)).sum();
            out.push_str(&row("all".into(), &total, self.turns.iter().map(|t| t.refused).sum()));
        }
        if self.busiest.is_empty() {
            out.push_str(&format!("busiest posts of {span}: no post was liked, reblogged or commented on\n"));
            return out;
        }
        out.push_str(&format!("busiest posts of {span} (likes + reblogs + comments):\n"));
        for (i, b) in self.busiest.iter().enumerate() {
            let what = if b.is_comment { "comment" } else { "post" };
            let by = match (&b.author, b.author_id) {
                (Some(name), Some(id)) => format!(" by {name} (agent {id}, turn {})", b.turn.unwrap_or_default()),
                (None, Some(id)) => format!(" by agent {id} (turn {})", b.turn.unwrap_or_default()),
                _ => String::new(),
            };
            let text = b.content.as_deref().map_or(String::new(), |c| format!(": \"{}\"", cut(c, text_chars)));
            out.push_str(&format!(
                "{:>3}. {what} {}{by}: {} engagements ({} {}, {} {}, {} {}){text}\n",
                i + 1,
                b.post_id,
                b.engagement(),
                b.likes,
                plural(b.likes, "like"),
                b.reblogs,
                plural(b.reblogs, "reblog"),
                b.comments,
                plural(b.comments, "comment"),
            ));
        }
        out
    }
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 { word.to_string() } else { format!("{word}s") }
}

/// The text on one line, at most `n` characters (an ellipsis where cut).
fn cut(text: &str, n: usize) -> String {
    some_jobs::render::cut(&text.split_whitespace().collect::<Vec<_>>().join(" "), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(turn: i64, agent: i64, seq: i32, item: i32, kind: ActionKind, post: Option<i64>, applied: bool) -> SimActionRow {
        SimActionRow {
            turn,
            agent_id: agent,
            seq,
            item,
            action: kind.as_str().into(),
            post_id: post,
            target_agent_id: None,
            text: None,
            status: if applied { ActionStatus::Applied } else { ActionStatus::Failed }.as_str().into(),
            error: None,
            run_id: "r".into(),
        }
    }

    #[test]
    fn counts_a_browse_once_ranks_posts_by_engagement_and_leaves_out_other_turns() {
        use ActionKind::*;
        let rows = vec![
            action(4, 1, 0, 0, Browse, Some(10), true),
            action(4, 1, 0, 1, Browse, Some(11), true),
            action(4, 1, 1, 0, Like, Some(11), true),
            action(4, 2, 0, 0, Like, Some(10), true),
            action(5, 2, 1, 0, Comment, Some(10), true),
            action(5, 3, 0, 0, Reblog, Some(11), true),
            action(5, 3, 1, 0, Like, Some(12), false),
            action(3, 3, 0, 0, Like, Some(12), true),
        ];
        let mut r = recent(&[4, 5, 6], &rows, 2);
        assert_eq!(r.turns.iter().map(|t| t.turn).collect::<Vec<_>>(), [4, 5, 6]);
        assert_eq!((r.turns[0].applied(Browse), r.turns[0].applied(Like)), (1, 2));
        assert_eq!((r.turns[1].applied(Comment), r.turns[1].applied(Reblog), r.turns[1].refused), (1, 1, 1));
        assert_eq!(r.turns[2], TurnCounts { turn: 6, ..TurnCounts::default() });
        assert_eq!(r.post_ids(), [10, 11], "two engagements each, ties by id; the refused like and turn 3 do not count");
        let post = SimPostRow {
            post_id: 10,
            author_id: 7,
            turn: 0,
            content: "A long\nseed post about bread and mountains".into(),
            parent_post_id: None,
            topic: None,
            knowledge: None,
            run_id: "r".into(),
        };
        r.describe_posts(&[post], &HashMap::from([(7, "ada".to_string())]));
        let text = r.render(20);
        assert!(text.contains("actions applied in turns 4-6"), "{text}");
        assert!(text.contains("turn     browse     like   reblog  comment     post   follow   refused\n"), "{text}");
        assert!(text.contains("\n4             1        2        0        0        0        0         0\n"), "{text}");
        assert!(text.contains("\nall           1        2        1        1        0        0         1\n"), "{text}");
        assert!(
            text.contains("  1. post 10 by ada (agent 7, turn 0): 2 engagements (1 like, 0 reblogs, 1 comment): \"A long seed post ab…\""),
            "{text}"
        );
        assert!(text.contains("  2. post 11: 2 engagements (1 like, 1 reblog, 0 comments)\n"), "{text}");
        assert_eq!(recent(&[], &rows, 3).render(20), "", "no turn, nothing to show");
    }
}
