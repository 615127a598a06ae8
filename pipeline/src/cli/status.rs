//! `some status`, `some cancel`, `some worker`: following and steering runs
//! whose shards go through a broker.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use some_schemas::JobKind;
use some_workers::Lake;
use some_workers::coordinator::{RunProgress, progress};
use some_workers::judging::{JudgingSpec, judgings};
use some_workers::runs::{load_run, record_event};
use some_workers::worker::Worker;

use super::progress::Bars;
use super::run::ExecFlags;

#[derive(Debug, Args)]
pub struct Status {
    pub run_id: String,
    /// Keep showing live progress bars until the run is done.
    #[arg(long)]
    pub watch: bool,
}

impl Status {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        if self.watch {
            watch(lake, &self.run_id, Duration::from_secs(2)).await?;
        }
        let (spec, cancelled) = load_run(lake, &self.run_id).await?;
        let judgings = judgings(lake, &spec).await?;
        print!("{}", describe(&self.run_id, &progress(lake, &spec, cancelled).await?, &judgings));
        Ok(ExitCode::SUCCESS)
    }
}

fn describe(run_id: &str, p: &RunProgress, judgings: &[JudgingSpec]) -> String {
    let mut out = format!("run {run_id}{}\n", if p.cancelled { " (cancelled)" } else { "" });
    out.push_str(&format!("{:<5} {:>8} {:>8} {:>8} {:>8}\n", "task", "planned", "final", "failed", "pending"));
    for (task, t) in &p.tasks {
        out.push_str(&format!("{task:<5} {:>8} {:>8} {:>8} {:>8}\n", t.planned, t.finished, t.failed, t.planned - t.finished - t.failed));
    }
    out.push_str(&format!(
        "throughput {:.2} results/s; eta {}; tokens {} prompt, {} completion\n",
        p.throughput(),
        p.eta().map_or("-".into(), |s| format!("{s:.0} s")),
        p.prompt_tokens,
        p.completion_tokens
    ));
    for (cause, n) in &p.failures {
        out.push_str(&format!("failed attempts: {n} × {cause}\n"));
    }
    for j in judgings {
        let scored = p.scored.get(&j.judging).copied().unwrap_or(0);
        out.push_str(&format!("judging {} ({}): {scored} of {} final results scored\n", j.judging, j.judge_model, p.finished()));
    }
    out
}

/// Shows a bar per task until every query has a final result or a failed
/// latest attempt (or the run is cancelled).
async fn watch(lake: &Lake, run_id: &str, every: Duration) -> anyhow::Result<()> {
    let (spec, _) = load_run(lake, run_id).await?;
    let bars = MultiProgress::new();
    let style = ProgressStyle::with_template("{prefix:>4} [{bar:40}] {pos}/{len} {msg}").expect("static template").progress_chars("=> ");
    let mut per_task = std::collections::BTreeMap::new();
    loop {
        let (_, cancelled) = load_run(lake, run_id).await?;
        let p = progress(lake, &spec, cancelled).await?;
        for (task, t) in &p.tasks {
            let bar = per_task.entry(task.clone()).or_insert_with(|| {
                let b = bars.add(ProgressBar::new(t.planned as u64).with_style(style.clone()));
                b.set_prefix(task.clone());
                b
            });
            bar.set_position(t.finished as u64);
            bar.set_message(if t.failed > 0 { format!("{} failed", t.failed) } else { String::new() });
        }
        let settled: usize = p.tasks.values().map(|t| t.finished + t.failed).sum();
        if cancelled || settled >= p.planned() {
            bars.clear().ok();
            return Ok(());
        }
        tokio::time::sleep(every).await;
    }
}

#[derive(Debug, Args)]
pub struct Cancel {
    pub run_id: String,
}

impl Cancel {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let (spec, cancelled) = load_run(lake, &self.run_id).await?;
        if !cancelled {
            record_event(lake, &spec, some_schemas::RunEvent::Cancelled).await?;
        }
        println!("run {} cancelled: workers drop its remaining shards; `some rerun` will refuse it", self.run_id);
        Ok(ExitCode::SUCCESS)
    }
}

/// What a worker process takes from the queues.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum WorkerKind {
    /// Agent episodes and judging (model calls).
    Llm,
    /// Release ingestion and embedding.
    Compute,
}

impl WorkerKind {
    fn jobs(self) -> [JobKind; 2] {
        match self {
            WorkerKind::Llm => [JobKind::Episode, JobKind::Judge],
            WorkerKind::Compute => [JobKind::Ingest, JobKind::Embed],
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
        if self.flags.jobs.queue == "memory" {
            anyhow::bail!("a worker needs a broker: --queue amqp://user:pass@host:5672/vhost (or SOME_QUEUE)");
        }
        let queue = some_workers::queue::open(&self.flags.jobs.queue).await?;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let worker = Worker::new(lake.clone(), queue, self.flags.worker(), Arc::new(Bars::new()));
        let kinds = self.kind.jobs();
        let running: Vec<_> = kinds.iter().map(|kind| tokio::spawn(worker.clone().run(*kind, stopped.clone()))).collect();
        eprintln!(
            "worker {} consuming {} ({} jobs of each at once); Ctrl-C stops after the jobs in hand",
            some_workers::runner::worker_name(),
            kinds.map(|k| k.queue()).join(" and "),
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
