//! The feed rankers, chosen by name.
//!
//! A ranker is one file here: its [`Ranker`] and a [`RankerEntry`] saying
//! its name, its default settings and how to build it from settings; one
//! line in [`Rankers::builtin`] registers it. `some sim run --ranker NAME`
//! offers every registered name, a run records the [`RankerChoice`] (name
//! and settings) in its spec, and each turn builds the ranker from it.

pub mod live;
pub mod mastodon_digest;
pub mod recency_similarity;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Ranker;
use crate::platform::ids::{AgentId, PostId};

/// A ranker's settings as a run records them: a JSON object.
pub type Settings = serde_json::Map<String, Value>;

/// One vector per agent (its persona) and per post, for rankers that
/// compare content; the orchestration computes them only for a ranker
/// whose entry says [`RankerEntry::needs_vectors`]. The maps are shared: a
/// run keeps them across turns and lends them to each turn's ranker.
#[derive(Debug, Clone, Default)]
pub struct ContentVectors {
    pub agents: Arc<HashMap<AgentId, Vec<f32>>>,
    pub posts: Arc<HashMap<PostId, Vec<f32>>>,
}

/// What the registry knows of one ranker.
pub struct RankerEntry {
    /// The name `--ranker` takes and each feed row records.
    pub name: &'static str,
    /// One line for help text.
    pub about: &'static str,
    /// Whether it reads [`ContentVectors`].
    pub needs_vectors: bool,
    /// The settings a run gets unless it gives others.
    pub defaults: fn() -> Settings,
    /// The ranker for one turn; an error says what is wrong in the settings.
    pub build: BuildRanker,
}

/// Makes a registered ranker for one turn from its settings.
pub type BuildRanker = fn(&Settings, &ContentVectors) -> Result<Box<dyn Ranker>, String>;

/// A run's ranker: a registered name and its settings, recorded in the
/// run's spec as `{"ranker": NAME, ...settings}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankerChoice {
    #[serde(rename = "ranker", deserialize_with = "registry_name")]
    pub name: String,
    #[serde(flatten)]
    pub settings: Settings,
}

/// Runs recorded before the registry wrote names with underscores
/// (`mastodon_digest`); they read as today's names.
fn registry_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(String::deserialize(d)?.replace('_', "-"))
}

impl RankerEntry {
    /// This ranker with its default settings.
    pub fn choice(&self) -> RankerChoice {
        RankerChoice { name: self.name.to_string(), settings: (self.defaults)() }
    }
}

/// The rankers a run can choose from.
pub struct Rankers(Vec<RankerEntry>);

impl Rankers {
    /// Every ranker of this crate.
    pub fn builtin() -> Rankers {
        Rankers(vec![mastodon_digest::ENTRY, live::ENTRY, recency_similarity::ENTRY])
    }

    /// These rankers and one more (a ranker of the caller's).
    pub fn with(mut self, entry: RankerEntry) -> Rankers {
        self.0.retain(|e| e.name != entry.name);
        self.0.push(entry);
        self
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|e| e.name).collect()
    }

    pub fn get(&self, name: &str) -> Result<&RankerEntry, String> {
        self.0.iter().find(|e| e.name == name).ok_or_else(|| format!("unknown ranker {name:?} (known: {})", self.names().join(", ")))
    }

    /// `name` with its default settings, checked by building it once.
    pub fn choose(&self, name: &str) -> Result<RankerChoice, String> {
        let choice = self.get(name)?.choice();
        self.build(&choice, &ContentVectors::default())?;
        Ok(choice)
    }

    /// The ranker a run chose, lent `vectors` if it compares content.
    pub fn build(&self, choice: &RankerChoice, vectors: &ContentVectors) -> Result<Box<dyn Ranker>, String> {
        let entry = self.get(&choice.name)?;
        (entry.build)(&choice.settings, vectors).map_err(|e| format!("ranker {}: {e}", entry.name))
    }
}

/// Settings from a typed value (for [`RankerEntry::defaults`]).
pub(crate) fn to_settings<T: Serialize>(value: &T) -> Settings {
    match serde_json::to_value(value) {
        Ok(Value::Object(map)) => map,
        _ => Settings::new(),
    }
}

/// A typed value from settings; the error names the bad or unknown key.
pub(crate) fn from_settings<T: for<'de> Deserialize<'de>>(settings: &Settings) -> Result<T, String> {
    serde_json::from_value(Value::Object(settings.clone())).map_err(|e| format!("bad settings {}: {e}", Value::Object(settings.clone())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::feed::{Authors, Candidate, FeedSettings, Ranked, sort_ranked};
    use crate::platform::ids::Turn;
    use crate::platform::{Action, AgentAction, Platform};

    /// A ranker written as a user would add one: oldest first.
    struct OldestFirst;

    impl Ranker for OldestFirst {
        fn name(&self) -> &'static str {
            OLDEST_FIRST.name
        }
        fn rank(&self, _: AgentId, _: Turn, candidates: Vec<Candidate>) -> Vec<Ranked> {
            let mut scored: Vec<_> =
                candidates.into_iter().map(|c| (Ranked { post: c.post, score: -f64::from(c.turn.0) }, c.turn)).collect();
            sort_ranked(&mut scored);
            scored.into_iter().map(|(r, _)| r).collect()
        }
    }

    const OLDEST_FIRST: RankerEntry = RankerEntry {
        name: "oldest-first",
        about: "oldest first",
        needs_vectors: false,
        defaults: Settings::new,
        build: |_, _| Ok(Box::new(OldestFirst)),
    };

    #[test]
    fn a_new_ranker_is_an_entry_chosen_by_its_name() {
        let mut p = Platform::new();
        (0..3).for_each(|a| p.register(AgentId(a)));
        for turn in 0..3 {
            p.apply_turn(
                Turn(turn),
                vec![AgentAction { agent: AgentId(turn), seq: 0, action: Action::Post { text: format!("post {turn}") } }],
            );
        }
        let rankers = Rankers::builtin().with(OLDEST_FIRST);
        let choice = rankers.choose("oldest-first").unwrap();
        let ranker = rankers.build(&choice, &ContentVectors::default()).unwrap();
        let (none, settings) = (Authors::default(), FeedSettings::default());
        let feeds = ranker.feeds(&p, Turn(3), &settings, None);
        assert_eq!(feeds(AgentId(9)).iter().map(|r| r.post.0).collect::<Vec<_>>(), [0, 1, 2]);
        let only_none = ranker.feeds(&p, Turn(3), &settings, Some(&none));
        assert!(only_none(AgentId(9)).is_empty());
        let err = Rankers::builtin().choose("oldest-first").unwrap_err();
        assert_eq!(err, "unknown ranker \"oldest-first\" (known: mastodon-digest, live, recency-similarity)");
    }

    #[test]
    fn every_builtin_ranker_builds_from_its_defaults_and_refuses_bad_settings() {
        let rankers = Rankers::builtin();
        for name in rankers.names() {
            let choice = rankers.choose(name).unwrap();
            assert_eq!(rankers.build(&choice, &ContentVectors::default()).unwrap().name(), name);
        }
        let digest = rankers.choose("mastodon-digest").unwrap();
        let json = serde_json::to_value(&digest).unwrap();
        assert_eq!(json, serde_json::json!({"ranker": "mastodon-digest", "scorer": "ExtendedSimpleWeighted", "threshold": "Normal"}));
        let recorded: RankerChoice =
            serde_json::from_value(serde_json::json!({"ranker": "recency_similarity", "half_life_turns": 6.0})).unwrap();
        assert_eq!(rankers.build(&recorded, &ContentVectors::default()).unwrap().name(), "recency-similarity", "an older record");
        let mut bad = rankers.choose("recency-similarity").unwrap();
        bad.settings.insert("half_life_turns".into(), serde_json::json!(0.0));
        let err = rankers.build(&bad, &ContentVectors::default()).err().unwrap();
        assert_eq!(err, "ranker recency-similarity: half_life_turns must be positive, found 0");
        bad.settings.insert("halflife".into(), serde_json::json!(3));
        let err = rankers.build(&bad, &ContentVectors::default()).err().unwrap();
        assert!(err.contains("unknown field `halflife`"), "{err}");
        let mut live = rankers.choose("live").unwrap();
        live.settings.insert("x".into(), serde_json::json!(1));
        assert!(rankers.build(&live, &ContentVectors::default()).is_err(), "live has no settings");
    }
}
