//! Test helpers: a scripted chat model and small personas (unit tests only).

use std::sync::Mutex;

use crate::agent::persona::{Persona, PersonaSource, Profile};
use crate::platform::ids::AgentId;
use some_jobs::chat::{ChatModel, ChatRequest, ChatResponse, ModelError, Usage};

/// Replies from a script, in order, and records every request. Past the end
/// of the script it fails, so a test sees every call it did not plan for.
pub struct Scripted {
    replies: Mutex<Vec<String>>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    pub fn new<S: Into<String>>(replies: impl IntoIterator<Item = S>) -> Scripted {
        let mut r: Vec<String> = replies.into_iter().map(Into::into).collect();
        r.reverse();
        Scripted { replies: Mutex::new(r), requests: Mutex::new(Vec::new()) }
    }
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
    pub fn left(&self) -> usize {
        self.replies.lock().unwrap().len()
    }
}

#[async_trait::async_trait]
impl ChatModel for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        self.requests.lock().unwrap().push(request.clone());
        let next = self.replies.lock().unwrap().pop();
        match next {
            Some(content) => Ok(ChatResponse {
                content,
                usage: Usage { prompt_tokens: 10, completion_tokens: 2, cached_tokens: 0 },
                ..Default::default()
            }),
            None => Err(ModelError::Permanent { endpoint: "scripted".into(), message: "the script has ended".into() }),
        }
    }
}

/// An enriched persona: Sarah, a volunteer with dogs and running in every
/// attribute, so relevance has something to choose from.
pub fn sarah() -> Persona {
    let mut p = persona(3, "a volunteer");
    p.profile = Some(Box::new(Profile {
        name: "Sarah".into(),
        age: 24,
        gender: "Female".into(),
        nationality: "Canadian".into(),
        personality: "Compassionate".into(),
        hobbies: "Running, Reading".into(),
        history: "Sarah volunteers at animal shelters. She runs marathons for charity. She reads about dog behavior and training.".into(),
        preferences: "She shares rescue dog stories. She is open to discussions about dog training and running techniques.".into(),
        knowledge: "Sarah knows dog behavior and clicker training. She knows proper running form.".into(),
    }));
    p
}

/// A persona that is not enriched.
pub fn persona(id: u32, description: &str) -> Persona {
    Persona {
        id: AgentId(id),
        username: format!("user{id}"),
        source: PersonaSource::Recagent,
        description: description.into(),
        following: Vec::new(),
        hourly_activity: None,
        profile: None,
    }
}
