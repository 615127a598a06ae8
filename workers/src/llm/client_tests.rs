//! The client against a small endpoint of the test's own: what a request
//! with a schema sends, and the fallback when an endpoint refuses it.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use some_jobs::chat::JsonSchema;

use super::*;

/// Every body received, and whether the endpoint refuses `response_format`.
struct Server {
    bodies: Mutex<Vec<Value>>,
    refuse: Option<&'static str>,
}

async fn completions(State(e): State<Arc<Server>>, Json(body): Json<Value>) -> Response {
    let has_schema = body.get("response_format").is_some();
    e.bodies.lock().unwrap().push(body);
    match e.refuse {
        Some(message) if has_schema => {
            (StatusCode::BAD_REQUEST, Json(json!({"error": {"message": message, "type": "BadRequestError"}}))).into_response()
        }
        _ => Json(json!({
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\"follow\": []}"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 4}
        }))
        .into_response(),
    }
}

async fn endpoint(refuse: Option<&'static str>) -> (SocketAddr, Arc<Server>) {
    let state = Arc::new(Server { bodies: Mutex::new(Vec::new()), refuse });
    let router = axum::Router::new().route("/v1/chat/completions", axum::routing::post(completions)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (addr, state)
}

fn client(addr: SocketAddr) -> OpenAiClient {
    let settings = ClientSettings { max_retries: 0, ..Default::default() };
    OpenAiClient::new("m", vec![Endpoint::new(&format!("http://{addr}/v1"))], settings).unwrap()
}

fn request() -> ChatRequest {
    let schema = json!({"type": "object", "required": ["follow"], "properties": {"follow": {"type": "array", "items": {"enum": [4]}}}});
    ChatRequest { messages: vec![Message::user("whom?")], response_format: Some(JsonSchema::new("follow", schema)), ..Default::default() }
}

#[tokio::test]
async fn a_schema_goes_out_as_openai_response_format() {
    let (addr, seen) = endpoint(None).await;
    let reply = client(addr).chat(&request()).await.unwrap();
    assert_eq!(reply.content, "{\"follow\": []}");
    let bodies = seen.bodies.lock().unwrap().clone();
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        bodies[0]["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "follow", "schema": request().response_format.unwrap().value(), "strict": true}})
    );
    let plain = ChatRequest { response_format: None, ..request() };
    let plain = serde_json::to_value(chat_body("m", &plain)).unwrap();
    assert_eq!(plain.get("response_format"), None, "no schema, no field");
}

#[tokio::test]
async fn an_endpoint_that_refuses_the_schema_is_asked_without_it_from_then_on() {
    let (addr, seen) = endpoint(Some("response_format: json_schema is not supported by this server")).await;
    let client = client(addr);
    assert_eq!(client.chat(&request()).await.unwrap().content, "{\"follow\": []}");
    assert_eq!(client.chat(&request()).await.unwrap().content, "{\"follow\": []}");
    let bodies = seen.bodies.lock().unwrap().clone();
    let with_schema: Vec<bool> = bodies.iter().map(|b| b.get("response_format").is_some()).collect();
    assert_eq!(with_schema, [true, false, false], "one refusal, then never sent again");
    assert_eq!(bodies[1]["messages"], bodies[0]["messages"]);
}

#[tokio::test]
async fn another_bad_request_is_not_taken_for_a_refused_schema() {
    let (addr, seen) = endpoint(Some("the model `m` does not exist")).await;
    let err = client(addr).chat(&request()).await.unwrap_err();
    assert!(matches!(&err, ModelError::Permanent { message, .. } if message.contains("does not exist")), "{err}");
    assert_eq!(seen.bodies.lock().unwrap().len(), 1);
}

/// An endpoint that takes 4 calls at once and answers 429 to any more.
#[derive(Default)]
struct Narrow {
    in_flight: std::sync::atomic::AtomicUsize,
    refused: std::sync::atomic::AtomicUsize,
    answered: std::sync::atomic::AtomicUsize,
}

async fn narrow(State(e): State<Arc<Narrow>>) -> Response {
    let now = e.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    let response = if now > 4 {
        e.refused.fetch_add(1, Ordering::SeqCst);
        (StatusCode::TOO_MANY_REQUESTS, [("retry-after", "0.05")], "busy").into_response()
    } else {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        e.answered.fetch_add(1, Ordering::SeqCst);
        Json(json!({"model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}]})).into_response()
    };
    e.in_flight.fetch_sub(1, Ordering::SeqCst);
    response
}

#[tokio::test]
async fn calls_at_once_settle_near_what_the_endpoint_takes() {
    let state = Arc::new(Narrow::default());
    let router = axum::Router::new().route("/v1/chat/completions", axum::routing::post(narrow)).with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let settings = ClientSettings { concurrency: 32, min_backoff: Duration::from_millis(10), ..Default::default() };
    let client = Arc::new(OpenAiClient::new("m", vec![Endpoint::new(&format!("http://{addr}/v1"))], settings).unwrap());
    let calls: Vec<_> = (0..400)
        .map(|_| {
            let client = client.clone();
            tokio::spawn(async move { client.chat(&ChatRequest { messages: vec![Message::user("hi")], ..Default::default() }).await })
        })
        .collect();
    for call in calls {
        call.await.unwrap().expect("no call fails");
    }
    let (windows, waited) = client.windows();
    let (refused, answered) = (state.refused.load(Ordering::SeqCst), state.answered.load(Ordering::SeqCst));
    assert_eq!(answered, 400);
    assert!((3..=6).contains(&windows[0].1), "settled at {:?}", windows[0]);
    // AIMD probes past the limit by design: each halving costs about one
    // refusal, and the window climbs back in a few rounds (about 30 for 400
    // answers here; more on a loaded machine, where calls overlap longer).
    // Without the window, each round of 32 calls would get 28 refused.
    assert!(refused < 100, "{refused} refusals for 400 answers: the window did not settle");
    assert!(waited > Duration::ZERO);
}

#[test]
fn answers_read_whatever_fields_an_endpoint_leaves_out_or_adds() {
    let answer = json!({
        "choices": [{
            "message": {"content": null, "reasoning_content": "hm", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
            "finish_reason": "tool_calls"
        }],
        "system_fingerprint": "fp"
    });
    let read = read_chat(serde_json::from_value(answer).unwrap()).unwrap();
    assert_eq!(read.content, "");
    let call = &read.tool_calls[0];
    assert_eq!((call.id.as_str(), call.name.as_str(), call.arguments.as_str()), ("call_0", "f", "{\"x\":1}"));
    assert_eq!((read.usage, read.finish_reason.as_deref()), (Usage::default(), Some("tool_calls")));
    assert_eq!(read_chat(serde_json::from_value(json!({"choices": []})).unwrap()).unwrap_err(), "the answer has no choices");
}

#[test]
fn an_endpoint_that_is_not_a_url_is_refused_when_the_client_is_made() {
    let refused = |base: &str| match OpenAiClient::new("m", vec![Endpoint::new(base)], ClientSettings::default()) {
        Err(ModelError::Permanent { endpoint, message }) => format!("{endpoint}: {message}"),
        other => panic!("{base}: expected a refusal, got {:?}", other.map(|_| ())),
    };
    assert_eq!(refused("ftp://host/v1"), "ftp://host/v1: expected an http:// or https:// base URL");
    assert!(refused("http://[::1/v1").starts_with("http://[::1/v1: not a URL: "), "{}", refused("http://[::1/v1"));
}
