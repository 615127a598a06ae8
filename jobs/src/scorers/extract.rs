//! Label extraction for MID, UBP, UEA, UCS and MCR.

use some_schemas::{QueryRow, Task};

use super::{Judge, MAX_ANSWER_CHARS, Scored};

/// The failure label: no decision could be read.
pub const ERROR: &str = "error";

const MCR_PROMPT: &str = include_str!("../../prompts/eval/extract_mcr.txt");
const UCS_PROMPT: &str = include_str!("../../prompts/eval/extract_ucs.txt");
const UBP_PROMPT: &str = include_str!("../../prompts/eval/extract_ubp.txt");
const MID_PROMPT: &str = include_str!("../../prompts/eval/extract_mid.txt");
const UEA_PROMPT: &str = include_str!("../../prompts/eval/extract_uea.txt");

/// MID's six verdicts and the three labels they count as (the reference's
/// `class_projection`).
pub fn mid_label(verdict: &str) -> Option<&'static str> {
    match verdict {
        "pants-fire" | "false" => Some("false"),
        "barely-true" | "half-true" | "half" => Some("half"),
        "mostly-true" | "true" => Some("true"),
        _ => None,
    }
}

/// The label a short text names, in the release's spelling (是/否, the six
/// emotions, MID's three labels), or `error` when the text says so.
pub fn read_label(task: Task, text: &str) -> Option<&'static str> {
    let t = text.trim().trim_matches(|c: char| "\"'“”‘’`*。.!！-: ".contains(c)).to_lowercase();
    if matches!(t.as_str(), "error" | "错误") {
        return Some(ERROR);
    }
    match task {
        Task::Mid => mid_label(&t),
        Task::Uea => match t.as_str() {
            "积极" | "positive" => Some("积极"),
            "愤怒" | "angry" | "anger" => Some("愤怒"),
            "悲伤" | "sad" | "sadness" => Some("悲伤"),
            "恐惧" | "fear" | "fearful" => Some("恐惧"),
            "惊奇" | "surprise" | "surprised" => Some("惊奇"),
            "无情绪" | "emotionless" | "neutral" => Some("无情绪"),
            _ => None,
        },
        _ => match t.as_str() {
            "是" | "yes" => Some("是"),
            "否" | "no" => Some("否"),
            _ => None,
        },
    }
}

fn prompt(task: Task, query: &QueryRow, answer: &str) -> String {
    let template = match task {
        Task::Mcr => MCR_PROMPT,
        Task::Ucs => UCS_PROMPT,
        Task::Ubp => UBP_PROMPT,
        Task::Mid => MID_PROMPT,
        _ => UEA_PROMPT,
    };
    template.trim_end().replace("{behavior}", query.action.as_deref().unwrap_or("like")).replace("{raw answer}", answer)
}

pub(super) async fn score_label(judge: &Judge<'_>, task: Task, query: &QueryRow, answer: &str) -> Scored {
    let mut scored = Scored::default();
    let extracted = if answer.trim().is_empty() || answer.chars().count() > MAX_ANSWER_CHARS {
        ERROR.to_string()
    } else if let Some(label) = read_label(task, answer) {
        label.to_string()
    } else {
        let reply = judge.ask(None, prompt(task, query, answer), &mut scored, |r| read_label(task, r)).await;
        reply.unwrap_or(ERROR).to_string()
    };
    let expected = query.label.as_deref().unwrap_or_default();
    scored.score = if extracted == expected { 100.0 } else { 0.0 };
    scored.completed = extracted != ERROR;
    scored.extracted = Some(extracted);
    scored
}
