//! `some llm serve`: a built-in model behind an OpenAI-compatible HTTP API.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};
use some_workers::access::{Access, TOKEN_ENV};
use some_workers::llm::serve::{MAX_REQUEST_BYTES, Served, serve};
use some_workers::llm::{ClientSettings, chat_model, installed_embedder};

use super::flags::DEFAULT_MODEL;

#[derive(Debug, Subcommand)]
pub enum Llm {
    /// Serve a built-in chat model (and the built-in embedder) over HTTP:
    /// /v1/chat/completions, /v1/embeddings, /v1/models.
    Serve(Serve),
}

#[derive(Debug, Args)]
pub struct Serve {
    #[arg(long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// The built-in embedder served at /v1/embeddings.
    #[arg(long, default_value = some_jobs::embed::DEFAULT_EMBEDDING_MODEL)]
    pub embedding_model: String,
    /// Address to listen on; a bare port binds 127.0.0.1. Beyond loopback
    /// a token is required.
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub addr: String,
    #[command(flatten)]
    pub token: TokenFlag,
    /// CPU threads for inference.
    #[arg(long, default_value_t = std::thread::available_parallelism().map_or(2, |n| n.get()))]
    pub threads: usize,
}

/// The bearer token a server requires.
#[derive(Debug, Args)]
pub struct TokenFlag {
    /// A file holding the bearer token every request must carry (default:
    /// the SOME_API_KEY environment variable; without either, loopback only).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

impl TokenFlag {
    /// The access rule of a server at `addr`, with bodies limited to
    /// `max_body` bytes; refused beyond loopback without a token, before
    /// anything is loaded.
    pub fn access(&self, addr: SocketAddr, max_body: usize) -> anyhow::Result<Access> {
        let access = Access::configured(self.token_file.as_deref(), max_body)?;
        access.check_bind(addr)?;
        if access.has_token() {
            eprintln!(
                "requests must carry the bearer token (from {})",
                self.token_file.as_ref().map_or(TOKEN_ENV.to_string(), |p| p.display().to_string())
            );
        }
        Ok(access)
    }
}

/// `PORT` or `HOST:PORT`; a bare port is loopback only.
pub fn parse_addr(addr: &str) -> anyhow::Result<SocketAddr> {
    let full = if addr.contains(':') { addr.to_string() } else { format!("127.0.0.1:{addr}") };
    full.parse().map_err(|e| anyhow::anyhow!("bad address {addr:?}: {e}"))
}

impl Llm {
    pub async fn run(self) -> anyhow::Result<ExitCode> {
        let Llm::Serve(cmd) = self;
        let addr = parse_addr(&cmd.addr)?;
        let access = cmd.token.access(addr, MAX_REQUEST_BYTES)?;
        let served = Served {
            chat: chat_model(&cmd.model, &[], &ClientSettings::default(), cmd.threads)?,
            embedder: installed_embedder(&cmd.embedding_model)?,
        };
        let bound = serve(served, addr, &access, async { tokio::signal::ctrl_c().await.unwrap_or_default() }).await?;
        // Scripts wait for this line.
        println!("serving {} at http://{bound}/v1", cmd.model);
        tokio::signal::ctrl_c().await?;
        Ok(ExitCode::SUCCESS)
    }
}
