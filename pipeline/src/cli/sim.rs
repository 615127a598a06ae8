//! `some sim`: the persona-driven social-media simulation on the queue and
//! the lake: run, resume, status (once or live), cancel, report, review,
//! intervene, fork, compare, interview.
//!
//! The process that runs `sim run` or `sim resume` is the run's
//! coordinator: it decides each turn, publishes its shards and commits it.
//! With `--queue memory` it also works the shards itself; with a broker,
//! `some worker` processes do. Either way the lake is the state: kill the
//! coordinator and `sim resume` goes on from the last committed turn.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand, ValueEnum};
use some_schemas::{RunEvent, RunId};
use some_sim::evaluation::health::{did_nothing, warnings};
use some_sim::evaluation::replicates::table as replicates_table;
use some_sim::evaluation::report_html::{render_html, render_text};
use some_sim::intervention::Timed;
use some_sim::{BrowseMode, FeedSettings, Preset, StepSettings, Turn};
use some_workers::Lake;
use some_workers::executor::Executor;
use some_workers::sim::compare::compare_fork;
use some_workers::sim::interventions;
use some_workers::sim::report::{JudgeSpec, replicate_figures, sim_report};
use some_workers::sim::spec::Replicate;
use some_workers::sim::{Drive, Fork, KnowledgeSource, PersonaSet, RelevanceSource, SimSpec, Until, load_sim, record_event};

use super::flags::{ExecFlags, ModelFlags};
use super::progress::Bars;

#[derive(Debug, Subcommand)]
pub enum Sim {
    /// Start a simulation run and drive it (this process is its coordinator).
    Run(SimRun),
    /// Go on with a run from its last committed turn.
    Resume(SimResume),
    /// Turns committed, the state digest, agents, steps of the turn in progress.
    Status(SimStatus),
    /// Stop a run: its coordinator stops before the next turn, workers drop its shards.
    Cancel(super::cancel::Cancel),
    /// The paper's metrics for a run, beside the paper's figures.
    Report(SimReportCmd),
    /// Human evaluation: export items for annotators, import their scores.
    #[command(subcommand)]
    Review(super::sim_review::SimReview),
    /// Start a counterfactual run from another's committed state at a turn,
    /// with changed settings or interventions.
    Fork(SimFork),
    /// A fork against its parent from the fork's first turn, with
    /// bootstrap intervals.
    Compare(SimCompare),
    /// Submit interventions to a running or paused run (taken at the next
    /// uncommitted turn at or after --at).
    Intervene(SimIntervene),
    /// Ask agents, as they were at a committed turn, a question or a survey
    /// (stored in sim_interviews; the run is not changed).
    Interview(super::sim_interview::SimInterview),
}

impl Sim {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        match self {
            Sim::Run(cmd) => cmd.run(lake).await,
            Sim::Resume(cmd) => cmd.run(lake).await,
            Sim::Status(cmd) => cmd.run(lake).await,
            Sim::Cancel(cmd) => cmd.run(lake).await,
            Sim::Report(cmd) => cmd.run(lake).await,
            Sim::Review(cmd) => cmd.run(lake).await,
            Sim::Interview(cmd) => cmd.run(lake).await,
            Sim::Intervene(cmd) => cmd.run(lake).await,
            Sim::Fork(cmd) => cmd.run(lake).await,
            Sim::Compare(cmd) => cmd.run(lake).await,
        }
    }
}

/// The shape of a run.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PresetName {
    /// The paper's experiment: 150 initial and 300 regular agents, 1,050
    /// seed posts, two one-week stages (337 turns).
    Paper,
    /// A handful of agents for a few turns: what the demo runs.
    Demo,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BrowseName {
    /// One model call per post shown (the paper).
    PerPost,
    /// One model call for the whole feed.
    Batched,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RelevanceName {
    Embedder,
    Tfidf,
}

#[derive(Debug, Args)]
pub struct SimRun {
    #[arg(long, value_enum, default_value = "demo")]
    pub preset: PresetName,
    /// Initial (seeding) agents, instead of the preset's.
    #[arg(long)]
    pub initial: Option<u32>,
    /// Regular (interacting) agents, instead of the preset's.
    #[arg(long)]
    pub regular: Option<u32>,
    /// Seed posts in all, instead of the preset's.
    #[arg(long)]
    pub seed_posts: Option<u32>,
    /// Turns (hours) of each stage, instead of the preset's.
    #[arg(long)]
    pub stage_turns: Option<u32>,
    /// Run only the preset's first N stages (the paper's second stage
    /// shows regular agents' own posts, which a run of a few hours may not
    /// have yet).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub stages: Option<u32>,
    /// `builtin` (RecAgent's 1,000 users), `oasis-reddit:FILE`,
    /// `oasis-twitter:FILE` or `recagent:USERS[,RELATIONSHIPS]`.
    #[arg(long, default_value = "builtin", value_parser = parse_personas)]
    pub personas: PersonaSet,
    #[command(flatten)]
    pub agent: ModelFlags,
    /// Seeds activity levels, activation and the model's sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    #[arg(long, value_enum, default_value = "per-post")]
    pub browse: BrowseName,
    /// How feeds are ranked: mastodon-digest (the paper's), live (newest
    /// first) or recency-similarity (persona-post cosine × a one-day half-life).
    #[arg(long, default_value = "mastodon-digest", value_parser = clap::builder::PossibleValuesParser::new(some_sim::Rankers::builtin().names()))]
    pub ranker: String,
    /// Feeds draw from posts of the last N turns, or `all` (the default:
    /// the paper's first stage shows the turn-0 seed posts all week;
    /// mastodon_digest's own default is 12).
    #[arg(long, default_value = "all", value_parser = parse_look_back)]
    pub look_back: LookBack,
    /// Where the dynamic persona's item relevance comes from.
    #[arg(long, value_enum, default_value = "embedder")]
    pub relevance: RelevanceName,
    /// Posts shown per browse.
    #[arg(long, default_value_t = 10)]
    pub feed_limit: usize,
    /// Skip persona enrichment (plan from the persona set's own description).
    #[arg(long)]
    pub no_enrich: bool,
    /// Where posts take knowledge from: builtin (general-knowledge
    /// passages that ship), lake (the lake's knowledge table: the
    /// benchmark's misinformation reports), hotpotqa:FILE (the paper's
    /// corpus), passages:FILE (JSONL of title and text) or none.
    #[arg(long, default_value = "builtin", value_parser = KnowledgeSource::parse)]
    pub knowledge: KnowledgeSource,
    /// The same as `--knowledge none` (the paper's "w/o KB").
    #[arg(long, conflicts_with = "knowledge")]
    pub no_knowledge: bool,
    /// Every persona item in every decision (the paper's "w/o PD").
    #[arg(long)]
    pub no_dynamic_persona: bool,
    /// Stop after setup when more than this share of agents failed it.
    #[arg(long, default_value_t = 0.5)]
    pub max_setup_failures: f64,
    /// Turn off reflection (and with it following).
    #[arg(long)]
    pub no_reflection: bool,
    /// Turns between an agent's reflections (the paper's two days).
    #[arg(long, default_value_t = some_sim::agent::reflect::REFLECTION_EVERY)]
    pub reflect_every: u32,
    /// Agents per shard (the unit a worker runs and retries).
    #[arg(long, default_value_t = 50)]
    pub shard_size: usize,
    #[arg(long)]
    pub run_id: Option<RunId>,
    /// Stop before this turn (resume later with `sim resume`).
    #[arg(long)]
    pub until: Option<u32>,
    /// Model groups: a file of JSON lines {"name", "agents", "model",
    /// "endpoints"}, each giving the agents it selects (by ids, kind,
    /// share, username or description) a model of their own; the report
    /// breaks what agents did down by group.
    #[arg(long)]
    pub groups: Option<PathBuf>,
    /// Run the configuration this many times, with seeds SEED, SEED+1, ...
    /// (runs RUN-r0, RUN-r1, ... sharing RUN-r0's setup); the report gives
    /// each figure's mean and 95% interval across them.
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub replicates: Option<u32>,
    /// A file of timed interventions (JSON lines: post, remove, follow,
    /// unfollow, persona, mute, unmute, boost, unboost), checked whole
    /// before the run starts.
    #[arg(long)]
    pub interventions: Option<PathBuf>,
    #[command(flatten)]
    pub flags: ExecFlags,
}

/// How far back feeds look.
#[derive(Debug, Clone, Copy)]
pub struct LookBack(Option<u32>);

impl LookBack {
    /// Every post of the run.
    pub const ALL: LookBack = LookBack(None);
}

fn parse_look_back(s: &str) -> Result<LookBack, String> {
    if s == "all" {
        return Ok(LookBack(None));
    }
    match s.parse::<u32>() {
        Ok(n) if n > 0 => Ok(LookBack(Some(n))),
        _ => Err(format!("look-back {s:?}: expected a number of turns above 0, or all")),
    }
}

fn parse_personas(s: &str) -> Result<PersonaSet, String> {
    if s == "builtin" {
        return Ok(PersonaSet::Builtin);
    }
    let (kind, path) = s.split_once(':').ok_or_else(|| format!("personas {s:?}: expected builtin or KIND:FILE"))?;
    Ok(match kind {
        "oasis-reddit" => PersonaSet::OasisReddit { path: path.into() },
        "oasis-twitter" => PersonaSet::OasisTwitter { path: path.into() },
        "recagent" => {
            let (users, rel) = path.split_once(',').map_or((path, None), |(u, r)| (u, Some(PathBuf::from(r))));
            PersonaSet::Recagent { users: users.into(), relationships: rel }
        }
        other => return Err(format!("personas {s:?}: unknown set {other:?} (oasis-reddit, oasis-twitter, recagent)")),
    })
}

impl SimRun {
    fn spec(&self) -> anyhow::Result<SimSpec> {
        let mut preset = match self.preset {
            PresetName::Paper => Preset::paper(),
            PresetName::Demo => Preset::demo(),
        };
        preset.initial_agents = self.initial.unwrap_or(preset.initial_agents);
        preset.regular_agents = self.regular.unwrap_or(preset.regular_agents);
        preset.seed_posts = self.seed_posts.unwrap_or(preset.seed_posts);
        if let Some(turns) = self.stage_turns {
            preset.stages.iter_mut().for_each(|s| s.turns = turns);
        }
        if let Some(n) = self.stages {
            preset.stages.truncate(n as usize);
        }
        let run_id = self.run_id.clone().unwrap_or_else(RunId::new_dated);
        let mut spec = SimSpec::new(run_id, &self.agent.model, self.agent.endpoints.clone(), preset, self.personas.clone());
        spec.seed = self.seed;
        spec.step = StepSettings {
            browse: match self.browse {
                BrowseName::PerPost => BrowseMode::PerPost,
                BrowseName::Batched => BrowseMode::Batched,
            },
            seed: Some(self.seed),
            reflection: !self.no_reflection,
            reflect_every: self.reflect_every.max(1),
            ..StepSettings::default()
        };
        spec.step.dynamic.enabled = !self.no_dynamic_persona;
        spec.feed = FeedSettings { limit: self.feed_limit, look_back_turns: self.look_back.0, ..FeedSettings::default() };
        spec.ranker = some_sim::Rankers::builtin().choose(&self.ranker).map_err(some_workers::Error::Invalid)?;
        spec.relevance = match self.relevance {
            RelevanceName::Embedder => RelevanceSource::Embedder,
            RelevanceName::Tfidf => RelevanceSource::Tfidf,
        };
        spec.enrich = !self.no_enrich;
        spec.knowledge = if self.no_knowledge { KnowledgeSource::None } else { self.knowledge.clone() };
        if !(0.0..=1.0).contains(&self.max_setup_failures) {
            anyhow::bail!("--max-setup-failures {}: expected a share between 0 and 1", self.max_setup_failures);
        }
        spec.max_setup_failures = self.max_setup_failures;
        spec.shard_size = self.shard_size.max(1);
        spec.concurrency = self.flags.calls.max(1);
        if let Some(path) = &self.groups {
            spec.groups = some_workers::sim::spec::load_groups(path)?;
        }
        Ok(spec)
    }

    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let spec = self.spec()?;
        // Fail before recording anything on what cannot work.
        some_workers::llm::check_chat_model(&spec.model, &spec.endpoints)?;
        for g in &spec.groups {
            some_workers::llm::check_chat_model(&g.model, &g.endpoints).map_err(|e| anyhow::anyhow!("group {}: {e}", g.name))?;
        }
        spec.personas.cast(spec.preset.agents())?;
        some_workers::sim::work::load_knowledge(lake, &spec.knowledge).await?;
        let interventions = match &self.interventions {
            None => None,
            Some(path) => {
                let text = read_interventions(path)?;
                let events = interventions::check(&text, None, &spec, None).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                Some((path, events))
            }
        };
        let Some(n) = self.replicates else {
            return start(lake, &spec, interventions.as_ref(), &self.flags, self.until).await;
        };
        let mut failed = false;
        for i in 0..n {
            let mut replicate = spec.clone();
            replicate.run_id = RunId::from(format!("{}-r{i}", spec.run_id));
            replicate.seed = spec.seed + u64::from(i);
            replicate.step.seed = Some(replicate.seed);
            replicate.replicate = Some(Replicate { group: spec.run_id.to_string(), index: i, of: n });
            if i > 0 {
                let first = RunId::from(format!("{}-r0", spec.run_id));
                replicate.fork = Some(Fork { parent: first.clone(), turn: Turn(0), agents_run: first });
            }
            failed |= start(lake, &replicate, interventions.as_ref(), &self.flags, self.until).await? != ExitCode::SUCCESS;
        }
        let last = RunId::from(format!("{}-r{}", spec.run_id, n - 1));
        let worker = self.flags.worker();
        let spec = load_sim(lake, &last).await?.spec;
        if let Some((runs, figures)) = replicate_figures(lake, &spec, false, &worker.client, worker.threads).await? {
            let mut out = String::new();
            replicates_table(&figures, runs).text(&mut out);
            print!("{out}");
        }
        Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
    }
}

/// Records a run, stores its interventions and drives it.
async fn start(
    lake: &Lake,
    spec: &SimSpec,
    interventions: Option<&(&PathBuf, Vec<(Turn, Timed)>)>,
    flags: &ExecFlags,
    until: Option<u32>,
) -> anyhow::Result<ExitCode> {
    record_event(lake, spec, RunEvent::Submitted).await?;
    if let Some((path, events)) = interventions {
        interventions::submit(lake, spec, events, &path.display().to_string()).await?;
        eprintln!("{} interventions from {} stored", events.len(), path.display());
    }
    eprintln!(
        "simulation {}: {} agents ({} initial), {} turns, model {}",
        spec.run_id,
        spec.preset.agents(),
        spec.preset.initial_agents,
        spec.preset.turns(),
        spec.model
    );
    coordinate(lake, spec, flags, until).await
}

#[derive(Debug, Args)]
pub struct SimFork {
    /// The run to fork.
    pub parent: RunId,
    /// The fork's first own turn: its state before it is the parent's
    /// after turn AT - 1, read from the lake.
    #[arg(long)]
    pub at: u32,
    /// Interventions of the fork (JSON lines, as `sim run --interventions`).
    #[arg(long)]
    pub interventions: Option<PathBuf>,
    /// Rank feeds with another ranker from the fork on.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(some_sim::Rankers::builtin().names()))]
    pub ranker: Option<String>,
    /// Another model from the fork on (at --endpoint; none: built in).
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
    /// Another seed (activation draws and the model's sampling) from the fork on.
    #[arg(long)]
    pub seed: Option<u64>,
    #[arg(long)]
    pub run_id: Option<RunId>,
    /// Stop before this turn (resume later with `sim resume`).
    #[arg(long)]
    pub until: Option<u32>,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl SimFork {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let parent = load_sim(lake, &self.parent).await?.spec;
        if self.at == 0 {
            anyhow::bail!("a fork starts at turn 1 or later (turn 0 is the seeding): start a new run instead");
        }
        let base = some_workers::sim::SimState::load_platform_until(lake, &parent, Some(Turn(self.at - 1))).await?;
        if base.next_turn() != Turn(self.at) {
            anyhow::bail!(
                "run {} has committed {} turns: a fork at turn {} needs its turns 0 to {}",
                self.parent,
                base.next_turn(),
                self.at,
                self.at - 1
            );
        }
        let mut spec = parent.clone();
        spec.run_id = self.run_id.clone().unwrap_or_else(RunId::new_dated);
        spec.fork = Some(Fork { parent: parent.run_id.clone(), turn: Turn(self.at), agents_run: parent.agents_run().clone() });
        spec.replicate = None;
        if let Some(ranker) = &self.ranker {
            spec.ranker = some_sim::Rankers::builtin().choose(ranker).map_err(some_workers::Error::Invalid)?;
        }
        if let Some(model) = &self.model {
            spec.model = model.clone();
            spec.endpoints = self.endpoints.clone();
        } else if !self.endpoints.is_empty() {
            spec.endpoints = self.endpoints.clone();
        }
        if let Some(seed) = self.seed {
            spec.seed = seed;
            spec.step.seed = Some(seed);
        }
        spec.concurrency = self.flags.calls.max(1);
        some_workers::llm::check_chat_model(&spec.model, &spec.endpoints)?;
        let interventions = match &self.interventions {
            None => None,
            Some(path) => {
                let text = read_interventions(path)?;
                let events = interventions::check(&text, None, &spec, Some((base.next_turn(), &base.platform)))
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                Some((path, events))
            }
        };
        eprintln!("simulation {}: a fork of {} at turn {}", spec.run_id, self.parent, self.at);
        start(lake, &spec, interventions.as_ref(), &self.flags, self.until).await
    }
}

#[derive(Debug, Args)]
pub struct SimCompare {
    /// A fork (`sim fork`).
    pub fork: RunId,
    /// The run to compare it with (default: its parent).
    #[arg(long)]
    pub with: Option<RunId>,
    /// Bootstrap resamples of each interval.
    #[arg(long, default_value_t = 2000)]
    pub resamples: usize,
    /// Seeds the resampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Print the comparison as JSON.
    #[arg(long)]
    pub json: bool,
}

impl SimCompare {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let fork = load_sim(lake, &self.fork).await?.spec;
        let other = match (&self.with, &fork.fork) {
            (Some(with), _) => with.clone(),
            (None, Some(f)) => f.parent.clone(),
            (None, None) => anyhow::bail!("run {} is no fork: give --with RUN", self.fork),
        };
        let other = load_sim(lake, &other).await?.spec;
        let c = compare_fork(lake, &fork, &other, self.resamples.max(1), self.seed).await?;
        if self.json {
            println!("{}", serde_json::to_string_pretty(&c)?);
        } else {
            print!("{}", c.render());
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn read_interventions(path: &std::path::Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read the interventions file {}: {e}", path.display()))
}

#[derive(Debug, Args)]
pub struct SimIntervene {
    pub run_id: RunId,
    /// The turn events without a turn of their own are taken at: the first
    /// uncommitted turn at or after it.
    #[arg(long)]
    pub at: u32,
    /// The interventions file (JSON lines, as `sim run --interventions`).
    pub file: PathBuf,
}

impl SimIntervene {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let record = load_sim(lake, &self.run_id).await?;
        if record.cancelled {
            anyhow::bail!("simulation {} was cancelled", self.run_id);
        }
        let spec = &record.spec;
        let state = some_workers::sim::SimState::load(lake, spec).await?;
        let text = read_interventions(&self.file)?;
        let events = interventions::check(&text, Some(Turn(self.at)), spec, Some((state.next_turn(), &state.platform)))
            .map_err(|e| anyhow::anyhow!("{}: {e}; nothing was applied", self.file.display()))?;
        let batch = interventions::submit(lake, spec, &events, &self.file.display().to_string()).await?;
        let first = events.first().map_or(self.at, |(t, _)| t.0);
        println!(
            "{} interventions stored as batch {batch}; the first is taken at turn {first} or the first turn after it that starts",
            events.len()
        );
        Ok(ExitCode::SUCCESS)
    }
}

#[derive(Debug, Args)]
pub struct SimResume {
    pub run_id: RunId,
    #[arg(long)]
    pub until: Option<u32>,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl SimResume {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let record = load_sim(lake, &self.run_id).await?;
        if record.cancelled {
            anyhow::bail!("simulation {} was cancelled; start a new run", self.run_id);
        }
        coordinate(lake, &record.spec, &self.flags, self.until).await
    }
}

/// Drives the run from where the lake has it; with the in-process queue,
/// works its shards here too.
async fn coordinate(lake: &Lake, spec: &SimSpec, flags: &ExecFlags, until: Option<u32>) -> anyhow::Result<ExitCode> {
    let until = Until { turn: until.map(Turn) };
    let started = std::time::Instant::now();
    let executor = Executor::open(lake, &flags.jobs.queue, flags.worker(), Arc::new(Bars::new())).await?;
    if let Some((_, broker)) = executor.broker() {
        eprintln!("publishing turns to {broker}; `some worker` processes run them");
    }
    let done = executor.simulate(spec, until).await?;
    print_drive(spec, &done, started.elapsed().as_secs_f64());
    let turns = some_workers::sim::SimState::load(lake, spec).await?.turns;
    let health = some_workers::sim::state::health(lake, spec, &turns).await?;
    for w in warnings(&health) {
        eprintln!("warning: {w}");
    }
    if done.finished && did_nothing(&health) {
        eprintln!(
            "simulation {} made no like, reblog, comment, post or follow in any stage: it has no result (see `some sim report {}`)",
            spec.run_id, spec.run_id
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_drive(spec: &SimSpec, d: &Drive, secs: f64) {
    let state = if d.cancelled {
        "cancelled"
    } else if d.finished {
        "finished"
    } else {
        "stopped"
    };
    eprintln!(
        "simulation {} {state}: {} turns and {} agent-turns in {secs:.1} s ({:.1} agent-turns/s); feeds {:.1} s, steps {:.1} s, commits {:.1} s (and {:.1} s written beside the next turns' steps)",
        spec.run_id,
        d.turns,
        d.agent_turns,
        d.agent_turns as f64 / secs.max(1e-9),
        d.feed_time.as_secs_f64(),
        d.step_time.as_secs_f64(),
        d.commit_time.as_secs_f64(),
        d.commit_behind.as_secs_f64(),
    );
    println!("state digest {}", d.digest.as_deref().unwrap_or("-"));
}

#[derive(Debug, Args)]
pub struct SimStatus {
    pub run_id: RunId,
    /// Actions per kind and the busiest posts over this many of the last
    /// committed turns (0: leave them out).
    #[arg(long, default_value_t = 3)]
    pub last: usize,
    /// Busiest posts shown.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Redraw the current turn and the last turns' figures until the run
    /// finishes or is cancelled (Ctrl-C stops watching; the run goes on).
    /// Only reads the lake.
    #[arg(long)]
    pub watch: bool,
    /// Seconds between redraws with --watch.
    #[arg(long, default_value_t = 2.0, value_parser = parse_every)]
    pub every: f64,
}

fn parse_every(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.1 => Ok(x),
        _ => Err(format!("every {s:?}: expected seconds, 0.1 or more")),
    }
}

/// Characters of a busy post's text shown.
const POST_TEXT_CHARS: usize = 72;

impl SimStatus {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        if self.watch {
            let Some(end) = self.watch_until_done(lake).await? else { return Ok(ExitCode::SUCCESS) };
            self.print_status(lake).await?;
            println!("{end}");
            return Ok(ExitCode::SUCCESS);
        }
        self.print_status(lake).await?;
        Ok(ExitCode::SUCCESS)
    }

    /// The whole status: the run replayed from the lake (its digest
    /// checked), per stage health, and the last turns.
    async fn print_status(&self, lake: &Lake) -> anyhow::Result<()> {
        let record = load_sim(lake, &self.run_id).await?;
        let spec = &record.spec;
        let p = some_workers::sim::state::progress(lake, spec).await?;
        let flag = if record.cancelled { " (cancelled)" } else { "" };
        let n = spec.preset.agents();
        println!("simulation {}{flag}: {n} agents ({} initial) from {}", self.run_id, spec.preset.initial_agents, spec.personas);
        println!("agents set up {} of {n}; setup failed for {}", p.agents_set_up, p.setup_failed);
        println!("turns committed {} of {}", p.state.turns.len(), spec.preset.turns());
        if let Some(t) = p.state.turns.last() {
            println!(
                "last turn {}: {} active, {} actions applied, {} refused",
                t.turn, t.active_agents, t.actions_applied, t.actions_failed
            );
        }
        if p.steps_in_progress > 0 {
            println!("turn {} in progress: {} agent steps written", p.state.next_turn(), p.steps_in_progress);
        }
        let health = some_workers::sim::state::health(lake, spec, &p.state.turns).await?;
        for h in &health {
            let kinds: Vec<String> = h.applied.iter().map(|(k, n)| format!("{n} {}", k.as_str())).collect();
            let name = if h.stage == 0 { "seeding".to_string() } else { format!("stage {}", h.stage) };
            println!(
                "{name}: {} turns, {} active agent-turns, {} shown an empty feed; applied: {}",
                h.turns,
                h.active,
                h.empty_feeds,
                if kinds.is_empty() { "nothing".into() } else { kinds.join(", ") }
            );
        }
        for w in warnings(&health) {
            println!("warning: {w}");
        }
        let recent = some_workers::sim::state::recent(lake, spec, &p.state.turns, self.last, self.top).await?;
        print!("{}", recent.render(POST_TEXT_CHARS));
        println!("state digest {}", p.state.digest().unwrap_or("-"));
        Ok(())
    }

    /// Redraws the live view every `--every` seconds until the run has
    /// committed its last turn or is cancelled, and says which (None when
    /// Ctrl-C stopped the watching). Each frame reads the turns' rows, not
    /// the replayed run, so a long run is cheap to watch. Where standard
    /// output is not a terminal, a frame is printed only when it changed.
    async fn watch_until_done(&self, lake: &Lake) -> anyhow::Result<Option<String>> {
        let terminal = std::io::stdout().is_terminal();
        let every = std::time::Duration::from_secs_f64(self.every);
        let mut shown = String::new();
        loop {
            let record = load_sim(lake, &self.run_id).await?;
            let spec = &record.spec;
            let g = some_workers::sim::state::glance(lake, spec).await?;
            let (done, planned) = (g.next_turn().0 as usize, spec.preset.turns() as usize);
            if record.cancelled {
                return Ok(Some(format!("simulation {} cancelled after {done} of {planned} turns", self.run_id)));
            }
            if done >= planned {
                return Ok(Some(format!("simulation {} finished: {done} of {planned} turns committed", self.run_id)));
            }
            let mut frame = format!("simulation {}: {done} of {planned} turns committed", self.run_id);
            if g.agents_set_up < spec.preset.agents() as usize || g.turns.is_empty() {
                frame.push_str(&format!(
                    "; agents set up {} of {} (setup failed for {})",
                    g.agents_set_up,
                    spec.preset.agents(),
                    g.setup_failed
                ));
            }
            frame.push('\n');
            frame.push_str(&format!("turn {} in progress: {} agent steps written\n", g.next_turn(), g.steps_in_progress));
            if let Some(t) = g.turns.last() {
                frame.push_str(&format!(
                    "last turn {} (stage {}): {} active, {} actions applied, {} refused\n",
                    t.turn, t.stage, t.active_agents, t.actions_applied, t.actions_failed
                ));
            }
            let recent = some_workers::sim::state::recent(lake, spec, &g.turns, self.last, self.top).await?;
            frame.push_str(&recent.render(POST_TEXT_CHARS));
            if terminal {
                println!("\x1b[2J\x1b[H{frame}(every {} s; Ctrl-C stops watching)", self.every);
            } else if frame != shown {
                println!("{frame}");
            }
            std::io::stdout().flush().ok();
            shown = frame;
            tokio::select! {
                _ = tokio::time::sleep(every) => {}
                _ = tokio::signal::ctrl_c() => {
                    println!("stopped watching simulation {} at {done} of {planned} turns committed; the run goes on", self.run_id);
                    return Ok(None);
                }
            }
        }
    }
}

#[derive(Debug, Args)]
pub struct SimReportCmd {
    pub run_id: RunId,
    /// Also write the report as self-contained HTML with its plots here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Leave out the built-in embedder's similarity (TF-IDF only).
    #[arg(long)]
    pub no_embedder: bool,
    /// Texts per stage and kind rated by the LLM judge (0: no judge).
    #[arg(long, default_value_t = 0)]
    pub judge_sample: usize,
    /// The judge (the run's model if not given).
    #[arg(long)]
    pub judge_model: Option<String>,
    #[arg(long = "judge-endpoint")]
    pub judge_endpoints: Vec<String>,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl SimReportCmd {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let record = load_sim(lake, &self.run_id).await?;
        let spec = &record.spec;
        let judge = (self.judge_sample > 0).then(|| {
            let model = self.judge_model.clone().unwrap_or_else(|| spec.model.clone());
            let endpoints =
                if self.judge_endpoints.is_empty() && model == spec.model { spec.endpoints.clone() } else { self.judge_endpoints.clone() };
            JudgeSpec { model, endpoints, sample: self.judge_sample }
        });
        let worker = self.flags.worker();
        let r = sim_report(lake, spec, !self.no_embedder, judge.as_ref(), &worker.client, worker.threads).await?;
        if self.json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print!("{}", render_text(&r));
            if let Some((runs, figures)) = replicate_figures(lake, spec, !self.no_embedder, &worker.client, worker.threads).await? {
                let mut out = String::from("\n");
                replicates_table(&figures, runs).text(&mut out);
                print!("{out}");
            }
            if let Some(fork) = spec.fork.as_ref().filter(|f| f.turn.0 > 0) {
                let parent = load_sim(lake, &fork.parent).await?.spec;
                println!();
                print!("{}", compare_fork(lake, spec, &parent, 2000, 0).await?.render());
            }
        }
        if let Some(path) = &self.html {
            std::fs::write(path, render_html(&r)).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            eprintln!("report written to {}", path.display());
        }
        Ok(ExitCode::SUCCESS)
    }
}
