//! The paper's human evaluation, its items: which of a run's actions and
//! texts an annotator judges, each with a stable id ([`ReviewIndex`]), a
//! seeded sample of them ([`sample`]) and the context an annotator needs to
//! judge one ([`ReviewItem`], built by [`items`]). `some sim review export`
//! writes the sample with `review_file`; an import checks every id against
//! the same index, and the report groups human scores by it.
//!
//! What is reviewable, following the paper's "Human Evaluations" paragraph:
//! - a regular agent's applied like, reblog or comment in an interaction
//!   stage, rated for rationality (0/1);
//! - a follow a regular agent chose by reflection, rated for Ref (0/1);
//! - a regular agent's post (Info, Cons, Hum on 1-3, Know 0/1) and comment
//!   (Info, Cons, Hum) written in an interaction stage. A comment is thus
//!   two items: the decision to comment, and the comment's text.
//!
//! Seed posts and initial agents are left out, as the paper's are.
//!
//! Item ids are made of the rows' own keys, so an export with another seed
//! names the same item the same way: `like:t12:a7:s1` (kind, turn, agent,
//! seq of the action), `follow:t48:a7:s3`, `post_text:p31`,
//! `comment_text:p40`.
//!
//! Sampling (choices where the paper is silent): the paper draws 30 regular
//! agents for action rationality and 60 posts and 60 comments; its Table 3
//! reports each stage apart. So: `agents` regular agents that liked,
//! reblogged or commented are drawn first and their actions are the pool
//! for those three kinds; follows, posts and comments are drawn from every
//! regular agent. Each kind takes at most `per_kind` items, split evenly
//! over the preset's interaction stages (the earlier stages take the
//! remainder); a stage with fewer items gives all it has and the others do
//! not make up for it. The draw is ChaCha8 from `seed` over items in id
//! order, so the same seed and rows give the same sample.
//!
//! Context: the persona as the paper's evaluation shows it (personality,
//! hobbies, content preferences; the unenriched description otherwise);
//! the post acted on with its author; a comment's text; a post's topic,
//! the knowledge passages it adopted and the persona's knowledge (for
//! Know); and for a follow, the followee and the agent's history as its
//! memory held it after the reflecting step: the latest engaged posts, at
//! most [`reflect::HISTORY_CAP`] (what one reflection reads at most; it may
//! reach back before the agent's previous reflection, which the reflection
//! itself did not), in the wording of the reflection prompt, and the
//! reflection's own note.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use rand::SeedableRng;
use serde::Serialize;
use some_schemas::sim::{
    ActionKind, ActionStatus, AgentKind, ReviewKind, SimActionRow, SimAgentRow, SimPostRow, sim_actions, sim_agents, sim_posts,
};

use crate::agent::activity::{Phase, Preset};
use crate::agent::knowledge::PassageStore;
use crate::agent::memory::Memory;
use crate::agent::persona::Persona;
use crate::agent::reflect;
use crate::platform::ids::Turn;
use some_jobs::error::Error;

const ASK_ACTION: &str =
    "Given the persona, is it reasonable that this agent {did} the post shown? Score rationality 1 if it is, 0 if not.";
const ASK_FOLLOW: &str = "Given the agent's history (the posts it reacted to, shown as its reflection saw them), is following this user reasonable? Score reflection 1 if it is, 0 if not.";
const ASK_POST: &str = "Rate the post for this persona, 1 poor, 2 moderate, 3 good: informativeness (diverse and informative), consistency (relevant and consistent with the persona), humanness (reads as written by a real person). Score knowledge 1 if the post uses the passages shown appropriately where knowledge is needed, or uses none where none is needed; 0 otherwise.";
const ASK_COMMENT: &str =
    "Rate the comment for this persona, 1 poor, 2 moderate, 3 good: informativeness, consistency (with the persona), humanness.";

/// How many items of which kind to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleSettings {
    pub seed: u64,
    /// Regular agents whose likes, reblogs and comments are reviewed.
    pub agents: usize,
    /// Items of each kind at most, over all interaction stages.
    pub per_kind: usize,
}

impl Default for SampleSettings {
    /// The paper's: 30 agents, 60 posts and 60 comments.
    fn default() -> Self {
        SampleSettings { seed: 0, agents: 30, per_kind: 60 }
    }
}

/// A reviewable item: what it is and which rows it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemKey {
    pub id: String,
    pub kind: ReviewKind,
    /// The interaction stage, from 1.
    pub stage: u32,
    pub turn: i64,
    pub agent: i64,
    /// The action's seq (actions only).
    pub seq: Option<i32>,
    /// The post acted on, or the post or comment itself (texts).
    pub post: Option<i64>,
    /// The followee (follows only).
    pub followee: Option<i64>,
}

/// The rows the index is built from: a run's committed rows.
#[derive(Debug, Clone, Copy)]
pub struct ReviewRows<'a> {
    pub agents: &'a [SimAgentRow],
    pub posts: &'a [SimPostRow],
    pub actions: &'a [SimActionRow],
    pub preset: &'a Preset,
}

/// Every reviewable item of a run, by id.
#[derive(Debug, Clone, Default)]
pub struct ReviewIndex {
    items: BTreeMap<String, ItemKey>,
    stages: u32,
}

fn invalid(table: &str, at: impl std::fmt::Display, cause: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("{table}: {at}: {cause}"))
}

fn stage(preset: &Preset, table: &str, at: &dyn Fn() -> String, turn: i64) -> Result<u32, Error> {
    match u32::try_from(turn).ok().and_then(|t| preset.phase(Turn(t))) {
        Some(Phase::Seeding) => Ok(0),
        Some(Phase::Stage(n)) => Ok(n),
        None => Err(invalid(table, at(), format!("turn {turn} is outside the preset's {} turns", preset.turns()))),
    }
}

impl ReviewIndex {
    pub fn build(rows: ReviewRows<'_>) -> Result<ReviewIndex, Error> {
        let mut regular = BTreeSet::new();
        for a in rows.agents {
            let kind = AgentKind::parse(&a.kind)
                .ok_or_else(|| invalid(sim_agents::TABLE, format!("agent {}", a.agent_id), format!("unknown kind {:?}", a.kind)))?;
            if kind == AgentKind::Regular {
                regular.insert(a.agent_id);
            }
        }
        let mut items = BTreeMap::new();
        let mut add = |key: ItemKey| {
            items.insert(key.id.clone(), key);
        };
        for a in rows.actions {
            let at = || format!("turn {} agent {} seq {}", a.turn, a.agent_id, a.seq);
            let kind = match ActionKind::parse(&a.action) {
                Some(ActionKind::Like) => ReviewKind::Like,
                Some(ActionKind::Reblog) => ReviewKind::Reblog,
                Some(ActionKind::Comment) => ReviewKind::Comment,
                Some(ActionKind::Follow) => ReviewKind::Follow,
                Some(_) => continue,
                None => return Err(invalid(sim_actions::TABLE, at(), format!("unknown action {:?}", a.action))),
            };
            let stage = stage(rows.preset, sim_actions::TABLE, &at, a.turn)?;
            if a.status != ActionStatus::Applied.as_str() || stage == 0 || !regular.contains(&a.agent_id) {
                continue;
            }
            let id = format!("{}:t{}:a{}:s{}", kind.as_str(), a.turn, a.agent_id, a.seq);
            let (post, followee) = if kind == ReviewKind::Follow { (None, a.target_agent_id) } else { (a.post_id, None) };
            if post.is_none() && followee.is_none() {
                return Err(invalid(sim_actions::TABLE, at(), format!("an applied {} names no post or agent", a.action)));
            }
            add(ItemKey { id, kind, stage, turn: a.turn, agent: a.agent_id, seq: Some(a.seq), post, followee });
        }
        for p in rows.posts {
            let at = || format!("post {}", p.post_id);
            let stage = stage(rows.preset, sim_posts::TABLE, &at, p.turn)?;
            if stage == 0 || !regular.contains(&p.author_id) {
                continue;
            }
            let kind = if p.parent_post_id.is_some() { ReviewKind::CommentText } else { ReviewKind::PostText };
            let id = format!("{}:p{}", kind.as_str(), p.post_id);
            add(ItemKey { id, kind, stage, turn: p.turn, agent: p.author_id, seq: None, post: Some(p.post_id), followee: None });
        }
        Ok(ReviewIndex { items, stages: rows.preset.stages.len() as u32 })
    }

    pub fn get(&self, id: &str) -> Option<&ItemKey> {
        self.items.get(id)
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn items(&self) -> impl Iterator<Item = &ItemKey> {
        self.items.values()
    }
}

/// `n` of `pool`, drawn with `rng`, in pool order.
fn draw<T: Copy>(rng: &mut rand_chacha::ChaCha8Rng, pool: &[T], n: usize) -> Vec<T> {
    if pool.len() <= n {
        return pool.to_vec();
    }
    let mut picked = rand::seq::index::sample(rng, pool.len(), n).into_vec();
    picked.sort_unstable();
    picked.into_iter().map(|i| pool[i]).collect()
}

/// The seeded sample (see the module doc), in kind, stage and id order.
pub fn sample<'a>(index: &'a ReviewIndex, settings: &SampleSettings) -> Vec<&'a ItemKey> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(settings.seed);
    let is_action = |k: ReviewKind| matches!(k, ReviewKind::Like | ReviewKind::Reblog | ReviewKind::Comment);
    let actors: Vec<i64> = index.items().filter(|i| is_action(i.kind)).map(|i| i.agent).collect::<BTreeSet<_>>().into_iter().collect();
    let chosen: BTreeSet<i64> = draw(&mut rng, &actors, settings.agents).into_iter().collect();
    let stages = index.stages.max(1);
    let mut out = Vec::new();
    for kind in ReviewKind::ALL {
        for stage in 1..=stages {
            let share = settings.per_kind / stages as usize + usize::from(stage <= settings.per_kind as u32 % stages);
            let pool: Vec<&ItemKey> =
                index.items().filter(|i| i.kind == kind && i.stage == stage && (!is_action(kind) || chosen.contains(&i.agent))).collect();
            out.extend(draw(&mut rng, &pool, share));
        }
    }
    out
}

/// One row of the export: an item, its context and (in the file) its
/// empty score columns. The field names are the file's columns; the
/// identity columns and `annotator` are spelled as `sim_reviews` spells
/// them (a test checks it).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReviewItem {
    pub item_id: String,
    pub run_id: String,
    pub kind: String,
    pub stage: u32,
    pub turn: i64,
    pub agent_id: i64,
    pub username: String,
    /// What to judge, and on which scale.
    pub question: String,
    /// Personality, hobbies and content preferences (what the paper's evaluation shows).
    pub persona: String,
    /// The persona's knowledge (posts only, for Know).
    pub persona_knowledge: String,
    /// The post liked, reblogged or commented on, or a comment's parent.
    pub target_post_id: Option<i64>,
    pub target_author: String,
    pub target_text: String,
    /// The post or comment written (texts), or the comment made.
    pub post_id: Option<i64>,
    pub text: String,
    pub topic: String,
    /// The knowledge passages the post adopted, `[id] title: text`, one per paragraph.
    pub passages: String,
    pub followee: String,
    pub followee_persona: String,
    /// The agent's engaged history before a follow, one post per line.
    pub history: String,
    /// The reflection's own summary of what it did.
    pub reflection_note: String,
    pub annotator: String,
}

/// What the context of the sampled items is read from.
pub struct ItemSources<'a> {
    pub agents: &'a [SimAgentRow],
    pub posts: &'a [SimPostRow],
    pub actions: &'a [SimActionRow],
    /// Each agent's memory after its step, by (agent, turn): the steps of
    /// the sampled follows' turns at least.
    pub memories: &'a HashMap<(i64, i64), Memory>,
    /// The passages posts adopted knowledge from, if the run used knowledge.
    pub passages: Option<&'a PassageStore>,
}

/// The persona as the paper's evaluation shows it.
pub fn persona_view(p: &Persona) -> String {
    match &p.profile {
        Some(pr) => format!("Personality: {}\nHobbies: {}\nContent preferences: {}", pr.personality, pr.hobbies, pr.preferences),
        None => p.description.clone(),
    }
}

fn passages_text(post: &SimPostRow, store: Option<&PassageStore>) -> Result<String, Error> {
    let Some(json) = &post.knowledge else { return Ok("(none adopted)".into()) };
    let at = || format!("post {}", post.post_id);
    let ids: Vec<u32> =
        serde_json::from_str(json).map_err(|e| invalid(sim_posts::TABLE, at(), format!("knowledge is not a list of passage ids: {e}")))?;
    let lines: Vec<String> = ids
        .iter()
        .map(|id| match store.and_then(|s| s.get(*id)) {
            Some(p) => format!("[{id}] {}: {}", p.title, p.text),
            None => format!("[{id}] (passage not in the lake's knowledge now)"),
        })
        .collect();
    Ok(lines.join("\n\n"))
}

/// The sampled items with their context.
pub fn items(keys: &[&ItemKey], src: &ItemSources<'_>, run_id: &str) -> Result<Vec<ReviewItem>, Error> {
    let mut personas: HashMap<i64, (&SimAgentRow, Persona)> = HashMap::new();
    for a in src.agents {
        let p: Persona = serde_json::from_str(&a.persona)
            .map_err(|e| invalid(sim_agents::TABLE, format!("agent {}", a.agent_id), format!("persona is not a persona's JSON: {e}")))?;
        personas.insert(a.agent_id, (a, p));
    }
    let posts: HashMap<i64, &SimPostRow> = src.posts.iter().map(|p| (p.post_id, p)).collect();
    let name =
        |agent: i64| personas.get(&agent).map_or_else(|| format!("user {agent}"), |(a, _)| format!("user {agent} (@{})", a.username));
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let at = || format!("item {}", key.id);
        let (row, persona) = personas.get(&key.agent).ok_or_else(|| invalid(sim_agents::TABLE, at(), "its agent is not in the run"))?;
        let post = |id: i64| posts.get(&id).copied().ok_or_else(|| invalid(sim_posts::TABLE, at(), format!("post {id} is not in the run")));
        let mut item = ReviewItem {
            item_id: key.id.clone(),
            run_id: run_id.to_string(),
            kind: key.kind.as_str().to_string(),
            stage: key.stage,
            turn: key.turn,
            agent_id: key.agent,
            username: row.username.clone(),
            persona: persona_view(persona),
            ..ReviewItem::default()
        };
        let target = |item: &mut ReviewItem, id: i64| -> Result<(), Error> {
            let p = post(id)?;
            (item.target_post_id, item.target_author, item.target_text) = (Some(id), name(p.author_id), p.content.clone());
            Ok(())
        };
        match key.kind {
            ReviewKind::Like | ReviewKind::Reblog | ReviewKind::Comment => {
                let did = match key.kind {
                    ReviewKind::Like => "liked",
                    ReviewKind::Reblog => "reblogged",
                    _ => "commented on",
                };
                item.question = ASK_ACTION.replace("{did}", did);
                target(&mut item, key.post.unwrap_or_default())?;
                if key.kind == ReviewKind::Comment {
                    let a = src.actions.iter().find(|a| (a.turn, a.agent_id, Some(a.seq)) == (key.turn, key.agent, key.seq));
                    item.text = a.and_then(|a| a.text.clone()).unwrap_or_default();
                }
            }
            ReviewKind::Follow => {
                item.question = ASK_FOLLOW.into();
                let followee = key.followee.unwrap_or_default();
                item.followee = name(followee);
                item.followee_persona = personas.get(&followee).map(|(_, p)| persona_view(p)).unwrap_or_default();
                let memory = src
                    .memories
                    .get(&(key.agent, key.turn))
                    .ok_or_else(|| invalid("sim_steps", at(), format!("no step of agent {} in turn {}", key.agent, key.turn)))?;
                let engaged: Vec<_> = memory.short_term.iter().filter(|e| e.engaged() && i64::from(e.turn.0) <= key.turn).collect();
                let recent = &engaged[engaged.len().saturating_sub(reflect::HISTORY_CAP)..];
                let lines: Vec<String> = recent.iter().enumerate().map(|(i, e)| reflect::history_line(i + 1, e)).collect();
                item.history = lines.join("\n");
                item.reflection_note = memory.summaries.back().cloned().unwrap_or_default();
            }
            ReviewKind::PostText => {
                item.question = ASK_POST.into();
                let p = post(key.post.unwrap_or_default())?;
                (item.post_id, item.text, item.topic) = (Some(p.post_id), p.content.clone(), p.topic.clone().unwrap_or_default());
                item.passages = passages_text(p, src.passages)?;
                item.persona_knowledge = persona.knowledge_text().to_string();
            }
            ReviewKind::CommentText => {
                item.question = ASK_COMMENT.into();
                let p = post(key.post.unwrap_or_default())?;
                (item.post_id, item.text) = (Some(p.post_id), p.content.clone());
                if let Some(parent) = p.parent_post_id {
                    target(&mut item, parent)?;
                }
            }
        }
        out.push(item);
    }
    Ok(out)
}

#[cfg(test)]
#[path = "review_tests.rs"]
pub(crate) mod tests;
