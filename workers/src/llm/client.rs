//! A client for any OpenAI-compatible endpoint (vLLM, llama.cpp's server,
//! `some llm serve`, hosted APIs): chat completions with tools, and
//! embeddings.
//!
//! - A pool of endpoints serving the same model: each call goes to the one
//!   with the fewest calls in flight among those with room.
//! - Bounded concurrency across the pool, and per endpoint a window that
//!   adapts to what the endpoint takes ([`super::window`]): it grows while
//!   answers come and halves on 429 and 5xx.
//! - Retries with exponential backoff and jitter (backon) on 429, 5xx,
//!   time-outs and connection errors; a `Retry-After` header sets the wait.
//!   Other 4xx answers are not retried.
//! - A per-call timeout, and token and latency accounting per call.
//! - An optional response cache keyed by the request, so a rerun of the
//!   same requests costs nothing (use it with a fixed seed).
//! - A request's JSON schema goes out as OpenAI's `response_format` of type
//!   `json_schema` (strict), which vLLM and llama.cpp's server enforce. An
//!   endpoint that refuses it (a 400 or 422 whose message names
//!   `response_format` or `json_schema`) is asked again without it, and so
//!   is every later request to that endpoint; a warning says so once. The
//!   caller's parser reads the reply either way.
//!
//! It speaks the wire format directly over the `reqwest` the build already
//! has, rather than through async-openai: that crate's typed responses
//! reject the fields vLLM and llama.cpp add or omit, and its errors drop the
//! `Retry-After` header this client honours.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use backon::{ExponentialBuilder, Retryable};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};
use some_jobs::chat::{ChatModel, ChatRequest, ChatResponse, Message, ModelError, Place, Role, Usage};
use some_jobs::embed::{EmbedError, Embedder, Purpose};
use some_jobs::protocol::NativeToolCall;
use tokio::sync::{Notify, Semaphore};

use super::window::{Outcome, Ticket, Waited, Window};

/// One endpoint: a base URL (`http://host:port/v1`) and its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub base_url: String,
    pub api_key: Option<String>,
}

impl Endpoint {
    pub fn new(base_url: &str) -> Endpoint {
        Endpoint { base_url: base_url.trim_end_matches('/').to_string(), api_key: None }
    }
}

/// How the client calls.
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// Calls in flight across all endpoints.
    pub concurrency: usize,
    /// Per attempt.
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub max_retries: usize,
    pub min_backoff: Duration,
    pub max_backoff: Duration,
    /// A folder to cache responses in, keyed by request.
    pub cache: Option<PathBuf>,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            concurrency: 16,
            timeout: Duration::from_secs(300),
            max_retries: 5,
            min_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            cache: None,
        }
    }
}

struct Slot {
    endpoint: Endpoint,
    /// Its two URLs, parsed once rather than on every call.
    chat_url: reqwest::Url,
    embeddings_url: reqwest::Url,
    window: Window,
    /// The endpoint answered a `response_format` with a refusal.
    refuses_schema: AtomicBool,
}

/// Totals since the client was made.
#[derive(Debug, Default)]
pub struct ClientStats {
    pub calls: AtomicU64,
    pub retries: AtomicU64,
    pub failures: AtomicU64,
    pub cache_hits: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    /// Times an endpoint's window halved on push-back.
    pub pushed_back: AtomicU64,
}

/// The pool of endpoints for one model.
pub struct OpenAiClient {
    model: String,
    slots: Vec<Slot>,
    http: reqwest::Client,
    permits: Semaphore,
    /// Signalled when a place in some endpoint's window frees.
    room: Arc<Notify>,
    waited: Waited,
    settings: ClientSettings,
    pub stats: Arc<ClientStats>,
}

/// A failed attempt, classified.
#[derive(Debug)]
struct Failure {
    /// The HTTP status, if the endpoint answered.
    status: Option<u16>,
    transient: bool,
    retry_after: Option<Duration>,
    endpoint: String,
    message: String,
}

impl Failure {
    /// A refusal of the request's `response_format` (vLLM, llama.cpp's
    /// server and OpenAI name the field in their 400 answers).
    fn refuses_schema(&self) -> bool {
        let message = self.message.to_lowercase();
        matches!(self.status, Some(400 | 422))
            && ["response_format", "json_schema", "response format", "json schema"].iter().any(|w| message.contains(w))
    }

    fn into_model_error(self) -> ModelError {
        if self.transient {
            ModelError::Transient { endpoint: self.endpoint, message: self.message }
        } else {
            ModelError::Permanent { endpoint: self.endpoint, message: self.message }
        }
    }
}

fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?;
    value.trim().parse::<f64>().ok().filter(|s| *s >= 0.0).map(Duration::from_secs_f64)
}

impl OpenAiClient {
    pub fn new(model: &str, endpoints: Vec<Endpoint>, settings: ClientSettings) -> Result<OpenAiClient, ModelError> {
        let room = Arc::new(Notify::new());
        let permanent = |message: String| ModelError::Permanent { endpoint: String::new(), message };
        if endpoints.is_empty() {
            return Err(permanent("no endpoint given".into()));
        }
        let mut slots = Vec::with_capacity(endpoints.len());
        for endpoint in endpoints {
            let refused = |message: String| ModelError::Permanent { endpoint: endpoint.base_url.clone(), message };
            if !(endpoint.base_url.starts_with("http://") || endpoint.base_url.starts_with("https://")) {
                return Err(refused("expected an http:// or https:// base URL".into()));
            }
            let url =
                |path: &str| reqwest::Url::parse(&format!("{}{path}", endpoint.base_url)).map_err(|e| refused(format!("not a URL: {e}")));
            let (chat_url, embeddings_url) = (url("/chat/completions")?, url("/embeddings")?);
            slots.push(Slot {
                endpoint,
                chat_url,
                embeddings_url,
                window: Window::new(settings.concurrency, room.clone()),
                refuses_schema: AtomicBool::new(false),
            });
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .pool_max_idle_per_host(settings.concurrency)
            .build()
            .map_err(|e| permanent(format!("http client: {e}")))?;
        Ok(OpenAiClient {
            model: model.to_string(),
            slots,
            http,
            permits: Semaphore::new(settings.concurrency.max(1)),
            room,
            waited: Waited::default(),
            settings,
            stats: Arc::new(ClientStats::default()),
        })
    }

    /// A place in the window of the least loaded endpoint with room,
    /// waiting until one has room.
    /// With how long it waited for it.
    async fn place(&self) -> (&Slot, Ticket<'_>, Duration) {
        let since = Instant::now();
        loop {
            // Registered before looking, so a place freed meanwhile wakes it.
            let freed = self.room.notified();
            let mut slots: Vec<&Slot> = self.slots.iter().collect();
            slots.sort_by_key(|s| s.window.in_flight());
            if let Some((slot, ticket)) = slots.into_iter().find_map(|s| s.window.try_take().map(|t| (s, t))) {
                self.waited.add(since);
                return (slot, ticket, since.elapsed());
            }
            freed.await;
        }
    }

    /// Hands a place back with what its attempt found in `latency`.
    fn release<A: Answer>(&self, slot: &Slot, ticket: Ticket<'_>, result: &Result<(A, String), Failure>, latency: Duration) {
        let outcome = match result {
            Ok((answer, _)) => slot.window.judge(latency, answer.completion_tokens()),
            Err(Failure { status: Some(s), .. }) if *s == 429 || *s >= 500 => Outcome::PushedBack,
            Err(_) => Outcome::Neutral,
        };
        if ticket.release(outcome) {
            self.stats.pushed_back.fetch_add(1, Ordering::Relaxed);
            let why = if result.is_ok() { "answered slowly" } else { "refused a call" };
            tracing::warn!(endpoint = %slot.endpoint.base_url, calls_at_once = slot.window.limit(), "the endpoint {why}; its calls at once halved");
        }
    }

    /// Per endpoint: its base URL, the calls it takes at once now and the
    /// most it took; and the time calls waited for room in all.
    pub fn windows(&self) -> (Vec<(String, usize, usize)>, Duration) {
        let each = self.slots.iter().map(|s| (s.endpoint.base_url.clone(), s.window.limit(), s.window.peak())).collect();
        (each, self.waited.total())
    }

    /// One POST with the pool, the permit, the timeout and the retries;
    /// the answer read, as the endpoint sent it, and the place the
    /// answering attempt had.
    async fn post<A: Answer>(&self, body: &Body<'_>) -> Result<(A, String, Place), ModelError> {
        let _permit =
            self.permits.acquire().await.map_err(|e| ModelError::Permanent { endpoint: String::new(), message: e.to_string() })?;
        let backoff = ExponentialBuilder::default()
            .with_jitter()
            .with_min_delay(self.settings.min_backoff)
            .with_max_delay(self.settings.max_backoff)
            .with_max_times(self.settings.max_retries);
        let waited = std::sync::atomic::AtomicU64::new(0);
        let attempt = || async {
            let (slot, ticket, wait) = self.place().await;
            let waited_ms = waited.fetch_add(wait.as_millis() as u64, Ordering::Relaxed) + wait.as_millis() as u64;
            let window = slot.window.limit() as u32;
            let started = Instant::now();
            let result = self.attempt(slot, body).await;
            self.release(slot, ticket, &result, started.elapsed());
            result.map(|(answer, text)| (answer, text, Place { endpoint: slot.endpoint.base_url.clone(), window, waited_ms }))
        };
        attempt
            .retry(backoff)
            .when(|f: &Failure| f.transient)
            .adjust(|f: &Failure, planned| planned.map(|p| f.retry_after.unwrap_or(p)))
            .notify(|f: &Failure, wait| {
                self.stats.retries.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(endpoint = %f.endpoint, error = %f.message, wait_ms = wait.as_millis() as u64, "model call failed; retrying");
            })
            .await
            .map_err(|f| {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                f.into_model_error()
            })
    }

    /// One attempt; without the body's `response_format` where the endpoint
    /// refuses it (found out here, on the first refusal).
    async fn attempt<A: Answer>(&self, slot: &Slot, body: &Body<'_>) -> Result<(A, String), Failure> {
        let url = match body {
            Body::Chat(_) => &slot.chat_url,
            Body::Embed(_) => &slot.embeddings_url,
        };
        if !body.has_schema() {
            return self.send(slot, url, body.to_json(true)).await;
        }
        if slot.refuses_schema.load(Ordering::Relaxed) {
            return self.send(slot, url, body.to_json(false)).await;
        }
        match self.send(slot, url, body.to_json(true)).await {
            Err(f) if f.refuses_schema() => {
                if !slot.refuses_schema.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        endpoint = %slot.endpoint.base_url,
                        error = %f.message,
                        "the endpoint refuses response_format json_schema; asking it without a schema from now on"
                    );
                }
                self.send(slot, url, body.to_json(false)).await
            }
            other => other,
        }
    }

    async fn send<A: Answer>(&self, slot: &Slot, url: &reqwest::Url, body: Vec<u8>) -> Result<(A, String), Failure> {
        let fail = |transient: bool, retry_after: Option<Duration>, message: String| Failure {
            status: None,
            transient,
            retry_after,
            endpoint: slot.endpoint.base_url.clone(),
            message,
        };
        let mut request =
            self.http.post(url.clone()).timeout(self.settings.timeout).header(reqwest::header::CONTENT_TYPE, "application/json").body(body);
        if let Some(key) = &slot.endpoint.api_key {
            request = request.bearer_auth(key);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) if e.is_timeout() => return Err(fail(true, None, format!("no answer within {:?}", self.settings.timeout))),
            Err(e) => return Err(fail(true, None, format!("cannot reach {url}: {e}"))),
        };
        let status = response.status();
        let wait = retry_after(response.headers());
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => return Err(fail(true, None, format!("the answer broke off: {e}"))),
        };
        if !status.is_success() {
            let transient = status.as_u16() == 429 || status.is_server_error() || status.as_u16() == 408;
            let detail: String = text.chars().take(300).collect();
            return Err(Failure { status: Some(status.as_u16()), ..fail(transient, wait, format!("HTTP {status}: {detail}")) });
        }
        match serde_json::from_str(&text) {
            Ok(answer) => Ok((answer, text)),
            Err(e) => Err(fail(false, None, format!("the answer does not read ({e}): {}", text.chars().take(200).collect::<String>()))),
        }
    }

    fn cache_path(&self, body: &[u8]) -> Option<PathBuf> {
        let dir = self.settings.cache.as_ref()?;
        let key = hex::encode(Sha256::digest(body));
        Some(dir.join(&key[..2]).join(format!("{key}.json")))
    }
}

/// A request body, serialized for each attempt (the form without the
/// schema only for endpoints that refuse one).
enum Body<'a> {
    Chat(ChatBody<'a>),
    Embed(EmbedBody<'a>),
}

impl Body<'_> {
    fn has_schema(&self) -> bool {
        matches!(self, Body::Chat(ChatBody { response_format: Some(_), .. }))
    }

    fn to_json(&self, schema: bool) -> Vec<u8> {
        let json = match self {
            Body::Chat(chat) if !schema => serde_json::to_vec(&ChatBody { response_format: None, ..chat.clone() }),
            Body::Chat(chat) => serde_json::to_vec(chat),
            Body::Embed(embed) => serde_json::to_vec(embed),
        };
        json.expect("request bodies are plain data")
    }
}

/// What an endpoint answers, read straight into its fields.
trait Answer: serde::de::DeserializeOwned {
    /// For the endpoint's window: tokens generated.
    fn completion_tokens(&self) -> u64 {
        0
    }
}

/// A chat completion's request as it goes out, borrowed from a [`ChatRequest`].
#[derive(Clone, Serialize)]
pub struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    stream: bool,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tools: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

#[derive(Clone, Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

#[derive(Clone, Serialize)]
struct WireCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Clone, Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

/// OpenAI's strict `json_schema` response format.
#[derive(Clone, Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: WireSchema<'a>,
}

#[derive(Clone, Serialize)]
struct WireSchema<'a> {
    name: &'a str,
    schema: &'a RawValue,
    strict: bool,
}

#[derive(Serialize)]
struct EmbedBody<'a> {
    model: &'a str,
    input: Vec<String>,
}

/// The request body of a chat completion.
pub fn chat_body<'a>(model: &'a str, request: &'a ChatRequest) -> ChatBody<'a> {
    let message = |m: &'a Message| WireMessage {
        role: match m.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        },
        content: &m.content,
        tool_calls: m
            .tool_calls
            .iter()
            .map(|c| WireCall { id: &c.id, kind: "function", function: WireFunction { name: &c.name, arguments: &c.arguments } })
            .collect(),
        tool_call_id: m.tool_call_id.as_deref(),
    };
    ChatBody {
        model,
        messages: request.messages.iter().map(message).collect(),
        stream: false,
        tools: &request.tools,
        temperature: request.temperature,
        seed: request.seed,
        max_tokens: request.max_tokens,
        response_format: request
            .response_format
            .as_ref()
            .map(|f| ResponseFormat { kind: "json_schema", json_schema: WireSchema { name: &f.name, schema: f.raw(), strict: true } }),
    }
}

/// A chat completion as endpoints answer it: every field optional, as
/// vLLM, llama.cpp's server and hosted APIs each leave some out; fields
/// not named here are skipped unread.
#[derive(Debug, Default, Deserialize)]
pub struct ChatAnswer {
    #[serde(default)]
    choices: Vec<WireChoice>,
    usage: Option<WireUsage>,
    model: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    message: Option<WireReply>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireReply {
    content: Option<String>,
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    id: Option<String>,
    function: Option<WireCalled>,
}

#[derive(Debug, Deserialize)]
struct WireCalled {
    name: Option<String>,
    /// A JSON text as OpenAI sends it; some servers send the object itself.
    arguments: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    prompt_tokens_details: Option<WireCached>,
}

#[derive(Debug, Deserialize)]
struct WireCached {
    cached_tokens: Option<u64>,
}

impl Answer for ChatAnswer {
    fn completion_tokens(&self) -> u64 {
        self.usage.as_ref().and_then(|u| u.completion_tokens).unwrap_or(0)
    }
}

/// Reads a chat completion; a reply with no choice is an error.
pub fn read_chat(answer: ChatAnswer) -> Result<ChatResponse, String> {
    let choice = answer.choices.into_iter().next().ok_or("the answer has no choices")?;
    let message = choice.message.ok_or("the choice has no message")?;
    let tool_calls = message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let (name, arguments) = c.function.map_or((None, None), |f| (f.name, f.arguments));
            NativeToolCall {
                id: c.id.unwrap_or_else(|| format!("call_{i}")),
                name: name.unwrap_or_default(),
                arguments: match arguments {
                    Some(Value::String(s)) => s,
                    Some(other) => other.to_string(),
                    None => String::new(),
                },
            }
        })
        .collect();
    let usage = answer.usage.map_or(Usage::default(), |u| Usage {
        prompt_tokens: u.prompt_tokens.unwrap_or(0),
        completion_tokens: u.completion_tokens.unwrap_or(0),
        cached_tokens: u.prompt_tokens_details.and_then(|d| d.cached_tokens).unwrap_or(0),
    });
    Ok(ChatResponse {
        content: message.content.unwrap_or_default(),
        tool_calls,
        usage,
        model: answer.model.unwrap_or_default(),
        latency_ms: 0,
        finish_reason: choice.finish_reason,
        place: None,
    })
}

/// An embeddings answer: vectors by index.
#[derive(Debug, Deserialize)]
struct EmbedAnswer {
    data: Option<Vec<WireEmbedding>>,
}

#[derive(Debug, Deserialize)]
struct WireEmbedding {
    index: Option<usize>,
    #[serde(default)]
    embedding: Vec<f32>,
}

impl Answer for EmbedAnswer {}

#[async_trait::async_trait]
impl ChatModel for OpenAiClient {
    fn name(&self) -> &str {
        &self.model
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let started = Instant::now();
        let body = Body::Chat(chat_body(&self.model, request));
        self.stats.calls.fetch_add(1, Ordering::Relaxed);
        let cached = self.settings.cache.is_some().then(|| self.cache_path(&body.to_json(true))).flatten();
        let mut place = None;
        let hit = cached.as_ref().and_then(|p| std::fs::read(p).ok()).and_then(|b| serde_json::from_slice::<ChatAnswer>(&b).ok());
        let answer = match hit {
            Some(answer) => {
                self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                answer
            }
            None => {
                let (answer, text, at) = self.post(&body).await?;
                place = Some(at);
                if let Some(path) = &cached {
                    if let Some(dir) = path.parent() {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    let tmp = path.with_extension("partial");
                    if std::fs::write(&tmp, text).is_ok() {
                        let _ = std::fs::rename(&tmp, path);
                    }
                }
                answer
            }
        };
        let mut response =
            read_chat(answer).map_err(|message| ModelError::Permanent { endpoint: self.slots[0].endpoint.base_url.clone(), message })?;
        response.latency_ms = started.elapsed().as_millis() as u64;
        response.place = place;
        self.stats.prompt_tokens.fetch_add(response.usage.prompt_tokens, Ordering::Relaxed);
        self.stats.completion_tokens.fetch_add(response.usage.completion_tokens, Ordering::Relaxed);
        Ok(response)
    }
}

/// An OpenAI-compatible embeddings endpoint as an [`Embedder`].
pub struct OpenAiEmbedder {
    client: OpenAiClient,
    /// The vectors' length; 0 takes whatever length the endpoint returns,
    /// as long as every vector of an answer has it.
    dim: usize,
    /// Prepended to queries (Qwen3-Embedding's instruction), not documents.
    pub query_prefix: String,
}

impl OpenAiEmbedder {
    pub fn new(client: OpenAiClient, dim: usize) -> OpenAiEmbedder {
        OpenAiEmbedder { client, dim, query_prefix: String::new() }
    }
}

#[async_trait::async_trait]
impl Embedder for OpenAiEmbedder {
    fn model(&self) -> &str {
        &self.client.model
    }

    fn dim(&self) -> usize {
        self.dim
    }

    async fn embed(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        let err = |message: String| EmbedError { model: self.client.model.clone(), message };
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let input: Vec<String> =
            texts.iter().map(|t| if purpose == Purpose::Query { format!("{}{t}", self.query_prefix) } else { t.clone() }).collect();
        let body = Body::Embed(EmbedBody { model: &self.client.model, input });
        let (answer, _, _) = self.client.post::<EmbedAnswer>(&body).await.map_err(|e| err(e.to_string()))?;
        let data = answer.data.ok_or_else(|| err("the answer has no data".into()))?;
        let mut out = vec![Vec::new(); texts.len()];
        for (i, item) in data.into_iter().enumerate() {
            let index = item.index.unwrap_or(i);
            if index < out.len() {
                out[index] = item.embedding;
            }
        }
        let dim = if self.dim > 0 { self.dim } else { out.first().map_or(0, Vec::len) };
        if dim == 0 || out.iter().any(|v| v.len() != dim) {
            return Err(err(format!(
                "expected {} vectors of {} dimensions",
                texts.len(),
                if self.dim > 0 { self.dim.to_string() } else { "equal".into() }
            )));
        }
        Ok(out)
    }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
