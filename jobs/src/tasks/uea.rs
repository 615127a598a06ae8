//! UEA, user emotion analysis: its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, embedded_post, need};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Uea,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/uea.txt"),
    tools: &[&tools::USER_SEARCH, &tools::DATA_FOLDER],
    evaluation: Evaluation::Label {
        labels: super::EMOTIONS,
        extraction_prompt: include_str!("../../prompts/eval/extract_uea.txt"),
        read_label: emotion,
    },
    grounding: Grounding::UserAndPost,
    format: QueryFormat::UserEntries { label: "emotion", text: None },
    bundled: include_bytes!("../../../datasets/some/user_emotion_analysis/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, post: Option<&str>) -> Result<String, String> {
    Ok(format!("请判断ID为{}的用户会对帖子```{}```产生哪种情绪。", need(query, &query.uid, queries::uid)?, embedded_post(query, post)?))
}

/// An emotion named in Chinese (the release's spelling) or English.
fn emotion(text: &str) -> Option<&'static str> {
    match text {
        "积极" | "positive" => Some("积极"),
        "愤怒" | "angry" | "anger" => Some("愤怒"),
        "悲伤" | "sad" | "sadness" => Some("悲伤"),
        "恐惧" | "fear" | "fearful" => Some("恐惧"),
        "惊奇" | "surprise" | "surprised" => Some("惊奇"),
        "无情绪" | "emotionless" | "neutral" => Some("无情绪"),
        _ => None,
    }
}
