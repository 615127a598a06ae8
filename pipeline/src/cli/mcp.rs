//! `some mcp`: the eight tools over MCP, on stdio or streamable HTTP.

use std::process::ExitCode;

use clap::Args;
use some_jobs::tools::ToolSettings;
use some_workers::Lake;
use some_workers::llm::installed_embedder;
use some_workers::mcp::{McpWorld, SomeMcp};
use some_workers::world::LakeBackend;

use super::flags::KernelsFlag;
use super::llm::TokenFlag;

#[derive(Debug, Args)]
pub struct Mcp {
    /// Serve streamable HTTP at this address (path /mcp) instead of stdio.
    /// Bound to 127.0.0.1 unless an address says otherwise; beyond
    /// loopback a token is required.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    #[command(flatten)]
    pub token: TokenFlag,
    /// Keep the reference implementation's known tool bugs.
    #[arg(long)]
    pub reference_quirks: bool,
    #[command(flatten)]
    pub kernels: KernelsFlag,
}

impl Mcp {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let http = match &self.http {
            Some(addr) => {
                let addr = super::llm::parse_addr(addr)?;
                Some((addr, self.token.access(addr, SomeMcp::MAX_REQUEST_BYTES)?))
            }
            None => None,
        };
        let settings = ToolSettings { reference_quirks: self.reference_quirks, ..Default::default() };
        let embedder = installed_embedder(&settings.embedding_model)?;
        let kernels = self.kernels.open()?;
        let world = McpWorld { backend: LakeBackend::new(lake.clone())?, kernels, embedder, chat: None, settings };
        let server = SomeMcp::new(world);
        match http {
            None => server.serve_stdio().await?,
            Some((addr, access)) => {
                let shutdown = async { tokio::signal::ctrl_c().await.unwrap_or_default() };
                let bound = server.serve_http(addr, &access, shutdown).await?;
                eprintln!("serving MCP at http://{bound}/mcp (Ctrl-C stops)");
                tokio::signal::ctrl_c().await?;
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
