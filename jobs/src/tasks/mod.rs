//! The eight tasks, one file each: the system prompt, the tools (typed, so
//! a misspelt tool fails to compile), the user message built from a query,
//! and how answers are scored (labels and their extraction prompt, or judge
//! dimensions and the judge prompt). [`task_def`] is the registry: an
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
    use crate::queries::read_bundled;

    /// What a task is made of, read off the registry: a new task shows up
    /// here with its definition, prompt, tools and bundled queries, or
    /// this fails naming what it lacks.
    #[test]
    fn every_task_of_the_registry_has_its_definition_prompt_tools_and_queries() {
        let queries = read_bundled().unwrap();
        for task in Task::ALL {
            let def = task_def(task);
            assert_eq!(def.task, task, "task_def({task}) is another task's definition");
            assert!(!def.system_prompt.trim().is_empty(), "{task}: empty system prompt");
            assert!(!def.tools.is_empty(), "{task}: no tools");
            let data = crate::bundled_datasets_dir().join(task.folder()).join("ground_truth.json.zst");
            assert!(data.is_file(), "{task}: no query data at {}", data.display());
            let n = queries.iter().filter(|q| q.task == task).count();
            assert!(n > 0, "{task}: no bundled query");
            eprintln!("{task}: version {}, {} tools, {n} queries, {}", def.version, def.tools.len(), task.folder());
        }
    }

    #[test]
    fn every_real_query_renders() {
        let queries = read_bundled().unwrap();
        let post = r#"{"内容": "周末见🔥", "发布时间": "2024-11-19 23:24", "转发量": 405411}"#;
        for q in &queries {
            let def = task_def(q.task);
            let message = def.user_message(q, Some(post)).unwrap();
            assert!(!message.is_empty());
        }
        let ubp = queries.iter().find(|q| q.task == Task::Ubp && q.action.as_deref() == Some("repost")).unwrap();
        let def = task_def(Task::Ubp);
        assert!(def.system_prompt(ubp).contains("进行转发"));
        assert_eq!(
            def.user_message(ubp, Some(post)).unwrap(),
            format!(
                "请判断ID为{}的用户是否对帖子```{{\"内容\": \"周末见🔥\", \"发布时间\": \"2024-11-19 23:24\", \"转发量\": 405411}}```进行转发。",
                ubp.uid.as_deref().unwrap()
            )
        );
        let red = queries.iter().find(|q| q.source_key == "2025-06-01 00:00:00_2025-06-01 01:00:00_新疆").unwrap();
        assert_eq!(
            task_def(Task::Red).user_message(red, None).unwrap(),
            "请给出从2025-06-01 00:00:00到2025-06-01 01:00:00，在社交媒体上讨论的发生在新疆的事件。"
        );
        assert_eq!(tools_in_use().len(), 8);
        let err = task_def(Task::Mcr).user_message(queries.iter().find(|q| q.task == Task::Mcr).unwrap(), None).unwrap_err();
        assert!(err.contains("is not in ref_posts"), "{err}");
    }

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
