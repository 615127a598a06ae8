//! Running episodes and scoring them: the work of one shard, whichever
//! queue delivered it.
//!
//! A shard is a list of query ids. Each query's episode runs on the world
//! (with its own folders), is scored by the run's judge (the primary
//! judging, [`crate::judging`]), and becomes one `episodes` row and one
//! `scores` row. The rows of a shard are committed together, and only then
//! is the shard acknowledged: a shard interrupted anywhere before the commit
//! leaves nothing, and its redelivery does all of it again. An episode the
//! judge could not be reached for is committed without its score, for
//! `some judge` to fill in.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use some_jobs::agent::{AgentSettings, Episode, EpisodeContext, EpisodeStatus, run_episode};
use some_jobs::embed::Embedder;
use some_jobs::kernels::CpuKernels;
use some_jobs::model::ChatModel;
use some_jobs::scorers::{Judge, JudgeSettings, Scored};
use some_jobs::tools::{Folders, ToolContext, ToolSettings};
use some_schemas::{EpisodeRow, PRIMARY_JUDGING, QueryRow, ScoreRow, Timestamp};

use crate::backend::LakeBackend;
use crate::error::{Error, Result};
use crate::judging::{JudgingSpec, question, ref_post, score_answer, score_row};
use crate::lake::Lake;
use crate::llm::{ClientSettings, chat_model, installed_embedder};

/// What a run was asked to do, stored with it (`runs.spec`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub run_id: String,
    /// The agent model's name and endpoints.
    pub model: String,
    pub endpoints: Vec<String>,
    pub judge_model: String,
    pub judge_endpoints: Vec<String>,
    pub agent: AgentSettings,
    pub tools: ToolSettings,
    pub judge: JudgeSettingsSpec,
    /// Query ids, in the order they were planned.
    pub queries: Vec<String>,
    pub shard_size: usize,
    /// Episodes of one shard run at once.
    pub concurrency: usize,
}

/// [`JudgeSettings`] as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgeSettingsSpec {
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
    pub max_attempts: u32,
}

impl From<&JudgeSettingsSpec> for JudgeSettings {
    fn from(s: &JudgeSettingsSpec) -> JudgeSettings {
        JudgeSettings { temperature: s.temperature, seed: s.seed, max_attempts: s.max_attempts }
    }
}

impl RunSpec {
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

impl Default for JudgeSettingsSpec {
    fn default() -> Self {
        let d = JudgeSettings::default();
        JudgeSettingsSpec { temperature: d.temperature, seed: d.seed, max_attempts: d.max_attempts }
    }
}

/// Everything a shard runs with. Built once per worker process.
pub struct Runner {
    pub lake: Lake,
    pub backend: Arc<LakeBackend>,
    pub kernels: CpuKernels,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub model: Arc<dyn ChatModel>,
    pub judge: Arc<dyn ChatModel>,
    /// Queries by id, read once.
    pub queries: HashMap<String, QueryRow>,
    pub worker: String,
}

pub(crate) fn now() -> Timestamp {
    Timestamp(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64))
}

/// An episode and its score, as rows; no score if the judge could not be
/// reached.
pub struct Finished {
    pub episode: EpisodeRow,
    pub score: Option<ScoreRow>,
}

impl Runner {
    /// Everything a run's shards need: the world, the models the spec names
    /// (built-in ones load on `threads` CPU threads), the queries.
    pub async fn for_spec(lake: &Lake, spec: &RunSpec, client: &ClientSettings, threads: usize) -> Result<Runner> {
        let model = chat_model(&spec.model, &spec.endpoints, client, threads)?;
        let judge = if spec.judge_model == spec.model && spec.judge_endpoints == spec.endpoints {
            model.clone()
        } else {
            chat_model(&spec.judge_model, &spec.judge_endpoints, client, threads)?
        };
        Ok(Runner {
            lake: lake.clone(),
            backend: Arc::new(LakeBackend::new(lake.clone())?),
            kernels: CpuKernels::default(),
            embedder: installed_embedder()?,
            model,
            judge,
            queries: query_map(lake).await?,
            worker: worker_name(),
        })
    }

    /// Runs and scores one query.
    pub async fn run_one(&self, spec: &RunSpec, query_id: &str, attempt: i32) -> Finished {
        let started_at = now();
        let Some(query) = self.queries.get(query_id) else {
            let episode = Episode {
                status: EpisodeStatus::QueryError,
                answer: None,
                error: Some(format!("query {query_id} is not in the lake")),
                llm_calls: 0,
                tool_calls: 0,
                tool_errors: 0,
                usage: Default::default(),
                latency_ms: 0,
                transcript: Default::default(),
            };
            let placeholder = QueryRow {
                query_id: query_id.to_string(),
                task: query_id.split('-').next().unwrap_or_default().to_uppercase(),
                ..empty_query()
            };
            return self.rows(spec, &placeholder, attempt, started_at, episode, Scored::default());
        };
        let post_json = ref_post(&self.backend, query).await;
        let tools = ToolContext {
            backend: self.backend.as_ref(),
            kernels: &self.kernels,
            embedder: self.embedder.as_deref(),
            chat: Some(self.model.as_ref()),
            settings: &spec.tools,
        };
        let ctx = EpisodeContext { model: self.model.as_ref(), tools, settings: &spec.agent };
        let mut folders = Folders::default();
        let episode = run_episode(&ctx, query, post_json.as_deref(), &mut folders).await;
        let judge_settings = JudgeSettings::from(&spec.judge);
        let judge = Judge { model: self.judge.as_ref(), settings: &judge_settings };
        let question = question(query, post_json.as_deref());
        let scored = score_answer(&judge, query, &question, episode.status, episode.answer.as_deref()).await;
        self.rows(spec, query, attempt, started_at, episode, scored)
    }

    fn rows(&self, spec: &RunSpec, query: &QueryRow, attempt: i32, started_at: Timestamp, episode: Episode, scored: Scored) -> Finished {
        // A model failure is retried by `some rerun`; everything else is the result.
        let is_final = !matches!(episode.status, EpisodeStatus::ModelError);
        let finished_at = now();
        let episode_row = EpisodeRow {
            query_id: query.query_id.clone(),
            task: query.task.clone(),
            attempt,
            episode_id: uuid::Uuid::new_v4().simple().to_string(),
            is_final,
            status: episode.status.as_str().to_string(),
            answer: episode.answer,
            model: spec.model.clone(),
            protocol: format!("{:?}", spec.agent.protocol).to_lowercase(),
            llm_calls: episode.llm_calls as i32,
            tool_calls: episode.tool_calls as i32,
            tool_errors: episode.tool_errors as i32,
            prompt_tokens: episode.usage.prompt_tokens as i64,
            completion_tokens: episode.usage.completion_tokens as i64,
            latency_ms: episode.latency_ms as i64,
            started_at,
            finished_at,
            worker: self.worker.clone(),
            transcript: episode.transcript.to_json(),
            error: episode.error,
            run_id: spec.run_id.clone(),
        };
        let score = (!scored.unavailable).then(|| score_row(&spec.primary_judging(), &episode_row, scored, finished_at));
        Finished { episode: episode_row, score }
    }

    /// Runs a shard and commits its rows; returns them once they are durable.
    pub async fn run_shard(
        &self,
        spec: &RunSpec,
        queries: &[(String, i32)],
        progress: &dyn some_jobs::progress::Progress,
    ) -> Result<Vec<Finished>> {
        let concurrency = spec.concurrency.max(1);
        // Owned items: a closure over borrowed ones is not provably Send when
        // a worker spawns this future.
        let finished: Vec<Finished> = futures::stream::iter(queries.iter().cloned().map(|(q, attempt)| async move {
            let f = self.run_one(spec, &q, attempt).await;
            progress.advance(1);
            f
        }))
        .buffer_unordered(concurrency)
        .collect()
        .await;
        let mut txn = self.lake.txn();
        let episodes: Vec<EpisodeRow> = finished.iter().map(|f| f.episode.clone()).collect();
        let scores: Vec<ScoreRow> = finished.iter().filter_map(|f| f.score.clone()).collect();
        // Scores are staged first so they become visible first: an episode
        // a reader can see always has its score.
        let written = async {
            txn.write_rows(scores).await?;
            txn.write_rows(episodes).await
        }
        .await;
        if let Err(e) = written {
            txn.abort().await?;
            return Err(e);
        }
        txn.commit().await?;
        Ok(finished)
    }
}

fn empty_query() -> QueryRow {
    QueryRow {
        query_id: String::new(),
        task: String::new(),
        source_key: String::new(),
        position: 0,
        uid: None,
        post_id: None,
        action: None,
        comment: None,
        location: None,
        window_start: None,
        window_end: None,
        topic: None,
        claim: None,
        question: None,
        label: None,
        reference: None,
        entry: String::new(),
    }
}

/// Reads every query of the lake into a map by id.
pub async fn query_map(lake: &Lake) -> Result<HashMap<String, QueryRow>> {
    let queries = crate::world::read_queries(lake).await?;
    if queries.is_empty() {
        return Err(Error::Other("the lake has no queries: run `some ingest queries` first".into()));
    }
    Ok(queries.into_iter().map(|q| (q.query_id.clone(), q)).collect())
}

/// This process as results name it: host and process id.
pub fn worker_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}
