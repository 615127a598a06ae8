//! `some mcp`: the eight tools over the Model Context Protocol, so any MCP
//! client can explore a SoMe world.
//!
//! The tools' folder state (what `post_search` stored for `data_folder`)
//! lives in the server. Over stdio that is one client's state. Over
//! streamable HTTP, the protocol's newest version has no sessions, so the
//! state is shared by every client of that server process; run one server
//! per exploring agent. `topic_summarization` needs a chat model and
//! reports that it has none unless one is configured.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use some_jobs::chat::ChatModel;
use some_jobs::embed::Embedder;
use some_jobs::kernels::Kernels;
use some_jobs::tools::{ALL_TOOLS, Folders, ToolContext, ToolSettings, call_tool};
use tokio::sync::Mutex;

use crate::access::Access;
use crate::error::{Error, Result};
use crate::world::LakeBackend;

/// What the server's tools run against.
pub struct McpWorld {
    pub backend: LakeBackend,
    pub kernels: Arc<dyn Kernels>,
    pub embedder: Option<Arc<dyn Embedder>>,
    pub chat: Option<Arc<dyn ChatModel>>,
    pub settings: ToolSettings,
}

/// The MCP server: the world, and the folders of its session.
#[derive(Clone)]
pub struct SomeMcp {
    world: Arc<McpWorld>,
    folders: Arc<Mutex<Folders>>,
}

impl SomeMcp {
    pub fn new(world: McpWorld) -> SomeMcp {
        SomeMcp { world: Arc::new(world), folders: Arc::new(Mutex::new(Folders::default())) }
    }

    /// The tools as MCP lists them, from their one definition.
    pub fn tools() -> Vec<Tool> {
        ALL_TOOLS
            .iter()
            .map(|t| {
                let schema = t.input_schema().as_object().cloned().unwrap_or_default();
                Tool::new(t.name, t.description, Arc::new(schema))
            })
            .collect()
    }

    /// Serves one client on standard input and output until it disconnects.
    pub async fn serve_stdio(self) -> Result<()> {
        let running = self.serve(rmcp::transport::stdio()).await.map_err(|e| Error::Task(format!("mcp: {e}")))?;
        running.waiting().await.map_err(|e| Error::Task(format!("mcp: {e}")))?;
        Ok(())
    }

    /// A request's limit: tool arguments are a few names and dates.
    pub const MAX_REQUEST_BYTES: usize = 1 << 20;

    /// Serves streamable HTTP at `addr` (path `/mcp`), to whom `access`
    /// lets in, until `shutdown` resolves.
    pub async fn serve_http(
        self,
        addr: SocketAddr,
        access: &Access,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<SocketAddr> {
        use rmcp::transport::streamable_http_server::{
            StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
        };
        let service = StreamableHttpService::new(
            move || Ok(self.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        access.check_bind(addr)?;
        let router = access.guard(axum::Router::new().nest_service("/mcp", service));
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(Error::io(format!("mcp: listening on {addr}")))?;
        let local = listener.local_addr().map_err(Error::io("mcp: the listening address"))?;
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, router).with_graceful_shutdown(shutdown).await {
                tracing::error!(error = %e, "mcp http server stopped");
            }
        });
        Ok(local)
    }
}

impl ServerHandler for SomeMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("some", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "The eight SoMe social-media tools over a SoMe world. Search tools (post_search, topic_search, user_search) store \
                 results in named folders; read them with data_folder. Tool text is mostly Chinese, as in the benchmark.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(SomeMcp::tools()))
    }

    async fn call_tool(&self, request: CallToolRequestParams, _context: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        let args = request.arguments.unwrap_or_default();
        let world = &self.world;
        let ctx = ToolContext {
            backend: &world.backend,
            kernels: &world.kernels,
            embedder: world.embedder.as_deref(),
            chat: world.chat.as_deref(),
            settings: &world.settings,
        };
        let mut folders = self.folders.lock().await;
        // A world that cannot be read is the server's failure, not a tool result.
        let outcome = call_tool(&ctx, &mut folders, &ALL_TOOLS, &request.name, &args)
            .await
            .map_err(|e| McpError::internal_error(e.to_string(), None))?;
        let content = vec![ContentBlock::text(outcome.text)];
        Ok(if outcome.error { CallToolResult::error(content) } else { CallToolResult::success(content) }.into())
    }
}
