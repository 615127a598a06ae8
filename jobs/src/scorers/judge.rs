//! Judge scoring for RED, SES and SMQ.

use std::collections::BTreeMap;

use some_schemas::{QueryRow, Task};

use super::{Judge, MAX_ANSWER_CHARS, Scored, rubric_and_answer};
use crate::prompts::evaluation_file;
use crate::tasks::{Evaluation, python_json, task_def};

/// The dimensions a judged task is rated on (none for label tasks).
pub fn dimensions(task: Task) -> &'static [&'static str] {
    match task_def(task).evaluation {
        Evaluation::Judged { dimensions, .. } => dimensions,
        Evaluation::Label { .. } => &[],
    }
}

fn name_forms(dimension: &str) -> [&'static str; 2] {
    match dimension {
        "accuracy" => ["accuracy", "准确性"],
        "completeness" => ["completeness", "完整性"],
        _ => ["relevance", "相关性"],
    }
}

/// The first 0-5 digit after `name` and a colon.
fn rating_after(text: &str, name: &str) -> Option<u8> {
    let at = text.find(name)? + name.len();
    let rest = text[at..].trim_start_matches([':', '：', ' ', '*']);
    rest.chars().next().and_then(|c| c.to_digit(10)).filter(|d| *d <= 5).map(|d| d as u8)
}

/// Reads the judge's ratings: `Accuracy: 4, Completeness: 3` (or the
/// reference's Chinese form); for a one-dimension task a bare digit too.
pub fn read_ratings(task: Task, reply: &str) -> Option<BTreeMap<String, u8>> {
    let lower = reply.to_lowercase();
    let dims = dimensions(task);
    let mut out = BTreeMap::new();
    for d in dims {
        let [en, zh] = name_forms(d);
        let rating = rating_after(&lower, en).or_else(|| rating_after(&lower, zh));
        let rating = match rating {
            Some(r) => r,
            None if dims.len() == 1 => {
                let t = lower.trim().trim_matches(|c: char| !c.is_ascii_digit());
                t.parse::<u8>().ok().filter(|r| *r <= 5)?
            }
            None => return None,
        };
        out.insert(d.to_string(), rating);
    }
    Some(out)
}

fn reference_text(task: Task, query: &QueryRow) -> String {
    let reference = query.reference.clone().unwrap_or_default();
    if task == Task::Red {
        // The reference embeds the events as `json.dumps(events, ensure_ascii=False)`.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&reference) {
            return python_json(&v);
        }
    }
    reference
}

/// The rubric (with the reference answer) as the system message, the
/// answer as the user message, as the reference sends them.
fn messages(judge: &Judge<'_>, task: Task, query: &QueryRow, answer: &str) -> (String, String) {
    let builtin = match task_def(task).evaluation {
        Evaluation::Judged { judge_prompt, .. } => judge_prompt,
        Evaluation::Label { extraction_prompt, .. } => extraction_prompt,
    };
    let template = judge.settings.prompts.get(&evaluation_file(task), builtin);
    rubric_and_answer(&template.replace("{ground truth}", &reference_text(task, query)), answer)
}

pub(super) async fn score_judged(judge: &Judge<'_>, task: Task, query: &QueryRow, question: &str, answer: &str) -> Scored {
    let mut scored = Scored::default();
    let zero = || dimensions(task).iter().map(|d| (d.to_string(), 0u8)).collect::<BTreeMap<_, _>>();
    if answer.trim().is_empty() || answer.chars().count() > MAX_ANSWER_CHARS {
        scored.dimensions = Some(zero());
        scored.completed = false;
        return scored;
    }
    let (system, user) = messages(judge, task, query, answer);
    let Some(ratings) = judge.ask(Some(system), user, &mut scored, |r| read_ratings(task, r)).await else {
        scored.dimensions = None;
        return scored;
    };
    let mean = ratings.values().map(|r| f64::from(*r)).sum::<f64>() / ratings.len().max(1) as f64;
    scored.score = mean * 20.0;
    scored.dimensions = Some(ratings);
    scored.completed = if scored.score > 0.0 {
        true
    } else {
        let system = judge.settings.prompts.attempt().trim_end().replace("{question}", question);
        let verdict = judge
            .ask(Some(system), format!("给出的回答为“{answer}”"), &mut scored, |r| {
                match r.trim_matches(|c: char| "\"“”。. ".contains(c)) {
                    "正确" => Some(true),
                    "错误" => Some(false),
                    _ => None,
                }
            })
            .await;
        verdict.unwrap_or(false)
    };
    scored
}
