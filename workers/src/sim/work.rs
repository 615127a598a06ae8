//! What an LLM worker does with a simulation shard: set agents up (enrich,
//! plan) or run their steps for a turn, and write the results once.
//!
//! A reply the model keeps getting wrong is recorded (an agent row with its
//! error, a step failure) and the shard goes on; a model or embedder that
//! cannot be reached fails the shard, which is retried whole: nothing of it
//! was written.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::prelude::{col, lit};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use some_jobs::chat::{ChatModel, Usage};
use some_jobs::embed::Embedder;
use some_jobs::progress::Progress;
use some_schemas::sim::{AgentKind, SimAgentRow, SimStepRow, sim_agents};
use some_schemas::{KnowledgeRow, RunId};
use some_sim::agent::dynamic::Relevance;
use some_sim::agent::select::Selector;
use some_sim::agent::{enrich, plan};
use some_sim::error::AskError;
use some_sim::{AgentId, PassageStore, Persona, Plan, StepContext, StepInput, agent_step};
use tokio::sync::OnceCell;

use super::shard::{AgentTurn, NewAgent, ShardWork};
use super::spec::{KnowledgeSource, RelevanceSource, SimRecord, SimSpec, load_sim};
use crate::error::{Error, Result};
use crate::handler::{Cache, JobContext};
use crate::lake::Lake;
use crate::llm::{ClientSettings, chat_model, installed_embedder};

/// What the shards of one run need, built once per worker process.
pub struct SimRunner {
    lake: Lake,
    spec: SimSpec,
    model: Arc<dyn ChatModel>,
    /// Each model group's selector and model, in the spec's order.
    groups: Vec<(Selector, Arc<dyn ChatModel>)>,
    embedder: Option<Arc<dyn Embedder>>,
    knowledge: Option<PassageStore>,
    /// Personas and plans as set up; read at the first turn shard.
    agents: OnceCell<HashMap<AgentId, Agent>>,
}

impl SimRunner {
    pub async fn for_spec(lake: &Lake, spec: &SimSpec, client: &ClientSettings, threads: usize) -> Result<SimRunner> {
        let model = chat_model(&spec.model, &spec.endpoints, client, threads)?;
        let groups = spec
            .groups
            .iter()
            .map(|g| Ok((g.selector().map_err(Error::Invalid)?, chat_model(&g.model, &g.endpoints, client, threads)?)))
            .collect::<Result<_>>()?;
        let embedder = match spec.relevance {
            RelevanceSource::Tfidf => None,
            RelevanceSource::Embedder => Some(installed_embedder(&spec.embedding_model)?.ok_or_else(|| {
                Error::Invalid(format!("the run ranks persona items with the built-in embedder {0}, which is not installed here: run `some models fetch {0}`, or start the run with --relevance tfidf", spec.embedding_model))
            })?),
        };
        let knowledge = load_knowledge(lake, &spec.knowledge).await?;
        Ok(SimRunner { lake: lake.clone(), spec: spec.clone(), model, groups, embedder, knowledge, agents: OnceCell::new() })
    }

    /// Runs one shard unless its results are written already.
    pub async fn run_shard(self: &Arc<Self>, work: ShardWork, progress: &dyn Progress) -> Result<()> {
        let run_id = &self.spec.run_id;
        let path = work.results_path(run_id);
        if self.lake.exists(&path).await? {
            tracing::info!(shard = %work.shard_id(run_id), "results already written: nothing to do");
            return Ok(());
        }
        let shard = work.shard_id(run_id);
        let wrote = match work {
            ShardWork::Setup { agents, .. } => {
                let rows = self.each(agents, progress, |this, agent| async move { this.set_up(&agent).await }.boxed()).await?;
                self.lake.put_once(&path, rows).await?
            }
            ShardWork::Turn { turn, agents, .. } => {
                // Read once here, before the agents' tasks share it.
                self.agents().await?;
                let rows = self
                    .each(agents, progress, move |this, agent| {
                        async move {
                            let known = this.agents().await?;
                            this.step(known, turn, &agent).await
                        }
                        .boxed()
                    })
                    .await?;
                self.lake.put_once(&path, rows).await?
            }
        };
        if !wrote {
            tracing::info!(%shard, "another worker wrote this shard first; its results stand");
        }
        Ok(())
    }

    /// Runs `work` for each agent, `concurrency` at once, each a task of its
    /// own (a shard's agents use every core: prompts, relevance and replies
    /// are CPU work when the model answers fast); results in order. An
    /// agent starts as soon as any other ends, not only the oldest: the
    /// shard's calls stay `concurrency` deep behind a slow one. Each agent
    /// done advances `progress` by one.
    async fn each<T, R>(
        self: &Arc<Self>,
        agents: Vec<T>,
        progress: &dyn Progress,
        work: impl Fn(Arc<Self>, T) -> BoxFuture<'static, Result<R>>,
    ) -> Result<Vec<R>>
    where
        R: Send + 'static,
    {
        let tasks = agents.into_iter().enumerate().map(|(at, agent)| {
            let task = tokio::spawn(work(self.clone(), agent));
            async move {
                let done = task.await.map_err(|e| Error::Task(format!("an agent's step stopped: {e}")))?;
                progress.advance(1);
                done.map(|r| (at, r))
            }
        });
        let mut done: Vec<(usize, R)> = futures::stream::iter(tasks).buffer_unordered(self.spec.concurrency.max(1)).try_collect().await?;
        done.sort_unstable_by_key(|(at, _)| *at);
        Ok(done.into_iter().map(|(_, r)| r).collect())
    }

    /// The model of the agent's group ([`SimSpec::group_of`]).
    fn model_for(&self, persona: &Persona) -> &dyn ChatModel {
        let kind = self.spec.preset.kind_of(persona.id);
        let group = self.groups.iter().find(|(s, _)| s.matches(persona, kind, self.spec.seed));
        group.map_or(self.model.as_ref(), |(_, m)| m.as_ref())
    }

    async fn set_up(&self, new: &NewAgent) -> Result<SimAgentRow> {
        let (settings, run_id) = (&self.spec.step, self.spec.run_id.as_str());
        let model = self.model_for(&new.persona);
        let mut persona = new.persona.clone();
        let recorded = |e: AskError| match e {
            AskError::Model(e) => Err(Error::Model(e)),
            reply @ AskError::Reply { .. } => Ok(reply.to_string()),
        };
        let mut error = None;
        if self.spec.enrich {
            match enrich::enrich(model, &persona, settings.max_attempts, settings.seed).await {
                Ok(done) => persona.profile = Some(Box::new(done.value)),
                Err(e) => error = Some(format!("enrichment: {}", recorded(e)?)),
            }
        }
        // Initial agents only write their seed posts: they need no plan.
        let mut plan = None;
        if error.is_none() && new.kind == AgentKind::Regular {
            match plan::make(model, &persona, new.activity, settings.max_attempts, settings.seed).await {
                Ok(done) => plan = Some(done.value),
                Err(e) => error = Some(format!("planning: {}", recorded(e)?)),
            }
        }
        Ok(some_sim::rows::agent_row(run_id, &persona, new.kind, new.activity, plan.as_ref(), error))
    }

    async fn step(&self, known: &HashMap<AgentId, Agent>, now: some_sim::Turn, turn: &AgentTurn) -> Result<SimStepRow> {
        let Agent { persona, plan, .. } = known
            .get(&turn.agent)
            .ok_or_else(|| Error::Invalid(format!("agent {} has no set-up row in sim_agents of run {}", turn.agent, self.spec.run_id)))?;
        let persona = turn.persona.as_ref().unwrap_or(persona);
        let idle = Plan::idle();
        let input = StepInput {
            persona,
            plan: plan.as_ref().unwrap_or(&idle),
            memory: &turn.memory,
            turn: now,
            feed: &turn.feed,
            posts: turn.posts,
        };
        let relevance = match &self.embedder {
            Some(e) => Relevance::Embedder(e.as_ref()),
            None => Relevance::TfIdf,
        };
        let ctx = StepContext { model: self.model_for(persona), relevance, knowledge: self.knowledge.as_ref(), settings: &self.spec.step };
        let step = agent_step(input, ctx).await.map_err(|e| match e {
            some_sim::StepError::Model(e) => Error::Model(e),
            some_sim::StepError::Embed(e) => Error::Embed(e),
        })?;
        Ok(step_row(&self.spec.run_id, now, turn.agent, &step))
    }

    /// The run's agents as set up, read once.
    async fn agents(&self) -> Result<&HashMap<AgentId, Agent>> {
        self.agents.get_or_try_init(|| load_agents(&self.lake, self.spec.agents_run())).await
    }
}

/// The passages a run's posts take knowledge from; `None` for none. A
/// source that has no passage is an error: a run asked for knowledge must
/// not quietly write posts without it.
pub async fn load_knowledge(lake: &Lake, source: &KnowledgeSource) -> Result<Option<PassageStore>> {
    let store = match source {
        KnowledgeSource::None => return Ok(None),
        KnowledgeSource::Builtin => some_sim::builtin_passages()?,
        KnowledgeSource::Lake => {
            let rows: Vec<KnowledgeRow> = lake.read(&lake.session().await?, None).await?;
            PassageStore::from_knowledge(&rows)
        }
        KnowledgeSource::Hotpotqa { path } => some_sim::load_hotpotqa(path)?,
        KnowledgeSource::Passages { path } => some_sim::load_passages(path)?,
    };
    if store.is_empty() {
        return Err(Error::Invalid(format!(
            "the knowledge source {source} has no passage: choose another with --knowledge, or --knowledge none"
        )));
    }
    Ok(Some(store))
}

/// The step of one agent in one turn as its `sim_steps` row.
fn step_row(run_id: &RunId, turn: some_sim::Turn, agent: AgentId, step: &some_sim::Step) -> SimStepRow {
    let Usage { prompt_tokens, completion_tokens, .. } = step.usage;
    SimStepRow {
        turn: i64::from(turn.0),
        agent_id: i64::from(agent.0),
        actions: json(&step.actions),
        posts: json(&step.posts),
        memory: json(&step.remembered),
        failures: json(&step.failures),
        calls: i64::from(step.calls),
        prompt_tokens: prompt_tokens as i64,
        completion_tokens: completion_tokens as i64,
        run_id: run_id.to_string(),
    }
}

/// Plain data as JSON, which cannot fail.
fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain data serializes")
}

/// An agent as set up.
#[derive(Debug, Clone)]
pub struct Agent {
    pub persona: Persona,
    /// `None` for agents that only seed, and for those whose setup failed.
    pub plan: Option<Plan>,
    /// The Pareto activity level.
    pub level: f64,
    /// Why its setup failed; such an agent takes no part, seeding included.
    pub setup_error: Option<String>,
}

/// A run's agents as set up, from `sim_agents`.
pub async fn load_agents(lake: &Lake, run_id: &RunId) -> Result<HashMap<AgentId, Agent>> {
    let rows: Vec<SimAgentRow> = lake.read(&lake.session().await?, Some(col(sim_agents::run_id).eq(lit(run_id.as_str())))).await?;
    let mut out = HashMap::with_capacity(rows.len());
    for r in rows {
        let bad = |what: &str, e: serde_json::Error| {
            Error::Invalid(format!("sim_agents of run {run_id}, agent {}: the {what} does not read: {e}", r.agent_id))
        };
        let persona: Persona = serde_json::from_str(&r.persona).map_err(|e| bad("persona", e))?;
        let plan: Option<Plan> = r.plan.as_deref().map(serde_json::from_str).transpose().map_err(|e| bad("plan", e))?;
        out.insert(persona.id, Agent { persona, plan, level: r.activity, setup_error: r.error });
    }
    Ok(out)
}
/// The handler of simulation shards: a runner per run.
#[derive(Default)]
pub struct SimJobs {
    sims: Cache<SimRunner>,
    /// Each run's record as last read, and when: shards look for a
    /// cancellation once a second per run, not once each (a turn of a large
    /// run has hundreds), as the coordinator does.
    records: std::sync::Mutex<HashMap<String, (Instant, SimRecord)>>,
}

/// How stale a run's record may be when a shard starts.
const RECORD_FRESH: Duration = Duration::from_secs(1);

impl SimJobs {
    /// Runs a simulation shard unless its run was cancelled.
    pub async fn run(&self, ctx: &JobContext<'_>, run_id: &RunId, payload: &str) -> Result<()> {
        let work = ShardWork::from_payload(payload)?;
        let record = self.record(ctx.lake, run_id).await?;
        if record.cancelled {
            tracing::info!(run = %run_id, "simulation cancelled: dropping its shard");
            return Ok(());
        }
        let runner = self
            .sims
            .get_or_build(run_id.to_string(), SimRunner::for_spec(ctx.lake, &record.spec, ctx.client, ctx.threads))
            .await
            .map_err(|e| e.context(format!("cannot set up simulation {run_id}")))?;
        runner.run_shard(work, ctx.progress).await
    }

    async fn record(&self, lake: &Lake, run_id: &RunId) -> Result<SimRecord> {
        let known = self.records.lock().expect("records lock").get(run_id.as_str()).cloned();
        if let Some((_, record)) = known.filter(|(at, _)| at.elapsed() < RECORD_FRESH) {
            return Ok(record);
        }
        let record = load_sim(lake, run_id).await?;
        self.records.lock().expect("records lock").insert(run_id.to_string(), (Instant::now(), record.clone()));
        Ok(record)
    }
}
