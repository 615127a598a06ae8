//! `some sim review`: the paper's human evaluation of a simulation run.
//! `export` writes a seeded sample of the run's actions, follows, posts
//! and comments with their context for annotators (`DIR/review.jsonl` and
//! `DIR/review.csv`, score columns empty); `import` reads a filled file
//! back, refuses it whole on the first wrong cell (naming file, line and
//! field) and otherwise stores the scores in `sim_reviews`, where `some sim
//! report` finds them. The defaults are the paper's sample: 30 regular
//! agents' actions and 60 items of each other kind. Its own file, apart
//! from `sim.rs`, so the review commands change without touching the run's.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use some_schemas::RunId;
use some_sim::evaluation::review::SampleSettings;
use some_workers::Lake;
use some_workers::sim::load_sim;
use some_workers::sim::review::{export, import};

#[derive(Debug, Subcommand)]
pub enum SimReview {
    /// Write a sample of the run's items with their context for annotators.
    Export(ReviewExport),
    /// Store the scores of a filled review file (JSONL or CSV).
    Import(ReviewImport),
}

impl SimReview {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        match self {
            SimReview::Export(cmd) => cmd.run(lake).await,
            SimReview::Import(cmd) => cmd.run(lake).await,
        }
    }
}

#[derive(Debug, Args)]
pub struct ReviewExport {
    pub run_id: RunId,
    /// The folder to write review.jsonl and review.csv in (default: review-RUN).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Seeds the sample: the same seed draws the same items.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Regular agents whose likes, reblogs and comments are sampled.
    #[arg(long, default_value_t = SampleSettings::default().agents)]
    pub agents: usize,
    /// Items of each kind at most, split evenly over the interaction stages.
    #[arg(long, default_value_t = SampleSettings::default().per_kind)]
    pub per_kind: usize,
}

impl ReviewExport {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let record = load_sim(lake, &self.run_id).await?;
        let dir = self.out.clone().unwrap_or_else(|| PathBuf::from(format!("review-{}", self.run_id)));
        let settings = SampleSettings { seed: self.seed, agents: self.agents, per_kind: self.per_kind };
        let e = export(lake, &record.spec, &dir, &settings).await?;
        let kinds: Vec<String> = e.by_kind.iter().map(|(k, n)| format!("{} {n}", k.as_str())).collect();
        let total: usize = e.by_kind.values().sum();
        println!(
            "exported {total} of the run's {} reviewable items ({})",
            e.reviewable,
            if kinds.is_empty() { "none".into() } else { kinds.join(", ") }
        );
        println!("wrote {} and {}", e.jsonl.display(), e.csv.display());
        Ok(ExitCode::SUCCESS)
    }
}

#[derive(Debug, Args)]
pub struct ReviewImport {
    pub run_id: RunId,
    /// The filled review file: .jsonl or .csv.
    pub file: PathBuf,
    /// The annotator of rows whose annotator cell is empty.
    #[arg(long)]
    pub annotator: Option<String>,
}

impl ReviewImport {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let record = load_sim(lake, &self.run_id).await?;
        let i = import(lake, &record.spec, &self.file, self.annotator.as_deref()).await?;
        println!(
            "imported {}: {} scored rows ({} new, {} replacing earlier scores, {} unchanged and not stored again); {} rows left unscored",
            self.file.display(),
            i.scored,
            i.added,
            i.replaced,
            i.unchanged,
            i.unscored
        );
        Ok(ExitCode::SUCCESS)
    }
}
