//! Running a shard's episodes and scoring them: the work of one episode
//! shard, whichever queue delivered it.
//!
//! A shard is a list of queries with their attempts. Each query's episode
//! runs on the world (with its own folders), is scored by the run's judge
//! (the primary judging), and becomes one `episodes` row and one `scores`
//! row. Episodes are committed as they finish (those finishing within
//! [`COMMIT_WITHIN`] of each other in one transaction, an episode always
//! with its score), so `some status` moves during a long shard; the shard
//! is acknowledged after its last commit. A shard interrupted anywhere
//! keeps the episodes it committed, and its redelivery runs only the rest
//! (the worker skips attempts that have a row). An episode the judge could
//! not be reached for is committed without its score, for `some judge` to
//! fill in.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use datafusion::prelude::{col, lit};
use futures::StreamExt;
use some_jobs::agent::{AgentSettings, Episode, EpisodeContext, EpisodeStatus, run_episode};
use some_jobs::chat::ChatModel;
use some_jobs::embed::Embedder;
use some_jobs::progress::Progress;
use some_jobs::scorers::{Judge, Scored};
use some_jobs::tools::{Folders, KernelService, ToolContext};
use some_schemas::{Attempt, EpisodeId, EpisodeRow, Epoch, QueryAttempt, QueryId, QueryRow, RunId, ScoreRow, Timestamp, episodes};

use super::budget;
use super::record::{load_run, record_stop};
use super::scoring::{question, ref_post, score_answer, score_row};
use super::spec::RunSpec;
use crate::error::{Error, Result};
use crate::handler::{Cache, JobContext};
use crate::lake::Lake;
use crate::llm::{ClientSettings, chat_model, embedder};
use crate::world::{LakeBackend, query_map};

/// Everything a shard runs with. Built once per worker process.
pub struct Runner {
    pub lake: Lake,
    pub backend: Arc<LakeBackend>,
    /// The tools' similarity and clustering.
    pub kernels: Arc<dyn KernelService>,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub model: Arc<dyn ChatModel>,
    pub judge: Arc<dyn ChatModel>,
    /// Queries by id, read once.
    pub queries: HashMap<QueryId, QueryRow>,
    pub worker: String,
}

/// How long a finished episode may wait for others to share its commit:
/// long enough that an instant endpoint's episodes batch, short enough
/// that progress shows at once next to minutes-long episodes.
pub const COMMIT_WITHIN: Duration = Duration::from_secs(2);

/// An episode and its score, as rows; no score if the judge could not be
/// reached.
pub struct Finished {
    pub episode: EpisodeRow,
    pub score: Option<ScoreRow>,
}

impl Finished {
    /// The episode in one line, for progress logs.
    fn line(&self) -> String {
        let e = &self.episode;
        let score = self.score.as_ref().map_or(String::new(), |s| format!(", score {:.1}", s.score));
        format!(
            "{} {} ({} model calls, {} tool calls, {} tokens, {:.1} s{score})",
            e.query_id,
            e.status,
            e.llm_calls,
            e.tool_calls,
            e.prompt_tokens + e.completion_tokens,
            e.latency_ms as f64 / 1000.0
        )
    }
}

impl Runner {
    /// Everything a run's shards need: the world, the models the spec names
    /// (built-in ones load on `threads` CPU threads), the queries.
    pub async fn for_spec(
        lake: &Lake,
        spec: &RunSpec,
        client: &ClientSettings,
        threads: usize,
        kernels: Arc<dyn KernelService>,
    ) -> Result<Runner> {
        let model = chat_model(&spec.model, &spec.endpoints, client, threads)?;
        let judge = if spec.judge_model == spec.model && spec.judge_endpoints == spec.endpoints {
            model.clone()
        } else {
            chat_model(&spec.judge_model, &spec.judge_endpoints, client, threads)?
        };
        Ok(Runner {
            lake: lake.clone(),
            backend: Arc::new(LakeBackend::new(lake.clone())?),
            kernels,
            embedder: embedder(&spec.tools.embedding_model, &spec.embedding_endpoints, client)?,
            model,
            judge,
            queries: query_map(lake).await?,
            worker: worker_name(),
        })
    }

    /// Runs and scores one query in one epoch (sampling with the epoch's
    /// seed). A query the lake does not have becomes a `query_error`
    /// episode; an id that names no task cannot be recorded at all, and
    /// fails the shard.
    pub async fn run_one(&self, spec: &RunSpec, sample: &QueryAttempt) -> Result<Finished> {
        let started_at = Timestamp::now();
        let query_id = &sample.query_id;
        let Some(query) = self.queries.get(query_id) else {
            let task = query_id.task().ok_or_else(|| Error::Unknown(format!("query id {query_id:?} names no task")))?;
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
            let placeholder = QueryRow::blank(query_id.clone(), task);
            return Ok(self.rows(spec, &placeholder, sample, started_at, episode, Scored::default()));
        };
        // One world for the whole episode: a world replaced while it runs
        // is read by the next episodes, never by part of this one.
        let world = self.backend.world().await?;
        let post_json = ref_post(world.as_ref(), query).await?;
        let tools = ToolContext {
            backend: world.as_ref(),
            kernels: self.kernels.as_ref(),
            embedder: self.embedder.as_deref(),
            chat: Some(self.model.as_ref()),
            settings: &spec.tools,
        };
        let settings = AgentSettings { seed: spec.seed_of(sample.epoch), ..spec.agent.clone() };
        let ctx = EpisodeContext { model: self.model.as_ref(), tools, settings: &settings };
        let mut folders = Folders::default();
        let episode = run_episode(&ctx, query, post_json.as_deref(), &mut folders).await?;
        let judge = Judge { model: self.judge.as_ref(), settings: &spec.judge };
        let question = question(query, post_json.as_deref());
        let scored = score_answer(&judge, query, &question, episode.status, episode.answer.as_deref()).await;
        Ok(self.rows(spec, query, sample, started_at, episode, scored))
    }

    fn rows(
        &self,
        spec: &RunSpec,
        query: &QueryRow,
        sample: &QueryAttempt,
        started_at: Timestamp,
        episode: Episode,
        scored: Scored,
    ) -> Finished {
        // A model failure is retried by `some rerun`; everything else is the result.
        let is_final = !matches!(episode.status, EpisodeStatus::ModelError);
        let finished_at = Timestamp::now();
        let episode_row = EpisodeRow {
            query_id: query.query_id.clone(),
            task: query.task,
            attempt: sample.attempt,
            epoch: sample.epoch,
            episode_id: EpisodeId::new_random(),
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
            cached_prompt_tokens: Some(episode.usage.cached_tokens as i64),
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

    /// Runs a shard, committing episodes as they finish; returns them once
    /// all are durable. On an error, what finished before it is committed
    /// first (best effort), so a redelivery does not run it again.
    ///
    /// A commit runs beside the episodes, never while they wait: an episode
    /// and a commit both take the lake's lock, and a lock handed to an
    /// episode that is not polled (its stream waiting on the commit) would
    /// never be given back.
    pub async fn run_shard(&self, spec: &RunSpec, queries: &[QueryAttempt], progress: &dyn Progress) -> Result<Vec<Finished>> {
        let concurrency = spec.concurrency.max(1);
        // Owned items: a closure over borrowed ones is not provably Send when
        // a worker spawns this future.
        let mut running = futures::stream::iter(queries.iter().cloned().map(|q| async move { self.run_one(spec, &q).await }))
            .buffer_unordered(concurrency);
        let mut committed = Vec::with_capacity(queries.len());
        let mut finished = Vec::new();
        let mut due: Option<tokio::time::Instant> = None;
        let mut committing: Option<futures::future::BoxFuture<'_, (Vec<Finished>, Result<()>)>> = None;
        let mut ran_all = false;
        let failed = loop {
            if ran_all && committing.is_none() && finished.is_empty() {
                break None;
            }
            let deadline = due.unwrap_or_else(|| tokio::time::Instant::now() + Duration::from_secs(3600));
            tokio::select! {
                next = running.next(), if !ran_all => match next {
                    Some(Ok(f)) => {
                        progress.item(&f.line());
                        finished.push(f);
                        due.get_or_insert_with(|| tokio::time::Instant::now() + COMMIT_WITHIN);
                    }
                    Some(Err(e)) => break Some(e),
                    None => (ran_all, due) = (true, Some(tokio::time::Instant::now())),
                },
                (batch, landed) = async { committing.as_mut().expect("polled only when under way").await }, if committing.is_some() => {
                    committing = None;
                    landed?;
                    committed.extend(batch);
                }
                _ = tokio::time::sleep_until(deadline), if due.is_some() && committing.is_none() => {
                    committing = Some(Box::pin(self.commit_batch(std::mem::take(&mut finished))));
                    due = None;
                }
            }
        };
        let Some(e) = failed else { return Ok(committed) };
        // The episodes still running go first: one may hold the lock the
        // commits need.
        drop(running);
        if let Some(c) = committing
            && let (batch, Err(_)) = c.await
        {
            finished.extend(batch);
        }
        if let (_, Err(lost)) = self.commit_batch(finished).await {
            tracing::warn!(error = %lost, "could not commit the episodes finished before a failure");
        }
        Err(e)
    }

    /// Commits `batch` and hands it back.
    async fn commit_batch(&self, batch: Vec<Finished>) -> (Vec<Finished>, Result<()>) {
        let landed = self.commit(&batch).await;
        (batch, landed)
    }

    /// Commits finished episodes with their scores as one transaction.
    async fn commit(&self, finished: &[Finished]) -> Result<()> {
        if finished.is_empty() {
            return Ok(());
        }
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
        Ok(())
    }
}

/// This process as results name it: host and process id.
pub fn worker_name() -> String {
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "localhost".into());
    format!("{host}:{}", std::process::id())
}
/// The handler of episode shards: a runner per run and endpoints (a
/// rerun may move them), built by the first shard of the run.
pub struct EpisodeJobs {
    runners: Cache<(Runner, RunSpec)>,
    /// The tools' similarity and clustering (this process's, or compute
    /// workers').
    kernels: Arc<dyn KernelService>,
}

impl EpisodeJobs {
    pub fn new(kernels: Arc<dyn KernelService>) -> EpisodeJobs {
        EpisodeJobs { runners: Cache::default(), kernels }
    }

    /// Runs a shard's queries unless its run was cancelled or reached its
    /// budget (recorded here the first time it is seen); on a redelivery,
    /// only those whose attempt has no row yet.
    pub async fn run(&self, ctx: &JobContext<'_>, run_id: &RunId, queries: &[QueryAttempt]) -> Result<()> {
        let record = load_run(ctx.lake, run_id).await?;
        if record.cancelled {
            tracing::info!(run = %run_id, "run cancelled: dropping its shard");
            return Ok(());
        }
        if let Some(reason) = &record.stopped {
            tracing::info!(run = %run_id, reason = %reason, "run stopped: dropping its shard");
            return Ok(());
        }
        let spec = record.spec;
        if !spec.budget.is_empty()
            && let Some(reason) = spec.budget.reached(&budget::spent(ctx.lake, run_id).await?)
        {
            tracing::warn!(run = %run_id, reason = %reason, "run reached its budget: dropping its remaining shards");
            record_stop(ctx.lake, &spec, reason).await?;
            return Ok(());
        }
        let key = format!("{run_id} {:?} {:?} {:?}", spec.endpoints, spec.judge_endpoints, spec.budget);
        let runner = self
            .runners
            .get_or_build(key, async {
                let runner = Runner::for_spec(ctx.lake, &spec, ctx.client, ctx.threads, self.kernels.clone()).await?;
                Ok((runner, spec.clone()))
            })
            .await
            // A store that is down is worth waiting for; an unknown model is not.
            .map_err(|e| e.context(format!("cannot set up run {run_id}")))?;
        let mut todo = queries.to_vec();
        if ctx.redelivered {
            let done = already_recorded(ctx.lake, run_id, &todo).await?;
            todo.retain(|q| !done.contains(&(q.query_id.clone(), q.epoch, q.attempt)));
        }
        if todo.is_empty() {
            return Ok(());
        }
        let (runner, spec) = runner.as_ref();
        runner.run_shard(spec, &todo, ctx.progress).await.map(drop)
    }
}

/// Which (query, epoch, attempt)s of a shard have a row already, final or
/// failed: a failed attempt is retried by `some rerun` as the next attempt,
/// never by running the same one twice.
async fn already_recorded(lake: &Lake, run_id: &RunId, todo: &[QueryAttempt]) -> Result<HashSet<(QueryId, Epoch, Attempt)>> {
    let ctx = lake.session().await?;
    let ids = todo.iter().map(|q| lit(q.query_id.as_str())).collect();
    let filter = col(episodes::run_id).eq(lit(run_id.as_str())).and(col(episodes::query_id).in_list(ids, false));
    let rows: Vec<EpisodeRow> = lake.read(&ctx, Some(filter)).await?;
    Ok(rows.into_iter().map(|e| (e.query_id, e.epoch, e.attempt)).collect())
}
