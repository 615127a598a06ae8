//! `some run`: a benchmark run through the in-process queue (the embedded
//! default) or a broker.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_jobs::agent::{AgentSettings, Protocol};
use some_jobs::tools::ToolSettings;
use some_schemas::{JobKind, PRIMARY_JUDGING, QueryAttempt, RunEvent, RunId, Task};
use some_workers::Lake;
use some_workers::coordinator;
use some_workers::embed::BuiltinEmbedder;
use some_workers::executor::{Executor, Look, Outcome, Work};
use some_workers::queue::Queue;
use some_workers::runs::{self, RunSpec, progress};
use some_workers::world::read_queries;

use super::failures::report_failures;
use super::flags::{BudgetFlags, JudgeFlags, ModelFlags, RunFlags};
use super::progress::Bars;
use super::report::print_report;

#[derive(Debug, Args)]
pub struct Run {
    /// Task codes, comma-separated (all eight if not given).
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<Task>,
    /// Queries per task, sampled by --sample-seed (all if not given).
    #[arg(long)]
    pub sample: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub sample_seed: u64,
    #[command(flatten)]
    pub agent: ModelFlags,
    #[command(flatten)]
    pub judge: JudgeFlags,
    /// The embedding model whose stored vectors clustering and retrieval
    /// read, and which embeds retrieval queries: a built-in embedder, or
    /// any model with --embedding-endpoint.
    #[arg(long, default_value = some_jobs::embed::DEFAULT_EMBEDDING_MODEL)]
    pub embedding_model: String,
    /// topic_clustering's θ (default: the one measured for the built-in
    /// embedder, the reference's 0.5 for any other model).
    #[arg(long)]
    pub cluster_threshold: Option<f32>,
    /// OpenAI-compatible endpoints of the embedding model, repeatable (e.g.
    /// vLLM serving Qwen3-Embedding-4B, whose query instruction is then
    /// applied); none embeds queries with the built-in embedder.
    #[arg(long = "embedding-endpoint")]
    pub embedding_endpoints: Vec<String>,
    /// text (the reference's <tool_call> protocol) or native (OpenAI tools).
    #[arg(long, default_value = "text")]
    pub protocol: Protocol,
    #[arg(long, default_value_t = 20)]
    pub max_llm_calls: u32,
    /// Oldest turns are dropped beyond this estimated prompt size.
    #[arg(long, default_value_t = 58_000)]
    pub max_input_tokens: usize,
    /// Tokens per model reply (the endpoint's default if not given).
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// Tokens an episode may spend in all; checked before each model call,
    /// as --max-llm-calls is, and the episode ends as when its calls run out.
    #[arg(long)]
    pub max_episode_tokens: Option<u64>,
    /// Seconds an episode may take, checked likewise.
    #[arg(long)]
    pub max_episode_seconds: Option<u64>,
    #[arg(long)]
    pub temperature: Option<f32>,
    #[arg(long)]
    pub seed: Option<u64>,
    /// The hallucination probe: every tool call answers with an error.
    #[arg(long)]
    pub failing_tools: bool,
    /// Keep the reference implementation's known tool bugs.
    #[arg(long)]
    pub reference_quirks: bool,
    /// Queries per shard (the unit committed to the lake and retried).
    #[arg(long, default_value_t = 25)]
    pub shard_size: usize,
    /// Run every query this many times (each epoch with its own seed),
    /// for scores with intervals, pass@k and pass^k.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub epochs: u32,
    #[command(flatten)]
    pub budget: BudgetFlags,
    /// The run's id (a fresh one if not given).
    #[arg(long)]
    pub run_id: Option<RunId>,
    /// Also write the report as self-contained HTML here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// With a broker: wait for the run to finish, then print the report.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub flags: RunFlags,
}

impl Run {
    /// The spec this command line asks for, over the lake's queries.
    async fn spec(&self, lake: &Lake) -> anyhow::Result<RunSpec> {
        let queries = read_queries(lake).await?;
        if queries.is_empty() {
            anyhow::bail!("the lake has no queries: run `some ingest queries` first");
        }
        let planned = runs::plan_queries(&queries, &self.tasks, self.sample, self.sample_seed);
        if planned.is_empty() {
            anyhow::bail!("no query of the tasks {:?} is in the lake", self.tasks);
        }
        if self.embedding_endpoints.is_empty() {
            BuiltinEmbedder::spec(&self.embedding_model)
                .map_err(|e| anyhow::anyhow!("--embedding-model: {e} (or give --embedding-endpoint URL for a served model)"))?;
        }
        let mut tools = ToolSettings::for_embedding_model(&self.embedding_model);
        tools.reference_quirks = self.reference_quirks;
        if let Some(theta) = self.cluster_threshold {
            anyhow::ensure!((-1.0..=1.0).contains(&theta), "--cluster-threshold {theta}: a cosine threshold lies in [-1, 1]");
            tools.cluster_threshold = theta;
        }
        let (judge_model, judge_endpoints) = self.judge.judge(&self.agent.model, &self.agent.endpoints);
        let budget = self.budget.budget(&[&self.agent.model, &judge_model])?;
        let spec = RunSpec {
            run_id: self.run_id.clone().unwrap_or_else(RunId::new_dated),
            model: self.agent.model.clone(),
            endpoints: self.agent.endpoints.clone(),
            judge_model,
            judge_endpoints,
            embedding_endpoints: self.embedding_endpoints.clone(),
            agent: AgentSettings {
                protocol: self.protocol,
                max_llm_calls: self.max_llm_calls,
                max_input_tokens: self.max_input_tokens,
                temperature: self.temperature,
                seed: self.seed,
                max_tokens: self.max_tokens,
                failing_tools: self.failing_tools,
                prompts: self.judge.prompts()?.0,
                max_episode_tokens: self.max_episode_tokens,
                max_episode_seconds: self.max_episode_seconds,
            },
            tools,
            judge: self.judge.settings()?,
            queries: planned,
            shard_size: self.shard_size.max(1),
            concurrency: self.flags.exec.calls.max(1),
            epochs: 1,
            epoch_seeds: Vec::new(),
            budget,
        };
        Ok(spec.with_epochs(self.epochs))
    }

    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let html = self.html.clone();
        self.run_with_html(lake, html.as_deref()).await
    }

    pub async fn run_with_html(self, lake: &Lake, html: Option<&Path>) -> anyhow::Result<ExitCode> {
        let spec = self.spec(lake).await?;
        // Fail before recording anything if the models cannot be reached.
        some_workers::llm::check_chat_model(&spec.model, &spec.endpoints)?;
        some_workers::llm::check_chat_model(&spec.judge_model, &spec.judge_endpoints)?;
        let executor = self.flags.executor(lake, Arc::new(Bars::new())).await?;
        runs::record_event(lake, &spec, RunEvent::Submitted).await?;
        let epochs = if spec.epochs > 1 { format!(" × {} epochs", spec.epochs) } else { String::new() };
        eprintln!("run {}: {} queries{epochs}, agent {}, judge {}", spec.run_id, spec.queries.len(), spec.model, spec.judge_model);
        let todo = spec.first_attempts();
        execute(lake, &spec, &todo, &executor, html, self.wait).await
    }
}

/// Runs `todo` here (and prints the report), or publishes it for workers
/// (and, with `wait`, waits for them).
pub(super) async fn execute(
    lake: &Lake,
    spec: &RunSpec,
    todo: &[QueryAttempt],
    executor: &Executor,
    html: Option<&Path>,
    wait: bool,
) -> anyhow::Result<ExitCode> {
    let again = format!("`some rerun {}` runs what is missing", spec.run_id);
    let wave = todo.iter().map(|q| q.attempt.0).max().unwrap_or(1) as u32;
    let remote = executor.broker().is_some();
    let publish = |queue: Arc<dyn Queue>| async move {
        let shards = coordinator::publish_shards(queue.as_ref(), spec, todo, wave).await?;
        if remote {
            eprintln!("published {} shards; follow with `some status {} --watch`", shards.len(), spec.run_id);
        }
        Ok(shards)
    };
    let look = || async move {
        let done = progress::attempted(lake, &spec.run_id, todo).await?;
        // A run stopped at its budget settles with what it has.
        let stopped = runs::load_run(lake, &spec.run_id).await?.stopped;
        Ok(Look { done, settled: done >= todo.len() || stopped.is_some(), failures: Vec::new() })
    };
    let started = std::time::Instant::now();
    let work = Work { kind: JobKind::Episode, phase: "episodes", units: todo.len() };
    let failures = match executor.submit(work, publish, wait.then_some(look)).await? {
        Outcome::Published(_) => return Ok(ExitCode::SUCCESS),
        Outcome::Settled(failures) => failures,
    };
    if executor.broker().is_none() {
        let secs = started.elapsed().as_secs_f64();
        eprintln!("{} episodes in {secs:.1} s ({:.2} episodes/s)", todo.len(), todo.len() as f64 / secs.max(1e-9));
    }
    print_report(lake, &spec.run_id, PRIMARY_JUDGING, html).await?;
    let mut failures = failures;
    if let Some(reason) = runs::load_run(lake, &spec.run_id).await?.stopped {
        let left = runs::todo(spec, &runs::read_run(lake, &spec.run_id).await?, &Default::default()).len();
        failures.push(format!("run stopped with {left} samples not run: {reason}"));
    }
    let again = if failures.iter().any(|f| f.starts_with("run stopped")) {
        format!("`some rerun {} --max-run-tokens N` (or --max-run-cost) goes on with a new budget", spec.run_id)
    } else {
        again
    };
    Ok(report_failures(&failures, &again))
}
