//! UBP, user behavior prediction: its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, UBP_ACTIONS, YES_NO, embedded_post, need, yes_no};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Ubp,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/ubp.txt"),
    tools: &[&tools::USER_SEARCH, &tools::DATA_FOLDER],
    evaluation: Evaluation::Label {
        labels: YES_NO,
        extraction_prompt: include_str!("../../prompts/eval/extract_ubp.txt"),
        read_label: yes_no,
    },
    grounding: Grounding::UserAndPost,
    format: QueryFormat::UserActions { actions: UBP_ACTIONS },
    bundled: include_bytes!("../../../datasets/some/user_behavior_prediction/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, post: Option<&str>) -> Result<String, String> {
    let action = query.action.as_deref().and_then(action_word).ok_or_else(|| format!("query {} has no action", query.query_id))?;
    Ok(format!("请判断ID为{}的用户是否对帖子```{}```进行{action}。", need(query, &query.uid, queries::uid)?, embedded_post(query, post)?))
}

/// UBP's action words, as the reference's prompt and query say them.
pub(super) fn action_word(action: &str) -> Option<&'static str> {
    match action {
        "like" => Some("点赞"),
        "comment" => Some("评论"),
        "repost" => Some("转发"),
        _ => None,
    }
}
