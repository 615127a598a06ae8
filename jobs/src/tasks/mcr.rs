//! MCR, media content recommendation: its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, YES_NO, embedded_post, need, yes_no};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Mcr,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/mcr.txt"),
    tools: &[&tools::USER_SEARCH, &tools::DATA_FOLDER],
    evaluation: Evaluation::Label {
        labels: YES_NO,
        extraction_prompt: include_str!("../../prompts/eval/extract_mcr.txt"),
        read_label: yes_no,
    },
    grounding: Grounding::UserAndPost,
    format: QueryFormat::UserEntries { label: "label", text: None },
    bundled: include_bytes!("../../../datasets/some/media_content_recommend/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, post: Option<&str>) -> Result<String, String> {
    Ok(format!("请判断ID为{}的用户是否对帖子```{}```感兴趣。", need(query, &query.uid, queries::uid)?, embedded_post(query, post)?))
}
