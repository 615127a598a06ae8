//! Flags shared by several commands: those that make, take or judge jobs,
//! and those that read a version of the lake.

use std::path::PathBuf;
use std::time::Duration;

use std::sync::Arc;

use clap::Args;
use some_jobs::kernels::{BUILT_WITH_CUDA, KernelChoice, Kernels, select_kernels};
use some_jobs::progress::Progress;
use some_jobs::prompts::Prompts;
use some_jobs::scorers::JudgeSettings;
use some_schemas::QueueLocation;
use some_workers::Lake;
use some_workers::executor::Executor;
use some_workers::lake::AsOf;
use some_workers::llm::ClientSettings;
use some_workers::runs::budget::{RunBudget, read_prices};
use some_workers::worker::WorkerConfig;

/// The default agent and judge: the larger built-in chat model.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder-0.5b-instruct";

/// Which version of the lake a reading command reads.
#[derive(Debug, Args)]
pub struct AsOfFlag {
    /// Read the lake as of this version (a number, see `some lake history`)
    /// or time (2026-11-24T08:00:00Z, "2026-11-24 08:00:00", 2026-11-24);
    /// the latest version if not given.
    #[arg(long, value_name = "VERSION|TIME")]
    pub as_of: Option<AsOf>,
}

impl AsOfFlag {
    /// The lake pinned at the version asked for (or the latest): every read
    /// of the command sees that one version, named on standard error so a
    /// result can be reproduced with `--as-of`.
    pub async fn pin(&self, lake: &Lake) -> anyhow::Result<Lake> {
        let pinned = match self.as_of {
            Some(at) => lake.as_of(at).await?,
            None => lake.pinned().await?,
        };
        eprintln!("reading lake version {} (--as-of {0} reads it again)", pinned.snapshot().await?.version());
        Ok(pinned)
    }
}

/// The agent model and where it is served: shared by `run` and `sim run`.
#[derive(Debug, Args)]
pub struct ModelFlags {
    /// The agent model: a built-in model's name, or the model name an
    /// endpoint serves.
    #[arg(long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// OpenAI-compatible base URLs (http://host:port/v1), repeatable; none
    /// runs the built-in model in this process.
    #[arg(long = "endpoint")]
    pub endpoints: Vec<String>,
}

/// What a run may spend in all: shared by `run` and `rerun` (which gives a
/// stopped run a new budget).
#[derive(Debug, Args)]
pub struct BudgetFlags {
    /// Stop publishing once the run's episodes and primary judging have
    /// used this many tokens in all (shards already running finish).
    #[arg(long)]
    pub max_run_tokens: Option<u64>,
    /// Stop once the run has cost this much at the prices of --prices.
    #[arg(long, requires = "prices")]
    pub max_run_cost: Option<f64>,
    /// Prices per model, per million tokens, as JSON:
    /// {"MODEL": {"prompt": P, "completion": C, "cached_prompt": K}}.
    #[arg(long)]
    pub prices: Option<PathBuf>,
}

impl BudgetFlags {
    pub fn given(&self) -> bool {
        self.max_run_tokens.is_some() || self.max_run_cost.is_some()
    }

    /// The budget asked for, checked against the models the run calls.
    pub fn budget(&self, models: &[&str]) -> anyhow::Result<RunBudget> {
        if let Some(cost) = self.max_run_cost {
            anyhow::ensure!(cost.is_finite() && cost > 0.0, "--max-run-cost {cost}: give an amount above zero");
        }
        anyhow::ensure!(self.max_run_tokens != Some(0), "--max-run-tokens 0 would run nothing");
        let prices = match &self.prices {
            Some(path) => read_prices(path)?,
            None => Default::default(),
        };
        let budget = RunBudget { max_tokens: self.max_run_tokens, max_cost: self.max_run_cost, prices };
        budget.check(models)?;
        Ok(budget)
    }
}

/// Where jobs go and how many run at once: shared by every command that
/// makes or takes jobs.
#[derive(Debug, Args)]
pub struct QueueFlags {
    /// `memory` runs the jobs on this process; an AMQP URL
    /// (amqp://user:pass@host:5672/vhost) publishes them for `some worker`s.
    #[arg(long, env = "SOME_QUEUE", default_value = QueueLocation::MEMORY)]
    pub queue: QueueLocation,
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
    /// A folder of prompt files replacing built-in ones (the layout `some
    /// prompts export` writes): task system prompts for a run's agent,
    /// extraction and judge prompts for its judge.
    #[arg(long, value_name = "DIR")]
    pub prompts: Option<PathBuf>,
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

    /// The judge's settings, with the evaluation prompts of `--prompts`.
    pub fn settings(&self) -> anyhow::Result<JudgeSettings> {
        let (_, prompts) = self.prompts()?;
        Ok(JudgeSettings { temperature: Some(self.judge_temperature), seed: Some(self.judge_seed), prompts, ..Default::default() })
    }

    /// `--prompts` split into the agent's part and the judge's part (both
    /// empty without the flag).
    pub fn prompts(&self) -> anyhow::Result<(Prompts, Prompts)> {
        match &self.prompts {
            Some(dir) => Ok(Prompts::load(dir)?.split()),
            None => Ok(Default::default()),
        }
    }
}

/// Which kernels this process computes similarity and clustering with.
#[derive(Debug, Default, Args)]
pub struct KernelsFlag {
    /// cpu, cuda (a GPU, else an error) or auto (a GPU if there is one,
    /// else the CPU); auto if not given.
    #[arg(long, value_name = "cpu|cuda|auto")]
    pub kernels: Option<KernelChoice>,
}

impl KernelsFlag {
    /// The choice: as given, else `auto`.
    pub fn choice(&self) -> KernelChoice {
        self.kernels.unwrap_or_default()
    }

    /// The kernels chosen; says once in the log which, and for `auto` on
    /// the CPU why (a warning in a `cuda` build).
    pub fn open(&self) -> anyhow::Result<Arc<dyn Kernels>> {
        let selected = select_kernels(self.choice()).map_err(anyhow::Error::msg)?;
        match &selected.note {
            Some(note) if BUILT_WITH_CUDA => tracing::warn!("{note}"),
            Some(note) => tracing::info!("{note}"),
            None => tracing::info!("kernels: {}", selected.kernels.name()),
        }
        Ok(selected.kernels)
    }
}

/// Where a run's episodes go and, when this process works them, the
/// kernels their tools compute with: shared by run and rerun.
#[derive(Debug, Args)]
pub struct RunFlags {
    #[command(flatten)]
    pub exec: ExecFlags,
    // The kernels of the tools' similarity and clustering in episodes
    // worked on this process (`--queue memory`). With a broker the
    // workers' kernels compute them, and the flag is refused.
    #[command(flatten)]
    pub kernels: KernelsFlag,
}

impl RunFlags {
    /// The executor of `--queue`, refusing `--kernels` with a broker
    /// (this process only publishes; the workers' `--kernels` and
    /// `--remote-kernels` decide) before anything is recorded.
    pub async fn executor(&self, lake: &Lake, progress: Arc<dyn Progress>) -> anyhow::Result<Executor> {
        let queue = &self.exec.jobs.queue;
        if queue.broker_url().is_some() {
            if let Some(choice) = self.kernels.kernels {
                anyhow::bail!(
                    "--kernels {choice} applies to episodes worked on this process (--queue memory): with a broker they are \
                     published, and each worker's own --kernels (or --remote-kernels and a compute worker's --kernels) decides"
                );
            }
            return Ok(Executor::open(lake, queue, self.exec.worker(), progress).await?);
        }
        let kernels = self.kernels.open()?;
        Ok(Executor::open(lake, queue, self.exec.worker(), progress).await?.with_kernels(Arc::new(kernels)))
    }
}
