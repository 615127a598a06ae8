//! `some worker`: consumes jobs from a broker until Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_jobs::tools::KernelService;
use some_schemas::JobKind;
use some_workers::Lake;
use some_workers::compute::{KERNEL_QUEUE, KernelServer, RemoteKernels};
use some_workers::worker::Worker;

use super::flags::{ExecFlags, KernelsFlag};
use super::progress::Bars;

/// What a worker process takes from the queues.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum WorkerKind {
    /// Agent episodes, judging and simulation shards (model calls).
    Llm,
    /// Release ingestion, embedding, and the tools' similarity and
    /// clustering for LLM workers started with `--remote-kernels`.
    Compute,
}

impl WorkerKind {
    fn jobs(self) -> &'static [JobKind] {
        match self {
            WorkerKind::Llm => &[JobKind::Episode, JobKind::Judge, JobKind::Sim, JobKind::Annotate],
            WorkerKind::Compute => &[JobKind::Ingest, JobKind::Embed],
        }
    }
}

#[derive(Debug, Args)]
pub struct WorkerCmd {
    #[arg(long, value_enum, default_value = "llm")]
    pub kind: WorkerKind,
    /// The kernels of this process: a compute worker serves with them, an
    /// LLM worker runs its tools' on them unless `--remote-kernels`.
    #[command(flatten)]
    pub kernels: KernelsFlag,
    /// Send the tools' similarity and clustering to compute workers, which
    /// keep the knowledge base resident (on a GPU where they have one).
    #[arg(long)]
    pub remote_kernels: bool,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl WorkerCmd {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let Some(url) = self.flags.jobs.queue.broker_url() else {
            anyhow::bail!("a worker needs a broker: --queue amqp://user:pass@host:5672/vhost (or SOME_QUEUE)");
        };
        let queue = some_workers::queue::open(&self.flags.jobs.queue).await?;
        let kernels = self.kernels.open()?;
        let tool_kernels: Arc<dyn KernelService> = match (self.kind, self.remote_kernels) {
            (WorkerKind::Llm, true) => Arc::new(RemoteKernels::connect(url).await?),
            (WorkerKind::Compute, true) => anyhow::bail!("--remote-kernels is for LLM workers: a compute worker serves the kernels"),
            (_, false) => Arc::new(kernels.clone()),
        };
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let worker = Worker::with_kernels(lake.clone(), queue, self.flags.worker(), Arc::new(Bars::new()), tool_kernels);
        let kinds = self.kind.jobs();
        let mut running: Vec<_> = kinds.iter().map(|kind| tokio::spawn(worker.clone().run(*kind, stopped.clone()))).collect();
        let mut consuming: Vec<&str> = kinds.iter().map(|k| k.queue()).collect();
        if let WorkerKind::Compute = self.kind {
            let server = KernelServer::new(lake.clone(), kernels);
            let url = url.to_string();
            running.push(tokio::spawn(async move { server.serve(&url, stopped).await }));
            consuming.push(KERNEL_QUEUE);
        }
        eprintln!(
            "worker {} consuming {} ({} jobs of each at once); Ctrl-C stops after the jobs in hand",
            some_workers::runs::worker_name(),
            consuming.join(", "),
            self.flags.jobs.concurrency
        );
        tokio::signal::ctrl_c().await?;
        let _ = stop.send(true);
        for r in running {
            let _ = r.await;
        }
        Ok(ExitCode::SUCCESS)
    }
}
