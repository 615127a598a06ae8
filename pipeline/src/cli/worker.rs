//! `some worker`: consumes jobs from a broker until Ctrl-C.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_schemas::JobKind;
use some_workers::Lake;
use some_workers::worker::Worker;

use super::flags::ExecFlags;
use super::progress::Bars;

/// What a worker process takes from the queues.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum WorkerKind {
    /// Agent episodes, judging and simulation shards (model calls).
    Llm,
    /// Release ingestion and embedding.
    Compute,
}

impl WorkerKind {
    fn jobs(self) -> &'static [JobKind] {
        match self {
            WorkerKind::Llm => &[JobKind::Episode, JobKind::Judge, JobKind::Sim],
            WorkerKind::Compute => &[JobKind::Ingest, JobKind::Embed],
        }
    }
}

#[derive(Debug, Args)]
pub struct WorkerCmd {
    #[arg(long, value_enum, default_value = "llm")]
    pub kind: WorkerKind,
    #[command(flatten)]
    pub flags: ExecFlags,
}

impl WorkerCmd {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        if self.flags.jobs.queue.is_memory() {
            anyhow::bail!("a worker needs a broker: --queue amqp://user:pass@host:5672/vhost (or SOME_QUEUE)");
        }
        let queue = some_workers::queue::open(&self.flags.jobs.queue).await?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let worker = Worker::new(lake.clone(), queue, self.flags.worker(), Arc::new(Bars::new()));
        let kinds = self.kind.jobs();
        let running: Vec<_> = kinds.iter().map(|kind| tokio::spawn(worker.clone().run(*kind, stopped.clone()))).collect();
        eprintln!(
            "worker {} consuming {} ({} jobs of each at once); Ctrl-C stops after the jobs in hand",
            some_workers::runs::worker_name(),
            kinds.iter().map(|k| k.queue()).collect::<Vec<_>>().join(", "),
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
