//! What the harness benchmarks share: an instant scripted model behind the
//! project's own OpenAI-compatible server, and a lake with a world.

use std::net::SocketAddr;
use std::sync::Arc;

use some_jobs::chat::{ChatResponse, Role};
use some_jobs::progress::NoProgress;
use some_jobs::queries::read_bundled;
use some_jobs::synth::{Scale, SynthConfig, World};
use some_jobs::testing::ScriptedModel;
use some_schemas::QueryRow;
use some_workers::llm::serve::{MAX_REQUEST_BYTES, Served, serve};
use some_workers::world::{ingest_queries, write_world};
use some_workers::{Lake, LakeLocation};

/// Answers at once: the agent calls `data_folder` (every task has it but
/// MID, where it is an unknown tool) and then answers; the judge gets
/// ratings or a label it can read, so no call is repeated.
pub fn instant_model() -> ScriptedModel {
    ScriptedModel::new("instant", |request| {
        // Agent prompts carry the text protocol's tool block; judge prompts never do.
        let agent = request.messages.first().is_some_and(|m| m.role == Role::System && m.content.contains("<tool_call>"));
        let turns = request.messages.iter().filter(|m| m.role == Role::Assistant).count();
        let prompt = request.messages.iter().map(|m| m.content.as_str()).collect::<String>();
        let content = if agent && turns == 0 {
            "<tool_call>\n{\"name\": \"data_folder\", \"arguments\": {\"folder_name\": \"x\", \"start_idx\": 0, \"end_idx\": 3}}\n</tool_call>"
        } else if agent {
            "是"
        } else if prompt.contains("积极") && prompt.contains("无情绪") {
            "积极"
        } else if prompt.contains("half") || prompt.contains("pants-fire") {
            "true"
        } else if prompt.contains("给出的回答试图") {
            "正确"
        } else {
            "准确性: 3\n完整性: 3\n相关性: 3\n是"
        };
        Ok(ChatResponse { content: content.into(), model: "instant".into(), ..Default::default() })
    })
    .unrecorded()
}

/// Serves [`instant_model`] on a free loopback port until the process ends.
pub async fn instant_endpoint() -> Result<String, Box<dyn std::error::Error>> {
    let served = Served { chat: Arc::new(instant_model()), embedder: None };
    let addr: SocketAddr =
        serve(served, "127.0.0.1:0".parse()?, &some_workers::access::Access::open(MAX_REQUEST_BYTES), std::future::pending()).await?;
    Ok(format!("http://{addr}/v1"))
}

/// A lake under `dir` with the real queries and a world of `scale`.
pub async fn lake_with_world(dir: &std::path::Path, scale: Scale) -> Result<(Lake, Vec<QueryRow>), Box<dyn std::error::Error>> {
    let lake = Lake::open(&LakeLocation::Local(dir.join("lake"))).await?;
    let queries = read_bundled()?;
    ingest_queries(&lake, queries.clone()).await?;
    let world = Arc::new(World::plan(&queries, SynthConfig { scale, seed: 0 })?);
    write_world(&lake, world, None, false, &NoProgress).await?;
    Ok((lake, queries))
}
