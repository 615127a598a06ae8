//! A scripted OpenAI-compatible endpoint: a real HTTP server whose every
//! reply is decided by the test, to drive the client and the agent loop
//! through each case (call formats, malformed calls, 429, 5xx, hangs). It
//! also embeds texts (`/v1/embeddings`) with [`text_vector`], so runs can
//! call the retrieval and clustering tools without a built-in embedder.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// What the endpoint answers one request with.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A normal completion with this assistant text.
    Text(String),
    /// An error status, with a Retry-After header in seconds if given.
    Status(u16, Option<u64>),
    /// Answer only after this long (for client time-outs).
    Hang(Duration),
    /// A normal completion after this long (a slow model).
    Delayed(Duration, String),
}

type Policy = dyn Fn(usize, &Value) -> Reply + Send + Sync;

struct Shared {
    policy: Box<Policy>,
    count: AtomicUsize,
    bodies: Mutex<Vec<Value>>,
    /// Requests answered at once; past it, 429 (a server at capacity).
    capacity: usize,
    in_flight: AtomicUsize,
    refused: AtomicUsize,
}

/// The running endpoint; stops when dropped.
pub struct ScriptedEndpoint {
    /// `http://127.0.0.1:PORT/v1`
    pub url: String,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn completion(n: usize, body: &Value, text: String) -> Response {
    Json(json!({
        "id": format!("chatcmpl-{n}"),
        "object": "chat.completion",
        "model": body.get("model").cloned().unwrap_or(Value::Null),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    }))
    .into_response()
}

async fn chat(State(shared): State<Arc<Shared>>, Json(body): Json<Value>) -> Response {
    if shared.in_flight.fetch_add(1, Ordering::SeqCst) >= shared.capacity {
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        shared.refused.fetch_add(1, Ordering::SeqCst);
        return (StatusCode::TOO_MANY_REQUESTS, Json(json!({"error": {"message": "at capacity"}}))).into_response();
    }
    let response = answer(&shared, body).await;
    shared.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

async fn answer(shared: &Shared, body: Value) -> Response {
    let n = shared.count.fetch_add(1, Ordering::SeqCst);
    shared.bodies.lock().unwrap().push(body.clone());
    match (shared.policy)(n, &body) {
        Reply::Text(text) => completion(n, &body, text),
        Reply::Delayed(delay, text) => {
            tokio::time::sleep(delay).await;
            completion(n, &body, text)
        }
        Reply::Status(code, retry_after) => {
            let mut headers = HeaderMap::new();
            if let Some(s) = retry_after {
                headers.insert("retry-after", HeaderValue::from_str(&s.to_string()).unwrap());
            }
            let status = StatusCode::from_u16(code).unwrap();
            (status, headers, Json(json!({"error": {"message": format!("scripted {code}")}}))).into_response()
        }
        Reply::Hang(d) => {
            tokio::time::sleep(d).await;
            Json(json!({"choices": [{"message": {"role": "assistant", "content": "too late"}}]})).into_response()
        }
    }
}

/// The dimension of [`text_vector`].
pub const TEXT_DIM: usize = 32;

/// A deterministic unit vector of a text: its characters and character
/// pairs hashed into [`TEXT_DIM`] buckets (texts sharing words point the
/// same way).
pub fn text_vector(text: &str) -> Vec<f32> {
    let mut v = vec![0f32; TEXT_DIM];
    let chars: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    let bucket = |h: u32| (h.wrapping_mul(2_654_435_761) >> 27) as usize % TEXT_DIM;
    for (i, c) in chars.iter().enumerate() {
        v[bucket(*c as u32)] += 1.0;
        if let Some(next) = chars.get(i + 1) {
            v[bucket((*c as u32).wrapping_mul(31).wrapping_add(*next as u32))] += 2.0;
        }
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        v[0] = 1.0;
        return v;
    }
    v.iter().map(|x| x / norm).collect()
}

/// `/v1/embeddings`: every input as [`text_vector`].
async fn embeddings(Json(body): Json<Value>) -> Response {
    let inputs: Vec<String> = match &body["input"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items.iter().map(|i| i.as_str().unwrap_or_default().to_string()).collect(),
        _ => Vec::new(),
    };
    let data: Vec<Value> =
        inputs.iter().enumerate().map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": text_vector(t)})).collect();
    Json(json!({"object": "list", "data": data, "model": body["model"], "usage": {"prompt_tokens": 0, "total_tokens": 0}})).into_response()
}

impl ScriptedEndpoint {
    /// Starts the endpoint; `policy(n, body)` answers the n-th request
    /// (from 0), given its JSON body.
    pub fn start(policy: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> ScriptedEndpoint {
        ScriptedEndpoint::with_capacity(usize::MAX, policy)
    }

    /// Like [`ScriptedEndpoint::start`], answering 429 (no Retry-After) to
    /// any request past `capacity` in flight; those are not counted in
    /// [`ScriptedEndpoint::requests`] but in [`ScriptedEndpoint::refused`].
    pub fn with_capacity(capacity: usize, policy: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> ScriptedEndpoint {
        let shared = Arc::new(Shared {
            policy: Box::new(policy),
            count: AtomicUsize::new(0),
            bodies: Mutex::new(Vec::new()),
            capacity,
            in_flight: AtomicUsize::new(0),
            refused: AtomicUsize::new(0),
        });
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.set_nonblocking(true).expect("nonblocking");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = shared.clone();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
                let app = axum::Router::new()
                    .route("/v1/chat/completions", axum::routing::post(chat))
                    .route("/v1/embeddings", axum::routing::post(embeddings))
                    .with_state(state);
                axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await
                    .expect("serve");
            });
        });
        ScriptedEndpoint { url, shared, stop: Some(stop), thread: Some(thread) }
    }

    /// Requests received so far.
    pub fn requests(&self) -> usize {
        self.shared.count.load(Ordering::SeqCst)
    }

    /// Requests refused for being past the capacity.
    pub fn refused(&self) -> usize {
        self.shared.refused.load(Ordering::SeqCst)
    }

    /// Every request body received, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.shared.bodies.lock().unwrap().clone()
    }
}

impl Drop for ScriptedEndpoint {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        // A hanging reply may still be sleeping; do not wait for it.
        drop(self.thread.take());
    }
}

/// The messages of a chat request.
pub fn messages(body: &Value) -> &[Value] {
    body["messages"].as_array().map(Vec::as_slice).unwrap_or(&[])
}

/// How many assistant turns a request already holds.
pub fn assistant_turns(body: &Value) -> usize {
    messages(body).iter().filter(|m| m["role"] == "assistant").count()
}

/// Whether a request is the agent's: its system prompt carries the tool
/// schemas, a judge's carries a rubric.
pub fn is_agent(body: &Value) -> bool {
    messages(body).first().is_some_and(|m| m["role"] == "system" && m["content"].as_str().is_some_and(|c| c.contains("<tools>")))
}
