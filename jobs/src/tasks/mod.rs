//! The eight tasks as the agent runs them: system prompt, tool set and the
//! user message built from a query.
//!
//! Each task is one [`TaskDef`] value. System prompts live in
//! `prompts/tasks/<task>.txt`: written for this project, they ask for what
//! the reference's prompts ask for (the same tools in the same order, the
//! same page sizes, the same answer forms), MID in English. The user
//! messages follow the reference's query templates exactly, since they are
//! part of the benchmark's input.

mod pyjson;

use some_schemas::{QueryRow, Task};

use crate::tools::{ALL_TOOLS, ToolSpec, tool};

pub use pyjson::python_json;

/// A task as the agent runs it.
#[derive(Debug, Clone, Copy)]
pub struct TaskDef {
    pub task: Task,
    /// Bumped when the prompt or the query template changes, so results of
    /// different task versions are never compared as equal.
    pub version: u32,
    system_prompt: &'static str,
    tool_names: &'static [&'static str],
}

const DEFS: [TaskDef; 8] = [
    TaskDef {
        task: Task::Red,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/red.txt"),
        tool_names: &["post_search", "data_folder", "topic_clustering", "topic_summarization"],
    },
    TaskDef {
        task: Task::Ses,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/ses.txt"),
        tool_names: &["data_folder", "topic_search"],
    },
    TaskDef {
        task: Task::Mid,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/mid.txt"),
        tool_names: &["knowledge_retrieve"],
    },
    TaskDef {
        task: Task::Ubp,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/ubp.txt"),
        tool_names: &["user_search", "data_folder"],
    },
    TaskDef {
        task: Task::Uea,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/uea.txt"),
        tool_names: &["user_search", "data_folder"],
    },
    TaskDef {
        task: Task::Ucs,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/ucs.txt"),
        tool_names: &["user_search", "data_folder"],
    },
    TaskDef {
        task: Task::Mcr,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/mcr.txt"),
        tool_names: &["user_search", "data_folder"],
    },
    TaskDef {
        task: Task::Smq,
        version: 1,
        system_prompt: include_str!("../../prompts/tasks/smq.txt"),
        tool_names: &["user_search", "data_folder", "topic_search", "post_retrieve"],
    },
];

/// The definition of a task.
pub fn task_def(task: Task) -> &'static TaskDef {
    DEFS.iter().find(|d| d.task == task).unwrap_or(&DEFS[0])
}

/// UBP's action words, as the reference's prompt and query say them.
fn action_word(action: &str) -> Option<&'static str> {
    match action {
        "like" => Some("点赞"),
        "comment" => Some("评论"),
        "repost" => Some("转发"),
        _ => None,
    }
}

impl TaskDef {
    /// The task's tools, in the order the reference lists them.
    pub fn tools(&self) -> Vec<&'static ToolSpec> {
        self.tool_names.iter().filter_map(|n| tool(n)).collect()
    }

    /// The system prompt for one query (UBP's names the action).
    pub fn system_prompt(&self, query: &QueryRow) -> String {
        let action = query.action.as_deref().and_then(action_word).unwrap_or("互动");
        self.system_prompt.trim_end().replace("<place_holder>", action)
    }

    /// The user message for a query. User tasks embed the post the query is
    /// about, as the reference does (`json.dumps(post, ensure_ascii=False)`).
    pub fn user_message(&self, query: &QueryRow, post_json: Option<&str>) -> Result<String, String> {
        let need = |v: &Option<String>, what: &str| v.clone().ok_or_else(|| format!("query {} has no {what}", query.query_id));
        let post = || -> Result<String, String> {
            let raw = post_json.ok_or_else(|| {
                format!("post {} of query {} is not in ref_posts", query.post_id.as_deref().unwrap_or("?"), query.query_id)
            })?;
            let value: serde_json::Value =
                serde_json::from_str(raw).map_err(|e| format!("post {}: {e}", query.post_id.as_deref().unwrap_or("?")))?;
            Ok(python_json(&value))
        };
        Ok(match self.task {
            Task::Red => {
                let (Some(start), Some(end)) = (query.window_start, query.window_end) else {
                    return Err(format!("query {} has no window", query.query_id));
                };
                format!("请给出从{start}到{end}，在社交媒体上讨论的发生在{}的事件。", need(&query.location, "location")?)
            }
            Task::Ses => format!("请给出话题“{}”的事件发生经过和详细时间、地点、情节。", need(&query.topic, "topic")?),
            Task::Mid => format!("Please determine if the twitter '{}' is true.", need(&query.claim, "claim")?),
            Task::Ubp => {
                let action =
                    query.action.as_deref().and_then(action_word).ok_or_else(|| format!("query {} has no action", query.query_id))?;
                format!("请判断ID为{}的用户是否对帖子```{}```进行{action}。", need(&query.uid, "uid")?, post()?)
            }
            Task::Uea => format!("请判断ID为{}的用户会对帖子```{}```产生哪种情绪。", need(&query.uid, "uid")?, post()?),
            Task::Ucs => format!(
                "请判断帖子```{}```下的评论“{}”是否是由ID为{}的用户发表。",
                post()?,
                need(&query.comment, "comment")?,
                need(&query.uid, "uid")?
            ),
            Task::Mcr => format!("请判断ID为{}的用户是否对帖子```{}```感兴趣。", need(&query.uid, "uid")?, post()?),
            Task::Smq => need(&query.question, "question")?,
        })
    }
}

/// Every tool some task uses (all eight).
pub fn tools_in_use() -> Vec<&'static str> {
    ALL_TOOLS.iter().filter(|t| DEFS.iter().any(|d| d.tool_names.contains(&t.name))).map(|t| t.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ingest::queries::read_bundled;

    #[test]
    fn every_real_query_renders() {
        let queries = read_bundled().unwrap();
        let post = r#"{"内容": "周末见🔥", "发布时间": "2024-11-19 23:24", "转发量": 405411}"#;
        for q in &queries {
            let def = task_def(q.task.parse().unwrap());
            let message = def.user_message(q, Some(post)).unwrap();
            assert!(!message.is_empty());
        }
        let ubp = queries.iter().find(|q| q.task == "UBP" && q.action.as_deref() == Some("repost")).unwrap();
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
        let err = task_def(Task::Mcr).user_message(queries.iter().find(|q| q.task == "MCR").unwrap(), None).unwrap_err();
        assert!(err.contains("is not in ref_posts"), "{err}");
    }
}
