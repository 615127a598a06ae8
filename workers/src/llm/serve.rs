//! `some llm serve`: the built-in models behind an OpenAI-compatible HTTP
//! API, so workers and third-party clients use them like any vLLM endpoint.
//!
//! - `POST /v1/chat/completions` (non-streaming; tools accepted)
//! - `POST /v1/embeddings` (all-MiniLM-L6-v2)
//! - `GET /v1/models`

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use some_jobs::chat::{ChatModel, ChatRequest, Message, NativeCallRecord, Role};
use some_jobs::embed::{Embedder, Purpose};

use crate::error::{Error, Result};

/// What the server serves.
pub struct Served {
    pub chat: Arc<dyn ChatModel>,
    pub embedder: Option<Arc<dyn Embedder>>,
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({"error": {"message": message.into(), "type": "invalid_request_error"}}))).into_response()
}

/// Reads an OpenAI chat request body.
pub fn parse_chat_request(body: &Value) -> std::result::Result<ChatRequest, String> {
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        return Err("streaming is not supported; send \"stream\": false".into());
    }
    let messages = body.get("messages").and_then(Value::as_array).ok_or("\"messages\" must be a list")?;
    let messages = messages
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let role = match m.get("role").and_then(Value::as_str) {
                Some("system" | "developer") => Role::System,
                Some("user") => Role::User,
                Some("assistant") => Role::Assistant,
                Some("tool") => Role::Tool,
                other => return Err(format!("messages[{i}]: unknown role {other:?}")),
            };
            let content = match m.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => {
                    parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("")
                }
                _ => String::new(),
            };
            let tool_calls = m
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
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
                        .collect()
                })
                .unwrap_or_default();
            let tool_call_id = m.get("tool_call_id").and_then(Value::as_str).map(str::to_string);
            Ok(Message { role, content, tool_calls, tool_call_id })
        })
        .collect::<std::result::Result<Vec<_>, String>>()?;
    Ok(ChatRequest {
        messages,
        tools: body.get("tools").and_then(Value::as_array).cloned().unwrap_or_default(),
        temperature: body.get("temperature").and_then(Value::as_f64).map(|t| t as f32),
        seed: body.get("seed").and_then(Value::as_u64),
        max_tokens: body.get("max_tokens").or_else(|| body.get("max_completion_tokens")).and_then(Value::as_u64).map(|m| m as u32),
    })
}

async fn chat(State(served): State<Arc<Served>>, Json(body): Json<Value>) -> Response {
    let request = match parse_chat_request(&body) {
        Ok(r) => r,
        Err(e) => return error(StatusCode::BAD_REQUEST, e),
    };
    match served.chat.chat(&request).await {
        Ok(r) => {
            let mut message = json!({"role": "assistant", "content": r.content});
            if !r.tool_calls.is_empty() {
                message["tool_calls"] = r
                    .tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
            }
            let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
            Json(json!({
                "id": format!("chatcmpl-{}", uuid::Uuid::new_v4().simple()),
                "object": "chat.completion",
                "created": created,
                "model": r.model,
                "choices": [{"index": 0, "message": message, "finish_reason": r.finish_reason}],
                "usage": {"prompt_tokens": r.usage.prompt_tokens, "completion_tokens": r.usage.completion_tokens, "total_tokens": r.usage.prompt_tokens + r.usage.completion_tokens},
            }))
            .into_response()
        }
        Err(e) => error(StatusCode::BAD_REQUEST, e.to_string()),
    }
}

async fn embeddings(State(served): State<Arc<Served>>, Json(body): Json<Value>) -> Response {
    let Some(embedder) = &served.embedder else {
        return error(StatusCode::NOT_FOUND, "this server has no embedding model");
    };
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

/// Serves until `shutdown` resolves; returns the bound address at once.
pub async fn serve(
    served: Served,
    addr: SocketAddr,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<SocketAddr> {
    let router = axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/models", get(models))
        .with_state(Arc::new(served));
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
        assert_eq!(
            parse_chat_request(&json!({"messages": [], "stream": true})).unwrap_err(),
            "streaming is not supported; send \"stream\": false"
        );
        assert_eq!(parse_chat_request(&json!({"messages": [{"role": "robot"}]})).unwrap_err(), "messages[0]: unknown role Some(\"robot\")");
    }
}
