//! What a simulation run was asked to do, and its lifecycle as the
//! `sim_runs` table records it: every worker and every resumed coordinator
//! rebuilds the run from these rows, never from a process's memory.

use std::collections::HashMap;
use std::path::PathBuf;

use datafusion::prelude::{col, lit};
use serde::{Deserialize, Serialize};
use some_schemas::sim::{SimRunRow, sim_runs};
use some_schemas::{RunEvent, RunId, Timestamp};
use some_sim::agent::select::Selector;
use some_sim::{AgentId, FeedSettings, Persona, Preset, RankerChoice, StepSettings, Turn, agent::persona_sets};

use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::runs::record::unknown_run;

/// Where agents' posts take their knowledge from (the knowledge boundary's
/// corpus).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "source")]
pub enum KnowledgeSource {
    /// No knowledge: the paper's "w/o KB" ablation.
    None,
    /// The general-knowledge passages built into the binary
    /// ([`some_sim::BUILTIN_PASSAGES`]).
    Builtin,
    /// The lake's `knowledge` table: the benchmark's misinformation reports,
    /// not general knowledge.
    Lake,
    /// HotpotQA JSON, the paper's corpus: its `context` paragraphs.
    Hotpotqa { path: PathBuf },
    /// JSONL of `{"title", "text"}` objects.
    Passages { path: PathBuf },
}

impl KnowledgeSource {
    /// `none`, `builtin`, `lake`, `hotpotqa:FILE` or `passages:FILE`.
    pub fn parse(s: &str) -> std::result::Result<KnowledgeSource, String> {
        match s.split_once(':') {
            None if s == "none" => Ok(KnowledgeSource::None),
            None if s == "builtin" => Ok(KnowledgeSource::Builtin),
            None if s == "lake" => Ok(KnowledgeSource::Lake),
            Some(("hotpotqa", path)) if !path.is_empty() => Ok(KnowledgeSource::Hotpotqa { path: path.into() }),
            Some(("passages", path)) if !path.is_empty() => Ok(KnowledgeSource::Passages { path: path.into() }),
            _ => Err(format!("knowledge {s:?}: expected none, builtin, lake, hotpotqa:FILE or passages:FILE")),
        }
    }
}

/// Runs recorded before the source was a choice stored `true` (the lake)
/// or `false` (none).
impl<'de> Deserialize<'de> for KnowledgeSource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case", tag = "source")]
        enum Tagged {
            None,
            Builtin,
            Lake,
            Hotpotqa { path: PathBuf },
            Passages { path: PathBuf },
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Stored {
            Old(bool),
            New(Tagged),
        }
        Ok(match Stored::deserialize(d)? {
            Stored::Old(true) => KnowledgeSource::Lake,
            Stored::Old(false) => KnowledgeSource::None,
            Stored::New(Tagged::None) => KnowledgeSource::None,
            Stored::New(Tagged::Builtin) => KnowledgeSource::Builtin,
            Stored::New(Tagged::Lake) => KnowledgeSource::Lake,
            Stored::New(Tagged::Hotpotqa { path }) => KnowledgeSource::Hotpotqa { path },
            Stored::New(Tagged::Passages { path }) => KnowledgeSource::Passages { path },
        })
    }
}

impl std::fmt::Display for KnowledgeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KnowledgeSource::None => f.write_str("none"),
            KnowledgeSource::Builtin => f.write_str("builtin"),
            KnowledgeSource::Lake => f.write_str("lake"),
            KnowledgeSource::Hotpotqa { path } => write!(f, "hotpotqa:{}", path.display()),
            KnowledgeSource::Passages { path } => write!(f, "passages:{}", path.display()),
        }
    }
}

/// Where the dynamic persona's item relevance comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelevanceSource {
    /// The built-in embedder (the paper's choice: an embedding model).
    Embedder,
    /// TF-IDF cosine: no model, for large runs and tests.
    Tfidf,
}

/// Where a run's personas come from: read again by a coordinator that
/// resumes a run whose agents were not all set up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "set")]
pub enum PersonaSet {
    /// RecAgent's 1,000 users, built in.
    Builtin,
    /// OASIS's Reddit profile JSON.
    OasisReddit { path: PathBuf },
    /// OASIS's Twitter user CSV (follow graph and hourly activity).
    OasisTwitter { path: PathBuf },
    /// A RecAgent user CSV and, optionally, its relationship CSV.
    Recagent { users: PathBuf, relationships: Option<PathBuf> },
}

impl PersonaSet {
    /// The personas of agents `0..n`: agent `i` is the set's `i % len`-th
    /// persona, so a set smaller than the run is used again (a repeat gets
    /// `#k` after its username and no follows, which name the first copy).
    pub fn cast(&self, n: u32) -> Result<Vec<Persona>> {
        let set = match self {
            PersonaSet::Builtin => persona_sets::builtin_recagent(),
            PersonaSet::OasisReddit { path } => persona_sets::load_oasis_reddit(path)?,
            PersonaSet::OasisTwitter { path } => persona_sets::load_oasis_twitter(path)?,
            PersonaSet::Recagent { users, relationships } => persona_sets::load_recagent(users, relationships.as_deref())?,
        };
        if set.is_empty() {
            return Err(Error::Invalid(format!("the persona set {self} has no persona")));
        }
        // Follows name source ids; agents are numbered by position.
        let position: HashMap<AgentId, u32> = set.iter().enumerate().map(|(i, p)| (p.id, i as u32)).collect();
        Ok((0..n)
            .map(|i| {
                let (copy, source) = (i as usize / set.len(), &set[i as usize % set.len()]);
                let mut p = source.clone();
                p.id = AgentId(i);
                if copy == 0 {
                    p.following =
                        source.following.iter().filter_map(|f| position.get(f).map(|&j| AgentId(j))).filter(|f| f.0 < n).collect();
                } else {
                    p.username = format!("{}#{copy}", p.username);
                    p.following.clear();
                }
                p
            })
            .collect())
    }
}

impl std::fmt::Display for PersonaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PersonaSet::Builtin => f.write_str("built-in RecAgent users"),
            PersonaSet::OasisReddit { path } => write!(f, "OASIS Reddit profiles {}", path.display()),
            PersonaSet::OasisTwitter { path } => write!(f, "OASIS Twitter users {}", path.display()),
            PersonaSet::Recagent { users, .. } => write!(f, "RecAgent users {}", users.display()),
        }
    }
}

/// What a simulation run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimSpec {
    pub run_id: RunId,
    /// The agents' model and its endpoints (none: built in).
    pub model: String,
    pub endpoints: Vec<String>,
    pub preset: Preset,
    pub personas: PersonaSet,
    /// Seeds the activity levels, the activation draws and the model's sampling.
    pub seed: u64,
    pub step: StepSettings,
    pub feed: FeedSettings,
    /// A ranker of [`some_sim::Rankers::builtin`] and its settings.
    pub ranker: RankerChoice,
    pub relevance: RelevanceSource,
    /// The built-in embedder of `RelevanceSource::Embedder` and the report's
    /// similarities; runs recorded before it was a setting used MiniLM.
    #[serde(default = "minilm")]
    pub embedding_model: String,
    /// Enrich each persona into the paper's fields before planning.
    pub enrich: bool,
    /// Where posts take knowledge from.
    pub knowledge: KnowledgeSource,
    /// Setup stops the run, with the causes, when more than this share of
    /// its agents failed it (an empty simulation is no result).
    #[serde(default = "half")]
    pub max_setup_failures: f64,
    /// Agents per shard.
    pub shard_size: usize,
    /// Agents of one shard acting at once.
    pub concurrency: usize,
    /// Where a counterfactual fork branches off its parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<Fork>,
    /// Agents answered by models of their own (`sim run --groups`); the
    /// first group an agent matches is its group, the others use `model`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<ModelGroup>,
    /// Which of a set of replicates this run is (`sim run --replicates`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicate: Option<Replicate>,
}

/// Agents with a model of their own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelGroup {
    pub name: String,
    /// A [`Selector`] of what agents have before setup (ids, kind, share,
    /// username, description), so an agent's group is the same for its
    /// setup and every turn.
    pub agents: String,
    pub model: String,
    #[serde(default)]
    pub endpoints: Vec<String>,
}

impl ModelGroup {
    pub fn selector(&self) -> std::result::Result<Selector, String> {
        let s = Selector::parse(&self.agents)?;
        if !s.before_setup() {
            return Err(format!(
                "group {}: agents {:?} reads an enriched persona field, which setup only makes: choose by ids, kind, share, username or description",
                self.name, self.agents
            ));
        }
        Ok(s)
    }
}

/// Reads a groups file: one JSON object per line, `{"name", "agents",
/// "model", "endpoints"}`; a bad line is an error naming it.
pub fn load_groups(path: &std::path::Path) -> Result<Vec<ModelGroup>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::Invalid(format!("cannot read the groups file {}: {e}", path.display())))?;
    let mut out: Vec<ModelGroup> = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#')) {
        let at = |e: String| Error::Invalid(format!("{} line {}: {e}", path.display(), i + 1));
        let group: ModelGroup = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        group.selector().map_err(at)?;
        if out.iter().any(|g| g.name == group.name) {
            return Err(at(format!("the group name {:?} is used twice", group.name)));
        }
        out.push(group);
    }
    if out.is_empty() {
        return Err(Error::Invalid(format!("the groups file {} has no group", path.display())));
    }
    Ok(out)
}

impl SimSpec {
    /// The group of an agent (an index of `groups`), by its persona as set
    /// up or as loaded; `None` for the run's own model.
    pub fn group_of(&self, persona: &Persona) -> Option<usize> {
        let kind = self.preset.kind_of(persona.id);
        self.groups.iter().position(|g| g.selector().is_ok_and(|s| s.matches(persona, kind, self.seed)))
    }

    /// An agent's group's name, or "default".
    pub fn group_name(&self, persona: &Persona) -> &str {
        self.group_of(persona).map_or("default", |i| self.groups[i].name.as_str())
    }
}

/// One of `of` runs of one configuration with seeds `seed + index`; the
/// first sets the agents up and the others share its setup (a fork at
/// turn 0).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Replicate {
    /// The runs are named `GROUP-r0`, `GROUP-r1`, ...
    pub group: String,
    pub index: u32,
    pub of: u32,
}

/// A run that goes on from another's committed state (`some sim fork`):
/// its turns before `turn` are the parent's, read from the lake. At turn 0
/// it shares only the parent's agents as set up (a replicate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fork {
    pub parent: RunId,
    /// The fork's first own turn.
    pub turn: Turn,
    /// The run whose `sim_agents` rows are the agents (the first of a
    /// line of forks).
    pub agents_run: RunId,
}

impl SimSpec {
    /// The run whose `sim_agents` rows hold this run's agents.
    pub fn agents_run(&self) -> &RunId {
        self.fork.as_ref().map_or(&self.run_id, |f| &f.agents_run)
    }

    /// The first turn this run commits itself (0 unless a fork).
    pub fn first_turn(&self) -> Turn {
        self.fork.as_ref().map_or(Turn(0), |f| f.turn)
    }

    /// A run of `preset` by `model` at `endpoints` with the paper's settings.
    pub fn new(run_id: RunId, model: &str, endpoints: Vec<String>, preset: Preset, personas: PersonaSet) -> SimSpec {
        SimSpec {
            run_id,
            model: model.into(),
            endpoints,
            preset,
            personas,
            seed: 0,
            step: StepSettings::default(),
            feed: FeedSettings::default(),
            ranker: some_sim::feed::rankers::mastodon_digest::ENTRY.choice(),
            relevance: RelevanceSource::Embedder,
            embedding_model: some_jobs::embed::DEFAULT_EMBEDDING_MODEL.into(),
            enrich: true,
            knowledge: KnowledgeSource::Builtin,
            max_setup_failures: 0.5,
            shard_size: 50,
            concurrency: 8,
            fork: None,
            replicate: None,
            groups: Vec::new(),
        }
    }
}

fn half() -> f64 {
    0.5
}

fn minilm() -> String {
    crate::models::MINILM.name.into()
}

/// A simulation run as recorded.
#[derive(Debug, Clone)]
pub struct SimRecord {
    pub spec: SimSpec,
    pub cancelled: bool,
}

/// Records a lifecycle event of a run.
pub async fn record_event(lake: &Lake, spec: &SimSpec, event: RunEvent) -> Result<()> {
    let json = serde_json::to_string(spec).map_err(|e| Error::Invalid(format!("simulation spec: {e}")))?;
    let mut txn = lake.txn();
    txn.write_rows(vec![SimRunRow { run_id: spec.run_id.clone(), event, at: Timestamp::now(), spec: json }]).await?;
    txn.commit().await?;
    Ok(())
}

/// Reads a run's record; an unknown run is an error listing the known ones.
pub async fn load_sim(lake: &Lake, run_id: &RunId) -> Result<SimRecord> {
    let ctx = lake.session().await?;
    let events: Vec<SimRunRow> = lake.read(&ctx, Some(col(sim_runs::run_id).eq(lit(run_id.as_str())))).await?;
    let Some(submitted) = events.iter().filter(|e| e.event == RunEvent::Submitted).max_by_key(|e| e.at) else {
        let all: Vec<SimRunRow> = lake.read(&ctx, None).await?;
        return Err(unknown_run("simulation run", run_id, all.iter().map(|r| &r.run_id)));
    };
    let spec: SimSpec = serde_json::from_str(&submitted.spec)
        .map_err(|e| Error::Invalid(format!("simulation run {run_id}: its stored spec does not read: {e}")))?;
    let cancelled = events.iter().any(|e| e.event == RunEvent::Cancelled && e.at >= submitted.at);
    Ok(SimRecord { spec, cancelled })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knowledge_sources_parse_and_runs_recorded_with_a_flag_still_read() {
        assert_eq!(KnowledgeSource::parse("hotpotqa:/d/h.json"), Ok(KnowledgeSource::Hotpotqa { path: "/d/h.json".into() }));
        assert_eq!(KnowledgeSource::parse("builtin"), Ok(KnowledgeSource::Builtin));
        assert!(KnowledgeSource::parse("passages:").is_err() && KnowledgeSource::parse("wiki").is_err());
        let read = |json: &str| serde_json::from_str::<KnowledgeSource>(json).unwrap();
        assert_eq!((read("true"), read("false")), (KnowledgeSource::Lake, KnowledgeSource::None));
        let stored = serde_json::to_string(&KnowledgeSource::Passages { path: "p.jsonl".into() }).unwrap();
        assert_eq!(read(&stored), KnowledgeSource::Passages { path: "p.jsonl".into() });
    }
}
