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

/// What a shard asks for: `{"stage": "setup" | "turn", ...fields}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "stage", rename_all = "snake_case")]
pub enum ShardWork {
    /// Setting up agents before the first turn.
    Setup { shard: u32, agents: Vec<NewAgent> },
    /// Active agents' steps in one turn.
    Turn { turn: Turn, shard: u32, agents: Vec<AgentTurn> },
}

/// Read with the stage first, as [`ShardWork::to_payload`] writes it: serde's
/// own reading of a tagged enum first copies the whole shard (every feed's
/// texts) into a buffer in case the tag comes last, which was most of the
/// cost of reading a turn's shard.
impl<'de> Deserialize<'de> for ShardWork {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(rename_all = "snake_case")]
        enum Stage {
            Setup,
            Turn,
        }
        #[derive(Deserialize)]
        struct Setup {
            shard: u32,
            agents: Vec<NewAgent>,
        }
        #[derive(Deserialize)]
        struct TurnShard {
            turn: Turn,
            shard: u32,
            agents: Vec<AgentTurn>,
        }
        struct StageFirst;
        impl<'de> serde::de::Visitor<'de> for StageFirst {
            type Value = ShardWork;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a shard object whose first field is \"stage\"")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<ShardWork, A::Error> {
                let first: Option<std::borrow::Cow<'de, str>> = map.next_key()?;
                if first.as_deref() != Some("stage") {
                    return Err(serde::de::Error::custom(format!("a shard's first field must be \"stage\", not {first:?}")));
                }
                let stage: Stage = map.next_value()?;
                let rest = serde::de::value::MapAccessDeserializer::new(map);
                Ok(match stage {
                    Stage::Setup => {
                        let Setup { shard, agents } = Setup::deserialize(rest)?;
                        ShardWork::Setup { shard, agents }
                    }
                    Stage::Turn => {
                        let TurnShard { turn, shard, agents } = TurnShard::deserialize(rest)?;
                        ShardWork::Turn { turn, shard, agents }
                    }
                })
            }
        }
        deserializer.deserialize_map(StageFirst)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use some_sim::PostId;

    #[test]
    fn a_payload_reads_back_as_written_and_its_stage_must_come_first() {
        let persona = some_sim::agent::persona_sets::builtin_recagent().remove(0);
        let setup = ShardWork::Setup { shard: 3, agents: vec![NewAgent { persona, kind: AgentKind::Regular, activity: 0.25 }] };
        let feed = vec![FeedPost { id: PostId(9), author: AgentId(4), content: "a \"quoted\" post".into() }];
        let turn = ShardWork::Turn {
            turn: Turn(7),
            shard: 1,
            agents: vec![AgentTurn { agent: AgentId(4), posts: 2, feed, memory: Recall::default(), persona: None }],
        };
        for work in [setup, turn] {
            let payload = work.to_payload();
            assert!(payload.starts_with(r#"{"stage":"#), "{payload}");
            assert_eq!(ShardWork::from_payload(&payload).unwrap(), work);
        }
        let late = r#"{"turn": 7, "stage": "turn", "shard": 1, "agents": []}"#;
        let err = ShardWork::from_payload(late).unwrap_err().to_string();
        assert!(err.contains(r#"a shard's first field must be "stage", not Some("turn")"#), "{err}");
        let unknown = ShardWork::from_payload(r#"{"stage": "teardown", "shard": 1}"#).unwrap_err().to_string();
        assert!(unknown.contains("unknown variant `teardown`"), "{unknown}");
        let missing = ShardWork::from_payload(r#"{"stage": "turn", "shard": 1, "agents": []}"#).unwrap_err().to_string();
        assert!(missing.contains("missing field `turn`"), "{missing}");
    }
}
