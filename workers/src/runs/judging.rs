//! Judge jobs: scoring a run's final episodes under one judging, apart
//! from running them.
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
//! judging they ask for ([`super::RunRows::finals`]). A judge job skips episodes
//! that already have a score under its judging, so a redelivered job adds
//! nothing twice.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::prelude::{col, lit};
use futures::StreamExt;
use some_jobs::agent::EpisodeStatus;
use some_jobs::chat::ChatModel;
use some_jobs::progress::Progress;
use some_jobs::scorers::{Judge, Scored};
use some_schemas::{EpisodeRow, QueryId, QueryRow, RunId, Timestamp, scores};

use super::record::load_run;
use super::results::RunRows;
use super::scoring::{question, ref_post, score_answer, score_row};
use super::spec::JudgingSpec;
use crate::error::{Error, Result};
use crate::handler::{Cache, JobContext};
use crate::lake::Lake;
use crate::llm::{ClientSettings, chat_model};
use crate::world::{LakeBackend, query_map};

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
    queries: HashMap<QueryId, QueryRow>,
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
        query_ids: &[QueryId],
        concurrency: usize,
        progress: &dyn Progress,
    ) -> Result<JudgedShard> {
        let ctx = self.lake.session().await?;
        let ids: Vec<_> = query_ids.iter().map(|q| lit(q.as_str())).collect();
        // The episodes and scores tables name these columns alike.
        let of_shard = || col(scores::run_id).eq(lit(spec.run_id.as_str())).and(col(scores::query_id).in_list(ids.clone(), false));
        let rows = RunRows {
            episodes: self.lake.read(&ctx, Some(of_shard().and(col(scores::is_final)))).await?,
            scores: self.lake.read(&ctx, Some(of_shard().and(col(scores::judging).eq(lit(spec.judging.as_str()))))).await?,
        };
        let scored: HashSet<&str> = rows.scores.iter().map(|s| s.episode_id.as_str()).collect();
        let finals = rows.final_episodes();
        // Owned items: futures over borrowed ones are not provably Send when
        // a worker spawns this.
        let todo: Vec<EpisodeRow> = finals.values().filter(|e| !scored.contains(e.episode_id.as_str())).map(|e| (*e).clone()).collect();
        let mut out = JudgedShard { already: finals.len() - todo.len(), ..Default::default() };
        progress.advance(out.already as u64);

        let judge = &Judge { model: self.judge.as_ref(), settings: &spec.settings };
        let results: Vec<Result<(EpisodeRow, Scored)>> = futures::stream::iter(todo.into_iter().map(|episode| async move {
            let scored = match self.queries.get(&episode.query_id) {
                None => Scored { error: Some(format!("query {} is not in the lake", episode.query_id)), ..Default::default() },
                Some(query) => {
                    let post_json = ref_post(&self.backend, query).await?;
                    let status = EpisodeStatus::parse(&episode.status).unwrap_or(EpisodeStatus::QueryError);
                    score_answer(judge, query, &question(query, post_json.as_deref()), status, episode.answer.as_deref()).await
                }
            };
            progress.advance(1);
            Ok((episode, scored))
        }))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
        // A post that could not be read fails the shard before anything is
        // committed: the judge would have scored a question without it.
        let results = results.into_iter().collect::<Result<Vec<_>>>()?;

        let mut score_rows = Vec::with_capacity(results.len());
        for (episode, scored) in results {
            if scored.unavailable {
                out.unavailable += 1;
                out.first_error.get_or_insert_with(|| scored.error.clone().unwrap_or_default());
            } else {
                score_rows.push(score_row(spec, &episode, scored, Timestamp::now()));
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
/// The handler of judge shards: a judge per judging and endpoints.
#[derive(Default)]
pub struct JudgeJobs {
    judges: Cache<JudgeRunner>,
}

impl JudgeJobs {
    /// Scores the final episodes of a judge shard that its judging has no
    /// score for yet; fails (to be tried again) if the judge could not be
    /// reached for some, after committing the others.
    pub async fn run(&self, ctx: &JobContext<'_>, run_id: &RunId, judging: &str, query_ids: &[QueryId]) -> Result<()> {
        let record = load_run(ctx.lake, run_id).await?;
        if record.cancelled {
            tracing::info!(run = %run_id, "run cancelled: dropping its judge shard");
            return Ok(());
        }
        let spec = record.judging(judging)?.clone();
        let key = format!("{run_id} {judging} {:?}", spec.judge_endpoints);
        let judge = self
            .judges
            .get_or_build(key, JudgeRunner::for_spec(ctx.lake, &spec, ctx.client, ctx.threads))
            .await
            .map_err(|e| e.context(format!("cannot set up judging {judging} of run {run_id}")))?;
        let done = judge.judge_shard(&spec, query_ids, ctx.client.concurrency, ctx.progress).await?;
        if done.unavailable > 0 {
            return Err(Error::Task(format!(
                "the judge could not score {} episodes: {}",
                done.unavailable,
                done.first_error.unwrap_or_default()
            )));
        }
        Ok(())
    }
}
