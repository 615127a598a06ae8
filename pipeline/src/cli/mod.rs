//! The `some` command line: one file per subcommand; each turns its flags
//! into a validated plan, then calls the workers crate.

mod check;
mod embed;
mod ingest;
mod mcp;
mod models;
mod progress;
mod sql;
mod synth;

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
    /// Read queries or a SoMe release into the lake.
    #[command(subcommand)]
    Ingest(ingest::Ingest),
    /// Generate a world in which the lake's queries are answerable.
    Synth(synth::Synth),
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
}

impl Cli {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let lake = &self.lake;
        match self.command {
            Command::Models(cmd) => cmd.run().await,
            Command::Ingest(cmd) => cmd.run(&open(lake).await?).await,
            Command::Synth(cmd) => cmd.run(&open(lake).await?).await,
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
