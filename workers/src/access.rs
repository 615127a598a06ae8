//! Who may call our HTTP servers (`some llm serve`, `some mcp --http`), and
//! how much they may send.
//!
//! A server holds an optional bearer token. With one, every request must
//! carry `Authorization: Bearer <token>` or gets 401 and nothing else;
//! without one, the server refuses to listen anywhere but loopback, since
//! anyone who could reach it could spend its model or read its world.
//! The same token is what the model client sends ([`api_key`]), so one
//! environment variable sets up both ends.
//!
//! Request bodies are read up to a limit before any handler sees them;
//! a larger one gets 413 with the limit named.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::error::{Error, Result};

/// The environment variable holding the token: required by the servers
/// when set, and sent by the model client to every endpoint.
pub const TOKEN_ENV: &str = "SOME_API_KEY";

/// The key the model client sends, from [`TOKEN_ENV`].
pub fn api_key() -> Option<String> {
    std::env::var(TOKEN_ENV).ok().map(|k| k.trim().to_string()).filter(|k| !k.is_empty())
}

/// A server's rule for who may call it and how large a request may be.
#[derive(Clone)]
pub struct Access {
    token: Option<Arc<str>>,
    max_body: usize,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token itself never reaches a log.
        f.debug_struct("Access").field("token", &self.token.as_ref().map(|_| "<set>")).field("max_body", &self.max_body).finish()
    }
}

impl Access {
    /// No token: loopback only.
    pub fn open(max_body: usize) -> Access {
        Access { token: None, max_body }
    }

    /// Requests must carry `token`, which must not be blank.
    pub fn with_token(token: &str, max_body: usize) -> Result<Access> {
        let token = token.trim();
        if token.is_empty() {
            return Err(Error::Invalid("the access token is empty".into()));
        }
        Ok(Access { token: Some(token.into()), max_body })
    }

    /// The token from `file` when given (its content, trimmed), else from
    /// [`TOKEN_ENV`], else none.
    pub fn configured(file: Option<&Path>, max_body: usize) -> Result<Access> {
        match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(Error::io(format!("reading the token file {}", path.display())))?;
                Access::with_token(&text, max_body).map_err(|_| Error::Invalid(format!("the token file {} is empty", path.display())))
            }
            None => match api_key() {
                Some(token) => Access::with_token(&token, max_body),
                None => Ok(Access::open(max_body)),
            },
        }
    }

    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    /// Refuses an address beyond loopback when there is no token.
    pub fn check_bind(&self, addr: SocketAddr) -> Result<()> {
        if self.token.is_none() && !addr.ip().is_loopback() {
            return Err(Error::Invalid(format!(
                "refusing to listen on {addr} without an access token: anyone who can reach it could use it; \
                 give one with --token-file FILE or {TOKEN_ENV}, or listen on 127.0.0.1"
            )));
        }
        Ok(())
    }

    /// `router` behind this rule: the token checked first, then the body
    /// read within its limit.
    pub fn guard(&self, router: Router) -> Router {
        router.layer(middleware::from_fn_with_state(self.clone(), check))
    }
}

fn refuse(status: StatusCode, kind: &str, message: String) -> Response {
    let body = axum::Json(json!({"error": {"message": message, "type": kind}}));
    if status == StatusCode::UNAUTHORIZED {
        (status, [(header::WWW_AUTHENTICATE, "Bearer")], body).into_response()
    } else {
        (status, body).into_response()
    }
}

/// Equal without telling, by its timing, how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn check(State(access): State<Access>, request: Request, next: Next) -> Response {
    if let Some(token) = &access.token {
        let given = request.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "));
        match given {
            None => {
                return refuse(StatusCode::UNAUTHORIZED, "unauthorized", "a bearer token is required (Authorization: Bearer ...)".into());
            }
            Some(g) if !same(g.trim().as_bytes(), token.as_bytes()) => {
                return refuse(StatusCode::UNAUTHORIZED, "unauthorized", "the bearer token is wrong".into());
            }
            Some(_) => {}
        }
    }
    let too_large =
        || refuse(StatusCode::PAYLOAD_TOO_LARGE, "request_too_large", format!("the request body is larger than {} bytes", access.max_body));
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > access.max_body) {
        return too_large();
    }
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, access.max_body).await {
        Ok(b) => b,
        Err(_) => return too_large(),
    };
    next.run(Request::from_parts(parts, Body::from(bytes))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_loopback_needs_a_token() {
        let open = Access::open(10);
        assert!(open.check_bind("127.0.0.1:80".parse().unwrap()).is_ok());
        assert!(open.check_bind("[::1]:80".parse().unwrap()).is_ok());
        let e = open.check_bind("0.0.0.0:8000".parse().unwrap()).unwrap_err().to_string();
        assert!(e.contains("refusing to listen on 0.0.0.0:8000 without an access token"), "{e}");
        assert!(Access::with_token("s3cret", 10).unwrap().check_bind("0.0.0.0:8000".parse().unwrap()).is_ok());
        assert!(Access::with_token(" \n", 10).is_err());
        assert!(!format!("{:?}", Access::with_token("s3cret", 10).unwrap()).contains("s3cret"));
    }

    #[test]
    fn tokens_are_compared_whole() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd") && !same(b"abc", b"ab") && !same(b"", b"a"));
    }

    #[tokio::test]
    async fn requests_without_the_token_or_too_large_are_refused() {
        let router = Router::new().route("/echo", axum::routing::post(|body: String| async move { body }));
        let app = Access::with_token("s3cret", 16).unwrap().guard(router);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let client = reqwest::Client::new();
        let send = |token: Option<&'static str>, body: &'static str| {
            let mut r = client.post(format!("http://{addr}/echo")).body(body);
            if let Some(t) = token {
                r = r.bearer_auth(t);
            }
            async move {
                let response = r.send().await.unwrap();
                (response.status().as_u16(), response.text().await.unwrap())
            }
        };
        let (status, body) = send(None, "hi").await;
        assert_eq!(status, 401);
        assert!(body.contains("a bearer token is required"), "{body}");
        assert_eq!(send(Some("wrong"), "hi").await.0, 401);
        assert_eq!(send(Some("s3cret"), "hi").await, (200, "hi".to_string()));
        let (status, body) = send(Some("s3cret"), "far more than sixteen bytes").await;
        assert_eq!((status, body.contains("larger than 16 bytes")), (413, true), "{body}");
        // Chunked, with no length announced: refused while it is read.
        let chunks = futures::stream::iter(["twelve bytes", " and twelve"].map(Ok::<_, std::io::Error>));
        let response =
            client.post(format!("http://{addr}/echo")).bearer_auth("s3cret").body(reqwest::Body::wrap_stream(chunks)).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 413);
    }
}
