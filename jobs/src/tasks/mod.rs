//! The eight tasks, one file each: the system prompt, the tools (typed, so
//! a misspelt tool fails to compile), the user message built from a query,
//! how answers are scored (labels and their extraction prompt, or judge
//! dimensions and the judge prompt), what the world must hold to answer a
//! query, and the shape of the task's query file. [`task_def`] is the registry: an
//! exhaustive match, so a task without a definition fails to compile.
//!
//! System prompts live in `prompts/tasks/<task>.txt`: written for this
//! project, they ask for what the reference's prompts ask for (the same tools
//! in the same order, the same page sizes, the same answer forms), MID in
//! English. The user messages follow the reference's query templates
//! exactly, since they are part of the benchmark's input.

mod mcr;
mod mid;
mod pyjson;
mod red;
mod ses;
mod smq;
mod ubp;
mod ucs;
mod uea;

use some_schemas::{QueryRow, Task};

use crate::tools::ToolSpec;

pub use pyjson::python_json;

/// How a task's answers are scored.
#[derive(Debug, Clone, Copy)]
pub enum Evaluation {
    /// The answer is read as one of `labels` (by `read_label`, or by the
    /// extraction model with `extraction_prompt` when it is not a label
    /// already) and compared with the reference label.
    Label { labels: &'static [&'static str], extraction_prompt: &'static str, read_label: fn(&str) -> Option<&'static str> },
    /// A judge rates the answer against the reference on `dimensions`
    /// (0-5 each) with `judge_prompt`.
    Judged { dimensions: &'static [&'static str], judge_prompt: &'static str },
}

/// A task as the agent runs it and the scorer scores it.
#[derive(Debug)]
pub struct TaskDef {
    pub task: Task,
    /// Bumped when the prompt or the query template changes, so results of
    /// different task versions are never compared as equal.
    pub version: u32,
    system_prompt: &'static str,
    /// The task's tools, in the order the reference lists them.
    pub tools: &'static [&'static ToolSpec],
    pub evaluation: Evaluation,
    /// What the world must hold for a query of the task to be answerable.
    pub grounding: Grounding,
    /// How the task's query file is laid out.
    pub format: QueryFormat,
    /// The release's query file (`datasets/some/<folder>/ground_truth.json`,
    /// zstd), compiled in so a fresh machine runs without the repository.
    pub bundled: &'static [u8],
    user_message: fn(&QueryRow, Option<&str>) -> Result<String, String>,
}

/// What a query needs from the world to be answerable: `some check`
/// counts the queries a lake grounds by this rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grounding {
    /// Posts of the query's location stream in its one-hour window.
    Stream,
    /// The query's topic collection.
    Topic,
    /// A knowledge base that is not empty.
    KnowledgeBase,
    /// The query's user (profile and timeline), else its topic; a query
    /// naming neither cannot be grounded and is not counted against the lake.
    UserOrTopic,
    /// The query's user (profile and timeline) and its referenced post.
    UserAndPost,
}

/// The shape of a task's `ground_truth.json` (reference §5.1); `queries`
/// reads each shape field by field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryFormat {
    /// `"<start>_<end>_<location>": [{标题, 摘要, 时间, 地点}, ...]`
    EventWindows,
    /// `"<topic keywords>": "<reference summary>"`
    TopicSummaries,
    /// `"<id>.json": {"claim": ..., "label": ...}`
    Claims,
    /// `"<question>": "<answer>"`, the question naming a user or a topic.
    Questions,
    /// `{"<action>": {"<uid>": [{weibo_id, label, <action text>?}]}}`: the
    /// comment and repost entries carry the text under the action's name.
    UserActions { actions: &'static [&'static str] },
    /// `{"<uid>": [{weibo_id, <label>, <text>?}]}`
    UserEntries { label: &'static str, text: Option<&'static str> },
}

/// The labels of each classification task, as the release spells them.
pub const YES_NO: &[&str] = &["是", "否"];
pub const MID_LABELS: &[&str] = &["true", "half", "false"];
pub const EMOTIONS: &[&str] = &["积极", "愤怒", "悲伤", "恐惧", "惊奇", "无情绪"];
pub const UBP_ACTIONS: &[&str] = &["like", "comment", "repost"];

/// A system prompt template filled in for `query` (UBP's action word).
pub fn system_prompt_for(template: &str, query: &QueryRow) -> String {
    let action = query.action.as_deref().and_then(ubp::action_word).unwrap_or("互动");
    template.trim_end().replace("<place_holder>", action)
}

/// The definition of a task.
pub fn task_def(task: Task) -> &'static TaskDef {
    match task {
        Task::Red => &red::DEF,
        Task::Ses => &ses::DEF,
        Task::Mid => &mid::DEF,
        Task::Ubp => &ubp::DEF,
        Task::Uea => &uea::DEF,
        Task::Ucs => &ucs::DEF,
        Task::Mcr => &mcr::DEF,
        Task::Smq => &smq::DEF,
    }
}

impl TaskDef {
    /// The system prompt for one query (UBP's names the action).
    pub fn system_prompt(&self, query: &QueryRow) -> String {
        system_prompt_for(self.system_prompt, query)
    }

    /// The built-in system prompt as its file holds it.
    pub fn system_prompt_template(&self) -> &'static str {
        self.system_prompt
    }

    /// The user message for a query. User tasks embed the post the query is
    /// about, as the reference does (`json.dumps(post, ensure_ascii=False)`).
    pub fn user_message(&self, query: &QueryRow, post_json: Option<&str>) -> Result<String, String> {
        (self.user_message)(query, post_json)
    }

    /// The labels answers are scored in (`None` for judged tasks).
    pub fn labels(&self) -> Option<&'static [&'static str]> {
        match self.evaluation {
            Evaluation::Label { labels, .. } => Some(labels),
            Evaluation::Judged { .. } => None,
        }
    }
}

/// A field the task's query must have.
fn need(query: &QueryRow, value: &Option<String>, what: &str) -> Result<String, String> {
    value.clone().ok_or_else(|| format!("query {} has no {what}", query.query_id))
}

/// The post a user-task query is about, as the reference prints it.
fn embedded_post(query: &QueryRow, post_json: Option<&str>) -> Result<String, String> {
    let post_id = query.post_id.as_deref().unwrap_or("?");
    let raw = post_json.ok_or_else(|| format!("post {post_id} of query {} is not in ref_posts", query.query_id))?;
    let value: serde_json::Value = serde_json::from_str(raw).map_err(|e| format!("post {post_id}: {e}"))?;
    Ok(python_json(&value))
}

/// 是/否 answers, also in English.
fn yes_no(text: &str) -> Option<&'static str> {
    match text {
        "是" | "yes" => Some("是"),
        "否" | "no" => Some("否"),
        _ => None,
    }
}

/// Every tool some task uses, in the paper's order.
pub fn tools_in_use() -> Vec<&'static str> {
    let used = |t: &ToolSpec| Task::ALL.iter().any(|task| task_def(*task).tools.iter().any(|u| std::ptr::eq(*u, t)));
    crate::tools::ALL_TOOLS.iter().filter(|t| used(t)).map(|t| t.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_task_and_tool_names_are_errors_and_every_task_resolves_its_tools() {
        let err = "RDE".parse::<Task>().unwrap_err();
        assert!(err.contains("unknown task \"RDE\""), "{err}");
        assert!(crate::tools::tool("post_serch").is_none());
        for task in Task::ALL {
            let def = task_def(task);
            assert_eq!(def.task, task);
            assert!(!def.tools.is_empty(), "{task}");
            for t in def.tools {
                assert!(crate::tools::tool(t.name).is_some_and(|found| std::ptr::eq(found, *t)), "{task}: {}", t.name);
            }
            assert_eq!(def.labels().is_some(), task.scoring() == some_schemas::Scoring::Label, "{task}");
        }
        assert_eq!(
            task_def(Task::Smq).tools.iter().map(|t| t.name).collect::<Vec<_>>(),
            ["user_search", "data_folder", "topic_search", "post_retrieve"]
        );
    }
}
