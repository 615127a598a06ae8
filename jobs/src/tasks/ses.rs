//! SES, streaming event summarization: its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, need};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Ses,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/ses.txt"),
    tools: &[&tools::DATA_FOLDER, &tools::TOPIC_SEARCH],
    evaluation: Evaluation::Judged {
        dimensions: &["accuracy", "completeness"],
        judge_prompt: include_str!("../../prompts/eval/judge_ses.txt"),
    },
    grounding: Grounding::Topic,
    format: QueryFormat::TopicSummaries,
    bundled: include_bytes!("../../../datasets/some/streaming_event_summary/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, _post: Option<&str>) -> Result<String, String> {
    Ok(format!("请给出话题“{}”的事件发生经过和详细时间、地点、情节。", need(query, &query.topic, queries::topic)?))
}
