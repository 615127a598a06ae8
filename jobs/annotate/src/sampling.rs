//! UBP, UCS and MCR without a model: positives are real interactions, and
//! each positive gets one negative drawn the paper's way.
//!
//! - UBP, per interaction type: a post the same user did not interact with
//!   by that type (nor by an unrecorded type, which might be it);
//! - UCS: another user's comment under the same post, saying something else;
//! - MCR: a post the user did not interact with at all, whose text differs
//!   from the positive's.
//!
//! Draws are deterministic for a seed: each task and type has its own
//! random stream, so changing one count leaves the others' queries as they were.

use std::collections::HashSet;

use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use some_schemas::{QueryRow, Task};

use crate::interactions::{Index, Kind, same_text};

/// How many positives to draw; each comes with one negative. The defaults
/// are the release's: 500 per UBP type (1,000 samples each), 2,000 for UCS
/// and for MCR (4,000 samples each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub ubp_per_type: usize,
    pub ucs: usize,
    pub mcr: usize,
}

impl Default for Counts {
    fn default() -> Counts {
        Counts { ubp_per_type: 500, ucs: 2000, mcr: 2000 }
    }
}

/// Positive-negative pairs per user, as the release has them: one per UBP
/// user and type, two per UCS and MCR user.
fn pairs_per_user(task: Task) -> usize {
    if task == Task::Ubp { 1 } else { 2 }
}

/// One task's annotation: its ground truth in the release's layout and how
/// far it got.
#[derive(Debug, Clone)]
pub struct Annotated {
    pub task: Task,
    pub ground_truth: Value,
    /// Per part (a UBP type, or the task): positives drawn and wanted.
    pub drawn: Vec<(String, usize, usize)>,
}

impl Annotated {
    /// Positives drawn in all parts.
    pub fn positives(&self) -> usize {
        self.drawn.iter().map(|(_, n, _)| n).sum()
    }
}

/// A random stream for one part of one task, from the seed.
fn stream(seed: u64, part: &str) -> ChaCha8Rng {
    let digest = Sha256::new().chain_update(seed.to_le_bytes()).chain_update(part.as_bytes()).finalize();
    ChaCha8Rng::from_seed(digest.into())
}

/// A random element of `pool` that `fits`: a few random tries, then a scan
/// from a random start, so a sparse pool still finds its one fit.
fn draw<'a>(rng: &mut ChaCha8Rng, pool: &[&'a str], fits: impl Fn(&str) -> bool) -> Option<&'a str> {
    if pool.is_empty() {
        return None;
    }
    for _ in 0..32 {
        let candidate = pool[rng.random_range(0..pool.len())];
        if fits(candidate) {
            return Some(candidate);
        }
    }
    let start = rng.random_range(0..pool.len());
    pool[start..].iter().chain(&pool[..start]).copied().find(|c| fits(c))
}

fn entry(post: &str, text: Option<(&str, &str)>, positive: bool) -> Value {
    let mut e = Map::new();
    e.insert("weibo_id".into(), json!(post));
    if let Some((field, text)) = text {
        e.insert(field.into(), json!(text));
    }
    e.insert("label".into(), json!(if positive { "是" } else { "否" }));
    Value::Object(e)
}

/// UBP: per type, users in a random order, each with one positive of that
/// type and one negative.
pub fn ubp(index: &Index, wanted: usize, seed: u64) -> Annotated {
    let mut top = Map::new();
    let mut drawn = Vec::new();
    let catalog = index.catalog();
    for kind in Kind::UBP {
        let mut rng = stream(seed, &format!("ubp/{}", kind.as_str()));
        let mut users: Vec<&str> = index.users().filter(|u| index.posts_of(u, kind).next().is_some()).collect();
        users.shuffle(&mut rng);
        // A typed negative shows another user's text of the same type, so it
        // comes from posts that have one.
        let with_texts = index.posts_with_texts(kind);
        let pool = if kind.has_text() { &with_texts } else { &catalog };
        let mut per_user = Map::new();
        for uid in users {
            if per_user.len() == wanted {
                break;
            }
            let positives: Vec<&str> = index.posts_of(uid, kind).collect();
            let positive = *positives.choose(&mut rng).expect("a user with an interaction");
            let fits = |p: &str| {
                !index.interacted(uid, p, kind)
                    && !index.interacted(uid, p, Kind::Other)
                    && (!kind.has_text() || index.texts_on(p, kind).iter().any(|(who, _)| who != uid))
            };
            let Some(negative) = draw(&mut rng, pool, fits) else { continue };
            let (own, other) = if kind.has_text() {
                let own = index.texts_on(positive, kind).iter().find(|(who, _)| who == uid).map_or("", |(_, t)| t.as_str());
                let others: Vec<&str> =
                    index.texts_on(negative, kind).iter().filter(|(who, _)| who != uid).map(|(_, t)| t.as_str()).collect();
                (Some((kind.as_str(), own)), Some((kind.as_str(), *others.choose(&mut rng).expect("a text by another user"))))
            } else {
                (None, None)
            };
            per_user.insert(uid.to_string(), json!([entry(positive, own, true), entry(negative, other, false)]));
        }
        drawn.push((kind.as_str().to_string(), per_user.len(), wanted));
        top.insert(kind.as_str().to_string(), Value::Object(per_user));
    }
    Annotated { task: Task::Ubp, ground_truth: Value::Object(top), drawn }
}

/// UCS: users in a random order, each with up to two of their comments and,
/// for each, another user's different comment under the same post.
pub fn ucs(index: &Index, wanted: usize, seed: u64) -> Annotated {
    let mut rng = stream(seed, "ucs");
    let mut users: Vec<&str> = index.users().filter(|u| index.posts_of(u, Kind::Comment).next().is_some()).collect();
    users.shuffle(&mut rng);
    let mut per_user = Map::new();
    let mut total = 0;
    for uid in users {
        if total == wanted {
            break;
        }
        // Each of the user's comments (a user may comment twice under one
        // post, and the release then has two pairs there), with the others'
        // comments under that post that say something else.
        let mut eligible: Vec<(&str, &str, Vec<&str>)> = Vec::new();
        for post in index.posts_of(uid, Kind::Comment) {
            let texts = index.texts_on(post, Kind::Comment);
            let own: Vec<&str> = texts.iter().filter(|(who, _)| who == uid).map(|(_, t)| t.as_str()).collect();
            // Not a text the user also wrote there, under whoever's name.
            let others: Vec<&str> =
                texts.iter().filter(|(who, t)| who != uid && !own.iter().any(|o| same_text(t, o))).map(|(_, t)| t.as_str()).collect();
            if !others.is_empty() {
                eligible.extend(own.iter().map(|o| (post, *o, others.clone())));
            }
        }
        if eligible.is_empty() {
            continue;
        }
        eligible.shuffle(&mut rng);
        let take = pairs_per_user(Task::Ucs).min(wanted - total).min(eligible.len());
        let mut entries = Vec::new();
        for (post, own, others) in &eligible[..take] {
            entries.push(entry(post, Some(("comment", own)), true));
            entries.push(entry(post, Some(("comment", others.choose(&mut rng).expect("another comment"))), false));
        }
        total += take;
        per_user.insert(uid.to_string(), Value::Array(entries));
    }
    Annotated { task: Task::Ucs, ground_truth: Value::Object(per_user), drawn: vec![("ucs".into(), total, wanted)] }
}

/// MCR: users in a random order, each with up to two posts they interacted
/// with and, for each, a post they never touched whose text is another.
pub fn mcr(index: &Index, wanted: usize, seed: u64) -> Annotated {
    let mut rng = stream(seed, "mcr");
    let catalog = index.catalog();
    let mut users: Vec<&str> = index.users().collect();
    users.shuffle(&mut rng);
    let mut per_user = Map::new();
    let mut total = 0;
    for uid in users {
        if total == wanted {
            break;
        }
        let mut positives: Vec<&str> = [Kind::Like, Kind::Comment, Kind::Repost, Kind::Other]
            .into_iter()
            .flat_map(|k| index.posts_of(uid, k))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        positives.shuffle(&mut rng);
        let mut entries = Vec::new();
        let mut used = HashSet::new();
        for positive in positives {
            if entries.len() / 2 == pairs_per_user(Task::Mcr) || total + entries.len() / 2 == wanted {
                break;
            }
            let shown = index.post_text(positive).unwrap_or_default();
            let fits =
                |p: &str| !used.contains(p) && !index.interacted_any(uid, p) && !same_text(index.post_text(p).unwrap_or_default(), shown);
            let Some(negative) = draw(&mut rng, &catalog, fits) else { continue };
            used.insert(negative);
            entries.push(entry(positive, None, true));
            entries.push(entry(negative, None, false));
        }
        if entries.is_empty() {
            continue;
        }
        total += entries.len() / 2;
        per_user.insert(uid.to_string(), Value::Array(entries));
    }
    Annotated { task: Task::Mcr, ground_truth: Value::Object(per_user), drawn: vec![("mcr".into(), total, wanted)] }
}

/// Checks every query of `rows` (one task's, read back from its file)
/// against the rule that made it; returns each breach, named.
pub fn check_rules(index: &Index, rows: &[QueryRow]) -> Vec<String> {
    let mut breaches = Vec::new();
    let mut breach = |q: &QueryRow, why: &str| breaches.push(format!("{} ({} {}): {why}", q.query_id, q.source_key, q.position));
    for (i, q) in rows.iter().enumerate() {
        let (Some(uid), Some(post)) = (q.uid.as_deref(), q.post_id.as_deref()) else {
            breach(q, "no user or post");
            continue;
        };
        let positive = q.label.as_deref() == Some("是");
        // A negative follows its positive in the same user's list.
        let pair = (!positive && i > 0 && rows[i - 1].source_key == q.source_key).then(|| &rows[i - 1]);
        if !positive && pair.is_none_or(|p| p.label.as_deref() != Some("是")) {
            breach(q, "a negative without its positive before it");
            continue;
        }
        let text = q.comment.as_deref().unwrap_or_default();
        match q.task {
            Task::Ubp => {
                let Some(kind) = Kind::UBP.into_iter().find(|k| Some(k.as_str()) == q.action.as_deref()) else {
                    breach(q, "no interaction type");
                    continue;
                };
                if positive && !index.interacted(uid, post, kind) {
                    breach(q, "positive, but the user never did this to the post");
                }
                if !positive && (index.interacted(uid, post, kind) || index.interacted(uid, post, Kind::Other)) {
                    breach(q, "negative, but the user did interact with the post this way");
                }
                let texts = index.texts_on(post, kind);
                let own = texts.iter().find(|(who, _)| who == uid).map_or("", |(_, t)| t.as_str());
                if kind.has_text() && positive && own != text {
                    breach(q, "the text is not the one the user left on the post");
                }
                if kind.has_text() && !positive && !texts.iter().any(|(who, t)| who != uid && t == text) {
                    breach(q, "the text is not one another user left on the post");
                }
            }
            Task::Ucs => {
                let authors: Vec<&str> =
                    index.texts_on(post, Kind::Comment).iter().filter(|(_, t)| t == text).map(|(w, _)| w.as_str()).collect();
                if positive && !authors.contains(&uid) {
                    breach(q, "positive, but the user did not write this comment on the post");
                }
                if !positive {
                    let paired = pair.expect("checked above");
                    if authors.is_empty() || authors.contains(&uid) {
                        breach(q, "negative, but no other user wrote this comment on the post");
                    }
                    if paired.post_id.as_deref() != Some(post) {
                        breach(q, "negative under another post than its positive");
                    }
                    if same_text(text, paired.comment.as_deref().unwrap_or_default()) {
                        breach(q, "negative says the same as its positive");
                    }
                }
            }
            Task::Mcr => {
                if positive && !index.interacted_any(uid, post) {
                    breach(q, "positive, but the user never interacted with the post");
                }
                if !positive {
                    let paired = pair.expect("checked above");
                    if index.interacted_any(uid, post) {
                        breach(q, "negative, but the user interacted with the post");
                    }
                    let shown = |p: Option<&str>| p.and_then(|p| index.post_text(p)).unwrap_or_default();
                    if same_text(shown(Some(post)), shown(paired.post_id.as_deref())) {
                        breach(q, "negative's text is the same as its positive's");
                    }
                }
            }
            other => breach(q, &format!("{other} is not drawn from interactions")),
        }
        if index.post_text(post).is_none() {
            breach(q, "the post is not in the catalog, so no query can show it");
        }
    }
    breaches
}
