//! Scoring one episode's answer and recording it as a `scores` row: shared
//! by the inline judging of a shard ([`super::episodes`]) and judge jobs
//! ([`super::judging`]), so both score the same way.

use some_jobs::agent::EpisodeStatus;
use some_jobs::scorers::{Judge, Scored, score};
use some_jobs::tasks::task_def;
use some_jobs::tools::WorldBackend;
use some_schemas::{EpisodeRow, QueryRow, ScoreRow, Timestamp};

use super::spec::JudgingSpec;
use crate::error::Result;

/// The post a user-task query embeds, as JSON, if it has one. A failed
/// read is an error, not a missing post: the question would lose its post.
pub async fn ref_post(backend: &dyn WorldBackend, query: &QueryRow) -> Result<Option<String>> {
    let Some(post_id) = query.post_id.as_deref() else { return Ok(None) };
    Ok(backend.ref_post(post_id).await?)
}

/// The question the agent was asked, which the judge sees.
pub fn question(query: &QueryRow, post_json: Option<&str>) -> String {
    task_def(query.task).user_message(query, post_json).unwrap_or_default()
}

/// Scores an episode's answer. An episode that never reached the model or
/// never had a prompt has nothing to judge: it scores 0, not completed.
pub async fn score_answer(judge: &Judge<'_>, query: &QueryRow, question: &str, status: EpisodeStatus, answer: Option<&str>) -> Scored {
    match status {
        EpisodeStatus::ModelError | EpisodeStatus::QueryError => Scored::default(),
        EpisodeStatus::Answered | EpisodeStatus::BudgetExhausted => score(judge, query, question, answer).await,
    }
}

/// The `scores` row of `episode` under `judging`.
pub fn score_row(judging: &JudgingSpec, episode: &EpisodeRow, scored: Scored, finished_at: Timestamp) -> ScoreRow {
    ScoreRow {
        query_id: episode.query_id.clone(),
        task: episode.task,
        attempt: episode.attempt,
        epoch: episode.epoch,
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
        judge_reply: scored.reply,
        judge_prompt_tokens: (scored.judge_calls > 0).then_some(scored.usage.prompt_tokens as i64),
        judge_completion_tokens: (scored.judge_calls > 0).then_some(scored.usage.completion_tokens as i64),
        error: scored.error,
        finished_at,
        run_id: episode.run_id.clone(),
    }
}
