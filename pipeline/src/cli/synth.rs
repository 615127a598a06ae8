//! `some synth`: a world grounded in the lake's queries.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_jobs::synth::{Scale, SynthConfig, World};
use some_workers::Lake;
use some_workers::world::{read_queries, write_world};

use super::progress::Bars;

#[derive(Debug, Args)]
pub struct Synth {
    /// small (what the queries need) or paper (9,164,284 posts).
    #[arg(long, default_value = "small")]
    pub scale: Scale,
    /// The same seed gives the same world.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Also write the world as a SoMe release tree under this folder.
    #[arg(long)]
    pub release_out: Option<PathBuf>,
    /// Replace the world the lake already holds.
    #[arg(long)]
    pub replace: bool,
}

impl Synth {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let queries = read_queries(lake).await?;
        let config = SynthConfig { scale: self.scale, seed: self.seed };
        let world = Arc::new(World::plan(&queries, config)?);
        eprintln!(
            "planned {} posts, {} users, {} reports for {} queries",
            world.post_count(),
            world.user_count(),
            world.knowledge_count(),
            queries.len()
        );
        let report = write_world(lake, world.clone(), self.release_out.as_deref(), self.replace, &Bars::new()).await?;
        println!(
            "wrote {} posts ({} rows in all, {} files, {:.1} MB) in {:.1} s: {:.0} posts/s",
            world.post_count(),
            report.added,
            report.files,
            report.bytes as f64 / 1e6,
            report.seconds,
            world.post_count() as f64 / report.seconds
        );
        Ok(ExitCode::SUCCESS)
    }
}
