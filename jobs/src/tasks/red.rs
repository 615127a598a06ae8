//! RED, real-time event detection: its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, need};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Red,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/red.txt"),
    tools: &[&tools::POST_SEARCH, &tools::DATA_FOLDER, &tools::TOPIC_CLUSTERING, &tools::TOPIC_SUMMARIZATION],
    evaluation: Evaluation::Judged {
        dimensions: &["accuracy", "completeness", "relevance"],
        judge_prompt: include_str!("../../prompts/eval/judge_red.txt"),
    },
    grounding: Grounding::Stream,
    format: QueryFormat::EventWindows,
    bundled: include_bytes!("../../../datasets/some/realtime_event_detection/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, _post: Option<&str>) -> Result<String, String> {
    let (Some(start), Some(end)) = (query.window_start, query.window_end) else {
        return Err(format!("query {} has no window", query.query_id));
    };
    Ok(format!("请给出从{start}到{end}，在社交媒体上讨论的发生在{}的事件。", need(query, &query.location, queries::location)?))
}
