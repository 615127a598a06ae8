//! What can be wrong with a model's reply in the simulation, and how a
//! question is asked until a reply can be read.
//!
//! A reply that cannot be used is never replaced by a default: the caller
//! retries it or records it as a failure, with this error as the cause.
//!
//! A retry must be able to succeed where the first try failed, so it is a
//! different request ([`retry_request`]): the seed moves on by one per
//! attempt, and the conversation carries the unusable reply followed by a
//! user message naming what was wrong with it (`jobs/sim/prompts/retry.txt`, or
//! `jobs/sim/prompts/retry_shorter.txt` when the endpoint cut the reply off at
//! its length limit). Sending the same request again would, at temperature
//! 0 or with a fixed seed, get the same reply.

use some_jobs::chat::{ChatModel, ChatRequest, ChatResponse, JsonSchema, Message, ModelError, Usage};

const RETRY: &str = include_str!("../prompts/retry.txt");
const RETRY_SHORTER: &str = include_str!("../prompts/retry_shorter.txt");

/// A model reply that is not what the prompt asked for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error("{what} reply is not valid JSON: {cause}")]
    InvalidJson { what: &'static str, cause: String },
    #[error("{what} reply has an unknown field {field:?}")]
    UnknownField { what: &'static str, field: String },
    #[error("{what} reply lacks the field {field:?}")]
    MissingField { what: &'static str, field: String },
    #[error("{what} reply: field {field:?} {cause}")]
    BadValue { what: &'static str, field: String, cause: String },
    /// The reply has none of the shape asked for (e.g. a reply that is not a plan).
    #[error("{what} reply cannot be read: {cause}")]
    Unreadable { what: &'static str, cause: String },
    /// The endpoint stopped the reply at its length limit (finish reason
    /// "length") and what it had written cannot be read.
    #[error("{what} reply was cut off at the length limit ({}) before it was complete; {cause}", limit_text(*.max_tokens))]
    CutOff { what: &'static str, max_tokens: Option<u32>, cause: Box<ReplyError> },
}

fn limit_text(max_tokens: Option<u32>) -> String {
    max_tokens.map_or_else(|| "the endpoint's default max_tokens".into(), |m| format!("max_tokens {m}"))
}

impl ReplyError {
    /// Which question's reply it is ("plan", "enrichment", ...).
    pub fn what(&self) -> &'static str {
        match self {
            ReplyError::InvalidJson { what, .. }
            | ReplyError::UnknownField { what, .. }
            | ReplyError::MissingField { what, .. }
            | ReplyError::BadValue { what, .. }
            | ReplyError::Unreadable { what, .. }
            | ReplyError::CutOff { what, .. } => what,
        }
    }
}

/// Why a question to the model got no usable answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AskError {
    /// The model could not be reached (the job is retried).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// Every reply was unreadable (recorded as a failure with the cause).
    #[error("no usable reply in {attempts} attempts; last: {last} (reply: {reply:?})")]
    Reply { attempts: u32, last: ReplyError, reply: String },
}

/// A read answer and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Answered<T> {
    pub value: T,
    pub calls: u32,
    pub usage: Usage,
}

/// One question: the prompt, sent as one user message, and how the reply
/// is to be written.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Question {
    pub prompt: String,
    /// The reply's JSON schema, for endpoints that constrain their output.
    pub schema: Option<JsonSchema>,
    /// The reply's length limit; `None` leaves it to the endpoint.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f32>,
}

impl Question {
    pub fn new(prompt: String) -> Question {
        Question { prompt, ..Default::default() }
    }

    /// The first request of this question.
    pub fn into_request(self, seed: Option<u64>) -> ChatRequest {
        ChatRequest {
            messages: vec![Message::user(self.prompt)],
            temperature: self.temperature,
            seed,
            max_tokens: self.max_tokens,
            response_format: self.schema,
            ..Default::default()
        }
    }
}

/// What came of asking: the value, or the last cause with the reply it was
/// found in; and what the calls cost either way.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<T> {
    pub result: Result<T, (ReplyError, String)>,
    pub calls: u32,
    pub usage: Usage,
}

/// Reads one reply with `parse`. A reply that cannot be read and that the
/// endpoint cut off at its length limit is a [`ReplyError::CutOff`], so the
/// cause is the limit rather than the half-written text.
pub fn read<T>(response: &ChatResponse, max_tokens: Option<u32>, parse: impl Fn(&str) -> Result<T, ReplyError>) -> Result<T, ReplyError> {
    parse(&response.content).map_err(|cause| {
        if response.finish_reason.as_deref() == Some("length") {
            ReplyError::CutOff { what: cause.what(), max_tokens, cause: Box::new(cause) }
        } else {
            cause
        }
    })
}

/// The request of attempt `attempt` (2 for the first retry) after `previous`
/// got `reply`, which could not be read for `error`: the first request's
/// messages, the reply, and a user message naming what was wrong with it;
/// the first request's seed plus `attempt - 1`.
pub fn retry_request(first: &ChatRequest, attempt: u32, reply: &str, error: &ReplyError) -> ChatRequest {
    let mut next = first.clone();
    next.seed = first.seed.map(|s| s.wrapping_add(u64::from(attempt.saturating_sub(1))));
    next.messages.push(Message::assistant(reply));
    let correction = match error {
        ReplyError::CutOff { cause, .. } => RETRY_SHORTER.replace("{problem}", &cause.to_string()),
        other => RETRY.replace("{problem}", &other.to_string()),
    };
    next.messages.push(Message::user(correction.trim_end()));
    next
}

/// Sends `first` until `parse` reads the reply, up to `max_attempts` times,
/// each retry a [`retry_request`]. Only a model error ends it early.
pub async fn ask_until<T>(
    model: &dyn ChatModel,
    first: &ChatRequest,
    max_attempts: u32,
    parse: impl Fn(&str) -> Result<T, ReplyError>,
) -> Result<Outcome<T>, ModelError> {
    let mut usage = Usage::default();
    let mut last = (ReplyError::Unreadable { what: "reply", cause: "no attempt was made".into() }, String::new());
    for attempt in 1..=max_attempts.max(1) {
        let retry;
        let request = if attempt == 1 {
            first
        } else {
            retry = retry_request(first, attempt, &last.1, &last.0);
            &retry
        };
        let reply = model.chat(request).await?;
        usage += reply.usage;
        match read(&reply, first.max_tokens, &parse) {
            Ok(value) => return Ok(Outcome { result: Ok(value), calls: attempt, usage }),
            Err(e) => last = (e, reply.content),
        }
    }
    Ok(Outcome { result: Err(last), calls: max_attempts.max(1), usage })
}

/// Asks `question` until `parse` reads the reply (see [`ask_until`]).
pub async fn ask<T>(
    model: &dyn ChatModel,
    question: &Question,
    max_attempts: u32,
    seed: Option<u64>,
    parse: impl Fn(&str) -> Result<T, ReplyError>,
) -> Result<Answered<T>, AskError> {
    let outcome = ask_until(model, &question.clone().into_request(seed), max_attempts, parse).await?;
    match outcome.result {
        Ok(value) => Ok(Answered { value, calls: outcome.calls, usage: outcome.usage }),
        Err((last, reply)) => Err(AskError::Reply { attempts: outcome.calls, last, reply: excerpt(&reply, 200) }),
    }
}

/// Cuts a reply to a length fit for an error message or a log row.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let mut out: String = text.chars().take(max_chars).collect();
    if text.chars().count() > max_chars {
        out.push('…');
    }
    out
}

/// The JSON object in a reply: the whole reply, or the body of one Markdown
/// code fence around it (models add fences even when told not to). Text
/// outside a fence is not searched for braces: that would accept replies
/// that are not the object asked for.
pub fn json_body(reply: &str) -> &str {
    let t = reply.trim();
    if let Some(rest) = t.strip_prefix("```") {
        let rest = rest.strip_prefix("json").or_else(|| rest.strip_prefix("JSON")).unwrap_or(rest);
        if let Some(body) = rest.trim_end().strip_suffix("```") {
            return body.trim();
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use some_jobs::testing::{ScriptedModel, reply, unreachable};

    #[test]
    fn fences_are_removed_and_nothing_else() {
        assert_eq!(json_body("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(json_body("  {\"a\": 1} "), "{\"a\": 1}");
        assert_eq!(json_body("Sure! {\"a\": 1}"), "Sure! {\"a\": 1}");
        assert_eq!(excerpt("abcdef", 3), "abc…");
    }

    fn number(reply: &str) -> Result<u32, ReplyError> {
        reply.trim().parse().map_err(|_| ReplyError::Unreadable { what: "number", cause: format!("{reply:?} is not a number") })
    }

    fn cut_off(text: &str) -> Result<ChatResponse, ModelError> {
        let mut r = some_jobs::testing::reply(text)?;
        r.finish_reason = Some("length".into());
        Ok(r)
    }

    #[test]
    fn a_retry_is_a_different_request_that_names_the_problem() {
        let model = ScriptedModel::replies("m", vec![reply("seven"), reply("7")], |_| unreachable());
        let question = Question { max_tokens: Some(8), ..Question::new("Pick a number.".into()) };
        let got = futures::executor::block_on(ask(&model, &question, 3, Some(40), number)).unwrap();
        assert_eq!((got.value, got.calls, got.usage.prompt_tokens), (7, 2, 200));
        let sent = model.requests();
        assert_eq!(sent.len(), 2);
        assert_eq!((sent[0].seed, sent[1].seed), (Some(40), Some(41)));
        assert_eq!(sent[0].messages, [Message::user("Pick a number.")]);
        assert_eq!(
            sent[1].messages,
            [
                Message::user("Pick a number."),
                Message::assistant("seven"),
                Message::user(
                    "Your reply could not be used: number reply cannot be read: \"seven\" is not a number. Answer the request above again, in exactly the form it asks for, and write nothing else."
                ),
            ]
        );
        assert_eq!(sent[1].max_tokens, Some(8));
    }

    #[test]
    fn a_reply_cut_off_at_the_limit_is_reported_as_such_and_asked_shorter() {
        let model = ScriptedModel::replies("m", vec![cut_off("12 and then"), cut_off("also too long")], |_| unreachable());
        let question = Question { max_tokens: Some(8), ..Question::new("Pick a number.".into()) };
        let err = futures::executor::block_on(ask(&model, &question, 2, None, number)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "no usable reply in 2 attempts; last: number reply was cut off at the length limit (max_tokens 8) before it was complete; number reply cannot be read: \"also too long\" is not a number (reply: \"also too long\")"
        );
        let sent = model.requests();
        assert_eq!(sent[1].seed, None, "no seed stays no seed");
        assert!(sent[1].messages[2].content.starts_with("Your reply was cut off at the length limit"), "{:?}", sent[1].messages[2]);
        assert!(sent[1].messages[2].content.contains("(number reply cannot be read: \"12 and then\" is not a number)"));
        // A cut-off reply that can be read is used.
        let model = ScriptedModel::replies("m", vec![cut_off("12")], |_| unreachable());
        assert_eq!(futures::executor::block_on(ask(&model, &question, 1, None, number)).unwrap().value, 12);
    }
}
