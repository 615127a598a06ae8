//! The agent loop against a scripted model and an in-memory world.

use some_schemas::{PostRow, PostSource, QueryRow, Task, Timestamp, UserRow, buckets};

use super::*;
use crate::chat::{ChatResponse, ModelError};
use crate::kernels::CpuKernels;
use crate::protocol::NativeToolCall;
use crate::testing::{ScriptedModel, reply as say};
use crate::tools::{MemoryBackend, ToolSettings};

/// Replies from a script, in order; past it, keeps calling a tool (for the
/// budget test).
fn scripted(replies: Vec<Result<ChatResponse, ModelError>>) -> ScriptedModel {
    ScriptedModel::replies("scripted", replies, |_| say(r#"<tool_call>{"name": "user_search", "arguments": {"uid": "1001"}}</tool_call>"#))
}

fn world() -> MemoryBackend {
    let post = |id: &str, text: &str| PostRow {
        published_at: Timestamp::parse("2025-03-01 12:00:00"),
        uid: Some("1001".into()),
        ..PostRow::new(id, text, PostSource::Weibo, buckets::weibo("1001"))
    };
    MemoryBackend {
        posts: vec![post("w1", "周末去看演唱会"), post("w2", "今天吃火锅")],
        users: vec![UserRow {
            uid: "1001".into(),
            name: Some("小兔子".into()),
            followers_count: Some(1),
            friends_count: Some(2),
            total_rcl_count: None,
            verified_reason: None,
            description: None,
            location: None,
            extra: None,
        }],
        ..Default::default()
    }
}

fn mcr_query() -> QueryRow {
    QueryRow {
        uid: Some("1001".into()),
        post_id: Some("5001".into()),
        label: Some("是".into()),
        entry: "{}".into(),
        ..QueryRow::blank("mcr-1".into(), Task::Mcr)
    }
}

const POST: &str = r#"{"内容": "演唱会门票开售"}"#;

async fn run(model: &ScriptedModel, settings: AgentSettings, tool_settings: ToolSettings, post: Option<&str>) -> Episode {
    let backend = world();
    let kernels = std::sync::Arc::new(CpuKernels::new(1));
    let tools = ToolContext { backend: &backend, kernels: &kernels, embedder: None, chat: Some(model), settings: &tool_settings };
    let ctx = EpisodeContext { model, tools, settings: &settings };
    run_episode(&ctx, &mcr_query(), post, &mut Folders::default()).await.expect("the in-memory world always reads")
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

#[test]
fn an_episode_runs_tools_in_order_and_ends_on_a_plain_reply() {
    let model = scripted(vec![
        say("我先查一下用户。\n```json\n{\"name\": \"user_search\", \"arguments\": {\"uid\": \"1001\"}}\n```"),
        say(r#"<tool_call>{"name": "data_folder", "arguments": {"folder_name": "1001_weibo", "start_idx": 0, "end_idx": 2}}</tool_call>"#),
        say("<think>用户喜欢演唱会</think>\n是"),
    ]);
    let ep = block_on(run(&model, AgentSettings::default(), ToolSettings::default(), Some(POST)));
    assert_eq!((ep.status, ep.answer.as_deref()), (EpisodeStatus::Answered, Some("是")));
    assert_eq!((ep.llm_calls, ep.tool_calls, ep.tool_errors), (3, 2, 0));
    assert_eq!(ep.usage, Usage { prompt_tokens: 300, completion_tokens: 30, cached_tokens: 0 });
    let requests = model.requests();
    assert!(requests[0].messages[0].content.contains("<tools>\n{\"type\":\"function\",\"function\":{\"name\":\"user_search\""));
    assert_eq!(requests[0].messages[1].content, "请判断ID为1001的用户是否对帖子```{\"内容\": \"演唱会门票开售\"}```感兴趣。");
    let after_search = &requests[1].messages[3].content;
    assert!(after_search.starts_with("<tool_response>\n用户发表的 2 条微博已存储在数据文件夹 '1001_weibo' 中。"), "{after_search}");
    assert!(requests[2].messages[5].content.contains("***内容***: 周末去看演唱会"));
    assert_eq!(ep.transcript.calls[0].call_formats, vec!["json_fence"]);
    assert_eq!(ep.transcript.tool_results.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(), ["user_search", "data_folder"]);
}

#[test]
fn the_call_budget_ends_the_episode_with_the_last_raw_tool_result() {
    let model = scripted(vec![]);
    let ep = block_on(run(&model, AgentSettings::default(), ToolSettings::default(), Some(POST)));
    assert_eq!((ep.status, ep.llm_calls, ep.tool_calls), (EpisodeStatus::BudgetExhausted, 20, 20));
    let answer = ep.answer.unwrap();
    assert!(answer.starts_with("用户发表的 2 条微博"), "the tool's own text, without <tool_response>: {answer}");
    assert!(!answer.contains("tool_response"), "{answer}");
}

#[test]
fn a_token_or_time_limit_ends_the_episode_as_the_call_budget_does() {
    // Each scripted call spends 110 tokens: the limit is reached after 3.
    let model = scripted(vec![]);
    let settings = AgentSettings { max_episode_tokens: Some(300), ..Default::default() };
    let ep = block_on(run(&model, settings, ToolSettings::default(), Some(POST)));
    assert_eq!((ep.status, ep.llm_calls, ep.tool_calls), (EpisodeStatus::BudgetExhausted, 3, 3));
    assert!(ep.answer.unwrap().starts_with("用户发表的 2 条微博"));
    assert_eq!(ep.error.as_deref(), Some("episode token limit reached: 330 of 300 tokens spent"));

    let settings = AgentSettings { max_episode_seconds: Some(0), ..Default::default() };
    let ep = block_on(run(&scripted(vec![]), settings, ToolSettings::default(), Some(POST)));
    assert_eq!((ep.status, ep.llm_calls, ep.answer), (EpisodeStatus::BudgetExhausted, 0, None));
    assert!(ep.error.unwrap().starts_with("episode time limit reached"));
}

#[test]
fn malformed_calls_get_their_error_back_unless_the_reference_is_asked_for() {
    let broken = r#"<tool_call>{"name": "user_search", "arguments": {"uid": </tool_call>"#;
    let model = scripted(vec![say(broken), say("否")]);
    let ep = block_on(run(&model, AgentSettings::default(), ToolSettings::default(), Some(POST)));
    assert_eq!((ep.answer.as_deref(), ep.llm_calls, ep.tool_errors), (Some("否"), 2, 1));
    let feedback = &model.requests()[1].messages[3].content;
    assert!(feedback.starts_with("<tool_response>\nThe tool call could not be read (tool_call format): "), "{feedback}");

    let model = scripted(vec![say(broken), say("否")]);
    let quirks = ToolSettings { reference_quirks: true, ..Default::default() };
    let ep = block_on(run(&model, AgentSettings::default(), quirks, Some(POST)));
    assert_eq!((ep.answer.as_deref(), ep.llm_calls), (Some(broken), 1));
}

#[test]
fn model_and_query_failures_end_as_statuses() {
    let model = scripted(vec![Err(ModelError::Transient { endpoint: "http://x".into(), message: "HTTP 429 after 5 tries".into() })]);
    let ep = block_on(run(&model, AgentSettings::default(), ToolSettings::default(), Some(POST)));
    assert_eq!(ep.status, EpisodeStatus::ModelError);
    assert_eq!(ep.error.as_deref(), Some("model endpoint http://x: HTTP 429 after 5 tries (transient)"));
    let ep = block_on(run(&scripted(vec![]), AgentSettings::default(), ToolSettings::default(), None));
    assert_eq!(ep.status, EpisodeStatus::QueryError);
    assert!(ep.error.unwrap().contains("post 5001 of query mcr-1 is not in ref_posts"));
}

#[test]
fn native_calls_are_answered_by_id() {
    let call = |id: &str, args: &str| NativeToolCall { id: id.into(), name: "user_search".into(), arguments: args.into() };
    let model = scripted(vec![
        Ok(ChatResponse {
            content: String::new(),
            tool_calls: vec![call("a", r#"{"uid": "1001"}"#), call("b", "{not json")],
            ..Default::default()
        }),
        say("是"),
    ]);
    let settings = AgentSettings { protocol: Protocol::Native, ..Default::default() };
    let ep = block_on(run(&model, settings, ToolSettings::default(), Some(POST)));
    assert_eq!((ep.answer.as_deref(), ep.tool_calls, ep.tool_errors), (Some("是"), 1, 1));
    let requests = model.requests();
    assert_eq!(requests[0].tools.len(), 2);
    assert!(!requests[0].messages[0].content.contains("<tools>"));
    let replies: Vec<(&str, Option<&str>)> =
        requests[1].messages[3..].iter().map(|m| (m.content.get(..12).unwrap_or(&m.content), m.tool_call_id.as_deref())).collect();
    assert_eq!(replies[0].1, Some("a"));
    assert_eq!(replies[1].1, Some("b"));
    assert!(requests[1].messages[4].content.starts_with("The tool call could not be read (native format)"));
}

#[test]
fn old_turns_are_dropped_at_the_input_budget() {
    let m = |role, n: usize| Message::new(role, "字".repeat(n));
    let messages =
        vec![m(Role::System, 10), m(Role::User, 10), m(Role::Assistant, 100), m(Role::User, 100), m(Role::Assistant, 5), m(Role::User, 5)];
    let fitted = fit_budget(&messages, 60);
    assert_eq!(fitted.len(), 4);
    assert_eq!(fitted[2].content.chars().count(), 5);
    assert_eq!(fit_budget(&messages, 10_000).len(), 6);
    assert_eq!(estimate_tokens("abcdefgh中文"), 4);
}

/// A world whose every read fails, as when the store is down.
struct Unreadable;

fn down() -> BackendError {
    BackendError("the store did not answer".into())
}

#[async_trait::async_trait]
impl crate::tools::WorldBackend for Unreadable {
    async fn stream_posts(&self, _: crate::tools::StreamWindow<'_>) -> Result<Option<Vec<PostRow>>, BackendError> {
        Err(down())
    }
    async fn topic_posts(&self, _: &str) -> Result<Vec<PostRow>, BackendError> {
        Err(down())
    }
    async fn user(&self, _: &str) -> Result<Option<UserRow>, BackendError> {
        Err(down())
    }
    async fn user_posts(&self, _: &str) -> Result<Vec<PostRow>, BackendError> {
        Err(down())
    }
    async fn post_vectors(&self, _: &str, _: &[crate::tools::PostKey]) -> Result<Vec<Option<Vec<f32>>>, BackendError> {
        Err(down())
    }
    async fn knowledge(&self, _: &str) -> Result<std::sync::Arc<crate::tools::KnowledgeIndex>, BackendError> {
        Err(down())
    }
    async fn ref_post(&self, _: &str) -> Result<Option<String>, BackendError> {
        Err(down())
    }
}

#[test]
fn a_world_that_cannot_be_read_fails_the_episode_and_the_model_never_reads_the_outage() {
    let model = scripted(vec![say(r#"<tool_call>{"name": "user_search", "arguments": {"uid": "1001"}}</tool_call>"#), say("是")]);
    let (settings, tool_settings) = (AgentSettings::default(), ToolSettings::default());
    let kernels = std::sync::Arc::new(CpuKernels::new(1));
    let tools = ToolContext { backend: &Unreadable, kernels: &kernels, embedder: None, chat: Some(&model), settings: &tool_settings };
    let ctx = EpisodeContext { model: &model, tools, settings: &settings };
    let failed = block_on(run_episode(&ctx, &mcr_query(), Some(POST), &mut Folders::default()));
    assert_eq!(failed, Err(down()));
    assert_eq!(model.requests().len(), 1, "the outage was shown to the model");
    // A mistake of the call itself is still the model's to read.
    let model = scripted(vec![say(r#"<tool_call>{"name": "user_search", "arguments": {}}</tool_call>"#), say("是")]);
    let tools = ToolContext { backend: &Unreadable, kernels: &kernels, embedder: None, chat: Some(&model), settings: &tool_settings };
    let ctx = EpisodeContext { model: &model, tools, settings: &settings };
    let episode = block_on(run_episode(&ctx, &mcr_query(), Some(POST), &mut Folders::default())).unwrap();
    assert_eq!((episode.status, episode.tool_errors, episode.answer.as_deref()), (EpisodeStatus::Answered, 1, Some("是")));
}
