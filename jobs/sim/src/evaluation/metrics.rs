//! The paper's automatic metrics over a finished (or running) simulation.
//!
//! - Distinct-1/2 (Li et al. 2016): distinct n-grams / all n-grams over
//!   all generated texts together (corpus level), on lowercased whitespace
//!   tokens; the paper prints them ×100.
//! - Persona similarity of engaged vs browsed-only posts (the paper's
//!   Table 1 and its Δ columns): for each action (like, reblog, comment),
//!   the mean similarity between the agent's persona text and the posts it
//!   took that action on, the mean over posts it was shown and did not, and
//!   Δ = engaged − not. The similarity is given (TF-IDF via
//!   [`crate::agent::tfidf::similarity`], or the embedder's cosine); the paper's
//!   BERTScore and NLI C.score need models this crate does not hold.
//! - Follower distribution (Figure 6) and actions per stage.

use std::collections::BTreeMap;

use some_schemas::sim::ActionKind;

use crate::agent::activity::Phase;
use crate::platform::Platform;
use crate::platform::ids::AgentId;

/// Distinct-n of a corpus, 0-1; `None` when it has no n-gram.
pub fn distinct_n<S: AsRef<str>>(texts: &[S], n: usize) -> Option<f64> {
    let mut all = 0usize;
    let mut seen = std::collections::HashSet::new();
    for t in texts {
        let tokens: Vec<String> = t.as_ref().split_whitespace().map(str::to_lowercase).collect();
        for gram in tokens.windows(n.max(1)) {
            all += 1;
            seen.insert(gram.to_vec());
        }
    }
    (all > 0).then(|| seen.len() as f64 / all as f64)
}

/// One (agent, post) pair the agent was shown, and what it did.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposure<'a> {
    pub persona: &'a str,
    pub post: &'a str,
    pub liked: bool,
    pub reblogged: bool,
    pub commented: bool,
}

/// Mean persona similarity of posts that got an action and of shown posts that did not.
#[derive(Debug, Clone, PartialEq)]
pub struct EngagementSimilarity {
    pub action: ActionKind,
    pub engaged: Option<f64>,
    pub not_engaged: Option<f64>,
    pub engaged_count: usize,
    pub not_engaged_count: usize,
}

impl EngagementSimilarity {
    /// The paper's Δ: engaged − not engaged.
    pub fn delta(&self) -> Option<f64> {
        Some(self.engaged? - self.not_engaged?)
    }
}

/// Table 1's comparison for like, reblog and comment; `similarity(persona, post)`.
pub fn engagement_similarity(exposures: &[Exposure<'_>], similarity: impl Fn(&str, &str) -> f64) -> Vec<EngagementSimilarity> {
    let sims: Vec<f64> = exposures.iter().map(|e| similarity(e.persona, e.post)).collect();
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let split = |took: &dyn Fn(&Exposure<'_>) -> bool, action| {
        let (mut yes, mut no) = (Vec::new(), Vec::new());
        for (e, s) in exposures.iter().zip(&sims) {
            if took(e) { yes.push(*s) } else { no.push(*s) }
        }
        EngagementSimilarity { action, engaged: mean(&yes), not_engaged: mean(&no), engaged_count: yes.len(), not_engaged_count: no.len() }
    };
    vec![
        split(&|e: &Exposure<'_>| e.liked, ActionKind::Like),
        split(&|e: &Exposure<'_>| e.reblogged, ActionKind::Reblog),
        split(&|e: &Exposure<'_>| e.commented, ActionKind::Comment),
    ]
}

/// Followers of each of `agents`.
pub fn follower_counts(platform: &Platform, agents: impl IntoIterator<Item = AgentId>) -> Vec<(AgentId, usize)> {
    agents.into_iter().map(|a| (a, platform.followers_count(a))).collect()
}

/// Bins for the follower distribution: 0, 1-5, 6-10, 11-20, 21-50, 51-100, over 100
/// (the paper's Figure 6 singles out agents with more than 100).
pub const FOLLOWER_BINS: [(usize, usize); 7] = [(0, 0), (1, 5), (6, 10), (11, 20), (21, 50), (51, 100), (101, usize::MAX)];

/// How many agents fall in each of [`FOLLOWER_BINS`].
pub fn follower_histogram(counts: &[(AgentId, usize)]) -> [usize; 7] {
    let mut out = [0; 7];
    for (_, c) in counts {
        if let Some(i) = FOLLOWER_BINS.iter().position(|(lo, hi)| c >= lo && c <= hi) {
            out[i] += 1;
        }
    }
    out
}

/// Applied actions counted by phase and kind.
pub fn actions_per_stage(applied: impl IntoIterator<Item = (Phase, ActionKind)>) -> BTreeMap<(u32, ActionKind), u64> {
    let mut out = BTreeMap::new();
    for (phase, kind) in applied {
        let stage = match phase {
            Phase::Seeding => 0,
            Phase::Stage(n) => n,
        };
        *out.entry((stage, kind)).or_insert(0) += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::ids::Turn;
    use crate::platform::{Action, AgentAction};

    #[test]
    fn distinct_n_counts_unique_ngrams_over_the_corpus() {
        let texts = ["the cat sat", "The cat ran"];
        assert_eq!(distinct_n(&texts, 1), Some(4.0 / 6.0));
        assert_eq!(distinct_n(&texts, 2), Some(3.0 / 4.0));
        assert_eq!(distinct_n(&["one"], 2), None);
    }

    #[test]
    fn engaged_posts_are_compared_with_browsed_only_ones() {
        let persona = "I love hiking in the mountains.";
        let ex = [
            Exposure { persona, post: "Hiking in the mountains today!", liked: true, reblogged: false, commented: false },
            Exposure { persona, post: "Stock markets fell.", liked: false, reblogged: false, commented: false },
            Exposure { persona, post: "Mountains at dawn.", liked: true, reblogged: true, commented: false },
        ];
        let r =
            engagement_similarity(&ex, |a, b| if b.to_lowercase().contains("mountains") && a.contains("mountains") { 1.0 } else { 0.0 });
        assert_eq!((r[0].engaged, r[0].not_engaged, r[0].delta()), (Some(1.0), Some(0.0), Some(1.0)));
        assert_eq!((r[1].engaged_count, r[1].not_engaged, r[1].delta()), (1, Some(0.5), Some(0.5)));
        assert_eq!((r[2].engaged, r[2].delta()), (None, None));
        let tfidf = engagement_similarity(&ex, crate::agent::tfidf::similarity);
        assert!(tfidf[0].delta().unwrap() > 0.3, "{:?}", tfidf[0]);
    }

    #[test]
    fn followers_are_binned_and_actions_counted_by_stage() {
        let mut p = Platform::new();
        (0..4).for_each(|a| p.register(AgentId(a)));
        let follows = (1..4).map(|a| AgentAction { agent: AgentId(a), seq: 0, action: Action::Follow { agent: AgentId(0) } }).collect();
        p.apply_turn(Turn(1), follows);
        let counts = follower_counts(&p, (0..4).map(AgentId));
        assert_eq!(counts[0], (AgentId(0), 3));
        assert_eq!(follower_histogram(&counts), [3, 1, 0, 0, 0, 0, 0]);
        let per = actions_per_stage([
            (Phase::Stage(1), ActionKind::Like),
            (Phase::Stage(1), ActionKind::Like),
            (Phase::Seeding, ActionKind::Post),
        ]);
        assert_eq!(per.get(&(1, ActionKind::Like)), Some(&2));
        assert_eq!(per.get(&(0, ActionKind::Post)), Some(&1));
    }
}
