//! `some llm serve`: the built-in models behind an OpenAI-compatible HTTP
//! API, so workers and third-party clients use them like any vLLM endpoint.
//!
//! - `POST /v1/chat/completions` (tools accepted; `"stream": true` answers
//!   with server-sent events as the OpenAI API does, the whole reply in one
//!   content chunk: the built-in models do not hand out tokens as they go;
//!   a `response_format` of type `json_schema` is passed to the model, which
//!   constrains its reply to it, and other types but `text` are refused
//!   with a 400 naming `response_format`, so clients fall back)
//! - `POST /v1/embeddings` (the built-in embedder)
//! - `GET /v1/models`
//!
//! A request naming a model this server does not serve gets 404, as the
//! OpenAI API answers, rather than another model's reply.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use some_jobs::chat::{ChatModel, ChatRequest, JsonSchema, Message, NativeCallRecord, Role};
use some_jobs::embed::{Embedder, Purpose};

use crate::access::Access;
use crate::error::{Error, Result};

/// What the server serves.
pub struct Served {
    pub chat: Arc<dyn ChatModel>,
    pub embedder: Option<Arc<dyn Embedder>>,
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": {"message": message.into(), "type": "invalid_request_error"}}))).into_response()
}

/// A 404 unless the request names `served` or no model at all.
fn refusal(asked: Option<&str>, served: &str) -> Option<Response> {
    match asked {
        Some(asked) if asked != served => Some(
            (
                StatusCode::NOT_FOUND,
                Json(json!({"error": {
                    "message": format!("The model `{asked}` does not exist on this server; it serves `{served}`"),
                    "type": "invalid_request_error",
                    "code": "model_not_found",
                }})),
            )
                .into_response(),
        ),
        _ => None,
    }
}

/// Reads OpenAI's `response_format`: a `json_schema` one is the reply's
/// schema; `text` (or none) is no schema. The schema is passed on as the
/// client wrote it (it is sent on every call; see [`JsonSchema`]).
fn response_format(format: Option<Box<RawValue>>) -> std::result::Result<Option<JsonSchema>, String> {
    #[derive(Deserialize)]
    struct Format {
        #[serde(rename = "type")]
        kind: Option<Value>,
        json_schema: Option<Box<RawValue>>,
    }
    #[derive(Deserialize)]
    struct Spec {
        name: Option<Value>,
        schema: Option<Box<RawValue>>,
    }
    let is_object = |raw: &RawValue| raw.get().starts_with('{');
    let Some(format) = format else { return Ok(None) };
    let Format { kind, json_schema } = match is_object(&format) {
        true => serde_json::from_str(format.get()).map_err(|e| format!("response_format: {e}"))?,
        false => Format { kind: None, json_schema: None },
    };
    match kind.as_ref().and_then(Value::as_str) {
        Some("text") => Ok(None),
        Some("json_schema") => {
            let spec = match json_schema.filter(|s| is_object(s)) {
                Some(raw) => serde_json::from_str(raw.get()).map_err(|e| format!("response_format.json_schema: {e}"))?,
                None => Spec { name: None, schema: None },
            };
            let name = spec.name.as_ref().and_then(Value::as_str).unwrap_or("reply").to_string();
            let schema = spec.schema.filter(|s| is_object(s)).ok_or("response_format.json_schema.schema must be an object")?;
            Ok(Some(JsonSchema::from_raw(name, schema)))
        }
        other => Err(format!("response_format of type {other:?} is not supported; use \"json_schema\" with a schema")),
    }
}

/// An OpenAI chat request body as sent. Read straight into these fields
/// (a request is a few kilobytes of prompt on every call: no `Value` tree
/// of the body, and the texts are moved, not copied); fields a client may
/// send in more than one shape stay `Value`s, read leniently by
/// [`ChatCall::into_request`].
#[derive(Debug, Deserialize)]
struct ChatCall {
    model: Option<Value>,
    messages: Vec<CallMessage>,
    tools: Option<Value>,
    temperature: Option<Value>,
    seed: Option<Value>,
    max_tokens: Option<Value>,
    max_completion_tokens: Option<Value>,
    response_format: Option<Box<RawValue>>,
    stream: Option<Value>,
    stream_options: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct CallMessage {
    role: Option<Value>,
    content: Option<Value>,
    tool_calls: Option<Value>,
    tool_call_id: Option<Value>,
}

impl ChatCall {
    /// Reads a request body; one that is not a chat request is refused
    /// with what is wrong with it.
    fn read(body: &[u8]) -> std::result::Result<ChatCall, String> {
        serde_json::from_slice(body).map_err(|typed| {
            let Ok(value) = serde_json::from_slice::<Value>(body) else { return format!("the body is not JSON: {typed}") };
            let Some(messages) = value.get("messages").and_then(Value::as_array) else { return "\"messages\" must be a list".into() };
            match messages.iter().position(|m| !m.is_object()) {
                Some(i) => format!("messages[{i}] must be an object"),
                None => format!("the body is not a chat request: {typed}"),
            }
        })
    }

    fn model(&self) -> Option<&str> {
        self.model.as_ref().and_then(Value::as_str)
    }

    fn streamed(&self) -> bool {
        self.stream.as_ref().and_then(Value::as_bool) == Some(true)
    }

    fn usage_streamed(&self) -> bool {
        self.stream_options.as_ref().and_then(|o| o.get("include_usage")).and_then(Value::as_bool) == Some(true)
    }

    /// The request; fields of an unexpected type are taken as not given.
    fn into_request(self) -> std::result::Result<ChatRequest, String> {
        let response_format = response_format(self.response_format)?;
        let messages = self.messages.into_iter().enumerate().map(|(i, m)| m.into_message(i)).collect::<std::result::Result<_, _>>()?;
        let number = |v: &Option<Value>| v.as_ref().and_then(Value::as_u64);
        Ok(ChatRequest {
            messages,
            tools: match self.tools {
                Some(Value::Array(tools)) => tools,
                _ => Vec::new(),
            },
            temperature: self.temperature.as_ref().and_then(Value::as_f64).map(|t| t as f32),
            seed: number(&self.seed),
            max_tokens: number(&self.max_tokens).or(number(&self.max_completion_tokens)).map(|m| m as u32),
            response_format,
        })
    }
}

impl CallMessage {
    fn into_message(self, i: usize) -> std::result::Result<Message, String> {
        let role = match self.role.as_ref().and_then(Value::as_str) {
            Some("system" | "developer") => Role::System,
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            Some("tool") => Role::Tool,
            other => return Err(format!("messages[{i}]: unknown role {other:?}")),
        };
        let content = match self.content {
            Some(Value::String(s)) => s,
            Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
            _ => String::new(),
        };
        let tool_calls = match &self.tool_calls {
            Some(Value::Array(calls)) => calls
                .iter()
                .map(|c| NativeCallRecord {
                    id: c.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
                    name: c["function"].get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
                    arguments: match c["function"].get("arguments") {
                        Some(Value::String(s)) => s.clone(),
                        Some(v) => v.to_string(),
                        None => "{}".into(),
                    },
                })
                .collect(),
            _ => Vec::new(),
        };
        let tool_call_id = self.tool_call_id.as_ref().and_then(Value::as_str).map(str::to_string);
        Ok(Message { role, content, tool_calls, tool_call_id })
    }
}

/// A chat completion as OpenAI sends it (not streamed).
#[derive(Serialize)]
struct Completion<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: [CompletionChoice<'a>; 1],
    usage: CompletionUsage,
}

#[derive(Serialize)]
struct CompletionChoice<'a> {
    index: u32,
    message: CompletionMessage<'a>,
    finish_reason: &'a str,
}

#[derive(Serialize)]
struct CompletionMessage<'a> {
    role: &'static str,
    content: &'a str,
    #[serde(skip_serializing_if = "<[Value]>::is_empty")]
    tool_calls: &'a [Value],
}

#[derive(Serialize)]
struct CompletionUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
    prompt_tokens_details: CachedTokens,
}

#[derive(Serialize)]
struct CachedTokens {
    cached_tokens: u64,
}

async fn chat(State(served): State<Arc<Served>>, body: Bytes) -> Response {
    let call = match ChatCall::read(&body) {
        Ok(call) => call,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    if let Some(refused) = refusal(call.model(), served.chat.name()) {
        return refused;
    }
    let (streamed, usage_streamed) = (call.streamed(), call.usage_streamed());
    let request = match call.into_request() {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    let r = match served.chat.chat(&request).await {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let id = format!("chatcmpl-{}", uuid::Uuid::new_v4().simple());
    let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let tool_calls: Vec<Value> = r
        .tool_calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    // OpenAI clients read a finished choice by its reason: "stop" unless the
    // model said otherwise.
    let finish_reason = r.finish_reason.clone().unwrap_or_else(|| if tool_calls.is_empty() { "stop" } else { "tool_calls" }.into());
    let usage = CompletionUsage {
        prompt_tokens: r.usage.prompt_tokens,
        completion_tokens: r.usage.completion_tokens,
        total_tokens: r.usage.prompt_tokens + r.usage.completion_tokens,
        prompt_tokens_details: CachedTokens { cached_tokens: r.usage.cached_tokens },
    };
    if streamed {
        let chunk =
            |choices: Value| json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": r.model, "choices": choices});
        let mut events = vec![chunk(json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]))];
        if !r.content.is_empty() {
            events.push(chunk(json!([{"index": 0, "delta": {"content": r.content}, "finish_reason": null}])));
        }
        if !tool_calls.is_empty() {
            // A streamed call carries its position in the list.
            let indexed: Vec<Value> = tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    let mut c = c.clone();
                    c["index"] = json!(i);
                    c
                })
                .collect();
            events.push(chunk(json!([{"index": 0, "delta": {"tool_calls": indexed}, "finish_reason": null}])));
        }
        events.push(chunk(json!([{"index": 0, "delta": {}, "finish_reason": finish_reason}])));
        if usage_streamed {
            let mut last = chunk(json!([]));
            last["usage"] = json!(usage);
            events.push(last);
        }
        let mut text: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        text.push_str("data: [DONE]\n\n");
        return ([(axum::http::header::CONTENT_TYPE, "text/event-stream"), (axum::http::header::CACHE_CONTROL, "no-cache")], text)
            .into_response();
    }
    let message = CompletionMessage { role: "assistant", content: &r.content, tool_calls: &tool_calls };
    let completion = Completion {
        id: &id,
        object: "chat.completion",
        created,
        model: &r.model,
        choices: [CompletionChoice { index: 0, message, finish_reason: &finish_reason }],
        usage,
    };
    let body = serde_json::to_vec(&completion).expect("a completion is plain data");
    ([(axum::http::header::CONTENT_TYPE, "application/json")], body).into_response()
}

async fn embeddings(State(served): State<Arc<Served>>, Json(body): Json<Value>) -> Response {
    let Some(embedder) = &served.embedder else {
        return error(StatusCode::NOT_FOUND, "this server has no embedding model");
    };
    if let Some(refused) = refusal(body.get("model").and_then(Value::as_str), embedder.model()) {
        return refused;
    }
    let input: Vec<String> = match body.get("input") {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
        _ => return error(StatusCode::BAD_REQUEST, "\"input\" must be a string or a list of strings"),
    };
    match embedder.embed(&input, Purpose::Document).await {
        Ok(vectors) => {
            let data: Vec<Value> =
                vectors.iter().enumerate().map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v})).collect();
            Json(json!({"object": "list", "data": data, "model": embedder.model(), "usage": {"prompt_tokens": 0, "total_tokens": 0}}))
                .into_response()
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

async fn models(State(served): State<Arc<Served>>) -> Json<Value> {
    let mut data = vec![json!({"id": served.chat.name(), "object": "model", "owned_by": "some"})];
    if let Some(e) = &served.embedder {
        data.push(json!({"id": e.model(), "object": "model", "owned_by": "some"}));
    }
    Json(json!({"object": "list", "data": data}))
}

/// A request body's limit: a long conversation is some hundred kilobytes.
pub const MAX_REQUEST_BYTES: usize = 8 << 20;

/// Serves, to whom `access` lets in, until `shutdown` resolves; returns the
/// bound address at once.
pub async fn serve(
    served: Served,
    addr: SocketAddr,
    access: &Access,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr> {
    access.check_bind(addr)?;
    let router = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/models", get(models))
        .with_state(Arc::new(served));
    let router = access.guard(router);
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(Error::io(format!("listening on {addr}")))?;
    let local = listener.local_addr().map_err(Error::io("the listening address"))?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).with_graceful_shutdown(shutdown).await {
            tracing::error!(error = %e, "model server stopped");
        }
    });
    Ok(local)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_chat_request(body: &Value) -> std::result::Result<ChatRequest, String> {
        ChatCall::read(&serde_json::to_vec(body).unwrap())?.into_request()
    }

    #[test]
    fn openai_requests_are_read() {
        let body = json!({
            "model": "m", "temperature": 0.2, "seed": 7, "max_tokens": 64,
            "messages": [
                {"role": "system", "content": "s"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "r"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]}
            ],
            "tools": [{"type": "function", "function": {"name": "f"}}]
        });
        let r = parse_chat_request(&body).unwrap();
        assert_eq!((r.temperature, r.seed, r.max_tokens, r.tools.len()), (Some(0.2), Some(7), Some(64), 1));
        assert_eq!(r.messages[1].tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(r.messages[2].tool_call_id.as_deref(), Some("c1"));
        assert_eq!(r.messages[3].content, "hi");
        assert_eq!(parse_chat_request(&json!({"messages": [{"role": "robot"}]})).unwrap_err(), "messages[0]: unknown role Some(\"robot\")");
        // A null max_tokens is none given: the newer field is read.
        let newer = json!({"messages": [], "max_tokens": null, "max_completion_tokens": 9});
        assert_eq!(parse_chat_request(&newer).unwrap().max_tokens, Some(9));
    }

    #[test]
    fn a_body_that_is_not_a_chat_request_is_named() {
        assert!(ChatCall::read(b"{\"messages\": [").unwrap_err().starts_with("the body is not JSON: "));
        assert_eq!(parse_chat_request(&json!({"model": "m"})).unwrap_err(), "\"messages\" must be a list");
        assert_eq!(parse_chat_request(&json!([1])).unwrap_err(), "\"messages\" must be a list");
        assert_eq!(parse_chat_request(&json!({"messages": [{"role": "user"}, "hi"]})).unwrap_err(), "messages[1] must be an object");
        // Fields of another type are not given, as before.
        let odd = json!({"messages": [{"role": "user", "content": 3}], "temperature": "hot", "tools": {}, "seed": -1});
        let r = parse_chat_request(&odd).unwrap();
        assert_eq!((r.messages[0].content.as_str(), r.temperature, r.seed, r.tools.len()), ("", None, None, 0));
    }

    #[test]
    fn a_json_schema_response_format_is_passed_on_and_others_refused() {
        let schema = json!({"type": "object", "required": ["a"], "properties": {"a": {"type": "boolean"}}});
        let body = json!({"messages": [], "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema, "strict": true}}});
        assert_eq!(parse_chat_request(&body).unwrap().response_format, Some(JsonSchema::new("x", schema)));
        let text = json!({"messages": [], "response_format": {"type": "text"}});
        assert_eq!(parse_chat_request(&text).unwrap().response_format, None);
        let object = json!({"messages": [], "response_format": {"type": "json_object"}});
        assert_eq!(
            parse_chat_request(&object).unwrap_err(),
            "response_format of type Some(\"json_object\") is not supported; use \"json_schema\" with a schema"
        );
        // The schema passes as the client spaced it; no name is "reply".
        let spaced = br#"{"messages": [], "response_format": {"type": "json_schema", "json_schema": {"schema": { "type" : "object" }}}}"#;
        let read = ChatCall::read(spaced).unwrap().into_request().unwrap().response_format.unwrap();
        assert_eq!((read.name.as_str(), read.raw().get()), ("reply", r#"{ "type" : "object" }"#));
        for (format, error) in [
            (
                json!({"type": "json_schema", "json_schema": {"name": "x", "schema": [1]}}),
                "response_format.json_schema.schema must be an object",
            ),
            (json!({"type": "json_schema", "json_schema": "x"}), "response_format.json_schema.schema must be an object"),
            (json!({"type": "json_schema"}), "response_format.json_schema.schema must be an object"),
            (json!("json"), "response_format of type None is not supported; use \"json_schema\" with a schema"),
        ] {
            assert_eq!(parse_chat_request(&json!({"messages": [], "response_format": format})).unwrap_err(), error, "{format}");
        }
        assert_eq!(parse_chat_request(&json!({"messages": [], "response_format": null})).unwrap().response_format, None);
    }

    async fn post(addr: SocketAddr, body: Value) -> (u16, String, String) {
        let response = reqwest::Client::new().post(format!("http://{addr}/v1/chat/completions")).json(&body).send().await.unwrap();
        let status = response.status().as_u16();
        let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
        (status, kind, response.text().await.unwrap())
    }

    #[tokio::test]
    async fn streams_as_server_sent_events_and_refuses_an_unknown_model() {
        let model = some_jobs::testing::ScriptedModel::new("m", |_| {
            let usage = some_jobs::chat::Usage { prompt_tokens: 10, completion_tokens: 2, cached_tokens: 6 };
            Ok(some_jobs::chat::ChatResponse { content: "你好".into(), model: "m".into(), usage, ..Default::default() })
        });
        let served = Served { chat: Arc::new(model), embedder: None };
        let addr = serve(served, "127.0.0.1:0".parse().unwrap(), &Access::open(MAX_REQUEST_BYTES), std::future::pending()).await.unwrap();
        let messages = json!([{"role": "user", "content": "hi"}]);

        let (status, kind, text) =
            post(addr, json!({"model": "m", "messages": messages, "stream": true, "stream_options": {"include_usage": true}})).await;
        assert_eq!((status, kind.as_str()), (200, "text/event-stream"));
        let events: Vec<&str> = text.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.last(), Some(&"data: [DONE]"));
        let chunks: Vec<Value> =
            events[..events.len() - 1].iter().map(|e| serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap()).collect();
        assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"));
        let content: String = chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
        assert_eq!(content, "你好");
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        assert!(chunks.iter().any(|c| c["choices"][0]["finish_reason"].is_string()));
        assert!(chunks.last().unwrap()["usage"].is_object(), "include_usage adds a last chunk with the usage");

        let (status, _, text) = post(addr, json!({"model": "m", "messages": messages})).await;
        assert_eq!(status, 200, "{text}");
        // The prompt cache's tokens go out as OpenAI's field and the client reads them back.
        let read = crate::llm::client::read_chat(serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!((read.usage.prompt_tokens, read.usage.cached_tokens), (10, 6));
        let (status, _, text) = post(addr, json!({"model": "gpt-4o", "messages": messages})).await;
        assert_eq!(status, 404);
        assert!(text.contains("model_not_found") && text.contains("gpt-4o"), "{text}");
    }
}
