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
pub fn reply(text: &str) -> Result<ChatResponse, ModelError> {
    Ok(ChatResponse {
        content: text.into(),
        usage: Usage { prompt_tokens: 100, completion_tokens: 10 },
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
