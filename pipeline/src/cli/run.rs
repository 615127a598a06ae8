//! `some run`, `some rerun`, `some report`: runs through the in-process
//! queue (the embedded default) or a broker, their reruns and results.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use some_jobs::agent::{AgentSettings, Protocol};
use some_jobs::tools::ToolSettings;
use some_schemas::{PRIMARY_JUDGING, RunEvent, Task};
use some_workers::Lake;
use some_workers::coordinator;
use some_workers::llm::ClientSettings;
use some_workers::runner::{JudgeSettingsSpec, RunSpec};
use some_workers::runs::{self, RerunFilter};
use some_workers::worker::WorkerConfig;
use some_workers::world::read_queries;

use some_jobs::progress::Progress as _;

use super::progress::Bars;

/// The default agent and judge: the larger built-in chat model.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-0.5b-instruct";

/// Where jobs go and how many run at once: shared by every command that
/// makes or takes jobs.
#[derive(Debug, Args)]
pub struct QueueFlags {
    /// `memory` runs the jobs on this process; an AMQP URL
    /// (amqp://user:pass@host:5672/vhost) publishes them for `some worker`s.
    #[arg(long, env = "SOME_QUEUE", default_value = "memory")]
    pub queue: String,
    /// Jobs in flight at once on this process, per job kind (the queue
    /// prefetch).
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Seconds a job may take before it is abandoned and requeued.
    #[arg(long, default_value_t = 1800)]
    pub deadline: u64,
}

impl QueueFlags {
    /// A worker's settings, with default model client settings (for jobs
    /// that call no model).
    pub fn worker(&self) -> WorkerConfig {
        self.worker_with(ClientSettings::default(), 1)
    }

    fn worker_with(&self, client: ClientSettings, threads: usize) -> WorkerConfig {
        WorkerConfig { concurrency: self.concurrency, deadline: Duration::from_secs(self.deadline), client, threads }
    }
}

/// Where jobs go, and how their model calls are made: shared by run,
/// rerun, judge and worker.
#[derive(Debug, Args)]
pub struct ExecFlags {
    #[command(flatten)]
    pub jobs: QueueFlags,
    /// Model calls in flight, and episodes of one shard at once.
    #[arg(long, default_value_t = 8)]
    pub calls: usize,
    /// Seconds before one model call is abandoned and retried.
    #[arg(long, default_value_t = 300)]
    pub timeout: u64,
    /// Retries of a failed model call (429, 5xx, time-outs, refused connections).
    #[arg(long, default_value_t = 5)]
    pub retries: usize,
    /// Cache model responses in this folder, keyed by request.
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// CPU threads of a built-in model.
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(2, |n| n.get()))]
    pub threads: usize,
}

impl ExecFlags {
    pub fn worker(&self) -> WorkerConfig {
        self.jobs.worker_with(self.client(), self.threads)
    }

    fn client(&self) -> ClientSettings {
        ClientSettings {
            concurrency: self.calls,
            timeout: Duration::from_secs(self.timeout),
            max_retries: self.retries,
            cache: self.cache.clone(),
            ..Default::default()
        }
    }
}

/// Who judges: a run's judge, or a new judging's.
#[derive(Debug, Args)]
pub struct JudgeFlags {
    /// The judge model (for a run, the agent model if not given).
    #[arg(long)]
    pub judge_model: Option<String>,
    /// The judge's endpoints, repeatable (if not given, those of the model
    /// it defaults to, when it is that model).
    #[arg(long = "judge-endpoint")]
    pub judge_endpoints: Vec<String>,
    /// Judge sampling temperature and seed (recorded with every score).
    #[arg(long, default_value_t = 0.0)]
    pub judge_temperature: f32,
    #[arg(long, default_value_t = 0)]
    pub judge_seed: u64,
}

impl JudgeFlags {
    /// The judge model and its endpoints: as given, else `model` at
    /// `endpoints`.
    pub fn judge(&self, model: &str, endpoints: &[String]) -> (String, Vec<String>) {
        let judge = self.judge_model.clone().unwrap_or_else(|| model.to_string());
        let judge_endpoints =
            if self.judge_endpoints.is_empty() && judge == model { endpoints.to_vec() } else { self.judge_endpoints.clone() };
        (judge, judge_endpoints)
    }

    pub fn settings(&self) -> JudgeSettingsSpec {
        JudgeSettingsSpec { temperature: Some(self.judge_temperature), seed: Some(self.judge_seed), ..Default::default() }
    }
}

#[derive(Debug, Args)]
pub struct Run {
    /// Task codes, comma-separated (all eight if not given).
    #[arg(long, value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Queries per task, sampled by --sample-seed (all if not given).
    #[arg(long)]
    pub sample: Option<usize>,
    #[arg(long, default_value_t = 0)]
    pub sample_seed: u64,
    /// The agent model: a built-in model's name, or the model name an
    /// endpoint serves.
    #[arg(long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// OpenAI-compatible base URLs (http://host:port/v1), repeatable; none
    /// runs the built-in model in this process.
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
    #[command(flatten)]
    pub judge: JudgeFlags,
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
    /// The run's id (a fresh one if not given).
    #[arg(long)]
    pub run_id: Option<String>,
    /// Also write the report as self-contained HTML here.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// With a broker: wait for the run to finish, then print the report.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub flags: ExecFlags,
}

fn parse_tasks(codes: &[String]) -> anyhow::Result<Vec<Task>> {
    codes.iter().map(|c| c.parse::<Task>().map_err(anyhow::Error::msg)).collect()
}

impl Run {
    /// The spec this command line asks for, over the lake's queries.
    async fn spec(&self, lake: &Lake) -> anyhow::Result<RunSpec> {
        let tasks = parse_tasks(&self.tasks)?;
        let queries = read_queries(lake).await?;
        if queries.is_empty() {
            anyhow::bail!("the lake has no queries: run `some ingest queries` first");
        }
        let planned = runs::plan_queries(&queries, &tasks, self.sample, self.sample_seed);
        if planned.is_empty() {
            anyhow::bail!("no query of the tasks {:?} is in the lake", self.tasks);
        }
        let (judge_model, judge_endpoints) = self.judge.judge(&self.model, &self.endpoints);
        Ok(RunSpec {
            run_id: self.run_id.clone().unwrap_or_else(runs::new_run_id),
            model: self.model.clone(),
            endpoints: self.endpoints.clone(),
            judge_model,
            judge_endpoints,
            agent: AgentSettings {
                protocol: self.protocol,
                max_llm_calls: self.max_llm_calls,
                max_input_tokens: self.max_input_tokens,
                temperature: self.temperature,
                seed: self.seed,
                max_tokens: self.max_tokens,
                failing_tools: self.failing_tools,
            },
            tools: ToolSettings { reference_quirks: self.reference_quirks, ..Default::default() },
            judge: self.judge.settings(),
            queries: planned,
            shard_size: self.shard_size.max(1),
            concurrency: self.flags.calls.max(1),
        })
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
        runs::record_event(lake, &spec, RunEvent::Submitted).await?;
        eprintln!("run {}: {} queries, agent {}, judge {}", spec.run_id, spec.queries.len(), spec.model, spec.judge_model);
        let todo: Vec<(String, i32)> = spec.queries.iter().map(|q| (q.clone(), 1)).collect();
        execute(lake, &spec, &todo, &self.flags, html, self.wait).await
    }
}

/// Runs `todo` here (and prints the report), or publishes it for workers.
async fn execute(
    lake: &Lake,
    spec: &RunSpec,
    todo: &[(String, i32)],
    flags: &ExecFlags,
    html: Option<&Path>,
    wait: bool,
) -> anyhow::Result<ExitCode> {
    if flags.jobs.queue != "memory" {
        let queue = some_workers::queue::open(&flags.jobs.queue).await?;
        let wave = todo.iter().map(|(_, a)| *a).max().unwrap_or(1) as u32;
        let shards = coordinator::publish_shards(queue.as_ref(), spec, todo, wave).await?;
        eprintln!("published {shards} shards; follow with `some status {} --watch`", spec.run_id);
        if !wait {
            return Ok(ExitCode::SUCCESS);
        }
        let bars = Bars::new();
        bars.phase("episodes", Some(todo.len() as u64));
        let mut done = 0;
        while done < todo.len() {
            tokio::time::sleep(Duration::from_secs(1)).await;
            let now = coordinator::attempted(lake, &spec.run_id, todo).await?;
            bars.advance(now.saturating_sub(done) as u64);
            done = now;
        }
        bars.finish();
        print_report(lake, &spec.run_id, PRIMARY_JUDGING, html).await?;
        return Ok(ExitCode::SUCCESS);
    }
    let started = std::time::Instant::now();
    let dead = coordinator::run_in_process(lake, spec, todo, flags.worker(), Arc::new(Bars::new())).await?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!("{} episodes in {secs:.1} s ({:.2} episodes/s)", todo.len(), todo.len() as f64 / secs.max(1e-9));
    print_report(lake, &spec.run_id, PRIMARY_JUDGING, html).await?;
    if !dead.is_empty() {
        for d in &dead {
            eprintln!("dead-lettered: {}", d.reason);
        }
        eprintln!("`some rerun {}` runs what is missing", spec.run_id);
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Debug, Args)]
pub struct Rerun {
    pub run_id: String,
    /// Only queries that ran and failed, not those never started.
    #[arg(long)]
    pub failed_only: bool,
    /// Only these tasks (comma-separated codes).
    #[arg(long = "task", value_delimiter = ',')]
    pub tasks: Vec<String>,
    /// Reach the agent model here instead of the run's endpoints.
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
    /// With a broker: wait for the run to finish, then print the report.
    #[arg(long)]
    pub wait: bool,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl Rerun {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let (mut spec, cancelled) = runs::load_run(lake, &self.run_id).await?;
        if cancelled {
            anyhow::bail!("run {} was cancelled", self.run_id);
        }
        parse_tasks(&self.tasks)?;
        if !self.endpoints.is_empty() {
            if spec.judge_endpoints == spec.endpoints {
                spec.judge_endpoints = self.endpoints.clone();
            }
            spec.endpoints = self.endpoints.clone();
        }
        let rows = runs::read_run(lake, &spec.run_id).await?;
        let todo = runs::todo(&spec, &rows, &RerunFilter { failed_only: self.failed_only, tasks: self.tasks.clone() });
        if todo.is_empty() {
            println!("run {}: every query has a final result", spec.run_id);
            return Ok(ExitCode::SUCCESS);
        }
        eprintln!("run {}: rerunning {} queries", spec.run_id, todo.len());
        if !self.endpoints.is_empty() {
            // Workers read the endpoints from the run's spec.
            runs::record_event(lake, &spec, RunEvent::Submitted).await?;
        }
        execute(lake, &spec, &todo, &self.flags, None, self.wait).await
    }
}

#[derive(Debug, Args)]
pub struct Report {
    pub run_id: String,
    /// Read the scores of this judging of the run.
    #[arg(long, default_value = PRIMARY_JUDGING)]
    pub judging: String,
    /// Also write a self-contained HTML report with charts to this file.
    #[arg(long)]
    pub html: Option<PathBuf>,
}

impl Report {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        print_report(lake, &self.run_id, &self.judging, self.html.as_deref()).await?;
        Ok(ExitCode::SUCCESS)
    }
}

/// Prints a run's report under one of its judgings (and writes it as HTML).
pub(super) async fn print_report(lake: &Lake, run_id: &str, judging: &str, html: Option<&Path>) -> anyhow::Result<()> {
    let report = some_workers::report::build(lake, run_id, judging).await?;
    println!("{}", some_workers::report::text(&report));
    if let Some(path) = html {
        std::fs::write(path, some_workers::report::html(&report)).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}
