//! Scoring answers as the paper and the reference evaluation define it.
//!
//! - Label tasks (MID, UBP, UEA, UCS, MCR): the answer is reduced to a label,
//!   directly when it already is one, otherwise by the judge model with the
//!   paper's extraction prompt ([`extract`]); MID's six verdicts map to its
//!   three labels. Score = 100 if the label is right, else 0.
//! - Judged tasks (RED, SES, SMQ): the judge rates the answer against the
//!   reference on the paper's 0-5 dimensions ([`judge`]); score = mean × 20.
//! - Answers over 5,000 characters score 0 without a judge call.
//! - Task completion (TCR): a label answer is completed unless its label is
//!   `error`. A judged answer is completed unless it scored 0 and the judge,
//!   asked the reference's SMQ completion question, says it did not attempt
//!   an answer (the reference's RED/SES TCR code counts the opposite of what
//!   its prompts ask; the SMQ definition is applied to all three here).
//!
//! The judge runs at temperature 0 with a fixed seed by default; both are
//! recorded with every score.

pub mod baselines;
pub mod extract;
pub mod judge;

use std::collections::BTreeMap;

use some_schemas::{QueryRow, Scoring};

use crate::chat::{ChatModel, ChatRequest, Message, Usage};
use crate::prompts::Prompts;
use crate::protocol::strip_think;

/// Answers longer than this score 0 (the reference's cut-off).
pub const MAX_ANSWER_CHARS: usize = 5_000;

/// An evaluation prompt split as the reference sends it: all but its last
/// line (the rubric) as the system message, the last line with the answer
/// in place of `{raw answer}` as the user message.
fn rubric_and_answer(prompt: &str, answer: &str) -> (String, String) {
    let prompt = prompt.trim_end();
    match prompt.rsplit_once('\n') {
        Some((rubric, last)) => (rubric.trim_end().to_string(), last.replace("{raw answer}", answer)),
        None => (prompt.replace("{raw answer}", answer), String::new()),
    }
}

/// How the judge is called.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JudgeSettings {
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
    /// Judge replies that do not have the required form are asked again, up
    /// to this many times (the reference retries without limit).
    pub max_attempts: u32,
    /// Evaluation prompts replacing the built-in ones (`--prompts`).
    #[serde(default, skip_serializing_if = "Prompts::is_empty")]
    pub prompts: Prompts,
}

impl Default for JudgeSettings {
    fn default() -> Self {
        JudgeSettings { temperature: Some(0.0), seed: Some(0), max_attempts: 4, prompts: Prompts::default() }
    }
}

/// The evaluation of one answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Scored {
    /// The label read from the answer (label tasks), or `error`.
    pub extracted: Option<String>,
    /// Judge dimensions, 0-5 each (judged tasks).
    pub dimensions: Option<BTreeMap<String, u8>>,
    /// 0-100.
    pub score: f64,
    pub completed: bool,
    pub judge_calls: u32,
    pub usage: Usage,
    /// The judge's last reply, as it wrote it (for the transcript viewer).
    pub reply: Option<String>,
    pub error: Option<String>,
    /// The judge model could not be called (its endpoint failed past its
    /// retries): this is no verdict, and is not recorded as one.
    pub unavailable: bool,
}

/// The judge, with its settings and accounting.
pub struct Judge<'a> {
    pub model: &'a dyn ChatModel,
    pub settings: &'a JudgeSettings,
}

impl Judge<'_> {
    /// Asks until `accept` reads the reply, at most `max_attempts` times.
    async fn ask<T>(&self, system: Option<String>, user: String, scored: &mut Scored, accept: impl Fn(&str) -> Option<T>) -> Option<T> {
        let mut messages = Vec::new();
        if let Some(system) = system {
            messages.push(Message::system(system));
        }
        messages.push(Message::user(user));
        let request = ChatRequest { messages, temperature: self.settings.temperature, seed: self.settings.seed, ..Default::default() };
        for _ in 0..self.settings.max_attempts.max(1) {
            scored.judge_calls += 1;
            match self.model.chat(&request).await {
                Ok(reply) => {
                    scored.usage += reply.usage;
                    let accepted = accept(strip_think(&reply.content).trim());
                    scored.reply = Some(reply.content);
                    if let Some(v) = accepted {
                        return Some(v);
                    }
                }
                Err(e) => {
                    scored.error = Some(e.to_string());
                    scored.unavailable = true;
                    return None;
                }
            }
        }
        scored.error.get_or_insert_with(|| format!("the judge gave no usable reply in {} attempts", self.settings.max_attempts));
        None
    }
}

/// Scores one answer of one query.
pub async fn score(judge: &Judge<'_>, query: &QueryRow, question: &str, answer: Option<&str>) -> Scored {
    let task = query.task;
    let answer = answer.unwrap_or_default();
    match task.scoring() {
        Scoring::Label => extract::score_label(judge, task, query, answer).await,
        Scoring::Judge => judge::score_judged(judge, task, query, question, answer).await,
    }
}

#[cfg(test)]
mod tests;
