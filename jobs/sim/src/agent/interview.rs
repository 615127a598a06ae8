//! Interviews and surveys: asking an agent, as it was at a committed turn,
//! a question about itself (OASIS's interview action, AgentSociety's
//! surveys), without changing anything in the run.
//!
//! The prompt (`jobs/sim/prompts/interview.txt`) gives the agent its
//! persona, its reflections, its own recent posts and the last posts it
//! read with what it did: what its memory holds at that turn. An open
//! question takes a short free answer; a survey question lists its options
//! and the reply must name one ([`parse_choice`]: the option's letter, its
//! text, or `{"answer": ...}`, the form [`Question::schema`] asks
//! structured-output endpoints for). Choices where nothing says otherwise:
//! the 10 latest memory entries are shown, and 5 own posts.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::agent::memory::Memory;
use crate::agent::persona::Persona;
use crate::agent::reflect::history_line;
use crate::error::{Answered, AskError, ReplyError, ask, json_body};
use some_jobs::chat::{ChatModel, JsonSchema};
use some_jobs::prompts::fill;

const PROMPT: &str = include_str!("../../prompts/interview.txt");
const WHAT: &str = "interview";
/// Memory entries shown, the latest.
pub const RECENT_SHOWN: usize = 10;
/// Own posts shown, the latest.
pub const OWN_POSTS_SHOWN: usize = 5;
/// Words an open answer is asked to keep within.
pub const OPEN_ANSWER_WORDS: usize = 80;
/// The reply's length limit: room for the words asked, and a bound on a
/// model that runs on.
pub const MAX_TOKENS: u32 = 200;

/// One question of an interview; with options, a survey question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterviewQuestion {
    #[serde(default)]
    pub id: String,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
}

impl InterviewQuestion {
    /// An open question.
    pub fn open(id: &str, question: &str) -> InterviewQuestion {
        InterviewQuestion { id: id.into(), question: question.into(), options: None }
    }

    fn check(&self) -> Result<(), String> {
        if self.question.trim().is_empty() {
            return Err("the question is empty".into());
        }
        if let Some(options) = &self.options {
            if options.len() < 2 {
                return Err(format!("a survey question needs at least 2 options, it has {}", options.len()));
            }
            if options.len() > 26 {
                return Err(format!("at most 26 options (A-Z), it has {}", options.len()));
            }
            for (i, o) in options.iter().enumerate() {
                if o.trim().is_empty() {
                    return Err(format!("option {} is empty", i + 1));
                }
                if options[..i].iter().any(|p| p.trim().eq_ignore_ascii_case(o.trim())) {
                    return Err(format!("option {o:?} is given twice"));
                }
            }
        }
        Ok(())
    }
}

/// Reads a questions file: one JSON object per line, `{"id", "question",
/// "options"}` (id and options optional; ids default to `q1`, `q2`, ...).
/// Blank lines and lines starting with `#` are skipped. Any bad line is an
/// error naming it, and nothing is read.
pub fn load_questions(path: &Path) -> Result<Vec<InterviewQuestion>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_questions(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// The questions of a questions file's text ([`load_questions`]).
pub fn parse_questions(text: &str) -> Result<Vec<InterviewQuestion>, String> {
    let mut out: Vec<InterviewQuestion> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |e: String| format!("line {}: {e}", i + 1);
        let mut q: InterviewQuestion = serde_json::from_str(line).map_err(|e| at(e.to_string()))?;
        if q.id.is_empty() {
            q.id = format!("q{}", out.len() + 1);
        }
        q.check().map_err(at)?;
        if out.iter().any(|o| o.id == q.id) {
            return Err(at(format!("the question id {:?} is used twice", q.id)));
        }
        out.push(q);
    }
    if out.is_empty() {
        return Err("no question in it".into());
    }
    Ok(out)
}

fn letter(i: usize) -> char {
    (b'A' + i as u8) as char
}

/// The interview prompt for `persona` with `memory`.
pub fn prompt(persona: &Persona, memory: &Memory, q: &InterviewQuestion) -> String {
    let or_none = |lines: Vec<String>| if lines.is_empty() { "(none)".to_string() } else { lines.join("\n") };
    let reflections = or_none(memory.summaries.iter().map(|s| format!("- {s}")).collect());
    let skip = memory.own_posts.len().saturating_sub(OWN_POSTS_SHOWN);
    let own_posts = or_none(memory.own_posts.iter().skip(skip).map(|p| format!("- {p}")).collect());
    let skip = memory.short_term.len().saturating_sub(RECENT_SHOWN);
    let recent = or_none(memory.short_term.iter().skip(skip).enumerate().map(|(i, e)| history_line(i + 1, e)).collect());
    let answer_format = match &q.options {
        None => format!("Reply with your answer only, in the first person and at most {OPEN_ANSWER_WORDS} words.\nYour answer:"),
        Some(options) => {
            let listed: Vec<String> = options.iter().enumerate().map(|(i, o)| format!("{}) {o}", letter(i))).collect();
            format!("Choose one of these answers and reply with its letter only:\n{}", listed.join("\n"))
        }
    };
    fill(
        PROMPT,
        &[
            ("{persona}", &persona.full_text()),
            ("{reflections}", &reflections),
            ("{own_posts}", &own_posts),
            ("{recent}", &recent),
            ("{question}", q.question.trim()),
            ("{answer_format}", &answer_format),
        ],
    )
}

/// The option a survey reply names: `{"answer": OPTION}`, a letter alone
/// (`B`, `B)`, `(b).`), or exactly one option's text within the reply.
pub fn parse_choice(reply: &str, options: &[String]) -> Result<String, ReplyError> {
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(json_body(reply))
        && let Some(answer) = v.get("answer").and_then(|a| a.as_str())
    {
        return options.iter().find(|o| o.trim().eq_ignore_ascii_case(answer.trim())).cloned().ok_or_else(|| ReplyError::BadValue {
            what: WHAT,
            field: "answer".into(),
            cause: format!("{answer:?} is not one of the options"),
        });
    }
    let t = reply.trim().trim_matches(|c: char| c == '(' || c == ')' || c == '.' || c == '*' || c.is_whitespace());
    let bare = t.strip_prefix("Answer:").or_else(|| t.strip_prefix("answer:")).map_or(t, str::trim);
    if bare.chars().count() == 1
        && let Some(i) = bare.chars().next().map(|c| c.to_ascii_uppercase()).and_then(|c| (c as usize).checked_sub('A' as usize))
        && i < options.len()
    {
        return Ok(options[i].clone());
    }
    // "B) Agree" or a sentence naming one option.
    let lower = reply.to_lowercase();
    if let Some(i) = options.iter().enumerate().position(|(i, o)| {
        let head = format!("{}) {}", letter(i), o).to_lowercase();
        lower.trim_start().starts_with(&head)
    }) {
        return Ok(options[i].clone());
    }
    let named: Vec<&String> = options.iter().filter(|o| contains_word(&lower, &o.trim().to_lowercase())).collect();
    match named.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ReplyError::Unreadable { what: WHAT, cause: "it names none of the options".into() }),
        many => Err(ReplyError::Unreadable {
            what: WHAT,
            cause: format!("it names more than one option ({})", many.iter().map(|o| format!("{o:?}")).collect::<Vec<_>>().join(", ")),
        }),
    }
}

/// Whether `needle` occurs in `hay` between non-alphanumeric characters
/// (so "agree" is not found in "disagree").
fn contains_word(hay: &str, needle: &str) -> bool {
    hay.match_indices(needle).any(|(at, _)| {
        let before = hay[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = hay[at + needle.len()..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        before && after
    })
}

/// An open answer: the reply's text, unquoted; an empty reply is none.
pub fn parse_open(reply: &str) -> Result<String, ReplyError> {
    let t = reply.trim().trim_matches('"').trim();
    if t.is_empty() {
        return Err(ReplyError::Unreadable { what: WHAT, cause: "the reply is empty".into() });
    }
    Ok(t.to_string())
}

/// The question as asked: the prompt, and for a survey question the JSON
/// schema of its answer.
pub fn question(persona: &Persona, memory: &Memory, q: &InterviewQuestion) -> crate::error::Question {
    let schema = q.options.as_ref().map(|options| {
        JsonSchema::new(
            "answer",
            serde_json::json!({
                "type": "object", "additionalProperties": false, "required": ["answer"],
                "properties": {"answer": {"type": "string", "enum": options}}
            }),
        )
    });
    crate::error::Question { schema, max_tokens: Some(MAX_TOKENS), ..crate::error::Question::new(prompt(persona, memory, q)) }
}

/// Asks one agent one question; a survey answer is one of the options.
pub async fn ask_agent(
    model: &dyn ChatModel,
    persona: &Persona,
    memory: &Memory,
    q: &InterviewQuestion,
    max_attempts: u32,
    seed: Option<u64>,
) -> Result<Answered<String>, AskError> {
    let asked = question(persona, memory, q);
    match &q.options {
        Some(options) => ask(model, &asked, max_attempts, seed, |r| parse_choice(r, options)).await,
        None => ask(model, &asked, max_attempts, seed, parse_open).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::memory::Entry;
    use crate::agent::test_model::{Scripted, sarah};
    use crate::platform::ids::{AgentId, PostId, Turn};

    fn options(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_survey_reply_is_read_as_one_option_or_refused() {
        let o = options(&["Agree", "Disagree", "Not sure"]);
        for (reply, want) in [
            ("B", "Disagree"),
            ("(a).", "Agree"),
            ("Answer: C", "Not sure"),
            ("B) Disagree", "Disagree"),
            ("I would say I disagree with that.", "Disagree"),
            (r#"{"answer": "not sure"}"#, "Not sure"),
        ] {
            assert_eq!(parse_choice(reply, &o).unwrap(), want, "{reply}");
        }
        assert!(parse_choice("Maybe", &o).is_err());
        assert!(parse_choice("Agree or disagree, who knows", &o).is_err(), "two options named");
        assert!(parse_choice(r#"{"answer": "Perhaps"}"#, &o).is_err());
        assert!(parse_choice("D", &o).is_err(), "no fourth option");
    }

    #[test]
    fn questions_files_are_read_whole_or_refused_at_the_bad_line() {
        let qs = parse_questions(
            "# a survey\n{\"question\": \"How are you?\"}\n\n{\"id\": \"trust\", \"question\": \"Trust news?\", \"options\": [\"Yes\", \"No\"]}\n",
        )
        .unwrap();
        assert_eq!(qs.iter().map(|q| q.id.as_str()).collect::<Vec<_>>(), ["q1", "trust"]);
        assert_eq!(qs[1].options.as_deref().map(<[String]>::len), Some(2));
        let bad = |text: &str| parse_questions(text).unwrap_err();
        assert!(bad("{\"question\": \"a\"}\n{\"question\": \"b\", \"options\": [\"x\"]}").starts_with("line 2: "));
        assert!(bad("{\"question\": \"a\", \"colour\": 1}").contains("unknown field"));
        assert!(bad("{\"id\": \"a\", \"question\": \"x\"}\n{\"id\": \"a\", \"question\": \"y\"}").contains("used twice"));
        assert!(bad("{\"question\": \"a\", \"options\": [\"Yes\", \"yes\"]}").contains("twice"));
        assert!(bad("# nothing\n").contains("no question"));
    }

    #[test]
    fn the_agent_is_asked_with_its_memory_and_a_survey_reply_is_retried_until_it_names_an_option() {
        let mut memory = Memory::default();
        memory.remember_summary("Dog posts are the ones I keep coming back to.".into());
        memory.remember_post("Took the rescue pups for a 10k today.".into());
        memory.remember(Entry {
            turn: Turn(3),
            post: PostId(1),
            author: AgentId(7),
            text: "Clicker training works.".into(),
            summarised: false,
            actions: vec![some_schemas::sim::ActionKind::Like],
            comment: None,
        });
        let q = InterviewQuestion {
            id: "q1".into(),
            question: "Do you trust what you read here?".into(),
            options: Some(options(&["Yes", "No"])),
        };
        let model = Scripted::new(["Hmm, hard to say.", "B"]);
        let got = futures::executor::block_on(ask_agent(&model, &sarah(), &memory, &q, 3, Some(5))).unwrap();
        assert_eq!((got.value.as_str(), got.calls), ("No", 2));
        let first = &model.requests()[0].messages[0].content;
        for part in ["Dog posts are the ones", "rescue pups", "A post by user 7 says: Clicker training works.", "A) Yes\nB) No", "Sarah"] {
            assert!(first.contains(part), "{part} missing from:\n{first}");
        }
        assert!(model.requests()[0].response_format.is_some(), "a survey question asks for its schema");
    }
}
