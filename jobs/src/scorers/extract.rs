//! Label extraction for MID, UBP, UEA, UCS and MCR.

use some_schemas::{QueryRow, Task};

use super::{Judge, MAX_ANSWER_CHARS, Scored, rubric_and_answer};
use crate::prompts::evaluation_file;
use crate::tasks::{Evaluation, task_def};

/// The failure label: no decision could be read.
pub const ERROR: &str = "error";

/// The label a short text names, in the release's spelling (是/否, the six
/// emotions, MID's three labels), or `error` when the text says so.
pub fn read_label(task: Task, text: &str) -> Option<&'static str> {
    let t = text.trim().trim_matches(|c: char| "\"'“”‘’`*。.!！-: ".contains(c)).to_lowercase();
    if matches!(t.as_str(), "error" | "错误") {
        return Some(ERROR);
    }
    match task_def(task).evaluation {
        Evaluation::Label { read_label, .. } => read_label(&t),
        Evaluation::Judged { .. } => None,
    }
}

/// The extraction prompt as the reference sends it: the rubric as the
/// system message, its last line (which quotes the answer) as the user message.
fn messages(judge: &Judge<'_>, task: Task, query: &QueryRow, answer: &str) -> (String, String) {
    let Evaluation::Label { extraction_prompt, .. } = task_def(task).evaluation else { return (String::new(), String::new()) };
    let template = judge.settings.prompts.get(&evaluation_file(task), extraction_prompt);
    let filled = template.replace("{behavior}", query.action.as_deref().unwrap_or("like"));
    rubric_and_answer(&filled, answer)
}

/// Whether answers over [`MAX_ANSWER_CHARS`] fail: the reference's MID and
/// UEA scripts do not apply the cut-off, the other label tasks' do.
fn length_limited(task: Task) -> bool {
    !matches!(task, Task::Mid | Task::Uea)
}

pub(super) async fn score_label(judge: &Judge<'_>, task: Task, query: &QueryRow, answer: &str) -> Scored {
    let mut scored = Scored::default();
    let extracted = if answer.trim().is_empty() || (length_limited(task) && answer.chars().count() > MAX_ANSWER_CHARS) {
        ERROR.to_string()
    } else if let Some(label) = read_label(task, answer) {
        label.to_string()
    } else {
        let (system, user) = messages(judge, task, query, answer);
        let reply = judge.ask(Some(system), user, &mut scored, |r| read_label(task, r)).await;
        reply.unwrap_or(ERROR).to_string()
    };
    let expected = query.label.as_deref().unwrap_or_default();
    scored.score = if extracted == expected { 100.0 } else { 0.0 };
    scored.completed = extracted != ERROR;
    scored.extracted = Some(extracted);
    scored
}
