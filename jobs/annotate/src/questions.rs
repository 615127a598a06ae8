//! SMQ: question-answer pairs from a user's or a topic's posts.
//!
//! The model writes a few questions about each subject's posts (in the
//! release's phrasing: `用户ID为…的用户…` or `在话题“…”中，…`), then two
//! filters drop what the paper's annotators dropped: a question the model,
//! shown the posts, calls vague or not answerable from them; and a question
//! the model answers the same way with no posts at all (it needs no social
//! media data). Topic and user questions are then balanced.
//! [`check_supported`] asks a judge whether each kept answer is what the
//! posts say: on a synthetic world, a check against the world's facts.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use some_jobs::chat::{ChatModel, ModelError, Usage};
use some_jobs::progress::Progress;
use some_jobs::prompts::fill;

use crate::{Call, numbered, reply_object};

const GENERATE: &str = include_str!("../prompts/smq_generate.txt");
const SPECIFIC: &str = include_str!("../prompts/smq_specific.txt");
const NO_DATA: &str = include_str!("../prompts/smq_no_data.txt");
const SAME: &str = include_str!("../prompts/smq_same.txt");
const SUPPORTED: &str = include_str!("../prompts/smq_supported.txt");

/// Whom a question is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    User(String),
    Topic(String),
}

impl Subject {
    /// How the release's questions begin.
    pub fn prefix(&self) -> String {
        match self {
            Subject::User(uid) => format!("用户ID为{uid}的用户"),
            Subject::Topic(topic) => format!("在话题“{topic}”中，"),
        }
    }

    fn described(&self) -> String {
        match self {
            Subject::User(uid) => format!("ID为{uid}的用户"),
            Subject::Topic(topic) => format!("话题“{topic}”"),
        }
    }

    pub fn is_user(&self) -> bool {
        matches!(self, Subject::User(_))
    }
}

/// A subject and the posts questions are made from.
#[derive(Debug, Clone)]
pub struct Source {
    pub subject: Subject,
    pub posts: Vec<String>,
}

/// Subjects with fewer posts are not asked about.
pub const MIN_POSTS: usize = 5;

/// `n` of the subjects with at least [`MIN_POSTS`] posts, at random for `seed`.
pub fn sample_subjects(mut posts: BTreeMap<String, Vec<String>>, n: usize, seed: u64, subject: fn(String) -> Subject) -> Vec<Source> {
    let mut keys: Vec<String> = posts.iter().filter(|(_, p)| p.len() >= MIN_POSTS).map(|(k, _)| k.clone()).collect();
    keys.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
    keys.into_iter().take(n).map(|k| Source { posts: posts.remove(&k).unwrap_or_default(), subject: subject(k) }).collect()
}

/// What the filters made of a pair.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Kept,
    /// The model, shown the posts, called it vague or not answerable from them.
    Vague,
    /// Answered alike with no posts (the answer given without them).
    NeedsNoData(String),
    /// Dropped to balance user and topic questions.
    Unbalanced,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// Index of its source.
    pub source: usize,
    pub question: String,
    pub answer: String,
    pub verdict: Verdict,
}

/// How many questions per subject and how many posts the model sees.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub per_subject: usize,
    pub shown: usize,
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { per_subject: 2, shown: 12, seed: 0 }
    }
}

/// One call under a JSON schema; the reply's object, if it parses.
async fn ask_json(
    model: &dyn ChatModel,
    prompt: String,
    schema: Value,
    seed: u64,
    max_tokens: u32,
    usage: &mut Usage,
) -> Result<Option<Map<String, Value>>, ModelError> {
    let call = Call { schema: Some(("smq", schema)), temperature: 0.0, seed, max_tokens };
    Ok(reply_object(&call.ask(model, prompt, usage).await?))
}

async fn ask_bool(model: &dyn ChatModel, prompt: String, field: &str, seed: u64, usage: &mut Usage) -> Result<Option<bool>, ModelError> {
    let schema = json!({"type": "object", "properties": {field: {"type": "boolean"}}, "required": [field], "additionalProperties": false});
    Ok(ask_json(model, prompt, schema, seed, 20, usage).await?.and_then(|o| o.get(field).and_then(Value::as_bool)))
}

/// The question as the release phrases it: the model's question after the
/// subject's prefix (the prefix, `该用户` or `该话题` it wrote itself
/// dropped), cut after its question mark; none if what is left is not a
/// question of a few characters.
fn phrase(subject: &Subject, question: &str) -> Option<String> {
    let prefix = subject.prefix();
    let body = question.trim();
    let body = body.strip_prefix(prefix.as_str()).or_else(|| body.strip_prefix(prefix.trim_end_matches('，'))).unwrap_or(body);
    let body = ["该用户", "这位用户", "该话题中", "该话题", "，", ","].iter().fold(body, |b, p| b.strip_prefix(p).unwrap_or(b)).trim();
    let end = body.find(['？', '?'])?;
    let body = &body[..end + body[end..].chars().next()?.len_utf8()];
    (body.chars().count() >= 5).then(|| format!("{prefix}{body}"))
}

/// Questions for every source, each through both filters.
pub async fn generate(
    model: &dyn ChatModel,
    sources: &[Source],
    settings: Settings,
    progress: &dyn Progress,
    usage: &mut Usage,
) -> Result<(Vec<Pair>, Unusable), ModelError> {
    progress.phase(&format!("subjects questioned by {}", model.name()), Some(sources.len() as u64));
    let text = |n: u32| json!({"type": "string", "maxLength": n});
    let schema = json!({
        "type": "object",
        "properties": {"pairs": {"type": "array", "maxItems": settings.per_subject, "items": {
            "type": "object", "properties": {"question": text(60), "answer": text(60)}, "required": ["question", "answer"], "additionalProperties": false}}},
        "required": ["pairs"],
        "additionalProperties": false
    });
    let mut pairs = Vec::new();
    let mut unusable = Unusable::default();
    let example = |unusable: &mut Unusable, text: String| {
        if unusable.examples.len() < 3 {
            unusable.examples.push(text.chars().take(160).collect());
        }
    };
    for (i, source) in sources.iter().enumerate() {
        let block = numbered(&source.posts, settings.shown);
        let prompt = fill(
            GENERATE,
            &[
                ("{subject}", &source.subject.described()),
                ("{count}", &source.posts.len().min(settings.shown).to_string()),
                ("{posts}", &block),
                ("{n}", &settings.per_subject.to_string()),
                ("{prefix}", &source.subject.prefix()),
            ],
        );
        let made = ask_json(model, prompt, schema.clone(), settings.seed, 400, usage).await?;
        let Some(list) = made.as_ref().and_then(|o| o.get("pairs")).and_then(Value::as_array) else {
            unusable.unreadable += 1;
            example(&mut unusable, format!("{made:?}"));
            progress.advance(1);
            continue;
        };
        for p in list.iter().take(settings.per_subject) {
            let (Some(q), Some(a)) = (p.get("question").and_then(Value::as_str), p.get("answer").and_then(Value::as_str)) else { continue };
            let answer = a.trim().to_string();
            let Some(question) = phrase(&source.subject, q).filter(|q| !answer.is_empty() && !q.ends_with(answer.as_str())) else {
                unusable.malformed += 1;
                example(&mut unusable, format!("question {q:?}, answer {answer:?}"));
                continue;
            };
            if pairs.iter().any(|p: &Pair| p.question == question) {
                continue;
            }
            let specific = fill(SPECIFIC, &[("{posts}", &block), ("{question}", &question)]);
            let verdict = if ask_bool(model, specific, "specific", settings.seed, usage).await? != Some(true) {
                Verdict::Vague
            } else {
                let call = Call { schema: None, temperature: 0.0, seed: settings.seed, max_tokens: 60 };
                let blind = call.ask(model, NO_DATA.replace("{question}", &question), usage).await?.trim().to_string();
                let same = fill(SAME, &[("{question}", &question), ("{first}", &answer), ("{second}", &blind)]);
                if ask_bool(model, same, "same", settings.seed, usage).await? == Some(true) {
                    Verdict::NeedsNoData(blind)
                } else {
                    Verdict::Kept
                }
            };
            pairs.push(Pair { source: i, question, answer, verdict });
        }
        progress.advance(1);
    }
    progress.finish();
    Ok((pairs, unusable))
}

/// Model output that gave no question.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unusable {
    /// Replies with no list of pairs in them.
    pub unreadable: usize,
    /// Pairs whose question was no question (too short, no question mark,
    /// the answer in it) or had no answer.
    pub malformed: usize,
    /// The first few of either, as the model wrote them.
    pub examples: Vec<String>,
}

/// Keeps as many user questions as topic questions (at most `per_kind`
/// of each where given), dropping at random for `seed`.
pub fn balance(pairs: &mut [Pair], sources: &[Source], per_kind: Option<usize>, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let kept = |pairs: &[Pair], user: bool| -> Vec<usize> {
        (0..pairs.len()).filter(|&i| pairs[i].verdict == Verdict::Kept && sources[pairs[i].source].subject.is_user() == user).collect()
    };
    let (users, topics) = (kept(pairs, true), kept(pairs, false));
    let n = per_kind.unwrap_or(usize::MAX).min(users.len()).min(topics.len());
    for mut of in [users, topics] {
        of.shuffle(&mut rng);
        for &i in &of[n..] {
            pairs[i].verdict = Verdict::Unbalanced;
        }
    }
}

/// Whether a judge, shown the subject's posts, finds each pair's answer
/// right (none where its reply could not be read): every pair is checked,
/// kept or dropped, so the figures say what each filter let through.
pub async fn check_supported(
    judge: &dyn ChatModel,
    pairs: &[Pair],
    sources: &[Source],
    settings: Settings,
    usage: &mut Usage,
) -> Result<Vec<Option<bool>>, ModelError> {
    let mut out = Vec::new();
    for p in pairs {
        let posts = numbered(&sources[p.source].posts, settings.shown);
        let prompt = fill(SUPPORTED, &[("{posts}", &posts), ("{question}", &p.question), ("{answer}", &p.answer)]);
        out.push(ask_bool(judge, prompt, "supported", settings.seed, usage).await?);
    }
    Ok(out)
}

/// Supported answers per verdict: (verdict's name, supported, checked).
pub fn supported_by_verdict(pairs: &[Pair], supported: &[Option<bool>]) -> Vec<(&'static str, usize, usize)> {
    let name = |v: &Verdict| match v {
        Verdict::Kept => "kept",
        Verdict::Vague => "vague",
        Verdict::NeedsNoData(_) => "answered alike without the posts",
        Verdict::Unbalanced => "dropped to balance",
    };
    let mut out: Vec<(&'static str, usize, usize)> = Vec::new();
    for (p, s) in pairs.iter().zip(supported) {
        let n = name(&p.verdict);
        let i = out.iter().position(|(k, _, _)| *k == n).unwrap_or_else(|| {
            out.push((n, 0, 0));
            out.len() - 1
        });
        out[i].1 += usize::from(*s == Some(true));
        out[i].2 += 1;
    }
    out
}

/// SMQ's ground truth: `{question: answer}` of the kept pairs.
pub fn ground_truth(pairs: &[Pair]) -> Value {
    Value::Object(pairs.iter().filter(|p| p.verdict == Verdict::Kept).map(|p| (p.question.clone(), json!(p.answer))).collect())
}

#[cfg(test)]
mod tests {
    use some_jobs::progress::NoProgress;
    use some_jobs::testing::{ScriptedModel, reply};

    use super::*;

    #[test]
    fn questions_take_the_release_s_phrasing() {
        let user = Subject::User("42".into());
        let asked = |q: &str| phrase(&user, q);
        assert_eq!(asked("最常提到哪个城市？").as_deref(), Some("用户ID为42的用户最常提到哪个城市？"));
        assert_eq!(asked("用户ID为42的用户最常提到哪个城市？").as_deref(), Some("用户ID为42的用户最常提到哪个城市？"));
        assert_eq!(
            asked("该用户最常提到哪个城市？”,").as_deref(),
            Some("用户ID为42的用户最常提到哪个城市？"),
            "cut after the question mark"
        );
        let topic = Subject::Topic("火锅".into());
        assert_eq!(phrase(&topic, "在话题“火锅”中哪家店排队最久？").as_deref(), Some("在话题“火锅”中，哪家店排队最久？"));
        assert_eq!(asked("用户ID为42的用户"), None, "no question left");
        assert_eq!(asked("最喜欢什么"), None, "no question mark");
        assert_eq!(asked("谁？"), None, "too short");
        let read_back = some_jobs::queries::smq_subject(&asked("最常提到哪个城市？").unwrap());
        assert_eq!(read_back, (Some("42".into()), None), "read back as the reader reads the release");
    }

    #[test]
    fn the_filters_drop_vague_questions_and_those_answered_without_the_posts() {
        let sources = vec![
            Source { subject: Subject::User("1".into()), posts: vec!["今天在成都吃火锅".into()] },
            Source { subject: Subject::Topic("火锅".into()), posts: vec!["重庆火锅店排队三小时".into()] },
        ];
        let pairs = r#"{"pairs": [{"question": "在哪个城市吃火锅？", "answer": "成都"}, {"question": "心情如何？", "answer": "好"}, {"question": "吃了什么？", "answer": "火锅"}]}"#;
        let replies = vec![
            reply(pairs),
            reply(r#"{"specific": true}"#),  // 1: specific,
            reply("北京"),                   //    asked blind: 北京,
            reply(r#"{"same": false}"#),     //    not the same: kept
            reply(r#"{"specific": false}"#), // 2: vague
            reply(r#"{"specific": true}"#),  // 3: specific,
            reply("火锅"),                   //    asked blind: 火锅,
            reply(r#"{"same": true}"#),      //    the same: needs no data
            reply(r#"{"pairs": [{"question": "哪家店排队最久？", "answer": "重庆火锅店"}]}"#),
            reply(r#"{"specific": true}"#),
            reply("不知道"),
            reply(r#"{"same": false}"#),
        ];
        let model = ScriptedModel::replies("scripted", replies, |_| reply("{}"));
        let mut usage = Usage::default();
        let settings = Settings { per_subject: 3, ..Settings::default() };
        let (mut pairs, unusable) = futures::executor::block_on(generate(&model, &sources, settings, &NoProgress, &mut usage)).unwrap();
        assert_eq!(unusable, Unusable::default());
        let verdicts: Vec<&Verdict> = pairs.iter().map(|p| &p.verdict).collect();
        assert_eq!(verdicts, [&Verdict::Kept, &Verdict::Vague, &Verdict::NeedsNoData("火锅".into()), &Verdict::Kept]);
        assert!(
            model.requests()[2].response_format.is_none()
                && model.requests()[2].messages[0].content.contains("用户ID为1的用户在哪个城市吃火锅？")
        );
        assert!(!model.requests()[2].messages[0].content.contains("成都"), "asked with no posts");
        balance(&mut pairs, &sources, Some(1), 0);
        assert_eq!(
            ground_truth(&pairs),
            json!({"用户ID为1的用户在哪个城市吃火锅？": "成都", "在话题“火锅”中，哪家店排队最久？": "重庆火锅店"})
        );
    }

    #[test]
    fn balancing_keeps_as_many_user_as_topic_questions() {
        let sources = vec![
            Source { subject: Subject::User("1".into()), posts: vec![] },
            Source { subject: Subject::Topic("t".into()), posts: vec![] },
        ];
        let pair = |source: usize| Pair { source, question: format!("q{source}"), answer: "a".into(), verdict: Verdict::Kept };
        let mut pairs = vec![pair(0), pair(0), pair(0), pair(1)];
        balance(&mut pairs, &sources, None, 5);
        assert_eq!(pairs.iter().filter(|p| p.verdict == Verdict::Kept).count(), 2);
        assert_eq!(pairs.iter().filter(|p| p.verdict == Verdict::Unbalanced).count(), 2);
    }
}
