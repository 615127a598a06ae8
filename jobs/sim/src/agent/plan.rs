//! The planning module: a weekly plan per agent, made by the model from the
//! persona and its Pareto activity level.
//!
//! A plan holds what the paper's planning output holds (Figure 5, Table
//! 11): a daily browse window, posting days and a posting window, like,
//! reblog and comment probabilities, and posts per week. The prompt
//! (`jobs/sim/prompts/plan.txt`) asks for seven fixed lines; [`Plan::parse`] is
//! tolerant of how models actually answer: JSON (also what
//! [`json_schema`] asks structured-output endpoints for), the paper's own
//! wordings ("Browse time: 20:00 - 21:00 (every day)", "Post day: Tuesday,
//! Saturday", "Number of posts times per posting: 3", "Posting time period:
//! day 2-19:00-20:00"), Markdown bullets and bold, percentages or fractions.
//! It is not tolerant of missing content: a reply without a field is a
//! [`ReplyError`] naming it, and a reply with none is "not a plan".
//!
//! Choices where the paper is silent:
//! - "day N" is the N-th weekday, 1 = Monday.
//! - A window "20:00-21:00" covers the hours it touches (hour 20); one
//!   ending before it starts wraps past midnight.
//! - An agent posts once per posting day, in the first hour of its posting
//!   window, `ceil(posts per week / posting days)` posts.
//! - Probabilities become counts per browse: of `n` posts shown, at most
//!   `round(p · n)` are liked (reblogged, commented); the model chooses which.

use std::sync::OnceLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::agent::persona::Persona;
use crate::error::{Answered, AskError, Question, ReplyError, ask, json_body};
use crate::platform::ids::Turn;
use some_jobs::chat::{ChatModel, JsonSchema};
use some_jobs::prompts::fill;

const PROMPT: &str = include_str!("../../prompts/plan.txt");
const WHAT: &str = "plan";

/// Hours of the day, `start` inclusive, `end` exclusive; wraps past midnight when `end <= start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub start: u32,
    pub end: u32,
}

impl Window {
    pub fn contains(self, hour: u32) -> bool {
        if self.start < self.end { (self.start..self.end).contains(&hour) } else { hour >= self.start || hour < self.end }
    }
}

/// One agent's weekly plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub browse: Window,
    /// Weekdays, 0 = Monday, ascending.
    pub post_days: Vec<u32>,
    pub post_window: Window,
    pub like: f64,
    pub reblog: f64,
    pub comment: f64,
    pub posts_per_week: u32,
}

/// Plans one agent, asking again when a reply is not a plan.
pub async fn make(
    model: &dyn ChatModel,
    persona: &Persona,
    activity: f64,
    max_attempts: u32,
    seed: Option<u64>,
) -> Result<Answered<Plan>, AskError> {
    ask(model, &question(persona, activity), max_attempts, seed, Plan::parse).await
}

/// The planning question: the prompt, and [`json_schema`] for endpoints
/// with structured output.
pub fn question(persona: &Persona, activity: f64) -> Question {
    // Asked of every agent at setup (a million in the largest runs): built once.
    static SCHEMA: OnceLock<JsonSchema> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| JsonSchema::new("plan", json_schema()));
    Question { schema: Some(schema.clone()), ..Question::new(prompt(persona, activity)) }
}

/// The planning prompt.
pub fn prompt(persona: &Persona, activity: f64) -> String {
    fill(PROMPT, &[("{activity}", &format!("{activity:.2}")), ("{persona}", &persona.full_text())])
}

/// The JSON schema of a plan, for endpoints with structured output.
pub fn json_schema() -> serde_json::Value {
    let time = serde_json::json!({"type": "string", "pattern": "^[0-2]?[0-9]:[0-5][0-9]-[0-2]?[0-9]:[0-5][0-9]$"});
    let pct = serde_json::json!({"type": "number", "minimum": 0, "maximum": 100});
    let days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["browsing_time", "posting_days", "posting_time", "like_probability", "reblog_probability", "comment_probability", "posts_per_week"],
        "properties": {
            "browsing_time": time, "posting_time": time,
            "posting_days": {"type": "array", "items": {"type": "string", "enum": days}, "minItems": 1, "maxItems": 7},
            "like_probability": pct, "reblog_probability": pct, "comment_probability": pct,
            "posts_per_week": {"type": "integer", "minimum": 0, "maximum": 100}
        }
    })
}

fn time_range() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"(\d{1,2}):(\d{2})\s*(?:-|–|—|~|to)\s*(\d{1,2}):(\d{2})").unwrap_or_else(|e| panic!("{e}")))
}

fn number() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\d+(?:\.\d+)?").unwrap_or_else(|e| panic!("{e}")))
}

const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// Weekdays named in a value: names, "every day"/"daily", "weekdays",
/// "weekends", or "day N" (1 = Monday).
fn days_in(value: &str) -> Vec<u32> {
    let v = value.to_lowercase();
    let mut days: Vec<u32> = Vec::new();
    if v.contains("every day") || v.contains("daily") || v.contains("everyday") {
        days.extend(0..7);
    }
    if v.contains("weekday") {
        days.extend(0..5);
    }
    if v.contains("weekend") {
        days.extend(5..7);
    }
    for word in v.split(|c: char| !c.is_alphanumeric()) {
        if let Some(d) = DAY_NAMES.iter().position(|n| word.starts_with(n) && word.len() >= 3) {
            days.push(d as u32);
        }
    }
    if let Some(rest) = v.split("day ").nth(1).filter(|_| days.is_empty()) {
        let numbers = rest.split(|c: char| !(c.is_ascii_digit() || c == ',' || c == ' ')).next().unwrap_or("");
        days.extend(numbers.split([',', ' ']).filter_map(|n| n.trim().parse::<u32>().ok()).filter(|n| (1..=7).contains(n)).map(|n| n - 1));
    }
    days.sort_unstable();
    days.dedup();
    days
}

fn window_in(value: &str) -> Option<Window> {
    let c = time_range().captures(value)?;
    let n = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    let (sh, sm, eh, em) = (n(1)?, n(2)?, n(3)?, n(4)?);
    if sh > 24 || eh > 24 || sm > 59 || em > 59 {
        return None;
    }
    let start = (sh % 24) * 60 + sm;
    let end = (eh % 24) * 60 + em;
    let start_hour = start / 60;
    let end_hour = end.div_ceil(60) % 24;
    Some(Window { start: start_hour, end: if start_hour == end_hour && end > start { (start_hour + 1) % 24 } else { end_hour } })
}

fn probability_in(value: &str) -> Option<f64> {
    let m = number().find(value)?;
    let x: f64 = m.as_str().parse().ok()?;
    let percent = value[m.end()..].trim_start().starts_with('%') || x > 1.0;
    let p = if percent { x / 100.0 } else { x };
    (0.0..=1.0).contains(&p).then_some(p)
}

/// A JSON plan, flattened into the same "key: value" lines the text form has.
fn json_lines(reply: &str) -> Option<Vec<(String, String)>> {
    let value: serde_json::Value = serde_json::from_str(json_body(reply)).ok()?;
    let obj = value.as_object()?;
    Some(
        obj.iter()
            .map(|(k, v)| {
                let text = match v {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Array(items) => {
                        items.iter().map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_string)).collect::<Vec<_>>().join(", ")
                    }
                    other => other.to_string(),
                };
                // The schema asks for percentages, but small models write
                // fractions (0.64 for 64%): a number read as the text form
                // reads it, above 1 a percentage, else a fraction.
                (k.replace('_', " "), text)
            })
            .collect(),
    )
}

impl Plan {
    /// Reads a plan from a model reply (see the module doc).
    pub fn parse(reply: &str) -> Result<Plan, ReplyError> {
        let lines: Vec<(String, String)> = json_lines(reply).unwrap_or_else(|| {
            reply
                .lines()
                .filter_map(|l| {
                    let l = l.trim().trim_start_matches(['-', '*', '#', ' ']).replace("**", "");
                    let (k, v) = l.split_once([':', '：'])?;
                    Some((k.trim().to_string(), v.trim().to_string()))
                })
                .collect()
        });
        let mut browse = None;
        let (mut post_window, mut post_days) = (None, Vec::new());
        let (mut like, mut reblog, mut comment) = (None, None, None);
        let (mut per_week, mut per_posting) = (None, None);
        let bad = |field: &str, value: &str| ReplyError::BadValue {
            what: WHAT,
            field: field.to_string(),
            cause: format!("cannot be read from {value:?}"),
        };
        for (key, value) in &lines {
            let k = key.to_lowercase();
            let is_post = k.contains("post") && !k.contains("brows");
            if k.contains("brows") && !k.contains("probab") {
                browse = Some(window_in(value).ok_or_else(|| bad("browsing time", value))?);
            } else if k.contains("probab") || k.contains("chance") {
                let p = Some(probability_in(value).ok_or_else(|| bad(key, value))?);
                if k.contains("lik") {
                    like = p;
                } else if ["reblog", "forward", "repost", "share", "boost"].iter().any(|w| k.contains(w)) {
                    reblog = p;
                } else if k.contains("comment") {
                    comment = p;
                }
            } else if is_post && k.contains("per posting") {
                per_posting =
                    Some(number().find(value).and_then(|m| m.as_str().parse::<f64>().ok()).ok_or_else(|| bad(key, value))?.round() as u32);
            } else if is_post && (k.contains("frequency") || k.contains("week") || k.contains("number") || k.contains("count")) {
                per_week =
                    Some(number().find(value).and_then(|m| m.as_str().parse::<f64>().ok()).ok_or_else(|| bad(key, value))?.round() as u32);
            } else if is_post && k.contains("day") && !k.contains("time") {
                post_days = days_in(value);
            } else if is_post && (k.contains("time") || k.contains("period") || k.contains("window")) {
                post_window = Some(window_in(value).ok_or_else(|| bad("posting time", value))?);
                if post_days.is_empty() {
                    post_days = days_in(&time_range().replace(value, ""));
                }
            }
        }
        let found = [
            browse.is_some(),
            post_window.is_some(),
            like.is_some(),
            reblog.is_some(),
            comment.is_some(),
            per_week.or(per_posting).is_some(),
        ];
        if !found.contains(&true) {
            return Err(ReplyError::Unreadable { what: WHAT, cause: "it names none of the plan's fields".into() });
        }
        let missing = |field: &str| ReplyError::MissingField { what: WHAT, field: field.to_string() };
        if post_days.is_empty() {
            return Err(missing("posting days"));
        }
        let posts_per_week = match (per_week, per_posting) {
            (Some(w), _) => w,
            (None, Some(p)) => p * post_days.len() as u32,
            (None, None) => return Err(missing("posts per week")),
        };
        Ok(Plan {
            browse: browse.ok_or_else(|| missing("browsing time"))?,
            post_days,
            post_window: post_window.ok_or_else(|| missing("posting time"))?,
            like: like.ok_or_else(|| missing("like probability"))?,
            reblog: reblog.ok_or_else(|| missing("reblog probability"))?,
            comment: comment.ok_or_else(|| missing("comment probability"))?,
            posts_per_week,
        })
    }

    /// A plan that never browses or posts by itself and reacts to nothing:
    /// the plan of an agent that acts only when told to (an initial agent
    /// writing its seed posts).
    pub fn idle() -> Plan {
        let never = Window { start: 24, end: 0 };
        Plan { browse: never, post_days: Vec::new(), post_window: never, like: 0.0, reblog: 0.0, comment: 0.0, posts_per_week: 0 }
    }

    pub fn browsing_at(&self, turn: Turn) -> bool {
        self.browse.contains(turn.hour())
    }

    /// Whether the agent posts in this turn: a posting day, at the window's first hour.
    pub fn posting_at(&self, turn: Turn) -> bool {
        self.posts_per_week > 0 && self.post_days.contains(&turn.weekday()) && turn.hour() == self.post_window.start
    }

    /// Posts made in one posting turn.
    pub fn posts_per_posting(&self) -> u32 {
        if self.post_days.is_empty() { 0 } else { self.posts_per_week.div_ceil(self.post_days.len() as u32) }
    }

    /// At most how many of `shown` posts get each action: (likes, reblogs, comments).
    pub fn quotas(&self, shown: usize) -> (usize, usize, usize) {
        let q = |p: f64| (p * shown as f64).round() as usize;
        (q(self.like), q(self.reblog), q(self.comment))
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
