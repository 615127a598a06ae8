//! SMQ, social media question answering: its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, need};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Smq,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/smq.txt"),
    tools: &[&tools::USER_SEARCH, &tools::DATA_FOLDER, &tools::TOPIC_SEARCH, &tools::POST_RETRIEVE],
    evaluation: Evaluation::Judged { dimensions: &["accuracy"], judge_prompt: include_str!("../../prompts/eval/judge_smq.txt") },
    grounding: Grounding::UserOrTopic,
    format: QueryFormat::Questions,
    bundled: include_bytes!("../../../datasets/some/social_media_question_answering/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, _post: Option<&str>) -> Result<String, String> {
    need(query, &query.question, queries::question)
}
