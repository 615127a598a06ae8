//! `some embed posts|knowledge`: store vectors in the lake.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_schemas::{PostSource, QueueLocation};
use some_workers::Lake;

use some_workers::embed::{BuiltinEmbedder, EmbedTarget, embed};
use some_workers::executor::Executor;
use some_workers::worker::WorkerConfig;

use super::progress::Bars;

#[derive(Debug, Args)]
pub struct Embed {
    /// posts or knowledge.
    pub collection: String,
    /// Only posts of this source: raw, topic or weibo.
    #[arg(long)]
    pub source: Option<String>,
    /// `memory` embeds on this process; an AMQP URL publishes one job per
    /// partition for `some worker --kind compute`.
    #[arg(long, env = "SOME_QUEUE", default_value = QueueLocation::MEMORY)]
    pub queue: QueueLocation,
    /// The built-in embedder.
    #[arg(long, default_value = some_jobs::embed::DEFAULT_EMBEDDING_MODEL)]
    pub model: String,
}

impl Embed {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let target = match self.collection.as_str() {
            "knowledge" => EmbedTarget::Knowledge,
            "posts" => EmbedTarget::Posts(
                self.source
                    .map(|s| PostSource::parse(&s).ok_or_else(|| anyhow::anyhow!("unknown source {s:?}: expected raw, topic or weibo")))
                    .transpose()?,
            ),
            other => anyhow::bail!("unknown collection {other:?}: expected posts or knowledge"),
        };
        BuiltinEmbedder::spec(&self.model)?;
        let executor = Executor::open(lake, &self.queue, WorkerConfig::default(), Arc::new(Bars::new())).await?;
        if let Some((queue, _)) = executor.broker() {
            let jobs = some_workers::coordinator::publish_embedding(queue, lake, &target, &self.model).await?;
            println!("published {jobs} embedding jobs for `some worker --kind compute`");
            return Ok(ExitCode::SUCCESS);
        }
        let embedder = BuiltinEmbedder::load(&self.model)?;
        let report = embed(lake, &embedder, target, &Bars::new()).await?;
        println!(
            "embedded {} texts ({} already had vectors) in {:.1} s: {:.0} texts/s",
            report.embedded,
            report.already,
            report.seconds,
            report.embedded as f64 / report.seconds.max(1e-9)
        );
        Ok(ExitCode::SUCCESS)
    }
}
