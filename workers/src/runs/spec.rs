//! What a run and a judging were asked to do: the records stored with them
//! (`runs.spec`), from which every worker rebuilds its runner.

use serde::{Deserialize, Serialize};
use some_jobs::agent::AgentSettings;
use some_jobs::scorers::JudgeSettings;
use some_jobs::tools::ToolSettings;
use some_schemas::{Attempt, Epoch, PRIMARY_JUDGING, QueryAttempt, QueryId, RunId};

use crate::error::{Error, Result};

/// What a run was asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub run_id: RunId,
    /// The agent model's name and endpoints.
    pub model: String,
    pub endpoints: Vec<String>,
    pub judge_model: String,
    pub judge_endpoints: Vec<String>,
    /// Where queries are embedded for retrieval, by the model
    /// `tools.embedding_model` (none: the built-in embedder).
    #[serde(default)]
    pub embedding_endpoints: Vec<String>,
    pub agent: AgentSettings,
    pub tools: ToolSettings,
    pub judge: JudgeSettings,
    /// In the order they were planned.
    pub queries: Vec<QueryId>,
    pub shard_size: usize,
    /// Episodes of one shard run at once.
    pub concurrency: usize,
    /// How many times each query runs (`--epochs`); 1 in runs stored
    /// before epochs.
    #[serde(default = "one")]
    pub epochs: u32,
    /// The agent's sampling seed of each epoch, in order; empty when the
    /// run has one epoch (the agent's own `seed`, if any, is used).
    #[serde(default)]
    pub epoch_seeds: Vec<u64>,
    /// Where the run stops publishing work (none: never).
    #[serde(default)]
    pub budget: super::budget::RunBudget,
}

fn one() -> u32 {
    1
}

/// Epoch seeds lie this far apart, beyond any episode's calls (the agent
/// adds its call index to the seed), so no two epochs share a seed.
pub const EPOCH_SEED_STRIDE: u64 = 1_000_000;

impl RunSpec {
    /// A run of `queries` by `model` at `endpoints` (none: built in), judged
    /// by the same model, with default settings; shards of 25 queries, 8
    /// episodes of a shard at once.
    pub fn new(run_id: RunId, model: &str, endpoints: Vec<String>, queries: Vec<QueryId>) -> RunSpec {
        RunSpec {
            run_id,
            model: model.into(),
            judge_model: model.into(),
            judge_endpoints: endpoints.clone(),
            endpoints,
            embedding_endpoints: Vec::new(),
            agent: AgentSettings::default(),
            tools: ToolSettings::default(),
            judge: JudgeSettings::default(),
            queries,
            shard_size: 25,
            concurrency: 8,
            epochs: 1,
            epoch_seeds: Vec::new(),
            budget: Default::default(),
        }
    }

    /// Repeats every query `epochs` times, epoch `e` sampling with seed
    /// `base + (e - 1) * EPOCH_SEED_STRIDE` (`base`: the agent's seed, or 0),
    /// so a model that honours seeds answers each epoch differently and a
    /// rerun of an epoch the same way. One epoch keeps the agent's seed.
    pub fn with_epochs(mut self, epochs: u32) -> RunSpec {
        self.epochs = epochs.max(1);
        self.epoch_seeds = if self.epochs == 1 {
            Vec::new()
        } else {
            let base = self.agent.seed.unwrap_or(0);
            (0..u64::from(self.epochs)).map(|e| base.wrapping_add(e * EPOCH_SEED_STRIDE)).collect()
        };
        self
    }

    /// The agent's seed in `epoch`.
    pub fn seed_of(&self, epoch: Epoch) -> Option<u64> {
        let index = usize::try_from(epoch.0 - 1).ok()?;
        self.epoch_seeds.get(index).copied().or(self.agent.seed)
    }

    /// Every planned (query, epoch), query by query in the planned order.
    pub fn samples(&self) -> impl Iterator<Item = (&QueryId, Epoch)> {
        self.queries.iter().flat_map(move |q| Epoch::all(self.epochs).map(move |e| (q, e)))
    }

    /// Every planned sample as its first attempt: what a new run publishes.
    pub fn first_attempts(&self) -> Vec<QueryAttempt> {
        self.samples().map(|(q, epoch)| QueryAttempt { query_id: q.clone(), epoch, attempt: Attempt::FIRST }).collect()
    }

    /// The run's own judge, as a judging.
    pub fn primary_judging(&self) -> JudgingSpec {
        JudgingSpec {
            run_id: self.run_id.clone(),
            judging: PRIMARY_JUDGING.into(),
            judge_model: self.judge_model.clone(),
            judge_endpoints: self.judge_endpoints.clone(),
            settings: self.judge.clone(),
        }
    }
}

/// Who scores a run's episodes, and how. The primary judging is the run's
/// spec; every other is a `judging` event of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgingSpec {
    pub run_id: RunId,
    /// [`PRIMARY_JUDGING`], or the name given to `some judge`.
    pub judging: String,
    pub judge_model: String,
    pub judge_endpoints: Vec<String>,
    pub settings: JudgeSettings,
}

/// Judging names are 1-64 characters of `A-Z a-z 0-9 . _ -`.
pub fn check_judging_name(name: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Error::Invalid(format!("judging name {name:?}: use 1 to 64 letters, digits, '.', '_' or '-'")))
}
