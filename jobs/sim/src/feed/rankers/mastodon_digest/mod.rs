//! `mastodon-digest`: mastodon_digest's scoring, the paper's recommendation
//! mechanism.
//!
//! Scorers, as in `hodgesmr/mastodon_digest@0c4057e` (`scorers.py`), with
//! `N_R` reblogs, `N_L` likes, `N_C` replies and `N_F` author followers:
//! - `Simple`: gm(N_R+1, N_L+1) if N_R > 0 or N_L > 0, else 0;
//! - `SimpleWeighted`: Simple / sqrt(N_F) (the tool's default);
//! - `ExtendedSimple`: gm(N_R+1, N_L+1, N_C+1) if any of the three > 0, else 0;
//! - `ExtendedSimpleWeighted`: ExtendedSimple / sqrt(N_F): the paper's score.
//!
//! The weight is 0 when N_F <= 0 (Mastodon reports -1 for hidden counts)
//! and is applied once. The paper prints the score as
//! `cbrt(N_L·N_R·N_C)/sqrt(N_F)`, without the +1 smoothing: taken
//! literally, any post lacking one of likes, reblogs or replies would score
//! 0. We implement the code's smoothed version.
//!
//! The threshold keeps posts scoring at least `scoreatpercentile(scores,
//! p)` (scipy's linear interpolation between order statistics) with
//! p = 90 (lax), 95 (normal, the default) or 98 (strict).

pub mod index;

use serde::{Deserialize, Serialize};

pub use index::DigestIndex;

use super::{ContentVectors, RankerEntry, Settings, from_settings, to_settings};
use crate::feed::{Authors, Candidate, FeedSettings, Feeds, Ranked, Ranker, sort_ranked};
use crate::platform::Platform;
use crate::platform::ids::{AgentId, Turn};

pub const ENTRY: RankerEntry = RankerEntry {
    name: "mastodon-digest",
    about: "mastodon_digest's engagement score over the author's followers (the paper's ranker)",
    needs_vectors: false,
    defaults: || to_settings(&MastodonDigest::default()),
    build,
};

fn build(settings: &Settings, _: &ContentVectors) -> Result<Box<dyn Ranker>, String> {
    Ok(Box::new(from_settings::<MastodonDigest>(settings)?))
}

/// The four scorers of mastodon_digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scorer {
    Simple,
    SimpleWeighted,
    ExtendedSimple,
    ExtendedSimpleWeighted,
}

/// The geometric mean as scipy computes it, exp(mean(ln x)).
fn gmean(values: &[f64]) -> f64 {
    (values.iter().map(|v| v.ln()).sum::<f64>() / values.len() as f64).exp()
}

/// mastodon_digest's `InverseFollowerWeight`.
pub fn inverse_follower_weight(followers: i64) -> f64 {
    if followers <= 0 { 0.0 } else { 1.0 / (followers as f64).sqrt() }
}

impl Scorer {
    pub fn score(self, reblogs: i64, likes: i64, replies: i64, followers: i64) -> f64 {
        let (r, l, c) = (reblogs as f64, likes as f64, replies as f64);
        let simple = || if reblogs > 0 || likes > 0 { gmean(&[r + 1.0, l + 1.0]) } else { 0.0 };
        let extended = || if reblogs > 0 || likes > 0 || replies > 0 { gmean(&[r + 1.0, l + 1.0, c + 1.0]) } else { 0.0 };
        match self {
            Scorer::Simple => simple(),
            Scorer::SimpleWeighted => simple() * inverse_follower_weight(followers),
            Scorer::ExtendedSimple => extended(),
            Scorer::ExtendedSimpleWeighted => extended() * inverse_follower_weight(followers),
        }
    }
}

/// mastodon_digest's thresholds (percentiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Threshold {
    Lax,
    Normal,
    Strict,
}

impl Threshold {
    pub fn percentile(self) -> f64 {
        match self {
            Threshold::Lax => 90.0,
            Threshold::Normal => 95.0,
            Threshold::Strict => 98.0,
        }
    }
}

/// `scipy.stats.scoreatpercentile(values, p)`: linear interpolation between
/// the sorted values; `None` for no values.
pub fn score_at_percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    // scipy's `_compute_qth_percentile`, operation for operation.
    let idx = p / 100.0 * (v.len() - 1) as f64;
    let j = idx.floor() as usize;
    if idx == j as f64 || j + 1 >= v.len() {
        return Some(v[j.min(v.len() - 1)]);
    }
    let (w0, w1) = ((j + 1) as f64 - idx, idx - j as f64);
    Some((v[j] * w0 + v[j + 1] * w1) / (w0 + w1))
}

/// The paper's ranker.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MastodonDigest {
    pub scorer: Scorer,
    /// `None` keeps every candidate (the feed limit still applies).
    pub threshold: Option<Threshold>,
}

impl Default for MastodonDigest {
    fn default() -> Self {
        MastodonDigest { scorer: Scorer::ExtendedSimpleWeighted, threshold: Some(Threshold::Normal) }
    }
}

impl Ranker for MastodonDigest {
    fn name(&self) -> &'static str {
        ENTRY.name
    }
    fn rank(&self, _viewer: AgentId, _now: Turn, candidates: Vec<Candidate>) -> Vec<Ranked> {
        let mut scored: Vec<(Ranked, Turn)> = candidates
            .iter()
            .map(|c| (Ranked { post: c.post, score: self.scorer.score(c.reblogs, c.likes, c.replies, c.author_followers) }, c.turn))
            .collect();
        if let Some(t) = self.threshold {
            let scores: Vec<f64> = scored.iter().map(|(r, _)| r.score).collect();
            if let Some(min) = score_at_percentile(&scores, t.percentile()) {
                scored.retain(|(r, _)| r.score >= min);
            }
        }
        sort_ranked(&mut scored);
        scored.into_iter().map(|(r, _)| r).collect()
    }

    /// The scores do not depend on the viewer: on the local timeline one
    /// index serves every feed.
    fn feeds<'a>(&'a self, platform: &'a Platform, now: Turn, settings: &'a FeedSettings, authors: Option<&'a Authors>) -> Feeds<'a> {
        match DigestIndex::build(platform, *self, now, settings, authors) {
            Some(index) => Box::new(move |viewer| index.feed(platform, viewer)),
            None => Box::new(move |viewer| crate::feed::feed(platform, self, viewer, now, settings, authors)),
        }
    }
}

#[cfg(test)]
// The golden values are printed to six decimals; some look like constants.
#[allow(clippy::approx_constant)]
mod tests {
    use super::*;
    use crate::platform::ids::PostId;

    /// The reference doc's golden table (`golden/mastodon_digest_golden.txt`):
    /// (reblogs, favs, replies, followers) → ESW, SW, ES, S.
    type Golden = ((i64, i64, i64, i64), [f64; 4]);
    const GOLDEN: [Golden; 6] = [
        ((3, 7, 1, 16), [1.0, 1.414214, 4.0, 5.656854]),
        ((0, 0, 2, 16), [0.360562, 0.0, 1.44225, 0.0]),
        ((1, 1, 1, 0), [0.0, 0.0, 2.0, 2.0]),
        ((10, 50, 5, 10000), [0.149867, 0.236854, 14.986655, 23.685439]),
        ((2, 5, 0, -1), [0.0, 0.0, 2.620741, 4.242641]),
        ((0, 1, 0, 1), [1.259921, 1.414214, 1.259921, 1.414214]),
    ];

    #[test]
    fn the_four_scorers_match_the_golden_values() {
        let scorers = [Scorer::ExtendedSimpleWeighted, Scorer::SimpleWeighted, Scorer::ExtendedSimple, Scorer::Simple];
        // The feed index skips the followers of posts without engagement.
        for s in scorers {
            assert!([-1, 0, 1, 10_000].iter().all(|f| s.score(0, 0, 0, *f) == 0.0), "{s:?} scores a post without engagement");
        }
        for ((r, l, c, f), want) in GOLDEN {
            for (s, w) in scorers.iter().zip(want) {
                let got = s.score(r, l, c, f);
                assert!((got - w).abs() < 5e-7, "{s:?} ({r},{l},{c},{f}) = {got}, golden {w}");
            }
        }
    }

    #[test]
    fn percentiles_interpolate_like_scipy_and_thresholds_are_the_digest_ones() {
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!((score_at_percentile(&v, 95.0).unwrap() - 9.55).abs() < 1e-12);
        assert!((score_at_percentile(&v, 90.0).unwrap() - 9.1).abs() < 1e-12);
        assert!((score_at_percentile(&v, 98.0).unwrap() - 9.82).abs() < 1e-12);
        assert_eq!(score_at_percentile(&[3.0], 95.0), Some(3.0));
        assert_eq!(score_at_percentile(&[], 95.0), None);
        assert_eq!([Threshold::Lax, Threshold::Normal, Threshold::Strict].map(Threshold::percentile), [90.0, 95.0, 98.0]);
    }

    fn cand(post: u64, turn: u32, (reblogs, likes, replies, followers): (i64, i64, i64, i64)) -> Candidate {
        Candidate { post: PostId(post), author: AgentId(9), turn: Turn(turn), likes, reblogs, replies, author_followers: followers }
    }

    #[test]
    fn the_digest_keeps_posts_at_or_above_the_percentile_best_first() {
        // Scores 1.0, 0.360562, 0, 0.149867, 0, 1.259921 (ESW).
        let cands: Vec<Candidate> = GOLDEN.iter().enumerate().map(|(i, (k, _))| cand(i as u64, i as u32, *k)).collect();
        let lax = MastodonDigest { threshold: Some(Threshold::Lax), ..Default::default() };
        // 90th percentile of the six: 1.0 + 0.5 * 0.259921 = 1.1299605.
        let kept = lax.rank(AgentId(1), Turn(10), cands.clone());
        assert_eq!(kept.iter().map(|r| r.post.0).collect::<Vec<_>>(), [5]);
        let all = MastodonDigest { threshold: None, ..Default::default() }.rank(AgentId(1), Turn(10), cands);
        assert_eq!(all.iter().map(|r| r.post.0).collect::<Vec<_>>(), [5, 0, 1, 3, 4, 2], "ties go to the newer post");
        let zeros = vec![cand(0, 0, (0, 0, 0, 5)), cand(1, 1, (0, 0, 0, 5))];
        let kept = MastodonDigest::default().rank(AgentId(1), Turn(2), zeros);
        assert_eq!(kept.iter().map(|r| r.post.0).collect::<Vec<_>>(), [1, 0], "all-zero scores all pass, newest first");
    }
}
