//! `live`: newest first, Mastodon's live feed.

use super::{ContentVectors, RankerEntry, Settings, from_settings};
use crate::feed::{Candidate, Ranked, Ranker, sort_ranked};
use crate::platform::ids::{AgentId, Turn};

pub const ENTRY: RankerEntry =
    RankerEntry { name: "live", about: "newest first (Mastodon's live feed)", needs_vectors: false, defaults: Settings::new, build };

/// It has no settings.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {}

fn build(settings: &Settings, _: &ContentVectors) -> Result<Box<dyn Ranker>, String> {
    let Params {} = from_settings(settings)?;
    Ok(Box::new(LiveFeed))
}

/// Newest first: Mastodon's live feed.
#[derive(Debug, Clone, Copy, Default)]
pub struct LiveFeed;

impl Ranker for LiveFeed {
    fn name(&self) -> &'static str {
        ENTRY.name
    }
    fn rank(&self, _viewer: AgentId, _now: Turn, candidates: Vec<Candidate>) -> Vec<Ranked> {
        let mut scored: Vec<(Ranked, Turn)> =
            candidates.into_iter().map(|c| (Ranked { post: c.post, score: f64::from(c.turn.0) }, c.turn)).collect();
        sort_ranked(&mut scored);
        scored.into_iter().map(|(r, _)| r).collect()
    }
}
