//! Feeds: which posts an agent is shown, in what order.
//!
//! [`feed`] gathers the candidates every ranker starts from and hands them
//! to a [`Ranker`]. Candidates follow mastodon_digest's fetch rules: posts
//! within the look-back window, the viewer's own posts dropped, posts the
//! viewer already liked or reblogged dropped. Two more rules are ours:
//! - posts the viewer was already shown are dropped (the paper ranks
//!   "unread" posts), and comments are never candidates;
//! - the candidate pool is the whole instance ([`Timeline::Local`]) by
//!   default: every agent is an account of one sandbox instance and starts
//!   following no one, so a home timeline would be empty at first.
//!   [`Timeline::Home`] (followees' posts and reblogs) is a setting.
//!
//! A stage can restrict authors (the paper's first stage shows regular
//! agents only the initial agents' posts).
//!
//! Interventions ([`crate::intervention`]) act on every feed: a
//! muted account's posts are never candidates, and a boosted account's
//! candidates come first, newest first, before the ranker's order; their
//! feed score is recorded as [`BOOSTED_SCORE`] (they were placed, not
//! ranked).
//!
//! Rankers are in [`rankers`], one file each, chosen by name from
//! [`rankers::Rankers::builtin`].

pub mod rankers;

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::platform::Platform;
use crate::platform::ids::{AgentId, PostId, Turn};

/// Where candidates come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timeline {
    /// Every post of the instance.
    Local,
    /// Posts by accounts the viewer follows, and posts they reblogged.
    Home,
}

/// How feeds are built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeedSettings {
    /// Only posts from the last this-many turns; `None` (the default) for
    /// every post of the run. mastodon_digest's default is 12 hours.
    pub look_back_turns: Option<u32>,
    /// Posts shown per browse.
    pub limit: usize,
    pub timeline: Timeline,
    /// Unread posts first: posts shown before come back only once none is left.
    pub drop_seen: bool,
}

impl Default for FeedSettings {
    fn default() -> Self {
        FeedSettings { look_back_turns: None, limit: 10, timeline: Timeline::Local, drop_seen: true }
    }
}

/// A post that may be shown, with what rankers score it by.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub post: PostId,
    pub author: AgentId,
    pub turn: Turn,
    pub likes: i64,
    pub reblogs: i64,
    pub replies: i64,
    pub author_followers: i64,
}

/// The score a boosted post's feed row records.
pub const BOOSTED_SCORE: f64 = f64::MAX;

/// The accounts whose posts a stage's feeds show, as a bitmap by id:
/// ranking a turn's feeds tests every post of the run against it, and a
/// bit costs less than a search of a B-tree of a million accounts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Authors(Vec<u64>);

impl Authors {
    pub fn contains(&self, account: AgentId) -> bool {
        let i = account.0 as usize;
        self.0.get(i / 64).is_some_and(|word| word & (1 << (i % 64)) != 0)
    }
}

impl FromIterator<AgentId> for Authors {
    fn from_iter<I: IntoIterator<Item = AgentId>>(accounts: I) -> Self {
        let mut words = Vec::new();
        for a in accounts {
            let i = a.0 as usize;
            if words.len() <= i / 64 {
                words.resize(i / 64 + 1, 0);
            }
            words[i / 64] |= 1 << (i % 64);
        }
        Authors(words)
    }
}

/// A post of a feed with its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ranked {
    pub post: PostId,
    pub score: f64,
}

/// Orders candidates for one viewer. Implementations keep what they need
/// (weights, vectors) in themselves.
pub trait Ranker: Send + Sync {
    /// Its name in [`rankers::Rankers`], recorded with each feed row.
    fn name(&self) -> &'static str;
    /// The candidates to show, best first (may drop some).
    fn rank(&self, viewer: AgentId, now: Turn, candidates: Vec<Candidate>) -> Vec<Ranked>;
    /// Every viewer's [`feed`] at the start of `now`. Each viewer's
    /// candidates are ranked alone unless the ranker can share the work
    /// between viewers.
    fn feeds<'a>(&'a self, platform: &'a Platform, now: Turn, settings: &'a FeedSettings, authors: Option<&'a Authors>) -> Feeds<'a> {
        Box::new(move |viewer| feed(platform, self, viewer, now, settings, authors))
    }
}

/// A viewer's feed for one turn, from [`Ranker::feeds`]; shared by threads
/// that rank different viewers.
pub type Feeds<'a> = Box<dyn Fn(AgentId) -> Vec<Ranked> + Send + Sync + 'a>;

/// Sorts by score, best first; ties go to the newer post, then the higher id,
/// so the order never depends on how candidates were gathered.
pub fn sort_ranked(scored: &mut [(Ranked, Turn)]) {
    scored.sort_by(|(a, ta), (b, tb)| b.score.total_cmp(&a.score).then(tb.cmp(ta)).then(b.post.cmp(&a.post)));
}

/// The candidates of `viewer`'s feed at the start of turn `now`: unread
/// posts, or, once none is left, the posts shown before.
pub fn candidates(platform: &Platform, viewer: AgentId, now: Turn, settings: &FeedSettings, authors: Option<&Authors>) -> Vec<Candidate> {
    let unread = gather(platform, viewer, now, settings, authors);
    if unread.is_empty() && settings.drop_seen {
        return gather(platform, viewer, now, &FeedSettings { drop_seen: false, ..settings.clone() }, authors);
    }
    unread
}

fn gather(platform: &Platform, viewer: AgentId, now: Turn, settings: &FeedSettings, authors: Option<&Authors>) -> Vec<Candidate> {
    let since = Turn(settings.look_back_turns.map_or(0, |n| now.0.saturating_sub(n)));
    let followees: BTreeSet<AgentId> = match settings.timeline {
        Timeline::Home => platform.followees(viewer).collect(),
        Timeline::Local => BTreeSet::new(),
    };
    platform
        .posts_since(since)
        .filter(|p| p.turn < now && p.author != viewer && !platform.is_muted(p.author))
        .filter(|p| authors.is_none_or(|a| a.contains(p.author)))
        .filter(|p| !platform.has_engaged(viewer, p))
        .filter(|p| !settings.drop_seen || !platform.has_seen(viewer, p.id))
        .filter(|p| {
            settings.timeline == Timeline::Local || followees.contains(&p.author) || p.reblogs().keys().any(|r| followees.contains(r))
        })
        .map(|p| Candidate {
            post: p.id,
            author: p.author,
            turn: p.turn,
            likes: p.likes().len() as i64,
            reblogs: p.reblogs().len() as i64,
            replies: i64::from(p.replies),
            author_followers: platform.followers_count(p.author) as i64,
        })
        .collect()
}

/// The feed `viewer` is shown at the start of turn `now`.
pub fn feed<R: Ranker + ?Sized>(
    platform: &Platform,
    ranker: &R,
    viewer: AgentId,
    now: Turn,
    settings: &FeedSettings,
    authors: Option<&Authors>,
) -> Vec<Ranked> {
    let (mut boosted, others): (Vec<Candidate>, Vec<Candidate>) =
        candidates(platform, viewer, now, settings, authors).into_iter().partition(|c| platform.boosted().contains(&c.author));
    boosted.sort_by(|a, b| b.turn.cmp(&a.turn).then(b.post.cmp(&a.post)));
    let mut ranked: Vec<Ranked> = boosted.into_iter().map(|c| Ranked { post: c.post, score: BOOSTED_SCORE }).collect();
    if ranked.len() < settings.limit {
        ranked.extend(ranker.rank(viewer, now, others));
    }
    ranked.truncate(settings.limit);
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::{Action, AgentAction};

    fn act(agent: u32, seq: u32, action: Action) -> AgentAction {
        AgentAction { agent: AgentId(agent), seq, action }
    }

    #[test]
    fn authors_hold_exactly_the_accounts_they_were_made_of() {
        let authors: Authors = [1000, 64, 0, 63].into_iter().map(AgentId).collect();
        for a in [0, 63, 64, 1000] {
            assert!(authors.contains(AgentId(a)), "{a}");
        }
        for a in [1, 62, 65, 999, 1001, 5000, u32::MAX] {
            assert!(!authors.contains(AgentId(a)), "{a}");
        }
        assert!(!Authors::default().contains(AgentId(0)));
    }

    #[test]
    fn candidates_drop_own_engaged_seen_old_and_other_stage_posts() {
        let mut p = Platform::new();
        (0..4).for_each(|a| p.register(AgentId(a)));
        p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "old".into() })]);
        p.apply_turn(
            Turn(20),
            vec![
                act(0, 0, Action::Post { text: "by 0".into() }),
                act(1, 0, Action::Post { text: "own".into() }),
                act(2, 0, Action::Post { text: "liked".into() }),
                act(3, 0, Action::Post { text: "seen".into() }),
                act(3, 1, Action::Post { text: "fresh".into() }),
            ],
        );
        p.apply_turn(
            Turn(21),
            vec![
                act(1, 0, Action::Like { post: PostId(3) }),
                act(1, 1, Action::Browse { posts: vec![PostId(4)] }),
                act(2, 0, Action::Comment { post: PostId(1), text: "c".into() }),
            ],
        );
        let s = FeedSettings { look_back_turns: Some(12), ..FeedSettings::default() };
        let ids = |authors: Option<&Authors>, s: &FeedSettings| {
            candidates(&p, AgentId(1), Turn(22), s, authors).iter().map(|c| c.post.0).collect::<Vec<_>>()
        };
        assert_eq!(ids(None, &s), [1, 5]);
        let only0: Authors = [AgentId(0)].into_iter().collect();
        assert_eq!(ids(Some(&only0), &s), [1]);
        let all = FeedSettings { look_back_turns: None, drop_seen: false, ..s.clone() };
        assert_eq!(ids(None, &all), [0, 1, 4, 5]);
        let home = FeedSettings { timeline: Timeline::Home, ..s.clone() };
        assert!(ids(None, &home).is_empty());
        let c = &candidates(&p, AgentId(1), Turn(22), &s, None)[0];
        assert_eq!((c.replies, c.likes, c.author_followers), (1, 0, 0));
        let live = feed(&p, &rankers::live::LiveFeed, AgentId(1), Turn(22), &all, None);
        assert_eq!(live.iter().map(|r| r.post.0).collect::<Vec<_>>(), [5, 4, 1, 0]);
        assert_eq!(candidates(&p, AgentId(1), Turn(20), &all, None).len(), 1, "posts of the current turn are not yet visible");
        assert_eq!(ids(None, &FeedSettings::default()), [0, 1, 5], "the default look-back is the whole run");
    }

    #[test]
    fn each_ranker_orders_the_same_feed_its_own_way() {
        use rankers::ContentVectors;
        use rankers::live::LiveFeed;
        use rankers::mastodon_digest::MastodonDigest;
        use rankers::recency_similarity::RecencySimilarity;
        let mut p = Platform::new();
        (0..6).for_each(|a| p.register(AgentId(a)));
        p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "bread and baking".into() })]);
        p.apply_turn(Turn(1), vec![act(1, 0, Action::Post { text: "chess openings".into() })]);
        p.apply_turn(Turn(2), vec![act(2, 0, Action::Post { text: "river walks".into() })]);
        // Post 0 is the most engaged, post 2 the newest, post 1 the closest to the viewer.
        p.apply_turn(
            Turn(3),
            vec![
                act(3, 0, Action::Like { post: PostId(0) }),
                act(3, 1, Action::Reblog { post: PostId(0) }),
                act(4, 0, Action::Follow { agent: AgentId(0) }),
                act(4, 1, Action::Like { post: PostId(1) }),
                act(4, 2, Action::Follow { agent: AgentId(1) }),
            ],
        );
        let viewer = AgentId(5);
        let s = FeedSettings::default();
        let order = |r: &dyn Ranker| feed(&p, r, viewer, Turn(4), &s, None).iter().map(|x| x.post.0).collect::<Vec<_>>();
        let digest = MastodonDigest { threshold: None, ..MastodonDigest::default() };
        let similar = RecencySimilarity {
            half_life_turns: 24.0,
            vectors: ContentVectors {
                agents: std::sync::Arc::new([(viewer, vec![0.0, 1.0, 0.0])].into()),
                posts: std::sync::Arc::new(
                    [(PostId(0), vec![1.0, 0.2, 0.0]), (PostId(1), vec![0.1, 1.0, 0.0]), (PostId(2), vec![0.0, 0.3, 1.0])].into(),
                ),
            },
        };
        assert_eq!(order(&digest), [0, 1, 2], "mastodon_digest: engagement over followers");
        assert_eq!(order(&LiveFeed), [2, 1, 0], "live: newest first");
        assert_eq!(order(&similar), [1, 2, 0], "recency × similarity: the viewer's interests");
    }

    #[test]
    fn posts_shown_before_come_back_once_no_unread_post_is_left() {
        let mut p = Platform::new();
        (0..3).for_each(|a| p.register(AgentId(a)));
        p.apply_turn(Turn(0), vec![act(0, 0, Action::Post { text: "a".into() }), act(0, 1, Action::Post { text: "b".into() })]);
        p.apply_turn(
            Turn(1),
            vec![act(1, 0, Action::Browse { posts: vec![PostId(0), PostId(1)] }), act(1, 1, Action::Like { post: PostId(1) })],
        );
        let s = FeedSettings::default();
        let ids =
            |p: &Platform, viewer: u32| candidates(p, AgentId(viewer), Turn(3), &s, None).iter().map(|c| c.post.0).collect::<Vec<_>>();
        assert_eq!(ids(&p, 1), [0], "read and not engaged with: shown again; liked: never");
        assert_eq!(ids(&p, 2), [0, 1], "unread posts while there are any");
        p.apply_turn(Turn(2), vec![act(2, 0, Action::Browse { posts: vec![PostId(0)] })]);
        assert_eq!(ids(&p, 2), [1], "an unread post is preferred to one read before");
    }
}
