//! The coordinator's publishing: turns a run, a judging or an embedding
//! into jobs on a queue. Where they run, and the waiting, is
//! [`crate::executor`]; ingestion and simulation publish from their own
//! lifecycles (`world::ingest`, `sim::coordinator`).

use some_schemas::{Job, JobKind, JobMessage, QueryAttempt, QueryId, ShardId, knowledge, posts};

use crate::embed::{EmbedPartition, EmbedTarget, partitions};
use crate::error::Result;
use crate::lake::Lake;
use crate::queue::Queue;
use crate::runs::{JudgingSpec, RunSpec};

/// Publishes `todo` in shards of the spec's size; returns their ids.
/// `wave` keeps shard ids of a rerun apart from the first.
pub async fn publish_shards(queue: &dyn Queue, spec: &RunSpec, todo: &[QueryAttempt], wave: u32) -> Result<Vec<ShardId>> {
    let mut shards = Vec::new();
    for (i, shard) in todo.chunks(spec.shard_size.max(1)).enumerate() {
        let shard_id = ShardId(format!("{}-w{wave}-{i:05}", spec.run_id));
        let job = Job::Episodes { run_id: spec.run_id.clone(), shard_id: shard_id.clone(), queries: shard.to_vec() };
        queue.publish(JobKind::Episode, JobMessage::new(job).to_bytes()).await?;
        shards.push(shard_id);
    }
    Ok(shards)
}

/// Publishes judge jobs for `query_ids`, `shard_size` queries each; returns
/// their shard ids.
pub async fn publish_judging(queue: &dyn Queue, spec: &JudgingSpec, query_ids: &[QueryId], shard_size: usize) -> Result<Vec<ShardId>> {
    let wave = uuid::Uuid::new_v4().simple().to_string();
    let mut shards = Vec::new();
    for (i, shard) in query_ids.chunks(shard_size.max(1)).enumerate() {
        let shard_id = ShardId(format!("{}-{}-{}-{i:05}", spec.run_id, spec.judging, &wave[..6]));
        let job = Job::Judge {
            run_id: spec.run_id.clone(),
            judging: spec.judging.clone(),
            shard_id: shard_id.clone(),
            query_ids: shard.to_vec(),
        };
        queue.publish(JobKind::Judge, JobMessage::new(job).to_bytes()).await?;
        shards.push(shard_id);
    }
    Ok(shards)
}

/// Publishes one embedding job per partition of `target`; returns how many.
pub async fn publish_embedding(queue: &dyn Queue, lake: &Lake, target: &EmbedTarget, model: &str) -> Result<usize> {
    let parts = partitions(lake, target).await?;
    for (part, _) in &parts {
        let collection = if *part == EmbedPartition::Knowledge { knowledge::TABLE } else { posts::TABLE };
        let job = Job::Embed { collection: collection.into(), model: model.into(), partition: part.name() };
        queue.publish(JobKind::Embed, JobMessage::new(job).to_bytes()).await?;
    }
    Ok(parts.len())
}
