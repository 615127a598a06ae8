//! The simulation's coordinator: a turn is one bulk-synchronous step.
//!
//! 0. Interventions due at the turn ([`super::interventions`]) change the
//!    state first; they commit with the turn.
//! 1. From the state at the start of the turn, decide who acts (the
//!    preset's stage, each agent's plan and Pareto level, seeded draws) and
//!    rank each active agent's feed.
//! 2. Publish the active agents in shards; workers run their steps and
//!    write each shard's results once ([`super::shard`]). Each shard's
//!    results are read as they land, while the others still run, and the
//!    feeds' file is written meanwhile.
//! 3. Once every shard's results are there, apply all actions in (agent,
//!    seq) order and commit the turn as one transaction of the lake: the
//!    shards' step files, the actions, posts, follows, feeds and the
//!    `sim_turns` row become visible together.
//!
//! The turn's files are encoded and committed while the next turn's
//! feeds are ranked and its steps run: that turn is planned from the state
//! in memory, which the actions were already applied to, and its commit
//! waits for the one before, so turns still land one by one and in order.
//!
//! Everything in step 1 is a function of the committed state and the seed,
//! so a coordinator that starts again (after a crash, or `some sim
//! resume`) publishes the same shards and finds the results already
//! written; a redelivered shard finds its results and does nothing. A
//! seeded run with a deterministic model therefore replays to the same
//! digest, whatever was killed on the way.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use some_jobs::progress::Progress;
use some_schemas::sim::{SimAgentRow, SimFeedRow, SimInterventionRow, SimStepRow};
use some_schemas::{Job, JobKind, JobMessage, Timestamp};
use some_sim::agent::memory::{Held, OWN_POSTS_CAP, Recall, Remembers, Stored};
use some_sim::agent::reflect;
use some_sim::agent::step::{PostNote, StepFailure};
use some_sim::feed::{Authors, Ranked};
use some_sim::rows::{action_rows, feed_rows, follow_rows, post_rows, turn_row};
use some_sim::{AgentAction, AgentId, FeedPost, Phase, Platform, Rankers, Turn, activation};

use super::interventions::Pending;
use super::shard::{AgentTurn, NewAgent, ShardWork, read_results};
use super::spec::{SimSpec, load_sim};
use super::state::{SimState, StateFootprint};
use super::vectors::RankVectors;
use super::work::Agent;
use crate::error::{Error, Result};
use crate::lake::{Lake, encode_rows};
use crate::queue::Queue;

/// Where a run stopped, and where its time went.
#[derive(Debug, Clone, Default)]
pub struct Drive {
    /// Turns committed by this call.
    pub turns: u32,
    /// The digest after the last committed turn.
    pub digest: Option<String>,
    /// Agent steps committed by this call.
    pub agent_turns: u64,
    pub cancelled: bool,
    pub finished: bool,
    /// Ranking feeds.
    pub feed_time: Duration,
    /// Waiting for the workers' steps, reading each shard's as it landed.
    pub step_time: Duration,
    /// Applying the steps and committing the turns, as far as the turns
    /// waited for it.
    pub commit_time: Duration,
    /// Of `commit_time`, applying the steps read to the state (the rest is
    /// waiting for the turn before to land, and for the turn's feeds
    /// file).
    pub apply_time: Duration,
    /// Writing and committing turns while the next turn's steps ran: time
    /// the turns did not wait for.
    pub commit_behind: Duration,
    /// What the state held at the end (`None` if no turn ran).
    pub footprint: Option<StateFootprint>,
}

/// How far to go.
#[derive(Debug, Clone, Copy, Default)]
pub struct Until {
    /// Stop before this turn (the preset's end if `None`).
    pub turn: Option<Turn>,
}

/// Sets the run up if it is not, then runs turns from the last committed
/// one until `until`, the preset's end or a cancellation.
pub async fn drive(lake: &Lake, queue: &dyn Queue, spec: &SimSpec, until: Until, progress: &dyn Progress) -> Result<Drive> {
    let mut state = SimState::load(lake, spec).await?;
    if !state.set_up() {
        set_up(lake, queue, spec, progress).await?;
        state = SimState::load(lake, spec).await?;
    }
    check_setup(spec, &state.agents)?;
    let rankers = Rankers::builtin();
    let needs_vectors = rankers.get(&spec.ranker.name).map_err(Error::Invalid)?.needs_vectors;
    let mut vectors = if needs_vectors { Some(RankVectors::new(spec, &state.agents).await?) } else { None };
    let end = Turn(spec.preset.turns().min(until.turn.map_or(u32::MAX, |t| t.0)));
    let mut out = Drive { digest: state.digest().map(str::to_string), ..Drive::default() };
    let mut turn = state.next_turn();
    let mut pending = Pending::load(lake, spec).await?;
    let mut cancel_checked: Option<Instant> = None;
    let mut committing: Option<Committing> = None;
    while turn < end {
        // A read of the runs table and the interventions: once a second is
        // prompt enough, and keeps them out of turns that take a tenth of
        // one. Neither waits for the turn before to land: a turn that
        // takes longer than that would never overlap its commit.
        if cancel_checked.is_none_or(|at| at.elapsed() >= Duration::from_secs(1)) {
            cancel_checked = Some(Instant::now());
            if load_sim(lake, &spec.run_id).await?.cancelled {
                landed(committing.take(), &mut out).await?;
                tracing::info!(run = %spec.run_id, turn = turn.0, "run cancelled: stopping");
                out.cancelled = true;
                return Ok(out);
            }
            // Interventions submitted while the run goes are taken at the
            // first turn that starts after they are seen.
            if out.turns > 0 {
                pending.reload(lake, spec).await?;
            }
        }
        let due = pending.due(turn);
        if let Some(v) = vectors.as_mut() {
            v.catch_up(&state.platform).await?;
        }
        let (active, commit) =
            one_turn(lake, queue, spec, &mut state, vectors.as_ref(), turn, due, committing.take(), &mut out, progress).await?;
        committing = Some(commit);
        out.turns += 1;
        out.agent_turns += active as u64;
        out.digest = state.digest().map(str::to_string);
        turn = turn.next();
    }
    landed(committing, &mut out).await?;
    out.finished = turn.0 >= spec.preset.turns();
    if out.turns > 0 {
        let footprint = state.footprint();
        tracing::info!(run = %spec.run_id, turn = turn.0, "the run's state holds: {footprint}");
        out.footprint = Some(footprint);
    }
    Ok(out)
}

/// Publishes the setup shards that have no results yet and waits for all.
async fn set_up(lake: &Lake, queue: &dyn Queue, spec: &SimSpec, progress: &dyn Progress) -> Result<()> {
    let personas = spec.personas.cast(spec.preset.agents())?;
    let levels = some_sim::pareto_levels(personas.len(), spec.preset.pareto_alpha, spec.seed);
    let agents: Vec<NewAgent> = personas
        .into_iter()
        .zip(levels)
        .map(|(persona, activity)| NewAgent { kind: spec.preset.kind_of(persona.id), persona, activity })
        .collect();
    progress.phase("agents set up", Some(agents.len() as u64));
    let shards = in_shards(agents, spec, |shard, agents| ShardWork::Setup { shard, agents });
    let paths = publish(lake, queue, spec, &shards).await?;
    let rows: Vec<Vec<SimAgentRow>> = wait_for(lake, queue, spec, &paths, progress, Ok).await?;
    // The setup commits once: a coordinator that died after this commit
    // and runs it again commits nothing.
    let mut txn = lake.txn_named(&format!("sim-{}-setup", spec.run_id));
    for (path, shard) in paths.iter().zip(&rows) {
        txn.adopt(path, shard.len() as u64).await?;
    }
    txn.commit().await?;
    progress.finish();
    Ok(())
}

/// Fails a run with too many agents whose setup failed (more than
/// `max_setup_failures` of them), naming the causes: its turns would be
/// empty. Fewer failures are logged; those agents take no part.
fn check_setup(spec: &SimSpec, agents: &[Agent]) -> Result<()> {
    let failed: Vec<&str> = agents.iter().filter_map(|a| a.setup_error.as_deref()).collect();
    if failed.is_empty() {
        return Ok(());
    }
    let mut causes: BTreeMap<String, usize> = BTreeMap::new();
    for f in &failed {
        *causes.entry(some_sim::error::excerpt(f, 300)).or_default() += 1;
    }
    let mut causes: Vec<(String, usize)> = causes.into_iter().collect();
    causes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let listed: Vec<String> = causes.iter().take(5).map(|(c, n)| format!("{n} × {c}")).collect();
    let share = failed.len() as f64 / agents.len().max(1) as f64;
    if share > spec.max_setup_failures {
        return Err(Error::Task(format!(
            "setup failed for {} of {} agents, more than the {:.0}% allowed (--max-setup-failures); causes: {}",
            failed.len(),
            agents.len(),
            spec.max_setup_failures * 100.0,
            listed.join("; ")
        )));
    }
    tracing::warn!(failed = failed.len(), agents = agents.len(), causes = %listed.join("; "), "agents whose setup failed take no part");
    Ok(())
}

/// A step's results, read from its row.
struct ReadStep {
    actions: Vec<AgentAction>,
    posts: Vec<PostNote>,
    failures: usize,
    memory: Stored,
}

/// Reads a step's row of `turn` (the columns are JSON), checking that its
/// actions are its agent's.
fn read_step(run: &str, turn: Turn, s: &SimStepRow) -> Result<(AgentId, ReadStep)> {
    let agent = AgentId(s.agent_id as u32);
    let bad = |what: &str, e: serde_json::Error| Error::Invalid(format!("sim_steps of run {run}, turn {turn}, agent {agent}: {what}: {e}"));
    let actions: Vec<AgentAction> = serde_json::from_str(&s.actions).map_err(|e| bad("the actions do not read", e))?;
    if let Some(other) = actions.iter().find(|a| a.agent != agent) {
        return Err(Error::Invalid(format!("sim_steps of run {run}, turn {turn}: agent {agent}'s step acts as agent {}", other.agent)));
    }
    let posts = serde_json::from_str(&s.posts).map_err(|e| bad("the post notes do not read", e))?;
    let failures = serde_json::from_str::<Vec<StepFailure>>(&s.failures).map_err(|e| bad("the failures do not read", e))?.len();
    let memory = Stored::read(&s.memory).map_err(|e| bad("the memory does not read", e))?;
    Ok((agent, ReadStep { actions, posts, failures, memory }))
}

/// Reads a shard's step rows, split between the cores.
fn read_shard(run: &str, turn: Turn, rows: &[SimStepRow]) -> Result<Vec<(AgentId, ReadStep)>> {
    on_every_core(rows, |s| read_step(run, turn, s)).into_iter().collect()
}

/// A turn's commit on its way: a task that writes the turn's files and
/// commits them, and when it started.
struct Committing {
    task: tokio::task::JoinHandle<Result<()>>,
    started: Instant,
}

impl Committing {
    /// Waits for the commit.
    async fn land(self) -> Landed {
        let done = self.task.await.map_err(|e| Error::Task(format!("a turn's commit stopped: {e}")));
        Landed { done: done.and_then(|r| r), started: self.started, ended: Instant::now() }
    }
}

/// A turn's commit, landed.
struct Landed {
    done: Result<()>,
    started: Instant,
    ended: Instant,
}

impl Landed {
    /// The time it ran before `from`, when a turn began to wait for it.
    fn behind(&self, from: Instant) -> Duration {
        self.ended.min(from).saturating_duration_since(self.started)
    }
}

/// Waits for the commit of the previous turn, if any, counting the wait as
/// commit time and the time it ran before as written behind.
async fn landed(committing: Option<Committing>, out: &mut Drive) -> Result<()> {
    let Some(c) = committing else { return Ok(()) };
    let waited = Instant::now();
    let landed = c.land().await;
    out.commit_time += landed.ended - waited;
    out.commit_behind += landed.behind(waited);
    landed.done
}

/// Runs one turn up to its actions applied to the state; returns how many
/// agents acted and the turn's commit, under way. The commit of the turn
/// before (`previous`) must land before this one's, and lands while this
/// turn's steps run.
#[allow(clippy::too_many_arguments)]
async fn one_turn(
    lake: &Lake,
    queue: &dyn Queue,
    spec: &SimSpec,
    state: &mut SimState,
    vectors: Option<&RankVectors>,
    turn: Turn,
    due: Vec<SimInterventionRow>,
    previous: Option<Committing>,
    out: &mut Drive,
    progress: &dyn Progress,
) -> Result<(usize, Committing)> {
    let started = Instant::now();
    let phase = spec.preset.phase(turn).ok_or_else(|| Error::Invalid(format!("turn {turn} is past the run's end")))?;
    let intervened = state.intervene(spec, turn, due)?;
    let (agents, feeds) = plan_turn(spec, state, vectors, turn, phase)?;
    let empty_feeds = match phase {
        Phase::Seeding => 0,
        Phase::Stage(_) => agents.iter().filter(|a| a.feed.is_empty()).count(),
    };
    let active = agents.len();
    out.feed_time += started.elapsed();
    let shards = in_shards(agents, spec, |shard, agents| ShardWork::Turn { turn, shard, agents });
    progress.phase(&format!("turn {turn}"), Some(active as u64));
    let waited = Instant::now();
    // One transaction per turn, named by the turn: a coordinator that died
    // after its commit landed and runs the turn again commits nothing. The
    // feeds are known before the steps, so their file is written while the
    // workers step (invisible until the commit).
    let run = spec.run_id.as_str();
    let mut txn = lake.txn_named(&format!("sim-{run}-t{:06}", turn.0));
    let stepped = async {
        let paths = publish(lake, queue, spec, &shards).await?;
        let shards = wait_for(lake, queue, spec, &paths, progress, |rows| read_shard(run, turn, &rows)).await?;
        Ok::<_, Error>((paths, shards))
    };
    let stepped = async { (stepped.await, Instant::now()) };
    let previous = async {
        match previous {
            Some(c) => Some(c.land().await),
            None => None,
        }
    };
    // The feeds' rows are made on a blocking thread, not in the way of the
    // shards' publishing.
    let feeds_written = async {
        let run = run.to_string();
        let rows = tokio::task::spawn_blocking(move || feeds.rows(&run, turn)).await?;
        txn.write_rows(rows).await
    };
    let ((stepped, stepped_at), feeds_written, previous) = tokio::join!(stepped, feeds_written, previous);
    let (paths, shards) = stepped?;
    feeds_written?;
    out.step_time += stepped_at - waited;
    // What of the previous commit ran before the steps ended was behind
    // them; what held this turn up after, and the feeds' file, was not.
    out.commit_time += stepped_at.elapsed();
    if let Some(landed) = previous {
        out.commit_behind += landed.behind(stepped_at);
        landed.done?;
    }
    let shard_rows: Vec<u64> = shards.iter().map(|s| s.len() as u64).collect();

    let applying = Instant::now();
    let mut actions: Vec<AgentAction> = Vec::new();
    let mut notes: HashMap<(AgentId, u32), PostNote> = HashMap::new();
    let mut failures = 0usize;
    for (agent, step) in shards.into_iter().flatten() {
        actions.extend(step.actions);
        notes.extend(step.posts.into_iter().map(|n| ((agent, n.seq), n)));
        failures += step.failures;
        state.memories.entry(agent).or_default().take(step.memory);
    }
    let outcomes = state.platform.apply_turn(turn, actions);
    let stage = match phase {
        Phase::Seeding => 0,
        Phase::Stage(n) => n,
    };
    let turn_row = turn_row(run, turn, stage, active, &outcomes, state.platform.history_digest(), Timestamp::now());
    let refused = outcomes.iter().filter(|o| o.result.is_err()).count();
    let acted = outcomes.len();
    state.turns.push(turn_row.clone());
    out.commit_time += applying.elapsed();
    out.apply_time += applying.elapsed();
    progress.finish();
    let run = run.to_string();
    let write = async move {
        for (path, rows) in paths.iter().zip(shard_rows) {
            txn.adopt(path, rows).await?;
        }
        let encoded = tokio::try_join!(
            encode_rows(action_rows(&run, turn, &outcomes)),
            encode_rows(post_rows(&run, turn, &outcomes, &notes)),
            encode_rows(follow_rows(&run, turn, &outcomes)),
            encode_rows(vec![turn_row]),
        )?;
        for parts in <[_; 4]>::from(encoded) {
            txn.write_parts(parts).await?;
        }
        if !intervened.rows.is_empty() {
            txn.write_rows(intervened.rows).await?;
        }
        if !intervened.posts.is_empty() {
            txn.write_rows(intervened.posts).await?;
        }
        txn.commit().await?;
        tracing::info!(turn = turn.0, "turn committed");
        Ok(())
    };
    let commit = Committing { task: tokio::spawn(write), started: Instant::now() };
    tracing::info!(turn = turn.0, active, empty_feeds, actions = acted, refused, unread_replies = failures, "turn applied");
    if empty_feeds > 0 {
        tracing::warn!(turn = turn.0, empty_feeds, active, "active agents were shown an empty feed");
    }
    Ok((active, commit))
}

/// A turn's feeds as ranked, by agent: their rows are made while the
/// steps run, off the turn's critical path.
#[derive(Default)]
struct Feeds {
    ranker: String,
    feeds: Vec<(AgentId, Vec<Ranked>)>,
}

impl Feeds {
    fn rows(&self, run: &str, turn: Turn) -> Vec<SimFeedRow> {
        self.feeds.iter().flat_map(|(agent, ranked)| feed_rows(run, turn, *agent, &self.ranker, ranked)).collect()
    }
}

/// Who acts in `turn`, with what feed and how many posts to write; and the
/// feeds.
fn plan_turn(spec: &SimSpec, state: &SimState, vectors: Option<&RankVectors>, turn: Turn, phase: Phase) -> Result<(Vec<AgentTurn>, Feeds)> {
    let memory = |a: AgentId, posts: u32| {
        recall_for(state, a, posts > 0, |last| spec.step.reflection && reflect::due(last, turn, spec.step.reflect_every))
    };
    let persona = |a: AgentId| state.changed.get(&a).cloned();
    let Some(stage) = spec.preset.stage(phase) else {
        // Seeding: initial agents write their seed posts, shown nothing;
        // one whose setup failed takes no part.
        let agents = state
            .agents
            .iter()
            .filter(|a| a.setup_error.is_none())
            .map(|a| (a.persona.id, spec.preset.seed_posts_of(a.persona.id)))
            .filter(|(_, posts)| *posts > 0)
            .map(|(agent, posts)| AgentTurn { agent, posts, feed: Vec::new(), memory: memory(agent, posts), persona: persona(agent) })
            .collect();
        return Ok((agents, Feeds::default()));
    };
    // News accounts that interventions opened are read in every stage.
    let authors: Authors = state
        .agents
        .iter()
        .map(|a| a.persona.id)
        .filter(|id| spec.preset.kind_of(*id) == stage.browsing_authors)
        .chain(state.platform.news_accounts().map(|(_, a)| a))
        .collect();
    // `drive` computes the vectors before any turn for a ranker that needs them.
    let ranker = Rankers::builtin().build(&spec.ranker, &vectors.map(RankVectors::content).unwrap_or_default()).map_err(Error::Invalid)?;
    let ranker_name = ranker.name();
    let rank = ranker.feeds(&state.platform, turn, &spec.feed, Some(&authors));
    let mut active = Vec::new();
    for a in &state.agents {
        let id = a.persona.id;
        let Some(plan) = a.plan.as_ref().filter(|_| spec.preset.kind_of(id) == stage.acting) else { continue };
        let act = activation(spec.seed, id, a.level, plan, turn);
        if act.active {
            active.push((id, if act.posting { plan.posts_per_posting() } else { 0 }));
        }
    }
    let ranked = on_every_core(&active, |(id, _)| rank(*id));
    let mut agents = Vec::with_capacity(active.len());
    let mut feeds = Vec::with_capacity(active.len());
    for ((id, posts), ranked) in active.into_iter().zip(ranked) {
        let shown = ranked
            .iter()
            .filter_map(|r| state.platform.post(r.post))
            .map(|p| FeedPost { id: p.id, author: p.author, content: p.content.to_string() })
            .collect();
        agents.push(AgentTurn { agent: id, posts, feed: shown, memory: memory(id, posts), persona: persona(id) });
        feeds.push((id, ranked));
    }
    Ok((agents, Feeds { ranker: ranker_name.to_string(), feeds }))
}

/// What a step of `agent` is sent of its memory: own posts when it posts,
/// what it engaged with when it reflects (which `reflecting` decides from
/// the agent's last reflection), the texts of both from the platform.
fn recall_for(state: &SimState, agent: AgentId, posting: bool, reflecting: impl Fn(Option<Turn>) -> bool) -> Recall {
    let none = Held::default();
    let held = state.memories.get(&agent).unwrap_or(&none);
    let platform = &state.platform;
    held.for_step(posting, reflecting(held.last_reflection), |p| platform.post(p).map(|p| &*p.content), || own_posts(platform, agent))
}

/// The texts of `agent`'s latest posts (not comments) on the platform,
/// oldest first, as many as a memory keeps.
fn own_posts(platform: &Platform, agent: AgentId) -> VecDeque<String> {
    let latest: Vec<&str> = platform
        .posts_by(agent)
        .rev()
        .filter_map(|id| platform.post(id))
        .filter(|p| p.parent.is_none())
        .take(OWN_POSTS_CAP)
        .map(|p| &*p.content)
        .collect();
    latest.into_iter().rev().map(str::to_string).collect()
}

/// `f` of each item, in order, the items split between the machine's cores:
/// for the coordinator's work between turns (ranking feeds, reading steps),
/// while the workers wait for the next turn.
fn on_every_core<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    if cores < 2 || items.len() < 64 {
        return items.iter().map(f).collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let parts: Vec<_> =
            items.chunks(items.len().div_ceil(cores)).map(|chunk| scope.spawn(move || chunk.iter().map(f).collect::<Vec<R>>())).collect();
        parts.into_iter().flat_map(|p| p.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    })
}

/// `items` cut into the run's shards, numbered from 0 (the numbers name
/// the shards' results files, so they must not depend on anything but the
/// items and the spec). Takes the items: a turn's are every active
/// agent's feed and memory, too many to copy.
fn in_shards<T>(items: Vec<T>, spec: &SimSpec, shard: impl Fn(u32, Vec<T>) -> ShardWork) -> Vec<ShardWork> {
    let size = spec.shard_size.max(1);
    let mut items = items.into_iter().peekable();
    let mut shards = Vec::new();
    while items.peek().is_some() {
        shards.push(shard(shards.len() as u32, items.by_ref().take(size).collect()));
    }
    shards
}

/// Publishes the shards whose results are not written yet; returns every
/// shard's results path.
async fn publish(lake: &Lake, queue: &dyn Queue, spec: &SimSpec, shards: &[ShardWork]) -> Result<Vec<String>> {
    let mut paths = Vec::with_capacity(shards.len());
    for work in shards {
        let path = work.results_path(&spec.run_id);
        if !lake.exists(&path).await? {
            let job = Job::Sim { run_id: spec.run_id.clone(), shard_id: work.shard_id(&spec.run_id), payload: work.to_payload() };
            queue.publish(JobKind::Sim, JobMessage::new(job).to_bytes()).await?;
        }
        paths.push(path);
    }
    Ok(paths)
}

/// Waits until every file of `paths` is written and reads each with
/// `read` as it lands, while the other shards still run: a turn's steps
/// are parsed as they come, not all at once after the last; fails if a
/// shard of this run is dead-lettered (resume once the cause is fixed).
///
/// Polls every tenth of the time waited so far (2 to 250 ms): the last
/// shard is seen at most ~10% after it lands, which matters when a turn
/// takes a tenth of a second, and a long wait costs few reads of the store.
///
/// Each shard found advances `progress` by its rows (agents): what a
/// coordinator whose workers run elsewhere can count.
async fn wait_for<R: some_schemas::Row, T>(
    lake: &Lake,
    queue: &dyn Queue,
    spec: &SimSpec,
    paths: &[String],
    progress: &dyn Progress,
    read: impl Fn(Vec<R>) -> Result<T>,
) -> Result<Vec<T>> {
    let mut results: Vec<Option<T>> = (0..paths.len()).map(|_| None).collect();
    let started = Instant::now();
    let mut last_dead_check = Instant::now();
    loop {
        for (slot, path) in results.iter_mut().zip(paths) {
            if slot.is_none()
                && let Some(rows) = read_results::<R>(lake, &spec.run_id, path).await?
            {
                progress.advance(rows.len() as u64);
                *slot = Some(read(rows)?);
            }
        }
        if results.iter().all(Option::is_some) {
            return Ok(results.into_iter().flatten().collect());
        }
        if last_dead_check.elapsed() > Duration::from_secs(2) {
            last_dead_check = Instant::now();
            check_dead_letters(queue, spec).await?;
        }
        tokio::time::sleep((started.elapsed() / 10).clamp(Duration::from_millis(2), Duration::from_millis(250))).await;
    }
}

async fn check_dead_letters(queue: &dyn Queue, spec: &SimSpec) -> Result<()> {
    for dead in queue.dead_letters(JobKind::Sim).await? {
        let Ok(JobMessage { job: Job::Sim { run_id, shard_id, .. }, .. }) = JobMessage::from_bytes(&dead.body) else { continue };
        if run_id == spec.run_id {
            return Err(Error::Task(format!(
                "simulation shard {shard_id} was dead-lettered: {}; fix the cause, then `some sim resume {run_id}`",
                dead.reason
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_split_between_cores_comes_back_in_order() {
        for n in [0usize, 1, 63, 64, 65, 1000, 1001] {
            let items: Vec<usize> = (0..n).collect();
            let out = on_every_core(&items, |i| (*i, std::thread::current().id()));
            assert_eq!(out.iter().map(|(i, _)| *i).collect::<Vec<_>>(), items, "{n} items");
        }
    }

    #[test]
    fn a_reflecting_step_is_sent_the_texts_the_coordinator_does_not_hold() {
        use some_sim::agent::memory::{Entry, Remembered};
        use some_sim::{Action, AgentAction, PostId};
        let mut state = SimState::default();
        (0..2).for_each(|a| state.platform.register(AgentId(a)));
        let post = |text: &str| AgentAction { agent: AgentId(0), seq: 0, action: Action::Post { text: text.into() } };
        state.platform.apply_turn(Turn(0), vec![post("the first post")]);
        let read = Entry {
            turn: Turn(1),
            post: PostId(0),
            author: AgentId(0),
            text: "the first post".into(),
            summarised: false,
            actions: vec![some_schemas::sim::ActionKind::Like],
            comment: None,
        };
        state.memories.entry(AgentId(1)).or_default().apply(&Remembered::Read(read));
        let sent = recall_for(&state, AgentId(1), false, |_| true);
        assert_eq!(sent.engaged[0].1.text, "the first post");
        assert!(recall_for(&state, AgentId(1), true, |_| false).engaged.is_empty());
    }

    #[test]
    fn a_posting_step_is_sent_the_agents_latest_posts_from_the_platform() {
        use some_sim::agent::memory::Remembered;
        use some_sim::{Action, Memory, PostId};
        let mut state = SimState::default();
        (0..2).for_each(|a| state.platform.register(AgentId(a)));
        let (held, mut whole) = (state.memories.entry(AgentId(0)).or_default(), Memory::default());
        let mut actions = Vec::new();
        for i in 0..OWN_POSTS_CAP + 3 {
            let text = format!("post {i}");
            held.apply(&Remembered::Posted { text: text.clone() });
            whole.remember_post(text.clone());
            actions.push(AgentAction { agent: AgentId(0), seq: 2 * i as u32, action: Action::Post { text } });
            let comment = Action::Comment { post: PostId(0), text: format!("comment {i}") };
            actions.push(AgentAction { agent: AgentId(0), seq: 2 * i as u32 + 1, action: comment });
        }
        state.platform.apply_turn(Turn(0), actions);
        assert_eq!(recall_for(&state, AgentId(0), true, |_| false).own_posts, whole.own_posts, "the memory's own posts, comments left out");
        assert!(recall_for(&state, AgentId(0), false, |_| false).own_posts.is_empty(), "only a posting step is sent them");
        assert!(recall_for(&state, AgentId(1), true, |_| false).own_posts.is_empty());
    }

    fn step(agent: i64, actions: &str) -> SimStepRow {
        SimStepRow {
            turn: 1,
            agent_id: agent,
            actions: actions.into(),
            posts: "[]".into(),
            memory: "[]".into(),
            failures: "[]".into(),
            calls: 1,
            prompt_tokens: 0,
            completion_tokens: 0,
            run_id: "r".into(),
        }
    }

    /// A lake in `dir`, a queue, run `r`'s spec and the steps paths of
    /// turn 1's two shards, for [`wait_for`].
    async fn two_shards(dir: &std::path::Path) -> (Lake, crate::queue::MemoryQueue, SimSpec, Vec<String>) {
        let lake = Lake::open(&crate::LakeLocation::Local(dir.to_path_buf())).await.unwrap();
        let personas = crate::sim::spec::PersonaSet::Builtin;
        let spec = SimSpec::new(some_schemas::RunId("r".into()), "m", Vec::new(), some_sim::Preset::paper(), personas);
        let paths = (0..2).map(|s| crate::sim::shard::steps_path(&spec.run_id, Turn(1), s)).collect();
        (lake, crate::queue::MemoryQueue::new(3), spec, paths)
    }

    #[tokio::test]
    async fn a_shards_steps_are_read_while_the_next_shard_still_runs() {
        let dir = tempfile::tempdir().unwrap();
        let (lake, queue, spec, paths) = two_shards(dir.path()).await;
        lake.put_once(&paths[0], vec![step(0, "[]")]).await.unwrap();
        let events = std::sync::Mutex::new(Vec::new());
        let read = |rows: Vec<SimStepRow>| {
            events.lock().unwrap().push(format!("read agent {}", rows[0].agent_id));
            read_shard("r", Turn(1), &rows)
        };
        let second = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            events.lock().unwrap().push("second shard written".to_string());
            lake.put_once(&paths[1], vec![step(1, "[]")]).await.unwrap();
        };
        let (read, ()) = tokio::join!(wait_for(&lake, &queue, &spec, &paths, &some_jobs::progress::NoProgress, read), second);
        let agents: Vec<Vec<AgentId>> = read.unwrap().iter().map(|s| s.iter().map(|(a, _)| *a).collect()).collect();
        assert_eq!(agents, [[AgentId(0)], [AgentId(1)]], "the shards' steps in shard order");
        assert_eq!(*events.lock().unwrap(), ["read agent 0", "second shard written", "read agent 1"]);
    }

    #[tokio::test]
    async fn a_step_that_does_not_read_fails_the_turn_without_waiting_for_the_other_shards() {
        let dir = tempfile::tempdir().unwrap();
        let (lake, queue, spec, paths) = two_shards(dir.path()).await;
        lake.put_once(&paths[0], vec![step(3, "[{\"agent\": 3, \"seq\": 0}]")]).await.unwrap();
        let read = |rows: Vec<SimStepRow>| read_shard("r", Turn(1), &rows);
        let waited = wait_for(&lake, &queue, &spec, &paths, &some_jobs::progress::NoProgress, read);
        let Err(err) = tokio::time::timeout(Duration::from_secs(10), waited).await.expect("no wait for shard 1") else {
            panic!("the step read")
        };
        let err = err.to_string();
        assert!(err.contains("sim_steps of run r, turn 1, agent 3: the actions do not read"), "{err}");
    }

    #[test]
    #[should_panic(expected = "item 700")]
    fn a_panic_on_another_core_is_the_callers() {
        let items: Vec<usize> = (0..1000).collect();
        on_every_core(&items, |i| assert_ne!(*i, 700, "item 700"));
    }
}
