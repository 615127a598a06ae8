//! The agent step: one agent's turn as a pure function of its persona,
//! plan, memory, the feed it is shown and a chat model. This is what an
//! LLM worker calls; the platform applies the returned actions later, with
//! every other agent's, in (agent, seq) order.
//!
//! Within a turn the agent, in this order:
//! 1. browses the feed ([`Action::Browse`] of every post shown);
//! 2. for each post, while the plan's quotas last (see [`Plan::quotas`]),
//!    decides on like, reblog and comment with the persona items relevant
//!    to that post (the dynamic persona);
//! 3. if it posts this turn, asks for topics, then for each topic retrieves
//!    the persona items and the knowledge (BM25, filtered by T_k), writes
//!    the post, and checks it against its earlier posts (T_p): a duplicate
//!    is written once more, then dropped as a recorded failure;
//! 4. if two simulated days have passed since its last reflection,
//!    reflects on the posts it reacted to and follows whom it chose.
//!
//! A reply that cannot be read is asked again (with a different seed and a
//! message naming what was wrong) up to `max_attempts` times, then recorded
//! as a [`StepFailure`] and that part of the turn is skipped; a model or
//! embedder error fails the whole step (the worker retries the turn), so a
//! step is either complete or has no effect. Memory records
//! what the agent decided, before the platform rules on it.
//!
//! A step is sent only what it needs of the agent's memory (a [`Recall`])
//! and returns the changes it made ([`Remembered`]), which the coordinator
//! applies to the memory it holds: a turn's messages and results stay the
//! same size however long the run has gone on.

use serde::{Deserialize, Serialize};
use some_schemas::sim::ActionKind;

use crate::agent::decide::{self, Decision, FeedPost};
use crate::agent::decide_feed;
use crate::agent::dynamic::{DynamicSettings, Relevance, persona_for};
use crate::agent::knowledge::{KnowledgeSettings, PassageStore};
use crate::agent::memory::{Entry, Recall, Remembered, Remembers};
use crate::agent::persona::Persona;
use crate::agent::plan::Plan;
use crate::agent::reflect;
use crate::error::{Question, ReplyError, ask_until};
use crate::platform::ids::{AgentId, PostId, Turn};
use crate::platform::{Action, AgentAction};
use some_jobs::chat::{ChatModel, JsonSchema, ModelError, Usage};
use some_jobs::embed::EmbedError;

/// How an agent decides on the posts it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BrowseMode {
    /// One call per post shown, with that post's persona items (the paper).
    PerPost,
    /// One call for the whole feed ([`crate::agent::decide_feed`]).
    Batched,
}

/// How agents act.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSettings {
    pub browse: BrowseMode,
    pub knowledge: KnowledgeSettings,
    pub dynamic: DynamicSettings,
    /// Tries per model question before the part is recorded as a failure.
    pub max_attempts: u32,
    pub temperature: Option<f32>,
    pub seed: Option<u64>,
    /// Reflect (and follow).
    pub reflection: bool,
    /// Turns between reflections: the paper's two simulated days, shorter
    /// only for runs too short to reach them (the demo).
    #[serde(default = "two_days")]
    pub reflect_every: u32,
}

fn two_days() -> u32 {
    reflect::REFLECTION_EVERY
}

impl Default for StepSettings {
    fn default() -> Self {
        StepSettings {
            browse: BrowseMode::PerPost,
            knowledge: KnowledgeSettings::default(),
            dynamic: DynamicSettings::default(),
            max_attempts: 2,
            temperature: None,
            seed: None,
            reflection: true,
            reflect_every: reflect::REFLECTION_EVERY,
        }
    }
}

/// What one agent's turn starts from.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    pub persona: &'a Persona,
    pub plan: &'a Plan,
    /// What the step needs of the agent's memory ([`Held::for_step`](crate::agent::memory::Held::for_step)).
    pub memory: &'a Recall,
    pub turn: Turn,
    pub feed: &'a [FeedPost],
    /// Posts to write this turn: [`Plan::posts_per_posting`] in a posting
    /// turn, the seed count when seeding, else 0.
    pub posts: u32,
}

/// What the step talks to.
#[derive(Clone, Copy)]
pub struct StepContext<'a> {
    pub model: &'a dyn ChatModel,
    pub relevance: Relevance<'a>,
    /// The knowledge store; `None` writes posts without knowledge (the "w/o KB" ablation).
    pub knowledge: Option<&'a PassageStore>,
    pub settings: &'a StepSettings,
}

/// The topic and adopted knowledge of a post the step wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostNote {
    pub seq: u32,
    pub topic: String,
    pub knowledge: Vec<u32>,
}

/// A part of the turn that was skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFailure {
    pub action: ActionKind,
    pub post: Option<PostId>,
    pub cause: String,
}

/// The agent's turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub actions: Vec<AgentAction>,
    pub posts: Vec<PostNote>,
    /// The changes to the agent's memory, in order.
    pub remembered: Vec<Remembered>,
    pub failures: Vec<StepFailure>,
    pub calls: u32,
    pub usage: Usage,
}

/// Why a step could not run at all.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StepError {
    #[error(transparent)]
    Model(#[from] ModelError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

struct Run<'a> {
    ctx: StepContext<'a>,
    agent: AgentId,
    /// The sampling seed of this agent's calls in this turn: the run's seed
    /// mixed with agent and turn, so two agents (or two weeks) asked the
    /// same question are not bound to the same answer, and a replay is.
    seed: Option<u64>,
    step: Step,
    /// The memory as the step sees it: as sent, with this turn's changes.
    recall: Recall,
}

impl Run<'_> {
    fn push(&mut self, action: Action) -> u32 {
        let seq = self.step.actions.len() as u32;
        self.step.actions.push(AgentAction { agent: self.agent, seq, action });
        seq
    }

    fn remember(&mut self, change: Remembered) {
        self.recall.apply(&change);
        self.step.remembered.push(change);
    }

    fn fail(&mut self, action: ActionKind, post: Option<PostId>, cause: impl std::fmt::Display) {
        self.step.failures.push(StepFailure { action, post, cause: cause.to_string() });
    }

    /// Asks until the reply parses, up to `max_attempts`.
    async fn ask<T>(&mut self, prompt: String, parse: impl Fn(&str) -> Result<T, ReplyError>) -> Result<Result<T, ReplyError>, StepError> {
        self.ask_question(Question::new(prompt), parse).await
    }

    /// Asks `question` with the settings' temperature and seed until the
    /// reply parses, up to `max_attempts`, each retry a different request
    /// ([`crate::error::retry_request`]).
    async fn ask_question<T>(
        &mut self,
        question: Question,
        parse: impl Fn(&str) -> Result<T, ReplyError>,
    ) -> Result<Result<T, ReplyError>, StepError> {
        let s = self.ctx.settings;
        let question = Question { temperature: s.temperature, ..question };
        let outcome = ask_until(self.ctx.model, &question.into_request(self.seed), s.max_attempts, parse).await?;
        self.step.calls += outcome.calls;
        self.step.usage += outcome.usage;
        Ok(outcome.result.map_err(|(e, _)| e))
    }
}

/// Runs one agent's turn (see the module doc).
pub async fn agent_step(input: StepInput<'_>, ctx: StepContext<'_>) -> Result<Step, StepError> {
    let step =
        Step { actions: Vec::new(), posts: Vec::new(), remembered: Vec::new(), failures: Vec::new(), calls: 0, usage: Usage::default() };
    let agent = input.persona.id;
    let seed = ctx.settings.seed.map(|s| crate::agent::activity::mix(s, agent, input.turn));
    let mut run = Run { ctx, agent, seed, step, recall: input.memory.clone() };
    browse(&mut run, &input).await?;
    if input.posts > 0 {
        write_posts(&mut run, &input).await?;
    }
    if ctx.settings.reflection && reflect::due(run.recall.last_reflection, input.turn, ctx.settings.reflect_every) {
        reflect_and_follow(&mut run, &input).await?;
    }
    Ok(run.step)
}

async fn browse(run: &mut Run<'_>, input: &StepInput<'_>) -> Result<(), StepError> {
    if input.feed.is_empty() {
        return Ok(());
    }
    run.push(Action::Browse { posts: input.feed.iter().map(|p| p.id).collect() });
    let (mut likes, mut reblogs, mut comments) = input.plan.quotas(input.feed.len());
    let settings = run.ctx.settings;
    let mut batched: Option<Vec<Decision>> = None;
    if settings.browse == BrowseMode::Batched && likes + reblogs + comments > 0 {
        let query: Vec<&str> = input.feed.iter().map(|p| p.content.as_str()).collect();
        let persona = persona_for(input.persona, &query.join("\n"), &settings.dynamic, run.ctx.relevance).await?;
        let n = input.feed.len();
        match run
            .ask_question(decide_feed::question(&persona, input.feed, (likes, reblogs, comments)), |r| decide_feed::parse(r, n))
            .await?
        {
            Ok(d) => batched = Some(d),
            Err(e) => run.fail(ActionKind::Browse, None, e),
        }
    }
    for (i, post) in input.feed.iter().enumerate() {
        let mut entry = Entry {
            turn: input.turn,
            post: post.id,
            author: post.author,
            text: post.content.clone(),
            summarised: false,
            actions: Vec::new(),
            comment: None,
        };
        let decision = match (&batched, settings.browse) {
            (Some(all), _) => all.get(i).cloned(),
            (None, BrowseMode::PerPost) if likes + reblogs + comments > 0 => {
                let persona = persona_for(input.persona, &post.content, &settings.dynamic, run.ctx.relevance).await?;
                match run
                    .ask_question(decide::decide_question(&persona, &post.author.to_string(), &post.content), decide::parse_decision)
                    .await?
                {
                    Ok(d) => Some(d),
                    Err(e) => {
                        run.fail(ActionKind::Browse, Some(post.id), e);
                        None
                    }
                }
            }
            _ => None,
        };
        if let Some(Decision { like, reblog, comment }) = decision {
            if like && likes > 0 {
                likes -= 1;
                run.push(Action::Like { post: post.id });
                entry.actions.push(ActionKind::Like);
            }
            if reblog && reblogs > 0 {
                reblogs -= 1;
                run.push(Action::Reblog { post: post.id });
                entry.actions.push(ActionKind::Reblog);
            }
            if let Some(text) = comment.filter(|_| comments > 0) {
                comments -= 1;
                run.push(Action::Comment { post: post.id, text: text.clone() });
                entry.actions.push(ActionKind::Comment);
                entry.comment = Some(text);
            }
        }
        run.remember(Remembered::Read(entry));
    }
    Ok(())
}

/// The agent's latest posts shown when it picks new topics.
const RECENT_POSTS_IN_TOPICS: usize = 5;

async fn write_posts(run: &mut Run<'_>, input: &StepInput<'_>) -> Result<(), StepError> {
    let recent: Vec<String> = run.recall.own_posts.iter().rev().take(RECENT_POSTS_IN_TOPICS).cloned().collect();
    let prompt = decide::topics_prompt(&input.persona.full_text(), input.posts, &recent);
    let topics = match run.ask(prompt, decide::parse_topics).await? {
        Ok(t) => t,
        Err(e) => {
            run.fail(ActionKind::Post, None, e);
            return Ok(());
        }
    };
    if topics.len() < input.posts as usize {
        run.fail(ActionKind::Post, None, format!("asked for {} topics, the reply has {}", input.posts, topics.len()));
    }
    let step_settings = run.ctx.settings;
    let settings: &KnowledgeSettings = &step_settings.knowledge;
    for topic in topics.into_iter().take(input.posts as usize) {
        let persona = persona_for(input.persona, &topic, &run.ctx.settings.dynamic, run.ctx.relevance).await?;
        let adopted: Vec<(u32, String)> = match run.ctx.knowledge {
            Some(store) => {
                let found = store.search(&topic, settings.retrieve);
                settings
                    .adopt(&found, input.persona.knowledge_text())
                    .into_iter()
                    .map(|(p, _)| (p.id, format!("{}: {}", p.title, p.text)))
                    .collect()
            }
            None => Vec::new(),
        };
        let texts: Vec<String> = adopted.iter().map(|(_, t)| t.clone()).collect();
        let prompt = decide::post_prompt(&persona, &topic, &texts);
        let (mut written, mut duplicate) = (None, None);
        for _ in 0..2 {
            match run.ask(prompt.clone(), decide::clean_post).await? {
                Ok(text) => {
                    let earlier: Vec<&str> = run.recall.own_posts.iter().map(String::as_str).collect();
                    match settings.duplicate_of(&text, &earlier) {
                        Some((_, sim)) => duplicate = Some(sim),
                        None => {
                            written = Some(text);
                            break;
                        }
                    }
                }
                Err(e) => {
                    run.fail(ActionKind::Post, None, e);
                    duplicate = None;
                    break;
                }
            }
        }
        match (written, duplicate) {
            (Some(text), _) => {
                let seq = run.push(Action::Post { text: text.clone() });
                run.remember(Remembered::Posted { text });
                adopted.iter().for_each(|(id, _)| run.remember(Remembered::Adopted { passage: *id }));
                run.step.posts.push(PostNote { seq, topic, knowledge: adopted.iter().map(|(id, _)| *id).collect() });
            }
            (None, Some(sim)) => run.fail(
                ActionKind::Post,
                None,
                format!("the post on {topic:?} repeats an earlier post twice (TF-IDF similarity {sim:.3})"),
            ),
            (None, None) => {}
        }
    }
    Ok(())
}

async fn reflect_and_follow(run: &mut Run<'_>, input: &StepInput<'_>) -> Result<(), StepError> {
    // The engaged entries since the last reflection that short-term memory
    // still holds after this turn's reads (the recall keeps no others), the
    // latest HISTORY_CAP.
    let mut entries: Vec<Entry> = run.recall.engaged.iter().map(|(_, e)| e.clone()).collect();
    entries.drain(..entries.len().saturating_sub(reflect::HISTORY_CAP));
    if entries.is_empty() {
        run.remember(Remembered::Reflected { turn: input.turn, summary: None });
        return Ok(());
    }
    for e in &mut entries {
        if e.summarised || !reflect::needs_summary(&e.text) {
            continue;
        }
        match run
            .ask(reflect::summary_prompt(&e.text), |r| {
                decide::clean_post(r).map_err(|_| ReplyError::Unreadable { what: "summary", cause: "the reply is empty".into() })
            })
            .await?
        {
            Ok(summary) => {
                (e.text, e.summarised) = (summary.clone(), true);
                run.remember(Remembered::Summarised { turn: e.turn, post: e.post, text: summary });
            }
            Err(err) => run.fail(ActionKind::Follow, Some(e.post), err),
        }
    }
    let refs: Vec<&Entry> = entries.iter().collect();
    let query: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
    let persona = persona_for(input.persona, &query.join(" "), &run.ctx.settings.dynamic, run.ctx.relevance).await?;
    let mut authors: Vec<AgentId> = entries.iter().map(|e| e.author).filter(|a| *a != run.agent).collect();
    authors.dedup();
    let question = Question {
        schema: reflect::json_schema(&authors).map(|s| JsonSchema::new("follow", s)),
        ..Question::new(reflect::reflect_prompt(&persona, &refs))
    };
    match run.ask_question(question, |r| reflect::parse_follow(r, &authors)).await? {
        Ok(follows) => {
            let names: Vec<String> = follows.iter().map(ToString::to_string).collect();
            for agent in follows {
                run.push(Action::Follow { agent });
            }
            let followed = if names.is_empty() { "no one".to_string() } else { format!("user {}", names.join(", user ")) };
            let summary = format!("Day {}: looked back at {} posts and chose to follow {followed}.", input.turn.day(), entries.len());
            run.remember(Remembered::Reflected { turn: input.turn, summary: Some(summary) });
        }
        Err(e) => {
            run.fail(ActionKind::Follow, None, e);
            run.remember(Remembered::Reflected { turn: input.turn, summary: None });
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;
