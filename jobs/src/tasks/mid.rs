//! MID, misinformation detection (in English, as the release): its prompt, tools, user message and scoring.

use some_schemas::{QueryRow, Task, queries};

use super::{Evaluation, Grounding, QueryFormat, TaskDef, need};
use crate::tools;

pub static DEF: TaskDef = TaskDef {
    task: Task::Mid,
    version: 1,
    system_prompt: include_str!("../../prompts/tasks/mid.txt"),
    tools: &[&tools::KNOWLEDGE_RETRIEVE],
    evaluation: Evaluation::Label {
        labels: super::MID_LABELS,
        extraction_prompt: include_str!("../../prompts/eval/extract_mid.txt"),
        read_label: mid_label,
    },
    grounding: Grounding::KnowledgeBase,
    format: QueryFormat::Claims,
    bundled: include_bytes!("../../../datasets/some/misinformation_detection/ground_truth.json.zst"),
    user_message,
};

fn user_message(query: &QueryRow, _post: Option<&str>) -> Result<String, String> {
    Ok(format!("Please determine if the twitter '{}' is true.", need(query, &query.claim, queries::claim)?))
}

/// MID's six verdicts and the three labels they count as (the reference's
/// `class_projection`).
fn mid_label(verdict: &str) -> Option<&'static str> {
    match verdict {
        "pants-fire" | "false" => Some("false"),
        "barely-true" | "half-true" | "half" => Some("half"),
        "mostly-true" | "true" => Some("true"),
        _ => None,
    }
}
