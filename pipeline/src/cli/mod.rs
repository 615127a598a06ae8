//! The `some` command line: one file per subcommand, [`flags`] for the
//! flags several share and [`wait`] for waiting on workers; each command
//! turns its flags into a validated plan, then calls the workers crate.

mod annotate;
mod cancel;
mod check;
mod compact;
mod compare;
mod demo;
mod embed;
mod failures;
mod flags;
mod ingest;
mod judge;
mod lake;
mod llm;
mod mcp;
mod models;
mod progress;
mod prompts;
mod report;
mod rerun;
mod run;
mod sim;
mod sim_interview;
mod sim_review;
mod sql;
mod status;
mod synth;
mod view;
mod worker;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use some_workers::lake::{DEFAULT_LAKE, LAKE_ENV};
use some_workers::{Lake, LakeLocation};

/// Run LLM social-media agents at scale: the SoMe benchmark over a Parquet lake.
#[derive(Debug, Parser)]
#[command(name = "some", version, about)]
pub struct Cli {
    /// Where the lake lives: a folder, or s3://bucket/prefix (endpoint and
    /// credentials from the AWS_* environment variables).
    #[arg(long, global = true, env = LAKE_ENV, default_value = DEFAULT_LAKE)]
    pub lake: String,
    /// More log output (-v: debug, -vv: trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The embedded default end to end: models, queries, a small world, one
    /// query of every task with the built-in model over HTTP, the report.
    Demo(demo::Demo),
    /// Run queries with an agent model and score them (on this process).
    Run(run::Run),
    /// Run the queries of a run that have no final result.
    Rerun(rerun::Rerun),
    /// Score a run's final episodes again or under another judge (judge jobs).
    Judge(judge::JudgeCmd),
    /// A run's scores and completion rates beside the paper's.
    Report(report::Report),
    /// A run's episodes and transcripts in a browser (served on loopback, or
    /// written as static pages with --html).
    View(view::View),
    /// A run's progress per task, failures by cause, throughput and ETA.
    Status(status::Status),
    /// Stop a run: workers drop its remaining shards.
    Cancel(cancel::Cancel),
    /// Consume and run jobs from a broker.
    Worker(worker::WorkerCmd),
    /// Per-task deltas against a baseline run; fails on a regression.
    Compare(compare::Compare),
    /// Merge a run's small result files.
    Compact(compact::Compact),
    /// Delete the files no version of the lake within the retention needs.
    Vacuum(lake::Vacuum),
    /// The lake's versions (`some lake history`), and converting a lake of
    /// the folder layout of earlier builds.
    #[command(subcommand)]
    Lake(lake::LakeCmd),
    /// Serve a built-in model over an OpenAI-compatible HTTP API.
    #[command(subcommand)]
    Llm(llm::Llm),
    /// Read queries or a SoMe release into the lake.
    #[command(subcommand)]
    Ingest(ingest::Ingest),
    /// Generate a world in which the lake's queries are answerable.
    Synth(synth::Synth),
    /// Make SoMe-style queries and ground truth from social-media data:
    /// UBP, UCS, MCR from interactions; RED, SES, UEA, SMQ with a model;
    /// MID from LIAR-RAW and RAWFC; the model-made ones reviewed by people.
    #[command(subcommand)]
    Annotate(annotate::Annotate),
    /// The persona-driven social-media simulation: run, resume, status, cancel.
    #[command(subcommand)]
    Sim(sim::Sim),
    /// Run SQL over every table of the lake.
    Sql(sql::Sql),
    /// Check that the lake's world holds what every query needs.
    Check(check::Check),
    /// Store embedding vectors for posts or knowledge reports.
    Embed(embed::Embed),
    /// Serve the eight tools over MCP (stdio, or streamable HTTP with --http).
    Mcp(mcp::Mcp),
    /// List or install the built-in models.
    #[command(subcommand)]
    Models(models::Models),
    /// The built-in prompt set as files (`export DIR`), for `--prompts DIR`.
    #[command(subcommand)]
    Prompts(prompts::PromptsCmd),
}

impl Cli {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let lake = &self.lake;
        match self.command {
            Command::Models(cmd) => cmd.run().await,
            Command::Prompts(cmd) => cmd.run(),
            Command::Llm(cmd) => cmd.run().await,
            Command::Demo(cmd) => cmd.run(&open(lake).await?).await,
            Command::Run(cmd) => cmd.run(&open(lake).await?).await,
            Command::Rerun(cmd) => cmd.run(&open(lake).await?).await,
            Command::Judge(cmd) => cmd.run(&open(lake).await?).await,
            Command::Report(cmd) => cmd.run(&open(lake).await?).await,
            Command::View(cmd) => cmd.run(&open(lake).await?).await,
            Command::Status(cmd) => cmd.run(&open(lake).await?).await,
            Command::Cancel(cmd) => cmd.run(&open(lake).await?).await,
            Command::Worker(cmd) => cmd.run(&open(lake).await?).await,
            Command::Compare(cmd) => cmd.run(&open(lake).await?).await,
            Command::Compact(cmd) => cmd.run(&open(lake).await?).await,
            Command::Vacuum(cmd) => cmd.run(&open(lake).await?).await,
            Command::Lake(cmd) => cmd.run(lake).await,
            Command::Ingest(cmd) => cmd.run(&open(lake).await?).await,
            Command::Synth(cmd) => cmd.run(&open(lake).await?).await,
            Command::Annotate(cmd) => cmd.run(&open(lake).await?).await,
            Command::Sim(cmd) => cmd.run(&open(lake).await?).await,
            Command::Sql(cmd) => cmd.run(&open(lake).await?).await,
            Command::Check(cmd) => cmd.run(&open(lake).await?).await,
            Command::Embed(cmd) => cmd.run(&open(lake).await?).await,
            Command::Mcp(cmd) => cmd.run(&open(lake).await?).await,
        }
    }
}

async fn open(location: &str) -> anyhow::Result<Lake> {
    let location: LakeLocation = location.parse()?;
    Ok(Lake::open(&location).await?)
}

pub fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("SOME_LOG").unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();
}
