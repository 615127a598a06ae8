//! mastodon_digest feeds for many viewers at once, with the same result as
//! [`crate::feed::feed`] with [`MastodonDigest`], at a fraction of the cost.
//!
//! A post's digest score does not depend on who looks at it, so the index
//! scores and sorts the turn's candidates once; a viewer's feed is that
//! list minus the viewer's own, engaged and seen posts. The percentile of
//! the viewer's remaining scores is read off the sorted list by rank
//! (skipping the excluded ranks), so a feed costs time in the number of
//! posts the viewer has seen and engaged with, not in the number of
//! candidates. Only the local timeline is indexed: a home timeline differs
//! per viewer; build it with [`crate::feed::feed`].
//!
//! `feed_index_matches_the_generic_feed` checks the two paths agree on
//! every viewer of a random platform, for every threshold.

use super::MastodonDigest;
use crate::feed::{Authors, FeedSettings, Ranked, Timeline};
use crate::platform::Platform;
use crate::platform::ids::{AgentId, PostId, Turn};

#[derive(Debug, Clone, Copy)]
struct Scored {
    post: PostId,
    score: f64,
}

/// [`DigestIndex::rank`]'s mark for a post that is not a candidate.
const UNRANKED: u32 = u32::MAX;

/// The turn's candidates, scored and sorted best first.
#[derive(Debug, Clone)]
pub struct DigestIndex {
    ranker: MastodonDigest,
    limit: usize,
    drop_seen: bool,
    sorted: Vec<Scored>,
    /// Each post's place in `sorted`, by post id (ids are dense);
    /// [`UNRANKED`] for comments and posts that are not candidates.
    rank: Vec<u32>,
}

impl DigestIndex {
    /// Indexes the candidates of turn `now`; `None` for a home timeline, and
    /// while an account is boosted (its posts go first in every feed, which
    /// the generic path does).
    ///
    /// Most posts score 0 (no engagement, or an author without
    /// followers), and those go last in the order of [`crate::feed::sort_ranked`] by
    /// turn then id, newest first: the order they were posted in, reversed.
    /// So only the posts that score sort, and a turn's index costs time in
    /// the engaged posts' number, plus one pass over the posts.
    pub fn build(
        platform: &Platform,
        ranker: MastodonDigest,
        now: Turn,
        settings: &FeedSettings,
        authors: Option<&Authors>,
    ) -> Option<DigestIndex> {
        if settings.timeline != Timeline::Local || !platform.boosted().is_empty() {
            return None;
        }
        let since = Turn(settings.look_back_turns.map_or(0, |n| now.0.saturating_sub(n)));
        let (mut scoring, mut zero): (Vec<_>, Vec<_>) = platform
            .posts_since(since)
            .filter(|p| p.turn < now && !platform.is_muted(p.author) && authors.is_none_or(|a| a.contains(p.author)))
            .map(|p| {
                let (reblogs, likes, replies) = (p.reblogs().len() as i64, p.likes().len() as i64, i64::from(p.replies));
                // Without engagement every scorer gives 0, whatever the
                // author's followers: most posts skip that look-up.
                let score = if reblogs == 0 && likes == 0 && replies == 0 {
                    0.0
                } else {
                    ranker.scorer.score(reblogs, likes, replies, platform.followers_count(p.author) as i64)
                };
                (Scored { post: p.id, score }, p.turn)
            })
            .partition(|(s, _)| s.score > 0.0);
        // The order of `sort_ranked`: score, then newer, then higher id (ids
        // are unique, so an unstable sort gives the same order).
        let order =
            |(a, ta): &(Scored, Turn), (b, tb): &(Scored, Turn)| b.score.total_cmp(&a.score).then(tb.cmp(ta)).then(b.post.cmp(&a.post));
        scoring.sort_unstable_by(order);
        zero.reverse();
        if !zero.is_sorted_by(|a, b| order(a, b).is_le()) {
            // Turns applied out of order: no run does that, a hand-made platform may.
            zero.sort_unstable_by(order);
        }
        let sorted: Vec<Scored> = scoring.into_iter().chain(zero).map(|(s, _)| s).collect();
        let ids_end = platform.posts().next_back().map_or(0, |p| p.id.0 as usize + 1);
        let mut rank = vec![UNRANKED; ids_end];
        sorted.iter().enumerate().for_each(|(i, s)| rank[s.post.0 as usize] = i as u32);
        Some(DigestIndex { ranker, limit: settings.limit, drop_seen: settings.drop_seen, sorted, rank })
    }

    /// The place of `post` in the sorted candidates, if it is one.
    fn place(&self, post: PostId) -> Option<usize> {
        self.rank.get(post.0 as usize).filter(|r| **r != UNRANKED).map(|r| *r as usize)
    }

    pub fn len(&self) -> usize {
        self.sorted.len()
    }
    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The feed of `viewer`: what [`crate::feed::feed`] returns for it
    /// (unread posts, or the posts shown before once none is left).
    pub fn feed(&self, platform: &Platform, viewer: AgentId) -> Vec<Ranked> {
        let mut excluded: Vec<usize> = platform.posts_by(viewer).filter_map(|p| self.place(p)).collect();
        excluded.extend(platform.engaged_posts(viewer).filter_map(|p| self.place(p)));
        let mut unread = excluded.clone();
        if self.drop_seen {
            unread.extend(platform.seen_posts(viewer).filter_map(|p| self.place(p)));
        }
        for mut excluded in [unread, excluded] {
            excluded.sort_unstable();
            excluded.dedup();
            if excluded.len() < self.sorted.len() {
                return self.feed_without(&excluded);
            }
        }
        Vec::new()
    }

    /// The best posts but those at the sorted positions `excluded`
    /// (ascending, fewer than all).
    fn feed_without(&self, excluded: &[usize]) -> Vec<Ranked> {
        let remaining = self.sorted.len() - excluded.len();
        // The score at descending position `d` among the remaining posts.
        let at = |d: usize| -> f64 {
            let mut g = d;
            for e in excluded {
                if *e <= g {
                    g += 1;
                } else {
                    break;
                }
            }
            self.sorted[g].score
        };
        let min = match self.ranker.threshold {
            None => f64::NEG_INFINITY,
            Some(t) => {
                // `score_at_percentile` over the ascending remaining scores.
                let idx = t.percentile() / 100.0 * (remaining - 1) as f64;
                let j = idx.floor() as usize;
                let asc = |i: usize| at(remaining - 1 - i);
                if idx == j as f64 || j + 1 >= remaining {
                    asc(j.min(remaining - 1))
                } else {
                    let (w0, w1) = ((j + 1) as f64 - idx, idx - j as f64);
                    (asc(j) * w0 + asc(j + 1) * w1) / (w0 + w1)
                }
            }
        };
        let mut out = Vec::with_capacity(self.limit);
        let mut skip = excluded.iter().peekable();
        for (i, s) in self.sorted.iter().enumerate() {
            if out.len() == self.limit || s.score < min {
                break;
            }
            if skip.peek() == Some(&&i) {
                skip.next();
                continue;
            }
            out.push(Ranked { post: s.post, score: s.score });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};

    use super::*;
    use crate::feed::feed;
    use crate::feed::rankers::mastodon_digest::Threshold;
    use crate::platform::{Action, AgentAction};

    fn random_platform(seed: u64) -> Platform {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut p = Platform::new();
        (0..30).for_each(|a| p.register(AgentId(a)));
        let mut posts = 0u64;
        for t in 0..40 {
            let mut actions = Vec::new();
            for a in 0..30u32 {
                let mut seq = 0;
                let mut act = |action| {
                    actions.push(AgentAction { agent: AgentId(a), seq, action });
                    seq += 1;
                };
                if rng.random::<f64>() < 0.3 {
                    act(Action::Post { text: format!("post {t} {a}") });
                }
                for _ in 0..3 {
                    if posts == 0 {
                        break;
                    }
                    let post = PostId(rng.random_range(0..posts));
                    match rng.random_range(0..5) {
                        0 => act(Action::Like { post }),
                        1 => act(Action::Reblog { post }),
                        2 => act(Action::Comment { post, text: "c".into() }),
                        3 => act(Action::Browse { posts: vec![post] }),
                        _ => act(Action::Follow { agent: AgentId(rng.random_range(0..30)) }),
                    }
                }
            }
            for o in p.apply_turn(Turn(t), actions) {
                posts = posts.max(o.created.map_or(0, |c| c.0 + 1));
            }
        }
        p
    }

    #[test]
    fn feed_index_matches_the_generic_feed() {
        for seed in 0..3 {
            let p = random_platform(seed);
            let authors: Authors = (0..15).map(AgentId).collect();
            for threshold in [None, Some(Threshold::Lax), Some(Threshold::Normal), Some(Threshold::Strict)] {
                for (look_back, drop_seen, filter) in [(Some(12), true, None), (None, false, Some(&authors)), (None, true, None)] {
                    let ranker = MastodonDigest { threshold, ..Default::default() };
                    let settings = FeedSettings { look_back_turns: look_back, limit: 7, drop_seen, ..Default::default() };
                    let index = DigestIndex::build(&p, ranker, Turn(40), &settings, filter).unwrap();
                    assert!(!index.is_empty());
                    for v in 0..30 {
                        let want = feed(&p, &ranker, AgentId(v), Turn(40), &settings, filter);
                        assert_eq!(index.feed(&p, AgentId(v)), want, "seed {seed}, viewer {v}, {threshold:?}, {look_back:?}, {drop_seen}");
                    }
                }
            }
        }
        let home = FeedSettings { timeline: Timeline::Home, ..Default::default() };
        assert!(DigestIndex::build(&Platform::new(), MastodonDigest::default(), Turn(1), &home, None).is_none());
    }
}
