//! Test doubles shared by unit tests, the end-to-end tests and the benches,
//! so each is written once: a chat model that answers from a script, and a
//! final episode row to fill the lake with. Never used by a command; the
//! real models are in `workers`.

use std::collections::VecDeque;
use std::sync::Mutex;

use some_schemas::{Attempt, EpisodeRow, Epoch, Task, Timestamp};

use crate::chat::{ChatModel, ChatRequest, ChatResponse, ModelError, Usage};

type Answer = Box<dyn Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync>;

/// Answers each request from a queue of replies, then from a function;
/// records every request it was sent.
pub struct ScriptedModel {
    name: String,
    replies: Mutex<VecDeque<Result<ChatResponse, ModelError>>>,
    then: Answer,
    requests: Mutex<Vec<ChatRequest>>,
    /// Whether [`ScriptedModel::requests`] keeps what was asked.
    record: bool,
}

impl ScriptedModel {
    /// Answers every request with `answer`.
    pub fn new(name: &str, answer: impl Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync + 'static) -> ScriptedModel {
        ScriptedModel::replies(name, Vec::new(), answer)
    }

    /// Answers with `replies` in order, then with `then`.
    pub fn replies(
        name: &str,
        replies: Vec<Result<ChatResponse, ModelError>>,
        then: impl Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync + 'static,
    ) -> ScriptedModel {
        ScriptedModel {
            name: name.into(),
            replies: Mutex::new(replies.into()),
            then: Box::new(then),
            requests: Mutex::new(Vec::new()),
            record: true,
        }
    }

    /// Keeps no request: for benchmarks, which would otherwise hold every
    /// one of their millions of requests in memory.
    pub fn unrecorded(self) -> ScriptedModel {
        ScriptedModel { record: false, ..self }
    }

    /// Every request so far, in order.
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// A reply with `text` and nominal token counts.
/// The workplace's shared folder (persona sets, the reference's parity
/// fixture), which tests read and never copy: `SOME_SHARED` (which
/// `infra/test.sh` sets), else `shared/` beside the repository. Panics
/// naming both when neither holds it, so a test never passes without it.
pub fn shared_dir() -> std::path::PathBuf {
    let beside = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared");
    let dir = std::env::var_os("SOME_SHARED").map(std::path::PathBuf::from).unwrap_or(beside);
    assert!(
        dir.join("personas").is_dir(),
        "the shared folder is not at {}: set SOME_SHARED to it (infra/test.sh looks beside the repository and in /work/shared)",
        dir.display()
    );
    dir
}

pub fn reply(text: &str) -> Result<ChatResponse, ModelError> {
    Ok(ChatResponse {
        content: text.into(),
        usage: Usage { prompt_tokens: 100, completion_tokens: 10, cached_tokens: 0 },
        model: "scripted".into(),
        ..Default::default()
    })
}

/// The error of an endpoint that cannot be reached.
pub fn unreachable() -> Result<ChatResponse, ModelError> {
    Err(ModelError::Transient { endpoint: "http://127.0.0.1:9/v1".into(), message: "connection refused".into() })
}

#[async_trait::async_trait]
impl ChatModel for ScriptedModel {
    fn name(&self) -> &str {
        &self.name
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        if self.record
            && let Ok(mut seen) = self.requests.lock()
        {
            seen.push(request.clone());
        }
        let next = self.replies.lock().ok().and_then(|mut r| r.pop_front());
        next.unwrap_or_else(|| (self.then)(request))
    }
}

/// A final, answered SMQ episode of `run` for `query` with no tool call and
/// zero counts: the row lake and results tests vary one field of.
pub fn answered_episode(run: &str, query: &str, episode: &str) -> EpisodeRow {
    EpisodeRow {
        query_id: query.into(),
        task: Task::Smq,
        attempt: Attempt(1),
        epoch: Epoch::FIRST,
        episode_id: episode.into(),
        is_final: true,
        status: "answered".into(),
        answer: Some("a".into()),
        model: "m".into(),
        protocol: "text".into(),
        llm_calls: 1,
        tool_calls: 0,
        tool_errors: 0,
        prompt_tokens: 0,
        completion_tokens: 0,
        cached_prompt_tokens: None,
        latency_ms: 0,
        started_at: Timestamp(0),
        finished_at: Timestamp(0),
        worker: "w".into(),
        transcript: "{}".into(),
        error: None,
        run_id: run.into(),
    }
}
