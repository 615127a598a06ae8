//! UEA: each comment's emotion, by several rounds of the model (three, as
//! the paper did) and a majority vote; a comment without a majority is a
//! tie, kept as such and left out of the queries. The paper then thinned
//! the two largest classes (positive and emotionless, to 800 each): that is
//! [`rebalance`], with the caps as a setting.
//!
//! [`world_comments`] gives comments whose emotion is known: the synthetic
//! world writes every emotional post from one of its reaction templates
//! (situations, never an emotion word), so a post that fills a template
//! conveys that template's emotion.

use std::collections::BTreeMap;

use rand::SeedableRng;
use rand::seq::index::sample;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use some_jobs::chat::{ChatModel, ModelError, Usage};
use some_jobs::synth::signals::REACTIONS;
use some_jobs::tasks::EMOTIONS;

use crate::review::Item;
use crate::{Call, prompt_id, reply_object};

const PROMPT: &str = include_str!("../prompts/uea_emotion.txt");

/// A comment to label: who wrote it, on which post, and, where known, its
/// true emotion.
#[derive(Debug, Clone, PartialEq)]
pub struct Comment {
    pub uid: String,
    pub post_id: String,
    pub text: String,
    pub truth: Option<&'static str>,
}

/// A comment with each round's vote (none where the reply named no
/// emotion) and the majority, if there is one.
#[derive(Debug, Clone, PartialEq)]
pub struct Labelled {
    pub comment: Comment,
    pub votes: Vec<Option<&'static str>>,
    pub label: Option<&'static str>,
}

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {"emotion": {"type": "string", "enum": EMOTIONS}},
        "required": ["emotion"],
        "additionalProperties": false
    })
}

/// The emotion a reply names: its JSON `emotion`, else the one label its
/// text contains (none if it contains several or none).
fn read_vote(text: &str) -> Option<&'static str> {
    let from_json = reply_object(text).and_then(|v| v.get("emotion").and_then(Value::as_str).map(str::to_string));
    if let Some(named) = from_json {
        return EMOTIONS.iter().copied().find(|e| *e == named.trim());
    }
    // 无情绪 contains no other label, and no label contains another.
    let named: Vec<&'static str> = EMOTIONS.iter().copied().filter(|e| text.contains(e)).collect();
    (named.len() == 1).then(|| named[0])
}

/// The label more than half of the votes name.
pub fn majority(votes: &[Option<&'static str>]) -> Option<&'static str> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for v in votes.iter().flatten() {
        *counts.entry(*v).or_default() += 1;
    }
    counts.into_iter().find(|(_, n)| 2 * n > votes.len()).map(|(e, _)| EMOTIONS.iter().copied().find(|x| *x == e).expect("a label"))
}

/// Labels every comment with `rounds` votes, each round sampled with its
/// own seed at `temperature` so that rounds can disagree.
pub async fn label(
    model: &dyn ChatModel,
    comments: Vec<Comment>,
    rounds: usize,
    temperature: f32,
    seed: u64,
    usage: &mut Usage,
) -> Result<Vec<Labelled>, ModelError> {
    let mut out = Vec::with_capacity(comments.len());
    for comment in comments {
        let prompt = PROMPT.replace("{text}", &comment.text);
        let mut votes = Vec::with_capacity(rounds);
        for round in 0..rounds {
            let call = Call { schema: Some(("uea_emotion", schema())), temperature, seed: seed.wrapping_add(round as u64), max_tokens: 30 };
            votes.push(read_vote(&call.ask(model, prompt.clone(), usage).await?));
        }
        let label = majority(&votes);
        out.push(Labelled { comment, votes, label });
    }
    Ok(out)
}

/// Keeps at most `cap` comments of each capped label, chosen at random for
/// `seed`, in their order; ties and uncapped labels are kept.
pub fn rebalance(labelled: Vec<Labelled>, caps: &[(&str, usize)], seed: u64) -> Vec<Labelled> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut dropped = vec![false; labelled.len()];
    for (emotion, cap) in caps {
        let of: Vec<usize> = (0..labelled.len()).filter(|&i| labelled[i].label == Some(*emotion)).collect();
        if of.len() > *cap {
            let kept: std::collections::HashSet<usize> = sample(&mut rng, of.len(), *cap).into_iter().map(|k| of[k]).collect();
            of.iter().filter(|i| !kept.contains(i)).for_each(|&i| dropped[i] = true);
        }
    }
    labelled.into_iter().zip(dropped).filter(|(_, d)| !d).map(|(l, _)| l).collect()
}

/// The labelled comments as review items (a tie is an item not kept, so a
/// reviewer can settle it): the annotations UEA's ground truth is made of.
pub fn items(labelled: &[Labelled], model: &str, temperature: f32, seed: u64) -> Vec<Item> {
    labelled
        .iter()
        .enumerate()
        .map(|(n, l)| {
            let mut provenance = Map::new();
            provenance.insert("pipeline".into(), json!("uea-votes"));
            provenance.insert("model".into(), json!(model));
            provenance.insert("prompt".into(), json!(prompt_id(PROMPT)));
            provenance.insert("votes".into(), json!(l.votes));
            provenance.insert("temperature".into(), json!(temperature));
            provenance.insert("seed".into(), json!(seed));
            Item {
                id: format!("uea:{}:{}:{n}", l.comment.uid, l.comment.post_id),
                key: l.comment.uid.clone(),
                fields: BTreeMap::from([
                    ("weibo_id".into(), l.comment.post_id.clone()),
                    ("emotion".into(), l.label.unwrap_or_default().to_string()),
                ]),
                keep: l.label.is_some(),
                sources: vec![l.comment.text.clone()],
                provenance,
            }
        })
        .collect()
}

/// Agreement with the known emotions: (labelled with a majority and a
/// truth, of those equal to the truth, ties among those with a truth).
pub fn agreement(labelled: &[Labelled]) -> (usize, usize, usize) {
    let known: Vec<&Labelled> = labelled.iter().filter(|l| l.comment.truth.is_some()).collect();
    let decided: Vec<&&Labelled> = known.iter().filter(|l| l.label.is_some()).collect();
    let agree = decided.iter().filter(|l| l.label == l.comment.truth).count();
    (decided.len(), agree, known.len() - decided.len())
}

/// The emotion a text conveys by construction, if it fills one of the
/// world's reaction templates.
pub fn world_emotion(text: &str) -> Option<&'static str> {
    REACTIONS.iter().zip(EMOTIONS).find_map(|(templates, emotion)| {
        templates
            .iter()
            .any(|t| {
                let (head, tail) = t.split_once("{}").unwrap_or((t, ""));
                text.len() > head.len() + tail.len() && text.starts_with(head) && text.ends_with(tail)
            })
            .then_some(*emotion)
    })
}

/// From `(post id, author, text)` posts of a world, `n` per emotion (fewer
/// where the world has fewer) whose emotion is known, chosen for `seed`:
/// the emotional posts of timelines, read as comments of their authors.
pub fn world_comments(posts: &[(String, String, String)], n: usize, seed: u64) -> Vec<Comment> {
    let mut by_emotion: BTreeMap<usize, Vec<Comment>> = BTreeMap::new();
    for (post_id, uid, text) in posts {
        if let Some(truth) = world_emotion(text) {
            let i = EMOTIONS.iter().position(|e| *e == truth).expect("a label");
            by_emotion.entry(i).or_default().push(Comment {
                uid: uid.clone(),
                post_id: post_id.clone(),
                text: text.clone(),
                truth: Some(truth),
            });
        }
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    for (_, mut of) in by_emotion {
        of.sort_by(|a, b| a.post_id.cmp(&b.post_id));
        let mut picked = sample(&mut rng, of.len(), n.min(of.len())).into_vec();
        picked.sort_unstable();
        out.extend(picked.into_iter().map(|k| of[k].clone()));
    }
    out
}

#[cfg(test)]
mod tests {
    use some_jobs::testing::{ScriptedModel, reply};

    use super::*;

    fn comment(text: &str) -> Comment {
        Comment { uid: "1".into(), post_id: "p".into(), text: text.into(), truth: world_emotion(text) }
    }

    #[test]
    fn a_vote_is_read_from_json_or_a_lone_label_and_the_majority_needs_more_than_half() {
        assert_eq!(read_vote("{\"emotion\": \"悲伤\"}"), Some("悲伤"));
        assert_eq!(read_vote("我认为是愤怒。"), Some("愤怒"));
        assert_eq!(read_vote("{\"emotion\": \"开心\"}"), None, "not a label");
        assert_eq!(read_vote("积极或者惊奇"), None, "two labels");
        assert_eq!(majority(&[Some("悲伤"), None, Some("悲伤")]), Some("悲伤"));
        assert_eq!(majority(&[Some("悲伤"), Some("愤怒"), Some("惊奇")]), None, "a tie");
        assert_eq!(majority(&[Some("悲伤"), Some("悲伤"), Some("愤怒"), Some("愤怒")]), None, "half is not more than half");
    }

    #[test]
    fn the_world_s_reaction_posts_carry_their_emotion() {
        assert_eq!(world_emotion("想起历史传记这个话题，眼眶又湿了"), Some("悲伤"));
        assert_eq!(world_emotion("宝宝辅食，已阅"), Some("无情绪"));
        assert_eq!(world_emotion("眼眶又湿了"), None, "a template needs its subject");
        assert_eq!(world_emotion("今天天气真好"), None);
    }

    #[test]
    fn three_rounds_vote_and_a_tie_stays_out_of_the_queries() {
        let votes = ["{\"emotion\": \"悲伤\"}", "{\"emotion\": \"悲伤\"}", "{\"emotion\": \"愤怒\"}", "积极", "惊奇", "无情绪"];
        let model = ScriptedModel::replies("scripted", votes.iter().map(|v| reply(v)).collect(), |_| reply("{}"));
        let comments = vec![comment("想起外婆这个话题，眼眶又湿了"), comment("刷到新闻，揉了三遍眼睛")];
        let mut usage = Usage::default();
        let labelled = futures::executor::block_on(label(&model, comments, 3, 0.7, 9, &mut usage)).unwrap();
        assert_eq!(labelled[0].label, Some("悲伤"));
        assert_eq!(labelled[1].votes, [Some("积极"), Some("惊奇"), Some("无情绪")]);
        assert_eq!(labelled[1].label, None);
        let seeds: Vec<Option<u64>> = model.requests().iter().map(|r| r.seed).collect();
        assert_eq!(&seeds[..3], [Some(9), Some(10), Some(11)], "each round its own seed");
        assert_eq!(agreement(&labelled), (1, 1, 1));
        let items = items(&labelled, "scripted", 0.7, 9);
        assert_eq!((items[1].keep, items[1].provenance["votes"].clone()), (false, json!(["积极", "惊奇", "无情绪"])), "a tie, kept out");
        assert_eq!(crate::review::ground_truth(some_schemas::Task::Uea, &items), json!({"1": [{"weibo_id": "p", "emotion": "悲伤"}]}));
    }

    #[test]
    fn rebalancing_caps_only_the_capped_labels() {
        let l = |label: &'static str| Labelled { comment: comment("x"), votes: vec![], label: Some(label) };
        let labelled = vec![l("积极"), l("悲伤"), l("积极"), l("积极"), l("悲伤")];
        let kept = rebalance(labelled, &[("积极", 1)], 3);
        assert_eq!(kept.iter().filter(|k| k.label == Some("积极")).count(), 1);
        assert_eq!(kept.iter().filter(|k| k.label == Some("悲伤")).count(), 2);
    }
}
