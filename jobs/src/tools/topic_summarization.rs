//! `topic_summarization` (PostSummarization): one event summary per
//! cluster, written by the episode's own model with the reference's two
//! prompts (`prompts/summarization_*.txt`).
//!
//! As in the reference: per cluster, the first ten posts longer than ten
//! characters; a summary call (`{"summary", "time"}`, `无` meaning no event)
//! and a title call (`{"title", "location"}`); a cluster whose replies
//! cannot be read is skipped. Unlike the reference, clusters are
//! summarised concurrently (same requests, same results).

use futures::StreamExt;
use serde_json::Value;

use super::folders::{FolderData, Record, missing_folder};
use super::spec::{Param, ParamType, ToolSpec};
use super::topic_clustering::reference_split;
use super::{Args, Folders, ToolContext, ToolError, ToolOutcome};
use crate::chat::{ChatModel, ChatRequest, Message, Usage};
use crate::protocol::strip_think;

pub static SPEC: ToolSpec = ToolSpec {
    name: "topic_summarization",
    paper_name: "PostSummarization",
    description: "社交媒体聚类摘要服务，输入存放聚类结果的文件夹，总结每个聚类的主要话题内容",
    params: &[Param { name: "folder_name", kind: ParamType::String, description: "文件夹名称" }],
};

const SUMMARY_PROMPT: &str = include_str!("../../prompts/summarization_summary.txt");
const TITLE_PROMPT: &str = include_str!("../../prompts/summarization_title.txt");
/// Clusters summarised at once.
const CONCURRENCY: usize = 8;

/// A reply as the reference reads it: think removed, newlines removed, a
/// leading ```json fence cut, then parsed leniently.
fn read_json_reply(reply: &str) -> Option<Value> {
    let text = strip_think(reply).replace('\n', "");
    let text = text.trim();
    let text = match text.strip_prefix("```json") {
        Some(rest) => rest.strip_suffix("```").unwrap_or(rest),
        None => text,
    };
    serde_json::from_str(text).ok().or_else(|| json5::from_str(text).ok())
}

struct Summarized {
    event: Option<Record>,
    calls: u32,
    usage: Usage,
}

async fn ask(chat: &dyn ChatModel, prompt: String, temperature: Option<f32>, acc: &mut Summarized) -> Option<Value> {
    let request = ChatRequest { messages: vec![Message::user(prompt)], temperature, ..Default::default() };
    acc.calls += 1;
    let reply = chat.chat(&request).await.ok()?;
    acc.usage += reply.usage;
    read_json_reply(&reply.content)
}

async fn summarize(chat: &dyn ChatModel, cluster: &[Record], temperature: Option<f32>) -> Summarized {
    let mut acc = Summarized { event: None, calls: 0, usage: Usage::default() };
    let contents: Vec<&str> = cluster
        .iter()
        .filter_map(|item| item.iter().find(|(k, _)| *k == "content").map(|(_, v)| v.as_str()))
        .filter(|c| c.chars().count() > 10)
        .take(10)
        .collect();
    if contents.is_empty() {
        return acc;
    }
    let news: Vec<String> = contents.iter().enumerate().map(|(i, c)| format!("新闻{i}: {c}")).collect();
    let Some(summary) = ask(chat, SUMMARY_PROMPT.replace("{question}", &news.join("\n")), temperature, &mut acc).await else { return acc };
    let text = |v: &Value, k: &str| v.get(k).map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string));
    let (Some(summary_text), Some(time)) = (text(&summary, "summary"), text(&summary, "time")) else { return acc };
    if summary_text == "无" {
        return acc;
    }
    let cleaned = ["引起", "引发", "反映", "关注", "热议"].iter().fold(summary_text.clone(), |s, w| s.replace(w, ""));
    let title_prompt = TITLE_PROMPT.strip_suffix('\n').unwrap_or(TITLE_PROMPT).replace("{question}", &cleaned);
    let Some(title) = ask(chat, title_prompt, temperature, &mut acc).await else { return acc };
    let (Some(title_text), Some(location)) = (text(&title, "title"), text(&title, "location")) else { return acc };
    acc.event = Some(vec![("标题", title_text), ("摘要", summary_text), ("地点", location), ("时间", time)]);
    acc
}

pub(super) async fn run(ctx: &ToolContext<'_>, folders: &mut Folders, args: &Args<'_>) -> Result<ToolOutcome, ToolError> {
    let name = args.str("folder_name")?;
    let quirks = ctx.settings.reference_quirks;
    let base = if quirks {
        let parts = name.split('_').collect::<Vec<_>>();
        if parts.len() < 3 {
            reference_split(&name, 3)?;
        }
        parts[..3].join("_")
    } else {
        name.strip_suffix("_cluster")
            .map(str::to_string)
            .ok_or_else(|| ToolError::value(format!("文件夹'{name}'不是聚类（topic_clustering）的结果，请输入以_cluster结尾的文件夹。")))?
    };
    let clusters = match folders.get(&name) {
        Some(FolderData::Clusters(c)) => c.clone(),
        Some(_) => return Err(ToolError::value(format!("文件夹'{name}'不是聚类（topic_clustering）的结果。"))),
        None if quirks => return Err(ToolError::new("KeyError", format!("'{name}'"))),
        None => return Err(missing_folder(&name)),
    };
    let chat = ctx.chat.ok_or_else(|| ToolError::new("RuntimeError", "no chat model is configured for summarization"))?;
    let temperature = ctx.settings.summarization_temperature;
    // Boxed futures over owned clusters: a stream of closure-made futures
    // trips rustc's higher-ranked `Send` check in callers.
    let jobs: Vec<futures::future::BoxFuture<'_, Summarized>> =
        clusters.into_iter().map(|cluster| Box::pin(async move { summarize(chat, &cluster, temperature).await }) as _).collect();
    let results: Vec<Summarized> = futures::stream::iter(jobs).buffered(CONCURRENCY).collect().await;
    let mut outcome = ToolOutcome::default();
    let mut events = Vec::new();
    for r in results {
        outcome.model_calls += r.calls;
        outcome.usage += r.usage;
        events.extend(r.event);
    }
    let mut parts = base.splitn(3, '_');
    let (location, start, end) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let n = events.len();
    folders.insert(format!("{base}_summarization"), FolderData::Events(events));
    outcome.text =
        format!("位于{location}的从{start}到{end}的{n}个事件摘要已存放在文件夹'{base}_summarization'中。可以通过工具'data_folder'调用。");
    Ok(outcome)
}
