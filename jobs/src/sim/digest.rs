//! mastodon_digest's scoring (the paper's recommendation mechanism) and a
//! second ranker, recency × embedding similarity.
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

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::feed::{Candidate, Ranked, Ranker, sort_ranked};
use super::ids::{AgentId, PostId, Turn};

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
        "mastodon_digest"
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
}

/// Cosine similarity of the viewer's and the post's vectors times an
/// exponential recency decay, `0.5^(age / half_life)` in turns.
///
/// OASIS's TwHIN ranker multiplies by `ln((271.8 - age) / 100)`, which is
/// negative past age 171.8 and NaN past 271.8 (its comment says it runs 90
/// steps at most); a half-life decay stays positive for any run length.
/// Vectors are given (the orchestration embeds each post once, and each
/// agent's persona); a post or viewer without a vector scores 0.
/// The maps are shared: a run keeps them across turns and lends them to
/// each turn's ranker without copying.
#[derive(Debug, Clone, Default)]
pub struct RecencySimilarity {
    pub half_life_turns: f64,
    pub agent_vectors: Arc<HashMap<AgentId, Vec<f32>>>,
    pub post_vectors: Arc<HashMap<PostId, Vec<f32>>>,
}

/// Cosine similarity; 0 when either vector is zero or the sizes differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

impl Ranker for RecencySimilarity {
    fn name(&self) -> &'static str {
        "recency_similarity"
    }
    fn rank(&self, viewer: AgentId, now: Turn, candidates: Vec<Candidate>) -> Vec<Ranked> {
        let me = self.agent_vectors.get(&viewer);
        let mut scored: Vec<(Ranked, Turn)> = candidates
            .iter()
            .map(|c| {
                let sim = match (me, self.post_vectors.get(&c.post)) {
                    (Some(a), Some(b)) => cosine(a, b),
                    _ => 0.0,
                };
                let age = f64::from(now.0.saturating_sub(c.turn.0));
                let recency = 0.5f64.powf(age / self.half_life_turns.max(f64::MIN_POSITIVE));
                (Ranked { post: c.post, score: sim * recency }, c.turn)
            })
            .collect();
        sort_ranked(&mut scored);
        scored.into_iter().map(|(r, _)| r).collect()
    }
}

#[cfg(test)]
// The golden values are printed to six decimals; some look like constants.
#[allow(clippy::approx_constant)]
mod tests {
    use super::*;

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

    #[test]
    fn recency_similarity_multiplies_cosine_by_decay() {
        let r = RecencySimilarity {
            half_life_turns: 10.0,
            agent_vectors: Arc::new([(AgentId(1), vec![1.0, 0.0])].into()),
            post_vectors: Arc::new([(PostId(0), vec![1.0, 0.0]), (PostId(1), vec![1.0, 1.0])].into()),
        };
        let ranked = r.rank(AgentId(1), Turn(20), vec![cand(0, 0, (0, 0, 0, 0)), cand(1, 20, (0, 0, 0, 0)), cand(2, 20, (0, 0, 0, 0))]);
        let got: Vec<(u64, f64)> = ranked.iter().map(|x| (x.post.0, (x.score * 1e6).round() / 1e6)).collect();
        assert_eq!(got, [(1, 0.707107), (0, 0.25), (2, 0.0)]);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
