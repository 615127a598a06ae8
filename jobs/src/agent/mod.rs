//! One agent episode: the reference's loop, on any [`ChatModel`].
//!
//! As the reference runs it: the task's system prompt, the query as the user
//! message, at most 20 model calls; every tool call of a reply is run in
//! order and answered; the episode ends at the first reply without a tool
//! call, whose text (with `<think>` removed) is the answer. If the budget
//! runs out right after tool calls, the last tool result, as the tool gave
//! it (not the `<tool_response>` message that carries it), is the answer, as
//! in the reference; the status says so.
//!
//! Two protocols: the reference's text protocol (tool schemas in the system
//! prompt; calls read by [`crate::protocol::parse_reply`], results returned
//! as `<tool_response>` user messages) and native function calling.
//!
//! Differences from the reference, on purpose: a reply whose only tool calls
//! are malformed gets the parse error back and the loop goes on (the
//! reference takes it as the final answer; `reference_quirks` keeps that),
//! and the oldest turns are dropped at a configurable input budget by an
//! explicit, documented estimate ([`estimate_tokens`]).

pub mod analysis;
mod transcript;

use std::time::Instant;

use serde::{Deserialize, Serialize};
use some_schemas::QueryRow;

pub use transcript::{CallRecord, ToolRecord, Transcript};

use crate::chat::{ChatModel, ChatRequest, Message, NativeCallRecord, Role, Usage};
use crate::prompts::{Prompts, system_file};
use crate::protocol::{Malformed, ParsedReply, ToolCall, from_native, parse_reply, strip_think};
use crate::tasks::system_prompt_for;
use crate::tasks::task_def;
use crate::tools::{BackendError, Folders, ToolContext, ToolError, ToolOutcome, ToolSpec, call_tool, error_text, text_protocol_block};

/// How tool calls travel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The reference's: schemas in the system prompt, `<tool_call>` blocks.
    Text,
    /// OpenAI `tools` / `tool_calls`.
    Native,
}

impl std::str::FromStr for Protocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Protocol, String> {
        match s {
            "text" => Ok(Protocol::Text),
            "native" => Ok(Protocol::Native),
            _ => Err(format!("unknown protocol {s:?}: expected text or native")),
        }
    }
}

/// Agent settings, recorded with every run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSettings {
    pub protocol: Protocol,
    /// The reference's `MAX_LLM_CALL_PER_RUN`.
    pub max_llm_calls: u32,
    /// Oldest turns are dropped beyond this estimated input size (the
    /// reference's 58,000).
    pub max_input_tokens: usize,
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
    pub max_tokens: Option<u32>,
    /// The paper's tool-response hallucination probe: every tool call is
    /// answered with an error instead of running, so an agent that still
    /// claims an answer made it up.
    #[serde(default)]
    pub failing_tools: bool,
    /// System prompts replacing the built-in ones (`some run --prompts`).
    #[serde(default, skip_serializing_if = "Prompts::is_empty")]
    pub prompts: Prompts,
    /// Tokens (prompt and completion, every call) an episode may spend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_episode_tokens: Option<u64>,
    /// Seconds an episode may take.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_episode_seconds: Option<u64>,
}

impl AgentSettings {
    /// The episode's token or time limit, if `episode` reached one. Checked
    /// before each model call, as the call count is: a call in flight
    /// finishes, and the episode then ends as when its calls run out.
    fn limit_reached(&self, episode: &Episode, started: Instant) -> Option<String> {
        let spent = episode.usage.prompt_tokens + episode.usage.completion_tokens;
        if let Some(max) = self.max_episode_tokens.filter(|max| spent >= *max) {
            return Some(format!("episode token limit reached: {spent} of {max} tokens spent"));
        }
        let secs = started.elapsed().as_secs_f64();
        self.max_episode_seconds.filter(|max| secs >= *max as f64).map(|max| format!("episode time limit reached: {secs:.1} of {max} s"))
    }
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            protocol: Protocol::Text,
            max_llm_calls: 20,
            max_input_tokens: 58_000,
            temperature: None,
            seed: None,
            max_tokens: None,
            failing_tools: false,
            prompts: Prompts::default(),
            max_episode_tokens: None,
            max_episode_seconds: None,
        }
    }
}

/// How an episode ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeStatus {
    /// The model answered (a reply without tool calls).
    Answered,
    /// The call budget ran out; the answer is the last message.
    BudgetExhausted,
    /// The model endpoint failed past its retries.
    ModelError,
    /// The query could not be turned into a prompt (e.g. a missing post).
    QueryError,
}

impl EpisodeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EpisodeStatus::Answered => "answered",
            EpisodeStatus::BudgetExhausted => "budget_exhausted",
            EpisodeStatus::ModelError => "model_error",
            EpisodeStatus::QueryError => "query_error",
        }
    }

    pub fn parse(s: &str) -> Option<EpisodeStatus> {
        [EpisodeStatus::Answered, EpisodeStatus::BudgetExhausted, EpisodeStatus::ModelError, EpisodeStatus::QueryError]
            .into_iter()
            .find(|status| status.as_str() == s)
    }
}

/// What an episode produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Episode {
    pub status: EpisodeStatus,
    pub answer: Option<String>,
    pub error: Option<String>,
    pub llm_calls: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    pub usage: Usage,
    pub latency_ms: u64,
    pub transcript: Transcript,
}

/// What an episode works with.
pub struct EpisodeContext<'a> {
    pub model: &'a dyn ChatModel,
    /// The tools' context; its `chat` should be the same model.
    pub tools: ToolContext<'a>,
    pub settings: &'a AgentSettings,
}

/// A rough token count: one per CJK character, one per four other
/// characters. Used only to decide when to drop old turns; replies report
/// exact counts.
pub fn estimate_tokens(text: &str) -> usize {
    let (wide, narrow) = text.chars().fold((0usize, 0usize), |(w, n), c| if c as u32 >= 0x2E80 { (w + 1, n) } else { (w, n + 1) });
    wide + narrow.div_ceil(4)
}

/// Drops the oldest turns (after the system prompt and the query) until the
/// messages fit `budget`, never the last turn.
fn fit_budget(messages: &[Message], budget: usize) -> Vec<Message> {
    let size = |m: &[Message]| m.iter().map(|m| estimate_tokens(&m.content) + 4).sum::<usize>();
    if messages.len() <= 3 || size(messages) <= budget {
        return messages.to_vec();
    }
    let head = &messages[..2];
    let mut tail = &messages[2..];
    while tail.len() > 1 && size(head) + size(tail) > budget {
        // A turn is an assistant message and the results that answer it.
        let next = tail.iter().skip(1).position(|m| m.role == Role::Assistant).map_or(tail.len() - 1, |p| p + 1);
        tail = &tail[next.min(tail.len() - 1)..];
    }
    head.iter().chain(tail).cloned().collect()
}

fn tool_response(text: &str) -> String {
    format!("<tool_response>\n{text}\n</tool_response>")
}

fn malformed_text(m: &Malformed) -> String {
    format!("The tool call could not be read ({} format): {}", m.format, m.error)
}

/// Runs one episode. Never panics on model output; every failure of the
/// model or the query ends as a status with its reason. A world that cannot
/// be read fails the episode instead: its caller tries it again later.
pub async fn run_episode(
    ctx: &EpisodeContext<'_>,
    query: &QueryRow,
    post_json: Option<&str>,
    folders: &mut Folders,
) -> Result<Episode, BackendError> {
    let started = Instant::now();
    let settings = ctx.settings;
    let quirks = ctx.tools.settings.reference_quirks;
    let mut episode = Episode {
        status: EpisodeStatus::Answered,
        answer: None,
        error: None,
        llm_calls: 0,
        tool_calls: 0,
        tool_errors: 0,
        usage: Usage::default(),
        latency_ms: 0,
        transcript: Transcript::default(),
    };
    let def = task_def(query.task);
    let tools: Vec<&ToolSpec> = def.tools.to_vec();
    let user = match def.user_message(query, post_json) {
        Ok(u) => u,
        Err(e) => return Ok(finish(episode, EpisodeStatus::QueryError, Some(e), started)),
    };
    let template = settings.prompts.get(&system_file(query.task), def.system_prompt_template());
    let mut system = system_prompt_for(template, query);
    let native_tools = match settings.protocol {
        Protocol::Text => {
            system.push_str("\n\n");
            system.push_str(&text_protocol_block(&tools));
            Vec::new()
        }
        Protocol::Native => tools.iter().map(|t| t.openai_schema()).collect(),
    };
    let mut messages = vec![Message::system(system), Message::user(user)];
    let mut last_was_tools = false;
    // The text the last tool call gave: the answer if the budget runs out.
    let mut last_result: Option<String> = None;
    let mut limited = None;
    while episode.llm_calls < settings.max_llm_calls {
        limited = settings.limit_reached(&episode, started);
        if limited.is_some() {
            break;
        }
        episode.llm_calls += 1;
        let request = ChatRequest {
            messages: fit_budget(&messages, settings.max_input_tokens),
            tools: native_tools.clone(),
            temperature: settings.temperature,
            seed: settings.seed.map(|s| s.wrapping_add(u64::from(episode.llm_calls))),
            max_tokens: settings.max_tokens,
            response_format: None,
        };
        let call_started = Instant::now();
        let response = match ctx.model.chat(&request).await {
            Ok(r) => r,
            Err(e) => {
                episode.transcript.calls.push(CallRecord::failed(episode.llm_calls, &request, call_started, e.to_string()));
                episode.transcript.messages = messages;
                return Ok(finish(episode, EpisodeStatus::ModelError, Some(e.to_string()), started));
            }
        };
        episode.usage += response.usage;
        let parsed: ParsedReply = match settings.protocol {
            Protocol::Text => parse_reply(&response.content),
            Protocol::Native => from_native(&response.content, &response.tool_calls),
        };
        episode.transcript.calls.push(CallRecord::answered(episode.llm_calls, &request, &response, &parsed, call_started));
        let mut assistant = Message::assistant(response.content.clone());
        if settings.protocol == Protocol::Native {
            assistant.tool_calls = response
                .tool_calls
                .iter()
                .map(|c| NativeCallRecord { id: c.id.clone(), name: c.name.clone(), arguments: c.arguments.clone() })
                .collect();
        }
        messages.push(assistant);
        let has_calls = match settings.protocol {
            // The reference ends on a reply without readable calls; unless
            // asked for that, malformed calls get their error back instead.
            Protocol::Text => !parsed.calls.is_empty() || (!quirks && !parsed.malformed.is_empty()),
            Protocol::Native => !response.tool_calls.is_empty(),
        };
        if !has_calls {
            episode.answer = Some(strip_think(&response.content));
            last_was_tools = false;
            break;
        }
        match settings.protocol {
            Protocol::Text => {
                let mut responses = Vec::new();
                for call in &parsed.calls {
                    let text = run_call(ctx, folders, &tools, call, &mut episode).await?;
                    responses.push(tool_response(&text));
                    last_result = Some(text);
                }
                for m in parsed.malformed.iter().filter(|_| !quirks) {
                    episode.tool_errors += 1;
                    let text = malformed_text(m);
                    responses.push(tool_response(&text));
                    last_result = Some(text);
                }
                messages.push(Message::user(responses.join("\n")));
            }
            Protocol::Native => {
                // One at a time, so each result answers its call's id.
                for native in &response.tool_calls {
                    let one = from_native("", std::slice::from_ref(native));
                    let text = match (one.calls.first(), one.malformed.first()) {
                        (Some(call), _) => run_call(ctx, folders, &tools, call, &mut episode).await?,
                        (None, Some(m)) => {
                            episode.tool_errors += 1;
                            malformed_text(m)
                        }
                        (None, None) => format!("The tool call {} could not be read.", native.name),
                    };
                    let mut m = Message::new(Role::Tool, text.clone());
                    m.tool_call_id = Some(native.id.clone());
                    messages.push(m);
                    last_result = Some(text);
                }
            }
        }
        last_was_tools = true;
    }
    if last_was_tools || limited.is_some() {
        episode.answer = last_result;
        episode.status = EpisodeStatus::BudgetExhausted;
    }
    episode.transcript.messages = messages;
    let status = episode.status;
    Ok(finish(episode, status, limited, started))
}

async fn run_call(
    ctx: &EpisodeContext<'_>,
    folders: &mut Folders,
    tools: &[&ToolSpec],
    call: &ToolCall,
    episode: &mut Episode,
) -> Result<String, BackendError> {
    let outcome = if ctx.settings.failing_tools {
        let e = ToolError::new("ConnectionError", "the data service did not respond");
        ToolOutcome { text: error_text(&call.name, &e), error: true, ..Default::default() }
    } else {
        call_tool(&ctx.tools, folders, tools, &call.name, &call.arguments).await?
    };
    episode.tool_calls += 1;
    episode.tool_errors += u32::from(outcome.error);
    episode.usage += outcome.usage;
    episode.transcript.tool_results.push(transcript::ToolRecord {
        call_index: episode.llm_calls,
        name: call.name.clone(),
        arguments: serde_json::Value::Object(call.arguments.clone()),
        format: call.format.to_string(),
        error: outcome.error,
        model_calls: outcome.model_calls,
        chars: outcome.text.chars().count(),
    });
    Ok(outcome.text)
}

fn finish(mut episode: Episode, status: EpisodeStatus, error: Option<String>, started: Instant) -> Episode {
    episode.status = status;
    if error.is_some() {
        episode.error = error;
    }
    episode.latency_ms = started.elapsed().as_millis() as u64;
    episode
}

#[cfg(test)]
mod tests;
