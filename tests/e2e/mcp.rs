//! `some mcp` driven by the official MCP SDK's client: over stdio (the
//! command as an MCP client launches it) and over streamable HTTP.

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Map, Value, json};
use some_tests::{free_port, http, some, some_bin, wait_for_port};

fn small_world() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let lake = dir.path().join("lake").to_str().unwrap().to_string();
    some(&lake, &[], &["ingest", "queries"]).ok();
    some(&lake, &[], &["synth", "--seed", "3"]).ok();
    (dir, lake)
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|c| c.as_text().map(|t| t.text.clone())).collect::<Vec<_>>().join("")
}

fn params(name: &'static str, args: Value) -> CallToolRequestParams {
    let args: Map<String, Value> = args.as_object().cloned().unwrap();
    CallToolRequestParams::new(name).with_arguments(args)
}

/// A RED query window of the real release (新疆, 2025-06-01 00:00-01:00).
const WINDOW: [&str; 3] = ["新疆", "2025-06-01 00:00:00", "2025-06-01 01:00:00"];

async fn explore<S>(client: &rmcp::service::RunningService<rmcp::RoleClient, S>)
where
    S: rmcp::service::Service<rmcp::RoleClient>,
{
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "data_folder",
            "post_search",
            "topic_search",
            "user_search",
            "post_retrieve",
            "knowledge_retrieve",
            "topic_clustering",
            "topic_summarization"
        ]
    );
    assert_eq!(tools[0].input_schema["required"], json!(["folder_name", "start_idx", "end_idx"]));

    let found = client
        .call_tool(params("post_search", json!({"location": WINDOW[0], "start_time": WINDOW[1], "end_time": WINDOW[2]})))
        .await
        .unwrap();
    let found_text = text(&found);
    let folder = format!("{}_{}_{}", WINDOW[0], WINDOW[1], WINDOW[2]);
    assert!(
        found_text.ends_with(&format!("条符合条件的帖子已存储在数据文件夹 '{folder}' 中。可以通过工具'data_folder'调用。\n")),
        "{found_text}"
    );
    let n: usize = found_text.split(' ').next().unwrap().parse().unwrap();
    assert!(n > 10, "the window holds its events' posts: {n}");

    let read = client.call_tool(params("data_folder", json!({"folder_name": folder, "start_idx": 0, "end_idx": 2}))).await.unwrap();
    let read_text = text(&read);
    assert_eq!(read.is_error, Some(false));
    assert!(read_text.starts_with("帖子 1:\n***内容***: "), "{read_text}");
    assert!(read_text.contains("\n\n帖子 2:\n"), "{read_text}");

    let missing = client.call_tool(params("data_folder", json!({"folder_name": "nope", "start_idx": 0, "end_idx": 1}))).await.unwrap();
    assert_eq!(missing.is_error, Some(true));
    assert!(text(&missing).contains("文件夹'nope'不存在"), "{}", text(&missing));
}

#[tokio::test]
async fn an_mcp_client_explores_the_world_over_stdio() {
    let (_dir, lake) = small_world();
    let mut command = tokio::process::Command::new(some_bin());
    command.args(["--lake", &lake, "mcp"]).env_remove("SOME_LAKE");
    let client = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    explore(&client).await;
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_mcp_client_explores_the_world_over_http() {
    let (_dir, lake) = small_world();
    let port = free_port();
    let mut server = std::process::Command::new(some_bin())
        .args(["--lake", &lake, "mcp", "--http", &port.to_string()])
        .env_remove("SOME_LAKE")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for_port(port, std::time::Duration::from_secs(30)), "some mcp --http did not listen on {port}");
    let transport = StreamableHttpClientTransport::from_uri(format!("http://127.0.0.1:{port}/mcp"));
    let client = ().serve(transport).await.unwrap();
    explore(&client).await;
    client.cancel().await.unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
}

/// Beyond loopback the server needs a token; with one, the official
/// client gets in only by sending it, and bodies past the limit get 413.
#[tokio::test]
async fn an_mcp_server_with_a_token_lets_in_only_its_holders() {
    let (dir, lake) = small_world();
    let refused = some(&lake, &[], &["mcp", "--http", &format!("0.0.0.0:{}", free_port())]);
    assert!(
        refused.status != 0
            && refused.stderr.contains("refusing to listen on 0.0.0.0:")
            && refused.stderr.contains("without an access token"),
        "{}",
        refused.stderr
    );

    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "s3cret-token\n").unwrap();
    let port = free_port();
    let mut server = std::process::Command::new(some_bin())
        .args(["--lake", &lake, "mcp", "--http", &port.to_string(), "--token-file", token_file.to_str().unwrap()])
        .env_remove("SOME_LAKE")
        .env_remove("SOME_API_KEY")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for_port(port, std::time::Duration::from_secs(30)), "some mcp --http did not listen on {port}");
    let uri = format!("http://127.0.0.1:{port}/mcp");

    let config = StreamableHttpClientTransportConfig::with_uri(uri.clone()).auth_header("s3cret-token");
    let client = ().serve(StreamableHttpClientTransport::from_config(config)).await.unwrap();
    explore(&client).await;
    client.cancel().await.unwrap();
    for token in [None, Some("wrong")] {
        let mut config = StreamableHttpClientTransportConfig::with_uri(uri.clone());
        if let Some(t) = token {
            config = config.auth_header(t);
        }
        assert!(().serve(StreamableHttpClientTransport::from_config(config)).await.is_err(), "a client with token {token:?} got in");
    }

    let hello = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string();
    let (status, body) = http(port, "POST", "/mcp", &[], &hello);
    assert!(status.contains("401") && body.contains("a bearer token is required"), "{status} {body}");
    let (status, body) = http(port, "POST", "/mcp", &["Authorization: Bearer s3cret"], &hello);
    assert!(status.contains("401") && body.contains("the bearer token is wrong"), "{status} {body}");
    let huge = ["Authorization: Bearer s3cret-token", "Content-Length: 2097152"];
    let (status, body) = http(port, "POST", "/mcp", &huge, "{}");
    assert!(status.contains("413") && body.contains("larger than 1048576 bytes"), "{status} {body}");
    server.kill().unwrap();
    server.wait().unwrap();
}
