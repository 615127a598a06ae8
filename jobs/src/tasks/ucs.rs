//! UCS, user comment simulation: its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, YES_NO, embedded_post, need, yes_no};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Ucs,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/ucs.txt"),
    tools: &[&tools::USER_SEARCH, &tools::DATA_FOLDER],
    evaluation: Evaluation::Label {
        labels: YES_NO,
        extraction_prompt: include_str!("../../prompts/eval/extract_ucs.txt"),
        read_label: yes_no,
    },
    grounding: Grounding::UserAndPost,
    format: QueryFormat::UserEntries { label: "label", text: Some("comment") },
    bundled: include_bytes!("../../../datasets/some/user_comment_silmulation/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, post: Option<&str>) -> Result<String, String> {
    Ok(format!(
        "请判断帖子```{}```下的评论“{}”是否是由ID为{}的用户发表。",
        embedded_post(query, post)?,
        need(query, &query.comment, queries::comment)?,
        need(query, &query.uid, queries::uid)?
    ))
}
