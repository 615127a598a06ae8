//! The evaluation report of a simulation run, a pure function of its lake
//! rows: the paper's automatic metrics (Table 1's engagement similarity and
//! Distinct-n, Figure 6's followers), the LLM-judge text quality of Table 2
//! when a judge is given, actions per stage and turn, and the run's facts.
//! The published figures are printed beside ours, and what keeps a figure
//! from being comparable is written into the report ([`SimReport::caveats`]),
//! so a JSON reader sees it as well as a terminal.
//!
//! Choices where the paper is silent:
//! - An exposure is an (agent, post) pair: the post was in the agent's feed
//!   or the agent acted on it. It belongs to the stage of its first showing,
//!   and is engaged for an action when that action was applied at any time
//!   (an engaged post leaves later feeds, so per-showing counts would
//!   weigh not-engaged posts by how often they came back).
//! - Table 1's "post" row: each post against its author's persona.
//! - The initial graph is the personas' `following` between agents of the
//!   run, self-follows left out: what the platform's setup accepts.
//! - The judge rates `sample` texts per (interaction stage, post/comment),
//!   evenly spaced in post-id order, so a rerun judges the same texts;
//!   seed posts are not judged (Table 2 has no seeding rows). It also rates
//!   every text a human reviewed, so human and judge scores can be
//!   correlated (`report_human`); Table 2's means are over all it rated.
//! - An action is counted once per (turn, agent, seq): a browse has a row
//!   per post shown. Failure causes are grouped with numbers written `N`,
//!   so "post 9 does not exist" and "post 7 does not exist" are one cause.
//! - The judge is asked at temperature 0. An unreadable reply, or a model
//!   error the client gave up retrying, is a failure of that text, never a
//!   rating; a permanent model error (bad key, unknown model) stops the report.
//!
//! The human evaluation (imported `sim_reviews`) is `report_human`;
//! rendering, as text and as HTML, is in `report_html`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::StreamExt;
use serde::Serialize;
use some_schemas::sim::{
    ActionKind, ActionStatus, AgentKind, ReviewKind, SimActionRow, SimAgentRow, SimFeedRow, SimFollowRow, SimInterviewRow, SimPostRow,
    SimReviewRow, SimTurnRow, sim_actions, sim_agents, sim_feeds, sim_follows, sim_posts,
};

use crate::agent::activity::{Phase, Preset};
use crate::agent::persona::Persona;
use crate::agent::step::StepFailure;
use crate::agent::tfidf;
use crate::error::excerpt;
use crate::evaluation::health::{self, StageHealth};
use crate::evaluation::interviews::{self, QuestionSummary};
use crate::evaluation::metrics::{self, Exposure, FOLLOWER_BINS};
use crate::evaluation::quality;
use crate::evaluation::report_human::{self, HumanReport};
use crate::evaluation::review::{ReviewIndex, ReviewRows};
use crate::platform::ids::{AgentId, Turn};
use some_jobs::chat::{ChatModel, ChatRequest, JsonSchema, Message, ModelError};
use some_jobs::embed::{EmbedError, Embedder, Purpose};

/// Texts per embedding call.
const EMBED_BATCH: usize = 64;
/// Judge calls in flight at once.
const JUDGE_CONCURRENCY: usize = 8;
/// Entries kept in the "most frequent" lists.
const TOP: usize = 5;

/// The rows of one run.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    pub agents: &'a [SimAgentRow],
    pub posts: &'a [SimPostRow],
    pub actions: &'a [SimActionRow],
    pub feeds: &'a [SimFeedRow],
    pub follows: &'a [SimFollowRow],
    pub turns: &'a [SimTurnRow],
    /// Imported human scores (every import; the latest per item and annotator counts).
    pub reviews: &'a [SimReviewRow],
    /// Parts of steps skipped because a reply could not be used, with
    /// their turn (from `sim_steps.failures`).
    pub skipped: &'a [(i64, StepFailure)],
    /// Every interview's answers (`some sim interview`).
    pub interviews: &'a [SimInterviewRow],
    /// Posts the run's agents were shown that are not their own texts in
    /// it: news posts interventions injected, and a fork's parent's posts
    /// from before the fork. Feeds and engagement count them; the text
    /// metrics (distinct-n, own posts, the judge) leave them out.
    pub context: &'a BTreeSet<i64>,
    /// Each agent's model group, when the run has groups (else empty).
    pub groups: &'a BTreeMap<i64, String>,
    pub preset: &'a Preset,
}

/// The LLM judge of text quality and how many texts it rates per group.
#[derive(Clone, Copy)]
pub struct Judge<'a> {
    pub model: &'a dyn ChatModel,
    pub sample: usize,
}

/// Rows that contradict each other, or a model that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{table}: {at}: {cause}")]
    Row { table: &'static str, at: String, cause: String },
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error("quality judge: {0}")]
    Judge(ModelError),
    /// Human reviews that do not fit the run's rows.
    #[error(transparent)]
    Review(#[from] some_jobs::error::Error),
}

fn row_error(table: &'static str, at: impl Into<String>, cause: impl Into<String>) -> ReportError {
    ReportError::Row { table, at: at.into(), cause: cause.into() }
}

pub use crate::evaluation::quality::TextKind;

/// Everything the report shows. Stages are numbered as in
/// [`metrics::actions_per_stage`]: 0 is seeding, 1.. the interaction stages.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SimReport {
    pub run: RunFacts,
    pub diversity: Vec<Diversity>,
    pub engagement: Vec<Engagement>,
    pub own_posts: Vec<OwnPosts>,
    pub followers: Followers,
    pub actions: Actions,
    pub top_posts: Vec<TopPost>,
    pub quality: Option<QualityReport>,
    /// Per stage: activity, dark feeds, interactions ([`crate::evaluation::health`]).
    pub health: Vec<StageHealth>,
    /// Imported human scores, when there are any.
    pub human: Option<HumanReport>,
    /// The run's interviews and surveys, tabulated.
    pub interviews: Vec<QuestionSummary>,
    /// What each model group did, when the run has groups.
    pub by_group: Vec<GroupFigures>,
    pub caveats: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFacts {
    pub run_id: Option<String>,
    pub initial_agents: usize,
    pub regular_agents: usize,
    /// Agents whose enrichment or planning failed.
    pub agents_with_errors: usize,
    pub turns_planned: u32,
    pub turns_committed: usize,
    pub last_turn: Option<i64>,
    pub last_state_digest: Option<String>,
    pub posts: usize,
    pub comments: usize,
    pub feed_rows: usize,
    pub embedder: Option<String>,
}

/// Distinct-1/2 ×100 of one stage's posts or comments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diversity {
    pub stage: u32,
    pub kind: TextKind,
    pub texts: usize,
    pub distinct_1: Option<f64>,
    pub distinct_2: Option<f64>,
}

/// Mean persona similarity of engaged and shown-but-not-engaged posts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Split {
    pub engaged: Option<f64>,
    pub not_engaged: Option<f64>,
    pub delta: Option<f64>,
}

/// Table 1's pair of rows ("like" and "not like") for one stage and action.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Engagement {
    pub stage: u32,
    pub action: ActionKind,
    pub engaged_count: usize,
    pub not_engaged_count: usize,
    pub tfidf: Split,
    pub embedding: Option<Split>,
}

/// Table 1's "post" row: posts against their author's persona.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OwnPosts {
    pub stage: u32,
    pub posts: usize,
    pub tfidf: Option<f64>,
    pub embedding: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Followers {
    pub bins: Vec<FollowerBin>,
    /// The most followed agents, most followers first.
    pub top: Vec<Followed>,
    pub initial_edges: usize,
    pub added_edges: usize,
}

/// Agents with `lo..=hi` followers (`hi` `None`: no upper bound).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FollowerBin {
    pub lo: usize,
    pub hi: Option<usize>,
    pub all: usize,
    pub regular: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Followed {
    pub agent_id: i64,
    pub username: String,
    pub kind: AgentKind,
    pub followers: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Actions {
    pub per_stage: Vec<StageActions>,
    /// Every turn from 0 to the last with an action, empty ones included.
    pub per_turn: Vec<TurnActions>,
    /// Actions the platform refused.
    pub failed: u64,
    /// Parts of steps skipped because the model's reply could not be used.
    pub skipped: u64,
    /// The causes of both.
    pub top_errors: Vec<ErrorCause>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StageActions {
    pub stage: u32,
    pub applied: BTreeMap<ActionKind, u64>,
    pub failed: u64,
    pub skipped: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnActions {
    pub turn: u32,
    pub stage: Option<u32>,
    pub applied: BTreeMap<ActionKind, u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorCause {
    pub cause: String,
    pub count: u64,
}

/// What one model group's agents did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroupFigures {
    pub group: String,
    pub agents: usize,
    /// Agent-turns in which the group's agents acted.
    pub active: usize,
    pub applied: BTreeMap<ActionKind, u64>,
    pub posts: usize,
    /// Distinct-2 (×100) of its agents' posts.
    pub distinct_2: Option<f64>,
}

/// A group's figures as they are gathered: the figures, the (turn, agent)
/// pairs that acted, and the texts of its posts.
type Gathering<'a> = (GroupFigures, BTreeSet<(i64, i64)>, Vec<&'a str>);

/// Per model group: agents, activity, applied actions and posts.
fn by_group(input: &ReportInput<'_>, acts: &[Act<'_>], posts: &BTreeMap<i64, (&SimPostRow, u32)>) -> Vec<GroupFigures> {
    let mut out: BTreeMap<&str, Gathering<'_>> = BTreeMap::new();
    let blank = |g: &str| {
        (
            GroupFigures { group: g.to_string(), agents: 0, active: 0, applied: BTreeMap::new(), posts: 0, distinct_2: None },
            BTreeSet::new(),
            Vec::new(),
        )
    };
    for g in input.groups.values() {
        out.entry(g.as_str()).or_insert_with(|| blank(g)).0.agents += 1;
    }
    for a in acts {
        let Some(g) = input.groups.get(&a.row.agent_id) else { continue };
        let entry = out.entry(g.as_str()).or_insert_with(|| blank(g));
        entry.1.insert((a.row.turn, a.row.agent_id));
        if a.applied && a.first && a.kind != ActionKind::Browse {
            *entry.0.applied.entry(a.kind).or_default() += 1;
        }
    }
    for (p, _) in posts.values().filter(|(p, _)| p.parent_post_id.is_none() && !input.context.contains(&p.post_id)) {
        if let Some(g) = input.groups.get(&p.author_id) {
            out.entry(g.as_str()).or_insert_with(|| blank(g)).2.push(&p.content);
        }
    }
    out.into_values()
        .map(|(mut f, active, texts)| {
            f.active = active.len();
            f.posts = texts.len();
            f.distinct_2 = metrics::distinct_n(&texts, 2).map(|d| d * 100.0);
            f
        })
        .collect()
}

/// A post by applied likes, reblogs and comments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TopPost {
    pub post_id: i64,
    pub author_id: i64,
    pub stage: u32,
    pub likes: u64,
    pub reblogs: u64,
    pub comments: u64,
    pub excerpt: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityReport {
    pub judge: String,
    pub sample: usize,
    pub groups: Vec<QualityGroup>,
}

/// Judge ratings (1-3) of one stage's posts or comments.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QualityGroup {
    pub stage: u32,
    pub kind: TextKind,
    pub available: usize,
    pub sampled: usize,
    pub rated: usize,
    pub informativeness: Option<f64>,
    pub consistency: Option<f64>,
    pub humanness: Option<f64>,
    /// Texts the judge gave no usable rating for; never counted as a rating.
    pub failures: Vec<JudgeFailure>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JudgeFailure {
    pub post_id: i64,
    pub cause: String,
}

fn stage_number(phase: Phase) -> u32 {
    match phase {
        Phase::Seeding => 0,
        Phase::Stage(n) => n,
    }
}

fn stage_of(preset: &Preset, table: &'static str, turn: i64) -> Result<u32, ReportError> {
    u32::try_from(turn)
        .ok()
        .and_then(|t| preset.phase(Turn(t)))
        .map(stage_number)
        .ok_or_else(|| row_error(table, format!("turn {turn}"), format!("is outside the preset's {} turns", preset.turns())))
}

struct Agent<'a> {
    row: &'a SimAgentRow,
    id: AgentId,
    kind: AgentKind,
    persona: Persona,
    /// [`Persona::evaluation_text`].
    text: String,
}

fn read_agents(rows: &[SimAgentRow]) -> Result<BTreeMap<i64, Agent<'_>>, ReportError> {
    let mut out = BTreeMap::new();
    for row in rows {
        let at = || format!("agent {}", row.agent_id);
        let id = u32::try_from(row.agent_id).map(AgentId).map_err(|_| row_error(sim_agents::TABLE, at(), "is not an agent id"))?;
        let kind = AgentKind::parse(&row.kind).ok_or_else(|| row_error(sim_agents::TABLE, at(), format!("unknown kind {:?}", row.kind)))?;
        let persona: Persona = serde_json::from_str(&row.persona)
            .map_err(|e| row_error(sim_agents::TABLE, at(), format!("persona is not a persona's JSON: {e}")))?;
        let text = persona.evaluation_text();
        if out.insert(row.agent_id, Agent { row, id, kind, persona, text }).is_some() {
            return Err(row_error(sim_agents::TABLE, at(), "appears twice"));
        }
    }
    Ok(out)
}

/// One sim_actions row, read.
struct Act<'a> {
    row: &'a SimActionRow,
    stage: u32,
    kind: ActionKind,
    applied: bool,
    /// The first row of its action: a browse has a row per post shown,
    /// all with the same (turn, agent, seq), and counts once.
    first: bool,
}

fn read_actions<'a>(rows: &'a [SimActionRow], preset: &Preset) -> Result<Vec<Act<'a>>, ReportError> {
    let mut keys = std::collections::HashSet::new();
    rows.iter()
        .map(|row| {
            let at = || format!("turn {} agent {} seq {}", row.turn, row.agent_id, row.seq);
            let kind = ActionKind::parse(&row.action)
                .ok_or_else(|| row_error(sim_actions::TABLE, at(), format!("unknown action {:?}", row.action)))?;
            let status = ActionStatus::parse(&row.status)
                .ok_or_else(|| row_error(sim_actions::TABLE, at(), format!("unknown status {:?}", row.status)))?;
            let stage = stage_of(preset, sim_actions::TABLE, row.turn)?;
            let first = keys.insert((row.turn, row.agent_id, row.seq));
            Ok(Act { row, stage, kind, applied: status == ActionStatus::Applied, first })
        })
        .collect()
}

/// What one agent did with one post it saw.
#[derive(Default)]
struct Seen {
    turn: i64,
    stage: u32,
    done: [bool; 3],
}

const ENGAGEMENTS: [ActionKind; 3] = [ActionKind::Like, ActionKind::Reblog, ActionKind::Comment];

fn exposures(input: &ReportInput<'_>, acts: &[Act<'_>]) -> Result<BTreeMap<(i64, i64), Seen>, ReportError> {
    fn show(seen: &mut BTreeMap<(i64, i64), Seen>, key: (i64, i64), turn: i64, stage: u32) -> &mut Seen {
        let s = seen.entry(key).or_insert(Seen { turn, stage, done: [false; 3] });
        if turn < s.turn {
            (s.turn, s.stage) = (turn, stage);
        }
        s
    }
    let mut seen = BTreeMap::new();
    for f in input.feeds {
        show(&mut seen, (f.agent_id, f.post_id), f.turn, stage_of(input.preset, sim_feeds::TABLE, f.turn)?);
    }
    for a in acts.iter().filter(|a| a.applied) {
        let (Some(i), Some(post)) = (ENGAGEMENTS.iter().position(|k| *k == a.kind), a.row.post_id) else { continue };
        show(&mut seen, (a.row.agent_id, post), a.row.turn, a.stage).done[i] = true;
    }
    Ok(seen)
}

fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.into_iter().fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let n = norm(a) * norm(b);
    if n > 0.0 { dot / n } else { 0.0 }
}

/// The cosine of two embedded texts; every text compared was embedded first.
fn embedded_cosine(vectors: &HashMap<&str, Vec<f32>>, a: &str, b: &str) -> f64 {
    match (vectors.get(a), vectors.get(b)) {
        (Some(x), Some(y)) => cosine(x, y),
        _ => f64::NAN,
    }
}

/// Vectors of `texts`, keyed by text.
async fn embed_all<'t>(embedder: &dyn Embedder, texts: BTreeSet<&'t str>) -> Result<HashMap<&'t str, Vec<f32>>, ReportError> {
    let texts: Vec<&str> = texts.into_iter().collect();
    let mut out = HashMap::with_capacity(texts.len());
    for chunk in texts.chunks(EMBED_BATCH) {
        let owned: Vec<String> = chunk.iter().map(|t| t.to_string()).collect();
        let vectors = embedder.embed(&owned, Purpose::Document).await?;
        if vectors.len() != chunk.len() {
            let message = format!("returned {} vectors for {} texts", vectors.len(), chunk.len());
            return Err(EmbedError { model: embedder.model().into(), message }.into());
        }
        out.extend(chunk.iter().copied().zip(vectors));
    }
    Ok(out)
}

/// Evenly spaced indices of `n` out of `len` (all of them when `len <= n`).
pub fn spread(len: usize, n: usize) -> Vec<usize> {
    if len <= n {
        return (0..len).collect();
    }
    (0..n).map(|i| i * len / n).collect()
}

/// Error text with every run of digits written `N`.
fn error_cause(error: &str) -> String {
    let mut out = String::with_capacity(error.len());
    for c in error.chars() {
        if c.is_ascii_digit() {
            if !out.ends_with('N') {
                out.push('N');
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The report of one run. With an embedder, Table 1 also gets the
/// embedder's cosine; with a judge, Table 2's ratings. Rows that
/// contradict each other (a feed naming a post that does not exist, a turn
/// outside the preset) are an error, not a smaller report.
pub async fn build(input: ReportInput<'_>, embedder: Option<&dyn Embedder>, judge: Option<Judge<'_>>) -> Result<SimReport, ReportError> {
    let preset = input.preset;
    let agents = read_agents(input.agents)?;
    let mut posts: BTreeMap<i64, (&SimPostRow, u32)> = BTreeMap::new();
    for p in input.posts {
        let at = || format!("post {}", p.post_id);
        if !agents.contains_key(&p.author_id) && !input.context.contains(&p.post_id) {
            return Err(row_error(sim_posts::TABLE, at(), format!("author {} is not an agent of the run", p.author_id)));
        }
        if posts.insert(p.post_id, (p, stage_of(preset, sim_posts::TABLE, p.turn)?)).is_some() {
            return Err(row_error(sim_posts::TABLE, at(), "appears twice"));
        }
    }
    let acts = read_actions(input.actions, preset)?;
    let seen = exposures(&input, &acts)?;
    for (agent, post) in seen.keys() {
        if !agents.contains_key(agent) || !posts.contains_key(post) {
            let cause = format!("agent {agent} and post {post} must both be in the run");
            return Err(row_error(sim_feeds::TABLE, format!("agent {agent} post {post}"), cause));
        }
    }
    let persona_text = |a: &i64| agents[a].text.as_str();
    let own: Vec<(u32, &str, &str)> = posts
        .values()
        .filter(|(p, _)| p.parent_post_id.is_none() && !input.context.contains(&p.post_id))
        .map(|(p, stage)| (*stage, persona_text(&p.author_id), p.content.as_str()))
        .collect();

    let vectors = match embedder {
        None => None,
        Some(e) => {
            let mut texts: BTreeSet<&str> = seen.keys().flat_map(|(a, p)| [persona_text(a), posts[p].0.content.as_str()]).collect();
            texts.extend(own.iter().flat_map(|(_, persona, post)| [*persona, *post]));
            Some(embed_all(e, texts).await?)
        }
    };

    let stages: BTreeSet<u32> = seen.values().map(|s| s.stage).collect();
    let mut engagement = Vec::new();
    for stage in stages {
        let ex: Vec<Exposure<'_>> = seen
            .iter()
            .filter(|(_, s)| s.stage == stage)
            .map(|((a, p), s)| Exposure {
                persona: persona_text(a),
                post: &posts[p].0.content,
                liked: s.done[0],
                reblogged: s.done[1],
                commented: s.done[2],
            })
            .collect();
        let split = |e: &metrics::EngagementSimilarity| Split { engaged: e.engaged, not_engaged: e.not_engaged, delta: e.delta() };
        let by_tfidf = metrics::engagement_similarity(&ex, tfidf::similarity);
        let by_embed = vectors.as_ref().map(|v| metrics::engagement_similarity(&ex, |a, b| embedded_cosine(v, a, b)));
        for (i, t) in by_tfidf.iter().enumerate() {
            engagement.push(Engagement {
                stage,
                action: t.action,
                engaged_count: t.engaged_count,
                not_engaged_count: t.not_engaged_count,
                tfidf: split(t),
                embedding: by_embed.as_ref().map(|e| split(&e[i])),
            });
        }
    }

    let own_stages: BTreeSet<u32> = own.iter().map(|o| o.0).collect();
    let own_posts = own_stages
        .into_iter()
        .map(|stage| {
            let of_stage = || own.iter().filter(move |o| o.0 == stage);
            OwnPosts {
                stage,
                posts: of_stage().count(),
                tfidf: mean(of_stage().map(|(_, a, b)| tfidf::similarity(a, b))),
                embedding: vectors.as_ref().and_then(|v| mean(of_stage().map(|(_, a, b)| embedded_cosine(v, a, b)))),
            }
        })
        .collect();

    let mut texts: BTreeMap<(u32, TextKind), Vec<&str>> = BTreeMap::new();
    for (p, stage) in posts.values().filter(|(p, _)| !input.context.contains(&p.post_id)) {
        texts.entry((*stage, TextKind::of(p))).or_default().push(&p.content);
    }
    let diversity = texts
        .iter()
        .map(|((stage, kind), t)| Diversity {
            stage: *stage,
            kind: *kind,
            texts: t.len(),
            distinct_1: metrics::distinct_n(t, 1).map(|d| d * 100.0),
            distinct_2: metrics::distinct_n(t, 2).map(|d| d * 100.0),
        })
        .collect();

    let followers = followers(&agents, input.follows)?;
    let actions = actions(&acts, input.skipped, preset);
    let top_posts = top_posts(&acts, &posts);
    let index = if input.reviews.is_empty() {
        ReviewIndex::default()
    } else {
        ReviewIndex::build(ReviewRows { agents: input.agents, posts: input.posts, actions: input.actions, preset })?
    };
    let reviewed: BTreeSet<i64> = input
        .reviews
        .iter()
        .filter_map(|r| index.get(&r.item_id))
        .filter(|i| matches!(i.kind, ReviewKind::PostText | ReviewKind::CommentText))
        .filter_map(|i| i.post)
        .collect();
    let (quality, judged) = match judge {
        Some(j) => {
            let (q, ratings) = judge_quality(j, &agents, &posts, &reviewed, input.context).await?;
            (Some(q), Some(ratings))
        }
        None => (None, None),
    };
    let human = if input.reviews.is_empty() {
        None
    } else {
        let judge = quality.as_ref().zip(judged.as_ref()).map(|(q, r)| (q.judge.as_str(), r));
        Some(report_human::build(input.reviews, &index, judge)?)
    };
    let run = run_facts(&input, &agents, embedder);
    let health = health::stage_health(input.turns, input.actions);
    let interviews = interviews::tabulate(input.interviews).map_err(|(at, cause)| row_error("sim_interviews", at, cause))?;
    let by_group = by_group(&input, &acts, &posts);
    let mut report = SimReport {
        run,
        diversity,
        engagement,
        own_posts,
        followers,
        actions,
        top_posts,
        quality,
        human,
        health,
        interviews,
        by_group,
        caveats: Vec::new(),
    };
    report.caveats = caveats(&report, preset);
    Ok(report)
}

fn run_facts(input: &ReportInput<'_>, agents: &BTreeMap<i64, Agent<'_>>, embedder: Option<&dyn Embedder>) -> RunFacts {
    let count = |k| agents.values().filter(|a| a.kind == k).count();
    let last = input.turns.iter().max_by_key(|t| t.turn);
    let own: Vec<&SimPostRow> = input.posts.iter().filter(|p| !input.context.contains(&p.post_id)).collect();
    let comments = own.iter().filter(|p| p.parent_post_id.is_some()).count();
    RunFacts {
        run_id: input.agents.first().map(|a| a.run_id.clone()),
        initial_agents: count(AgentKind::Initial),
        regular_agents: count(AgentKind::Regular),
        agents_with_errors: agents.values().filter(|a| a.row.error.is_some()).count(),
        turns_planned: input.preset.turns(),
        turns_committed: input.turns.len(),
        last_turn: last.map(|t| t.turn),
        last_state_digest: last.map(|t| t.state_digest.clone()),
        posts: own.len() - comments,
        comments,
        feed_rows: input.feeds.len(),
        embedder: embedder.map(|e| e.model().to_string()),
    }
}

fn followers(agents: &BTreeMap<i64, Agent<'_>>, follows: &[SimFollowRow]) -> Result<Followers, ReportError> {
    let mut edges: BTreeSet<(i64, i64)> = BTreeSet::new();
    for (id, a) in agents {
        let known = a.persona.following.iter().map(|f| i64::from(f.0)).filter(|f| f != id && agents.contains_key(f));
        edges.extend(known.map(|f| (*id, f)));
    }
    let initial_edges = edges.len();
    for f in follows {
        if !agents.contains_key(&f.follower_id) || !agents.contains_key(&f.followee_id) {
            let at = format!("turn {} follower {} followee {}", f.turn, f.follower_id, f.followee_id);
            return Err(row_error(sim_follows::TABLE, at, "names an agent not in the run"));
        }
        edges.insert((f.follower_id, f.followee_id));
    }
    let mut counts: BTreeMap<i64, usize> = agents.keys().map(|a| (*a, 0)).collect();
    for (_, followee) in &edges {
        *counts.entry(*followee).or_default() += 1;
    }
    let of_kind = |regular_only: bool| -> Vec<(AgentId, usize)> {
        counts.iter().filter(|(a, _)| !regular_only || agents[a].kind == AgentKind::Regular).map(|(a, c)| (agents[a].id, *c)).collect()
    };
    let (all, regular) = (metrics::follower_histogram(&of_kind(false)), metrics::follower_histogram(&of_kind(true)));
    let bins = FOLLOWER_BINS
        .iter()
        .enumerate()
        .map(|(i, (lo, hi))| FollowerBin { lo: *lo, hi: (*hi != usize::MAX).then_some(*hi), all: all[i], regular: regular[i] })
        .collect();
    let mut ranked: Vec<(i64, usize)> = counts.into_iter().filter(|(_, c)| *c > 0).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let top = ranked
        .into_iter()
        .take(TOP)
        .map(|(a, followers)| Followed { agent_id: a, username: agents[&a].row.username.clone(), kind: agents[&a].kind, followers })
        .collect();
    Ok(Followers { bins, top, initial_edges, added_edges: edges.len() - initial_edges })
}

fn zero_counts() -> BTreeMap<ActionKind, u64> {
    ActionKind::ALL.into_iter().map(|k| (k, 0)).collect()
}

fn actions(acts: &[Act<'_>], skipped: &[(i64, StepFailure)], preset: &Preset) -> Actions {
    let acts: Vec<&Act<'_>> = acts.iter().filter(|a| a.first).collect();
    let skipped_stage = |turn: i64| u32::try_from(turn).ok().and_then(|t| preset.phase(Turn(t))).map(stage_number);
    let applied = acts.iter().filter(|a| a.applied);
    let by_stage =
        metrics::actions_per_stage(applied.clone().map(|a| (if a.stage == 0 { Phase::Seeding } else { Phase::Stage(a.stage) }, a.kind)));
    let mut stages: BTreeSet<u32> = acts.iter().map(|a| a.stage).collect();
    stages.extend(skipped.iter().filter_map(|(t, _)| skipped_stage(*t)));
    let per_stage = stages
        .into_iter()
        .map(|stage| {
            let mut counts = zero_counts();
            counts.extend(by_stage.iter().filter(|((s, _), _)| *s == stage).map(|((_, k), n)| (*k, *n)));
            StageActions {
                stage,
                applied: counts,
                failed: acts.iter().filter(|a| a.stage == stage && !a.applied).count() as u64,
                skipped: skipped.iter().filter(|(t, _)| skipped_stage(*t) == Some(stage)).count() as u64,
            }
        })
        .collect();
    let last = acts.iter().map(|a| a.row.turn).max();
    let mut per_turn: Vec<TurnActions> = (0..last.map_or(0, |t| t + 1))
        .map(|t| {
            let turn = t as u32;
            TurnActions { turn, stage: preset.phase(Turn(turn)).map(stage_number), applied: zero_counts() }
        })
        .collect();
    for a in applied {
        if let Some(n) = per_turn.get_mut(a.row.turn as usize).and_then(|t| t.applied.get_mut(&a.kind)) {
            *n += 1;
        }
    }
    let mut causes: BTreeMap<String, u64> = BTreeMap::new();
    for a in acts.iter().filter(|a| !a.applied) {
        *causes.entry(error_cause(a.row.error.as_deref().unwrap_or("no cause recorded"))).or_default() += 1;
    }
    for (_, f) in skipped {
        *causes.entry(format!("{} skipped: {}", f.action.as_str(), error_cause(&f.cause))).or_default() += 1;
    }
    let mut top_errors: Vec<ErrorCause> = causes.into_iter().map(|(cause, count)| ErrorCause { cause, count }).collect();
    top_errors.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.cause.cmp(&b.cause)));
    top_errors.truncate(TOP);
    Actions { per_stage, per_turn, failed: acts.iter().filter(|a| !a.applied).count() as u64, skipped: skipped.len() as u64, top_errors }
}

fn top_posts(acts: &[Act<'_>], posts: &BTreeMap<i64, (&SimPostRow, u32)>) -> Vec<TopPost> {
    let mut counts: BTreeMap<i64, [u64; 3]> = BTreeMap::new();
    for a in acts.iter().filter(|a| a.applied) {
        if let (Some(i), Some(p)) = (ENGAGEMENTS.iter().position(|k| *k == a.kind), a.row.post_id) {
            counts.entry(p).or_default()[i] += 1;
        }
    }
    let mut ranked: Vec<(i64, [u64; 3])> = counts.into_iter().filter(|(p, _)| posts.contains_key(p)).collect();
    ranked.sort_by(|a, b| b.1.iter().sum::<u64>().cmp(&a.1.iter().sum::<u64>()).then(a.0.cmp(&b.0)));
    ranked
        .into_iter()
        .take(TOP)
        .map(|(post_id, [likes, reblogs, comments])| {
            let (p, stage) = posts[&post_id];
            TopPost { post_id, author_id: p.author_id, stage, likes, reblogs, comments, excerpt: excerpt(&p.content, 120) }
        })
        .collect()
}

/// One judge call; deterministic settings so a rerun can reproduce it.
async fn rate(model: &dyn ChatModel, persona: &Persona, kind: TextKind, text: &str) -> Result<some_jobs::chat::ChatResponse, ModelError> {
    let prompt = quality::prompt(persona, kind.as_str(), text);
    let request = ChatRequest {
        messages: vec![Message::user(prompt)],
        temperature: Some(0.0),
        response_format: Some(JsonSchema::new("quality", quality::json_schema())),
        ..Default::default()
    };
    model.chat(&request).await
}

/// Table 2's ratings, and every text's rating by post id; `reviewed` texts
/// are rated besides the sample.
async fn judge_quality(
    judge: Judge<'_>,
    agents: &BTreeMap<i64, Agent<'_>>,
    posts: &BTreeMap<i64, (&SimPostRow, u32)>,
    reviewed: &BTreeSet<i64>,
    context: &BTreeSet<i64>,
) -> Result<(QualityReport, BTreeMap<i64, quality::Quality>), ReportError> {
    let mut groups: BTreeMap<(u32, TextKind), Vec<&SimPostRow>> = BTreeMap::new();
    for (p, stage) in posts.values().filter(|(p, s)| *s > 0 && !context.contains(&p.post_id)) {
        groups.entry((*stage, TextKind::of(p))).or_default().push(p);
    }
    let picked: Vec<((u32, TextKind), &SimPostRow)> = groups
        .iter()
        .flat_map(|(key, rows)| {
            let mut at: BTreeSet<usize> = spread(rows.len(), judge.sample).into_iter().collect();
            at.extend(rows.iter().enumerate().filter(|(_, p)| reviewed.contains(&p.post_id)).map(|(i, _)| i));
            at.into_iter().map(|i| (*key, rows[i]))
        })
        .collect();
    // Collected first: a stream over a borrowing closure would make the
    // report's future lose `Send`.
    let calls: Vec<_> = picked.iter().map(|((_, kind), p)| rate(judge.model, &agents[&p.author_id].persona, *kind, &p.content)).collect();
    let replies: Vec<_> = futures::stream::iter(calls).buffered(JUDGE_CONCURRENCY).collect().await;
    #[derive(Default)]
    struct Tally {
        sampled: usize,
        rated: Vec<quality::Quality>,
        failures: Vec<JudgeFailure>,
    }
    let mut out: BTreeMap<(u32, TextKind), Tally> = BTreeMap::new();
    let mut ratings = BTreeMap::new();
    for ((key, p), reply) in picked.iter().zip(replies) {
        let entry = out.entry(*key).or_default();
        entry.sampled += 1;
        let rating = match reply {
            Err(e @ ModelError::Permanent { .. }) => return Err(ReportError::Judge(e)),
            Err(e) => Err(e.to_string()),
            Ok(r) => quality::parse(&r.content).map_err(|e| e.to_string()),
        };
        match rating {
            Ok(q) => {
                ratings.insert(p.post_id, q);
                entry.rated.push(q);
            }
            Err(cause) => entry.failures.push(JudgeFailure { post_id: p.post_id, cause }),
        }
    }
    let groups = groups
        .iter()
        .map(|(key, rows)| {
            let Tally { sampled, rated, failures } = out.remove(key).unwrap_or_default();
            let avg = |f: fn(&quality::Quality) -> u8| mean(rated.iter().map(|q| f64::from(f(q))));
            QualityGroup {
                stage: key.0,
                kind: key.1,
                available: rows.len(),
                sampled,
                rated: rated.len(),
                informativeness: avg(|q| q.informativeness),
                consistency: avg(|q| q.consistency),
                humanness: avg(|q| q.humanness),
                failures,
            }
        })
        .collect();
    Ok((QualityReport { judge: judge.model.name().to_string(), sample: judge.sample, groups }, ratings))
}

fn caveats(r: &SimReport, preset: &Preset) -> Vec<String> {
    let mut out: Vec<String> = health::warnings(&r.health).into_iter().map(|w| format!("Warning: {w}.")).collect();
    out.push(format!(
        "Table 1's similarity columns are the paper's BERTScore and NLI C.score, which need models this report does not run; ours are TF-IDF cosine{}. Compare the sign and rough size of each Δ, not the levels.",
        r.run.embedder.as_ref().map_or(String::new(), |m| format!(" and the cosine of {m}"))
    ));
    let agents = r.run.initial_agents + r.run.regular_agents;
    let paper = Preset::paper();
    if agents != paper.agents() as usize || r.run.turns_committed != paper.turns() as usize || *preset != paper {
        out.push(format!(
            "This run has {agents} agents and {} committed turns of {}; the paper ran 150 initial and 300 regular agents, 1,050 seed posts and two one-week stages (337 turns), so its figures are a reference, not a target.",
            r.run.turns_committed, r.run.turns_planned
        ));
    }
    out.push(
        "Distinct-n falls as a corpus grows, and the paper does not give its corpus sizes: compare Distinct-n only between corpora of similar size."
            .into(),
    );
    match &r.quality {
        None => out.push("Text quality (Table 2) was not judged: no judge model was given.".into()),
        Some(q) => out.push(format!(
            "Table 2's judge was gpt-4-1106-preview on 120 posts and 120 comments; ours is {} on up to {} texts per stage and kind.",
            q.judge, q.sample
        )),
    }
    out.push("Figure 6 counts followers of the 300 regular agents: most have few or none, two have more than 100.".into());
    out.extend(report_human::caveats(r.human.as_ref()));
    out
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
