//! The shards of a simulation run: what a [`some_schemas::Job::Sim`]
//! carries, and the one file each shard's results are written to.
//!
//! A shard's inputs are the coordinator's state at the start of the turn
//! (personas not yet in the lake, feeds, what of the memories the steps
//! need), so they travel in the
//! message. Its results go to a file named by (turn, shard) and written
//! once ([`Lake::put_once`]): a redelivered shard finds its file and does
//! nothing, and a second coordinator after a crash publishes the same
//! shards (activation and sharding are functions of the seed) and reads
//! the same files.

use serde::{Deserialize, Serialize};
use some_schemas::sim::{AgentKind, SimAgentRow, SimStepRow};
use some_schemas::{Row, RunId, ShardId};
use some_sim::agent::memory::Recall;
use some_sim::{AgentId, FeedPost, Persona, Turn};

use crate::error::{Error, Result};
use crate::lake::Lake;

/// An agent to set up: enrich its persona (if the run does) and plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewAgent {
    pub persona: Persona,
    pub kind: AgentKind,
    /// The agent's Pareto activity level.
    pub activity: f64,
}

/// One agent's turn as the coordinator hands it out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentTurn {
    pub agent: AgentId,
    /// Posts to write this turn.
    pub posts: u32,
    pub feed: Vec<FeedPost>,
    /// What the step needs of the agent's memory; the step returns its
    /// changes, which the coordinator applies.
    pub memory: Recall,
    /// The persona as interventions changed it; `None` for the one set up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persona: Option<Persona>,
}

/// What a shard asks for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum ShardWork {
    /// Setting up agents before the first turn.
    Setup { shard: u32, agents: Vec<NewAgent> },
    /// Active agents' steps in one turn.
    Turn { turn: Turn, shard: u32, agents: Vec<AgentTurn> },
}

impl ShardWork {
    pub fn to_payload(&self) -> String {
        serde_json::to_string(self).expect("shard payloads always serialize")
    }

    pub fn from_payload(payload: &str) -> Result<ShardWork> {
        serde_json::from_str(payload).map_err(|e| Error::Invalid(format!("undecodable simulation shard: {e}")))
    }

    /// How queues and logs name the shard.
    pub fn shard_id(&self, run_id: &RunId) -> ShardId {
        match self {
            ShardWork::Setup { shard, .. } => ShardId(format!("{run_id}-setup-{shard:05}")),
            ShardWork::Turn { turn, shard, .. } => ShardId(format!("{run_id}-t{:06}-{shard:05}", turn.0)),
        }
    }

    /// Where its results are written, relative to the lake root.
    pub fn results_path(&self, run_id: &RunId) -> String {
        match self {
            ShardWork::Setup { shard, .. } => setup_path(run_id, *shard),
            ShardWork::Turn { turn, shard, .. } => steps_path(run_id, *turn, *shard),
        }
    }
}

/// The agents file of setup shard `shard`.
pub fn setup_path(run_id: &RunId, shard: u32) -> String {
    Lake::part_path::<SimAgentRow>(&[run_id.as_str()], &format!("part-setup-{shard:05}"))
}

/// The steps file of shard `shard` of `turn`.
pub fn steps_path(run_id: &RunId, turn: Turn, shard: u32) -> String {
    Lake::part_path::<SimStepRow>(&[run_id.as_str()], &format!("part-t{:06}-{shard:05}", turn.0))
}

/// The steps files of `turn` that shards wrote and no commit names yet.
pub async fn uncommitted_steps(lake: &Lake, run_id: &RunId, turn: Turn) -> Result<Vec<String>> {
    let folder = format!("{}/{}={run_id}", SimStepRow::TABLE, some_schemas::sim::sim_steps::run_id);
    lake.uncommitted_files(&folder, &format!("part-t{:06}-", turn.0)).await
}

/// Reads the results file of a shard; `None` until its worker wrote it.
pub async fn read_results<R: Row>(lake: &Lake, run_id: &RunId, path: &str) -> Result<Option<Vec<R>>> {
    lake.read_once::<R>(path, &[run_id.as_str()]).await
}
