//! `recency-similarity`: embedding similarity of viewer and post times a
//! recency decay.

use super::{ContentVectors, RankerEntry, Settings, from_settings, to_settings};
use crate::feed::{Candidate, Ranked, Ranker, sort_ranked};
use crate::platform::ids::{AgentId, Turn};
use crate::vector::cosine;

pub const ENTRY: RankerEntry = RankerEntry {
    name: "recency-similarity",
    about: "cosine of the viewer's persona and the post's vectors times a half-life decay in turns",
    needs_vectors: true,
    defaults: || to_settings(&Params { half_life_turns: 24.0 }),
    build,
};

/// The settings a run records.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    half_life_turns: f64,
}

fn build(settings: &Settings, vectors: &ContentVectors) -> Result<Box<dyn Ranker>, String> {
    let Params { half_life_turns } = from_settings(settings)?;
    if half_life_turns.is_nan() || half_life_turns <= 0.0 {
        return Err(format!("half_life_turns must be positive, found {half_life_turns}"));
    }
    Ok(Box::new(RecencySimilarity { half_life_turns, vectors: vectors.clone() }))
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
    pub vectors: ContentVectors,
}

impl Ranker for RecencySimilarity {
    fn name(&self) -> &'static str {
        ENTRY.name
    }
    fn rank(&self, viewer: AgentId, now: Turn, candidates: Vec<Candidate>) -> Vec<Ranked> {
        let me = self.vectors.agents.get(&viewer);
        let mut scored: Vec<(Ranked, Turn)> = candidates
            .iter()
            .map(|c| {
                let sim = match (me, self.vectors.posts.get(&c.post)) {
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
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::platform::ids::PostId;

    fn cand(post: u64, turn: u32) -> Candidate {
        Candidate { post: PostId(post), author: AgentId(9), turn: Turn(turn), likes: 0, reblogs: 0, replies: 0, author_followers: 0 }
    }

    #[test]
    fn recency_similarity_multiplies_cosine_by_decay() {
        let r = RecencySimilarity {
            half_life_turns: 10.0,
            vectors: ContentVectors {
                agents: Arc::new([(AgentId(1), vec![1.0, 0.0])].into()),
                posts: Arc::new([(PostId(0), vec![1.0, 0.0]), (PostId(1), vec![1.0, 1.0])].into()),
            },
        };
        let ranked = r.rank(AgentId(1), Turn(20), vec![cand(0, 0), cand(1, 20), cand(2, 20)]);
        let got: Vec<(u64, f64)> = ranked.iter().map(|x| (x.post.0, (x.score * 1e6).round() / 1e6)).collect();
        // Post 1 is new and at 45 degrees: cos = 1/sqrt(2), no decay.
        let cos45 = (std::f64::consts::FRAC_1_SQRT_2 * 1e6).round() / 1e6;
        assert_eq!(got, [(1, cos45), (0, 0.25), (2, 0.0)]);
    }
}
