//! Test doubles shared by unit tests, the end-to-end tests and the benches,
//! so each is written once: a chat model that answers from a script. Never
//! used by a command; the real models are in `workers`.

use std::collections::VecDeque;
use std::sync::Mutex;

use crate::chat::{ChatModel, ChatRequest, ChatResponse, ModelError, Usage};

type Answer = Box<dyn Fn(&ChatRequest) -> Result<ChatResponse, ModelError> + Send + Sync>;

/// Answers each request from a queue of replies, then from a function;
/// records every request it was sent.
pub struct ScriptedModel {
    name: String,
    replies: Mutex<VecDeque<Result<ChatResponse, ModelError>>>,
    then: Answer,
    requests: Mutex<Vec<ChatRequest>>,
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
        ScriptedModel { name: name.into(), replies: Mutex::new(replies.into()), then: Box::new(then), requests: Mutex::new(Vec::new()) }
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
        if let Ok(mut seen) = self.requests.lock() {
            seen.push(request.clone());
        }
        let next = self.replies.lock().ok().and_then(|mut r| r.pop_front());
        next.unwrap_or_else(|| (self.then)(request))
    }
}
