//! The messages that travel on the job queues.
//!
//! A message names its work by id only (queries, files, partitions); the
//! worker reads the details from the lake, so a message stays small and a
//! redelivered message does the same work again. Simulation shards are the
//! exception ([`Job::Sim`]).

use serde::{Deserialize, Serialize};

use crate::ids::{Attempt, Epoch, QueryId, RunId, ShardId};

/// A kind of job, each with its own queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// Agent episodes (LLM workers).
    Episode,
    /// Label extraction and judge scoring (LLM workers).
    Judge,
    /// Reading source files into the lake (compute workers).
    Ingest,
    /// Embedding posts or knowledge (compute workers).
    Embed,
    /// Simulation agents: setting up and acting for a turn (LLM workers).
    Sim,
    /// Annotation shards: one location-day of a RED annotation (LLM workers).
    Annotate,
}

impl JobKind {
    pub const ALL: [JobKind; 6] = [JobKind::Episode, JobKind::Judge, JobKind::Ingest, JobKind::Embed, JobKind::Sim, JobKind::Annotate];

    /// The queue this kind of job is published to.
    pub fn queue(self) -> &'static str {
        match self {
            JobKind::Episode => "some.episode",
            JobKind::Judge => "some.judge",
            JobKind::Ingest => "some.ingest",
            JobKind::Embed => "some.embed",
            JobKind::Sim => "some.sim",
            JobKind::Annotate => "some.annotate",
        }
    }
}

/// Where jobs go: the in-process queue of this process, or a RabbitMQ
/// broker. Parsed once from `--queue`, so no other place compares strings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum QueueLocation {
    /// Jobs run on this process, with the same ack/retry/dead-letter
    /// semantics as the broker.
    #[default]
    Memory,
    /// An `amqp://` or `amqps://` URL.
    Amqp(String),
}

impl QueueLocation {
    /// How `--queue` spells the in-process queue.
    pub const MEMORY: &'static str = "memory";

    /// The broker's URL, where there is one (workers and compute servers
    /// connect to it).
    pub fn broker_url(&self) -> Option<&str> {
        match self {
            QueueLocation::Memory => None,
            QueueLocation::Amqp(url) => Some(url),
        }
    }
}

impl std::str::FromStr for QueueLocation {
    type Err = String;

    fn from_str(s: &str) -> Result<QueueLocation, String> {
        if s == Self::MEMORY {
            return Ok(QueueLocation::Memory);
        }
        if s.starts_with("amqp://") || s.starts_with("amqps://") {
            return Ok(QueueLocation::Amqp(s.to_string()));
        }
        Err(format!("queue {s:?}: expected {:?} or an amqp:// URL", Self::MEMORY))
    }
}

impl std::fmt::Display for QueueLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QueueLocation::Memory => f.write_str(Self::MEMORY),
            QueueLocation::Amqp(url) => f.write_str(url),
        }
    }
}

/// A query of a shard and the attempt number its result is written under:
/// a redelivered shard writes the same attempt again, a rerun the next one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryAttempt {
    pub query_id: QueryId,
    /// Absent in messages of runs before epochs: the first.
    #[serde(default)]
    pub epoch: Epoch,
    pub attempt: Attempt,
}

/// One unit of queued work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "snake_case")]
pub enum Job {
    /// Run the agent on these queries and score the answers.
    Episodes { run_id: RunId, shard_id: ShardId, queries: Vec<QueryAttempt> },
    /// Score the final episodes of these queries under a judging of the run.
    Judge { run_id: RunId, judging: String, shard_id: ShardId, query_ids: Vec<QueryId> },
    /// Stage one unit (the files that fill one partition) of a planned
    /// ingestion; the ingestion records which files.
    Ingest { ingestion: String, unit: u32 },
    /// Embed one partition of a collection.
    Embed { collection: String, model: String, partition: String },
    /// One shard of a simulation run. Unlike the others it carries its
    /// inputs (personas to set up, or the agents' feeds and memories at the
    /// start of a turn, as JSON the simulation defines): they are the
    /// coordinator's state, not rows of the lake.
    Sim { run_id: RunId, shard_id: ShardId, payload: String },
    /// One shard of an annotation; like a simulation's, it carries its
    /// settings (as JSON the annotation defines).
    Annotate { annotation: String, shard_id: ShardId, payload: String },
}

impl Job {
    pub fn kind(&self) -> JobKind {
        match self {
            Job::Episodes { .. } => JobKind::Episode,
            Job::Judge { .. } => JobKind::Judge,
            Job::Ingest { .. } => JobKind::Ingest,
            Job::Embed { .. } => JobKind::Embed,
            Job::Sim { .. } => JobKind::Sim,
            Job::Annotate { .. } => JobKind::Annotate,
        }
    }

    /// The shard of a run the job is, if it is one.
    pub fn shard_id(&self) -> Option<&ShardId> {
        match self {
            Job::Episodes { shard_id, .. } | Job::Judge { shard_id, .. } | Job::Sim { shard_id, .. } | Job::Annotate { shard_id, .. } => {
                Some(shard_id)
            }
            Job::Ingest { .. } | Job::Embed { .. } => None,
        }
    }

    /// The job as logs and dead letters name it.
    pub fn label(&self) -> String {
        match self {
            Job::Episodes { shard_id, .. } => format!("shard {shard_id}"),
            Job::Judge { judging, shard_id, .. } => format!("judge shard {shard_id} ({judging})"),
            Job::Ingest { ingestion, unit } => format!("ingestion {ingestion} unit {unit}"),
            Job::Embed { partition, .. } => format!("embedding {partition}"),
            Job::Sim { shard_id, .. } => format!("simulation shard {shard_id}"),
            Job::Annotate { annotation, shard_id, .. } => format!("annotation {annotation} shard {shard_id}"),
        }
    }
}

/// The envelope of every message: versioned, so a worker can refuse a message
/// from an incompatible coordinator instead of misreading it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobMessage {
    pub schema_version: u32,
    pub job: Job,
}

impl JobMessage {
    pub fn new(job: Job) -> JobMessage {
        JobMessage { schema_version: crate::SCHEMA_VERSION, job }
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("job messages always serialize")
    }

    /// Decodes a message, refusing unknown shapes and other schema versions.
    pub fn from_bytes(bytes: &[u8]) -> Result<JobMessage, String> {
        let msg: JobMessage = serde_json::from_slice(bytes).map_err(|e| format!("undecodable job message: {e}"))?;
        if msg.schema_version != crate::SCHEMA_VERSION {
            return Err(format!("job message has schema version {}, this worker reads {}", msg.schema_version, crate::SCHEMA_VERSION));
        }
        Ok(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_and_refuse_other_versions() {
        let msg = JobMessage::new(Job::Episodes {
            run_id: "r1".into(),
            shard_id: "r1-0001".into(),
            queries: vec![QueryAttempt { query_id: "red-00".into(), epoch: Epoch::FIRST, attempt: Attempt::FIRST }],
        });
        let back = JobMessage::from_bytes(&msg.to_bytes()).unwrap();
        assert_eq!(back, msg);
        assert_eq!(back.job.kind().queue(), "some.episode");
        assert_eq!(back.job.label(), "shard r1-0001");

        let mut other = msg.clone();
        other.schema_version = 999;
        let err = JobMessage::from_bytes(&other.to_bytes()).unwrap_err();
        assert!(err.contains("schema version 999"), "{err}");
        assert!(JobMessage::from_bytes(b"{\"job\":\"nope\"}").unwrap_err().starts_with("undecodable"));
    }

    #[test]
    fn queue_locations_parse_once() {
        assert_eq!("memory".parse::<QueueLocation>(), Ok(QueueLocation::Memory));
        let url = "amqp://guest:guest@127.0.0.1:5672/%2f";
        assert_eq!(url.parse::<QueueLocation>().map(|q| q.to_string()), Ok(url.to_string()));
        let err = "redis://x".parse::<QueueLocation>().unwrap_err();
        assert!(err.contains("expected \"memory\" or an amqp:// URL"), "{err}");
    }
}
