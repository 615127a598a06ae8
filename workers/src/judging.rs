//! Judging: scoring a run's final episodes, inline or as queue jobs.
//!
//! An episode is scored by its run's judge as it finishes, in the same
//! commit: the *primary* judging. `some judge` scores through the judge
//! queue (`some.judge`), one job per shard of queries:
//! - the primary judging, for final episodes that have no primary score
//!   (the judge failed past its retries when they finished: such a score is
//!   left out, never written as a 0);
//! - a named judging with another judge model or settings, so the same
//!   episodes are read under several judges (`some report RUN --judging
//!   NAME`, `some compare RUN RUN --judging NAME --baseline-judging primary`).
//!
//! A score names the episode row it scores (`episode_id`) and its judging.
//! Readers take, per query, the final episode and its score under the
//! judging they ask for ([`RunRows::finals`]). A judge job skips episodes
//! that already have a score under its judging, so a redelivered job adds
//! nothing twice.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::prelude::{col, lit};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use some_jobs::agent::EpisodeStatus;
use some_jobs::model::ChatModel;
use some_jobs::progress::Progress;
use some_jobs::scorers::{Judge, JudgeSettings, Scored, score};
use some_jobs::tasks::task_def;
use some_jobs::tools::WorldBackend as _;
use some_schemas::{EpisodeRow, Job, JobKind, JobMessage, QueryRow, RunEvent, RunRow, ScoreRow, ShardId, Timestamp};

use crate::backend::LakeBackend;
use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::llm::{ClientSettings, chat_model};
use crate::queue::Queue;
use crate::runner::{JudgeSettingsSpec, RunSpec, now, query_map};
use crate::runs::{RunRows, load_run, run_events};

/// Who scores a run's episodes, and how. The primary judging is the run's
/// spec; every other is a `judging` event of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgingSpec {
    pub run_id: String,
    /// [`some_schemas::PRIMARY_JUDGING`], or the name given to `some judge`.
    pub judging: String,
    pub judge_model: String,
    pub judge_endpoints: Vec<String>,
    pub settings: JudgeSettingsSpec,
}

/// Judging names are 1-64 characters of `A-Z a-z 0-9 . _ -`.
pub fn check_name(name: &str) -> Result<()> {
    let ok = (1..=64).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if ok {
        return Ok(());
    }
    Err(Error::Other(format!("judging name {name:?}: use 1 to 64 letters, digits, '.', '_' or '-'")))
}

/// Records a new judging of a run (or new endpoints for one).
pub async fn record_judging(lake: &Lake, spec: &JudgingSpec) -> Result<()> {
    check_name(&spec.judging)?;
    let json = serde_json::to_string(spec).map_err(|e| Error::Other(format!("judging spec: {e}")))?;
    let row = RunRow { run_id: spec.run_id.clone(), event: RunEvent::Judging.as_str().into(), at: now(), spec: json };
    let mut txn = lake.txn();
    txn.write_rows(vec![row]).await?;
    txn.commit().await?;
    Ok(())
}

/// Every judging of a run, the primary first, each as last recorded.
pub async fn judgings(lake: &Lake, spec: &RunSpec) -> Result<Vec<JudgingSpec>> {
    let mut events: Vec<RunRow> =
        run_events(lake, &spec.run_id).await?.into_iter().filter(|e| e.event == RunEvent::Judging.as_str()).collect();
    events.sort_by_key(|e| e.at.0);
    let mut named: Vec<JudgingSpec> = Vec::new();
    for event in events {
        let judging: JudgingSpec = serde_json::from_str(&event.spec)
            .map_err(|e| Error::Other(format!("run {}: a stored judging spec does not read: {e}", spec.run_id)))?;
        match named.iter_mut().find(|j| j.judging == judging.judging) {
            Some(slot) => *slot = judging,
            None => named.push(judging),
        }
    }
    Ok(std::iter::once(spec.primary_judging()).chain(named).collect())
}

/// One judging of a run, by name.
pub async fn load_judging(lake: &Lake, run_id: &str, name: &str) -> Result<(JudgingSpec, bool)> {
    let (spec, cancelled) = load_run(lake, run_id).await?;
    let all = judgings(lake, &spec).await?;
    let names: Vec<&str> = all.iter().map(|j| j.judging.as_str()).collect();
    match all.iter().find(|j| j.judging == name) {
        Some(j) => Ok((j.clone(), cancelled)),
        None => Err(Error::Unknown(format!("run {run_id} has no judging {name:?}; its judgings: {}", names.join(", ")))),
    }
}

/// The queries, in the run's planned order, whose final episode has no
/// score under `judging`.
pub fn unscored(spec: &RunSpec, rows: &RunRows, judging: &str) -> Vec<String> {
    let finals = rows.final_episodes();
    let scored: HashSet<&str> = rows.scores.iter().filter(|s| s.judging == judging).map(|s| s.episode_id.as_str()).collect();
    spec.queries.iter().filter(|q| finals.get(q.as_str()).is_some_and(|e| !scored.contains(e.episode_id.as_str()))).cloned().collect()
}

/// Publishes judge jobs for `query_ids`, `shard_size` queries each; returns
/// their shard ids.
pub async fn publish_judging(queue: &dyn Queue, spec: &JudgingSpec, query_ids: &[String], shard_size: usize) -> Result<Vec<ShardId>> {
    let wave = uuid::Uuid::new_v4().simple().to_string();
    let mut shards = Vec::new();
    for (i, shard) in query_ids.chunks(shard_size.max(1)).enumerate() {
        let shard_id = ShardId(format!("{}-{}-{}-{i:05}", spec.run_id, spec.judging, &wave[..6]));
        let job = Job::Judge {
            run_id: spec.run_id.as_str().into(),
            judging: spec.judging.clone(),
            shard_id: shard_id.clone(),
            query_ids: shard.iter().map(|q| q.as_str().into()).collect(),
        };
        queue.publish(JobKind::Judge, JobMessage::new(job).to_bytes()).await?;
        shards.push(shard_id);
    }
    Ok(shards)
}

/// The post a user-task query embeds, as JSON, if it has one.
pub(crate) async fn ref_post(backend: &LakeBackend, query: &QueryRow) -> Option<String> {
    backend.ref_post(query.post_id.as_deref()?).await.ok().flatten()
}

/// The question the agent was asked, which the judge sees.
pub(crate) fn question(query: &QueryRow, post_json: Option<&str>) -> String {
    query.task.parse().ok().and_then(|t| task_def(t).user_message(query, post_json).ok()).unwrap_or_default()
}

/// Scores an episode's answer. An episode that never reached the model or
/// never had a prompt has nothing to judge: it scores 0, not completed.
pub(crate) async fn score_answer(
    judge: &Judge<'_>,
    query: &QueryRow,
    question: &str,
    status: EpisodeStatus,
    answer: Option<&str>,
) -> Scored {
    match status {
        EpisodeStatus::ModelError | EpisodeStatus::QueryError => Scored::default(),
        EpisodeStatus::Answered | EpisodeStatus::BudgetExhausted => score(judge, query, question, answer).await,
    }
}

/// The `scores` row of `episode` under `judging`.
pub(crate) fn score_row(judging: &JudgingSpec, episode: &EpisodeRow, scored: Scored, finished_at: Timestamp) -> ScoreRow {
    ScoreRow {
        query_id: episode.query_id.clone(),
        task: episode.task.clone(),
        attempt: episode.attempt,
        is_final: episode.is_final,
        episode_id: episode.episode_id.clone(),
        judging: judging.judging.clone(),
        extracted: scored.extracted,
        dimensions: scored.dimensions.map(|d| serde_json::to_string(&d).unwrap_or_default()),
        score: scored.score,
        completed: scored.completed,
        judge_model: Some(judging.judge_model.clone()),
        judge_calls: scored.judge_calls as i32,
        judge_seed: judging.settings.seed.map(|s| s as i64),
        judge_temperature: judging.settings.temperature.map(f64::from),
        error: scored.error,
        finished_at,
        run_id: episode.run_id.clone(),
    }
}

/// What one judge job did.
#[derive(Debug, Default, PartialEq)]
pub struct JudgedShard {
    pub scored: usize,
    /// Episodes that already had a score under the judging.
    pub already: usize,
    /// Episodes the judge could not score (its endpoint failed past its
    /// retries), with the first error.
    pub unavailable: usize,
    pub first_error: Option<String>,
}

/// A judging's judge, world and queries: what its jobs run with. Built
/// once per worker process and judging.
pub struct JudgeRunner {
    lake: Lake,
    backend: LakeBackend,
    judge: Arc<dyn ChatModel>,
    queries: HashMap<String, QueryRow>,
}

impl JudgeRunner {
    pub async fn for_spec(lake: &Lake, spec: &JudgingSpec, client: &ClientSettings, threads: usize) -> Result<JudgeRunner> {
        Ok(JudgeRunner {
            lake: lake.clone(),
            backend: LakeBackend::new(lake.clone())?,
            judge: chat_model(&spec.judge_model, &spec.judge_endpoints, client, threads)?,
            queries: query_map(lake).await?,
        })
    }

    /// Scores the final episodes of `query_ids` that have no score under the
    /// judging yet, `concurrency` at once, and commits the scores.
    pub async fn judge_shard(
        &self,
        spec: &JudgingSpec,
        query_ids: &[String],
        concurrency: usize,
        progress: &dyn Progress,
    ) -> Result<JudgedShard> {
        let ctx = self.lake.session()?;
        let ids: Vec<_> = query_ids.iter().map(|q| lit(q.clone())).collect();
        let of_shard = || col("run_id").eq(lit(spec.run_id.clone())).and(col("query_id").in_list(ids.clone(), false));
        let rows = RunRows {
            episodes: self.lake.read(&ctx, Some(of_shard().and(col("is_final")))).await?,
            scores: self.lake.read(&ctx, Some(of_shard().and(col("judging").eq(lit(spec.judging.clone()))))).await?,
        };
        let scored: HashSet<&str> = rows.scores.iter().map(|s| s.episode_id.as_str()).collect();
        let finals = rows.final_episodes();
        // Owned items: futures over borrowed ones are not provably Send when
        // a worker spawns this.
        let todo: Vec<EpisodeRow> = finals.values().filter(|e| !scored.contains(e.episode_id.as_str())).map(|e| (*e).clone()).collect();
        let mut out = JudgedShard { already: finals.len() - todo.len(), ..Default::default() };
        progress.advance(out.already as u64);

        let settings = JudgeSettings::from(&spec.settings);
        let judge = &Judge { model: self.judge.as_ref(), settings: &settings };
        let results: Vec<(EpisodeRow, Scored)> = futures::stream::iter(todo.into_iter().map(|episode| async move {
            let scored = match self.queries.get(&episode.query_id) {
                None => Scored { error: Some(format!("query {} is not in the lake", episode.query_id)), ..Default::default() },
                Some(query) => {
                    let post_json = ref_post(&self.backend, query).await;
                    let status = EpisodeStatus::parse(&episode.status).unwrap_or(EpisodeStatus::QueryError);
                    score_answer(judge, query, &question(query, post_json.as_deref()), status, episode.answer.as_deref()).await
                }
            };
            progress.advance(1);
            (episode, scored)
        }))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;

        let mut score_rows = Vec::with_capacity(results.len());
        for (episode, scored) in results {
            if scored.unavailable {
                out.unavailable += 1;
                out.first_error.get_or_insert_with(|| scored.error.clone().unwrap_or_default());
            } else {
                score_rows.push(score_row(spec, &episode, scored, now()));
            }
        }
        out.scored = score_rows.len();
        if !score_rows.is_empty() {
            let mut txn = self.lake.txn();
            txn.write_rows(score_rows).await?;
            txn.commit().await?;
        }
        Ok(out)
    }
}
