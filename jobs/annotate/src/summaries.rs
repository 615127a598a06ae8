//! SES: an event summary per topic, refined over rounds as the paper's
//! annotators did: a draft from the topic's posts, then, each round, the
//! model checks the draft against the posts and names what is inaccurate
//! and what is missing, and the next draft fixes it; a round that finds
//! nothing ends the refinement. Every round is recorded.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use some_jobs::chat::{ChatModel, ModelError, Usage};
use some_jobs::progress::Progress;
use some_jobs::prompts::fill;

use crate::{Call, numbered, reply_object};

const DRAFT: &str = include_str!("../prompts/ses_draft.txt");
const CHECK: &str = include_str!("../prompts/ses_check.txt");
const REVISE: &str = include_str!("../prompts/ses_revise.txt");

/// A topic and its posts in time order.
#[derive(Debug, Clone)]
pub struct Topic {
    pub name: String,
    pub posts: Vec<String>,
}

/// One round: the draft checked and what the check found (none: the
/// check's reply could not be read, which ends the refinement).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    pub draft: String,
    pub inaccuracies: Option<Vec<String>>,
    pub missing: Option<Vec<String>>,
    /// Why the round ended the refinement although it found problems: the
    /// revision changed nothing, or repeated the prompt instead of a summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// A line of the revision prompt that a summary never contains: a revision
/// holding it echoed the prompt.
const PROMPT_ECHO: &str = "核对发现的问题";

/// A topic's summary and how it got there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub topic: String,
    pub rounds: Vec<Round>,
    /// The last draft.
    pub summary: String,
}

/// How many check rounds at most, how many posts the model reads.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub rounds: usize,
    pub shown: usize,
    pub seed: u64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { rounds: 3, shown: 30, seed: 0 }
    }
}

async fn ask(
    model: &dyn ChatModel,
    prompt: String,
    schema: Option<Value>,
    settings: Settings,
    usage: &mut Usage,
) -> Result<String, ModelError> {
    let call = Call { schema: schema.map(|s| ("ses_check", s)), temperature: 0.0, seed: settings.seed, max_tokens: 400 };
    Ok(call.ask(model, prompt, usage).await?.trim().to_string())
}

/// What a check found: (inaccuracies, missing), if its reply can be read.
fn read_check(text: &str) -> Option<(Vec<String>, Vec<String>)> {
    let object = reply_object(text)?;
    let list = |name: &str| -> Option<Vec<String>> {
        Some(
            object
                .get(name)?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect(),
        )
    };
    Some((list("inaccuracies")?, list("missing")?))
}

/// Summarises each topic, refining each draft for at most `settings.rounds` checks.
pub async fn summarise(
    model: &dyn ChatModel,
    topics: &[Topic],
    settings: Settings,
    progress: &dyn Progress,
    usage: &mut Usage,
) -> Result<Vec<Summary>, ModelError> {
    let text = |n: u32| json!({"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": n}});
    let schema = json!({
        "type": "object",
        "properties": {"inaccuracies": text(60), "missing": text(60)},
        "required": ["inaccuracies", "missing"],
        "additionalProperties": false
    });
    progress.phase(&format!("topics summarised by {}", model.name()), Some(topics.len() as u64));
    let mut out = Vec::new();
    for topic in topics {
        let block = numbered(&topic.posts, settings.shown);
        let count = topic.posts.len().min(settings.shown).to_string();
        let prompt = |template: &str, more: &[(&str, &str)]| {
            let topic = [("{topic}", topic.name.as_str()), ("{count}", &count), ("{posts}", &block)];
            fill(template, &[&topic[..], more].concat())
        };
        let mut draft = ask(model, prompt(DRAFT, &[]), None, settings, usage).await?;
        let mut rounds = Vec::new();
        for _ in 0..settings.rounds {
            let reply = ask(model, prompt(CHECK, &[("{draft}", &draft)]), Some(schema.clone()), settings, usage).await?;
            let Some((inaccuracies, missing)) = read_check(&reply) else {
                rounds.push(Round { draft: draft.clone(), inaccuracies: None, missing: None, stopped: None });
                break;
            };
            let clean = inaccuracies.is_empty() && missing.is_empty();
            let problems: Vec<String> =
                inaccuracies.iter().map(|i| format!("不符：{i}")).chain(missing.iter().map(|m| format!("遗漏：{m}"))).collect();
            let mut round = Round { draft: draft.clone(), inaccuracies: Some(inaccuracies), missing: Some(missing), stopped: None };
            if clean {
                rounds.push(round);
                break;
            }
            let revise = prompt(REVISE, &[("{draft}", &draft), ("{problems}", &problems.join("\n"))]);
            let revised = ask(model, revise, None, settings, usage).await?;
            round.stopped = if revised.is_empty() || revised == draft {
                Some("the revision changed nothing".into())
            } else if revised.contains(PROMPT_ECHO) {
                Some("the revision repeated the prompt; the draft is kept".into())
            } else {
                None
            };
            let stop = round.stopped.is_some();
            rounds.push(round);
            if stop {
                break;
            }
            draft = revised;
        }
        out.push(Summary { topic: topic.name.clone(), rounds, summary: draft });
        progress.advance(1);
    }
    progress.finish();
    Ok(out)
}

/// SES's ground truth: `{topic: summary}`.
pub fn ground_truth(summaries: &[Summary]) -> Value {
    Value::Object(summaries.iter().filter(|s| !s.summary.is_empty()).map(|s| (s.topic.clone(), json!(s.summary))).collect())
}

#[cfg(test)]
mod tests {
    use some_jobs::progress::NoProgress;
    use some_jobs::testing::{ScriptedModel, reply};

    use super::*;

    #[test]
    fn a_draft_is_checked_and_revised_until_a_check_finds_nothing() {
        let topics = vec![Topic { name: "地铁开通".into(), posts: vec!["5月1日，北京地铁17号线开通。".into()] }];
        let replies = vec![
            reply("地铁开通了。"),
            reply(r#"{"inaccuracies": [], "missing": ["日期", "线路"]}"#),
            reply("5月1日，北京地铁17号线开通。"),
            reply(r#"{"inaccuracies": [], "missing": []}"#),
        ];
        let model = ScriptedModel::replies("scripted", replies, |_| reply("不该再问"));
        let mut usage = Usage::default();
        let made = futures::executor::block_on(summarise(&model, &topics, Settings::default(), &NoProgress, &mut usage)).unwrap();
        let s = &made[0];
        assert_eq!(s.summary, "5月1日，北京地铁17号线开通。");
        assert_eq!(s.rounds.len(), 2, "the second check found nothing");
        assert_eq!(s.rounds[0].missing.as_deref(), Some(&["日期".to_string(), "线路".to_string()][..]));
        let revise = &model.requests()[2].messages[0].content;
        assert!(revise.contains("遗漏：日期") && revise.contains("地铁开通了。"), "the revision is told what the check found");
        assert_eq!(model.requests().len(), 4);
        assert_eq!(ground_truth(&made), json!({"地铁开通": "5月1日，北京地铁17号线开通。"}));
    }

    #[test]
    fn a_revision_that_echoes_the_prompt_or_changes_nothing_ends_it_keeping_the_draft() {
        let topics = vec![Topic { name: "t".into(), posts: vec!["p".into()] }];
        let found = r#"{"inaccuracies": ["x"], "missing": []}"#;
        for (revision, why) in [("草稿", "changed nothing"), ("草稿\n核对发现的问题：\n不符：x", "repeated the prompt")] {
            let model = ScriptedModel::replies("scripted", vec![reply("草稿"), reply(found), reply(revision)], |_| reply("不该再问"));
            let mut usage = Usage::default();
            let made = futures::executor::block_on(summarise(&model, &topics, Settings::default(), &NoProgress, &mut usage)).unwrap();
            assert_eq!(made[0].summary, "草稿");
            assert_eq!(made[0].rounds.len(), 1);
            assert!(made[0].rounds[0].stopped.as_deref().is_some_and(|s| s.contains(why)), "{:?}", made[0].rounds);
        }
    }

    #[test]
    fn an_unreadable_check_ends_the_refinement_and_is_recorded() {
        let topics = vec![Topic { name: "t".into(), posts: vec!["p".into()] }];
        let model = ScriptedModel::replies("scripted", vec![reply("草稿"), reply("看起来不错")], |_| reply("不该再问"));
        let mut usage = Usage::default();
        let made = futures::executor::block_on(summarise(&model, &topics, Settings::default(), &NoProgress, &mut usage)).unwrap();
        assert_eq!(made[0].rounds, [Round { draft: "草稿".into(), inaccuracies: None, missing: None, stopped: None }]);
        assert_eq!(made[0].summary, "草稿");
    }
}
