//! Harness throughput: episodes per second of the in-process pipeline
//! (in-process queue, worker loop, agent loop, tools on the lake, scoring,
//! committing results) against an instant scripted model served over real
//! HTTP by `some llm serve`'s server, on the small world. The target is ≥ 500
//! episodes/s on 2 cores: the harness must never be what keeps a GPU idle.
//!
//! `cargo bench -p some-workers --bench episodes` (`SOME_BENCH_EPISODES`
//! sets how many, default 2,000).

use std::sync::Arc;
use std::time::{Duration, Instant};

use some_jobs::agent::AgentSettings;
use some_jobs::ingest::queries::read_bundled;
use some_jobs::model::{ChatModel, ChatRequest, ChatResponse, ModelError, Role};
use some_jobs::progress::NoProgress;
use some_jobs::synth::{Scale, SynthConfig, World};
use some_jobs::tools::ToolSettings;
use some_workers::coordinator::run_in_process;
use some_workers::llm::ClientSettings;
use some_workers::llm::serve::{Served, serve};
use some_workers::runner::{JudgeSettingsSpec, RunSpec};
use some_workers::runs::{plan_queries, read_run, record_event};
use some_workers::worker::WorkerConfig;
use some_workers::world::{ingest_queries, write_world};
use some_workers::{Lake, LakeLocation};

/// Calls a tool that every task offers (`data_folder`) once, then answers
/// with a label; the judge gets a label or a full rubric back.
struct InstantModel;

#[async_trait::async_trait]
impl ChatModel for InstantModel {
    fn name(&self) -> &str {
        "instant"
    }

    async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let agent = request.messages.first().is_some_and(|m| m.role == Role::System);
        let turns = request.messages.iter().filter(|m| m.role == Role::Assistant).count();
        let content = match (agent, turns) {
            (true, 0) => "<tool_call>\n{\"name\": \"data_folder\", \"arguments\": {\"folder_name\": \"x\", \"start_idx\": 0, \"end_idx\": 3}}\n</tool_call>".into(),
            (true, _) => "是".to_string(),
            (false, _) => "准确性: 3\n完整性: 3\n相关性: 3\n是".to_string(),
        };
        Ok(ChatResponse { content, model: "instant".into(), ..Default::default() })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::var("SOME_BENCH_EPISODES").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    let dir = tempfile::tempdir()?;
    let lake = Lake::open(&LakeLocation::Local(dir.path().join("lake"))).await?;
    let queries = read_bundled()?;
    ingest_queries(&lake, queries.clone()).await?;
    let world = Arc::new(World::plan(&queries, SynthConfig { scale: Scale::Small, seed: 0 })?);
    write_world(&lake, world, None, false, &NoProgress).await?;

    // The scripted model behind the project's own OpenAI-compatible server.
    let served = Served { chat: Arc::new(InstantModel), embedder: None };
    let addr = serve(served, "127.0.0.1:0".parse()?, std::future::pending()).await?;

    // An even mix of the tasks, as a full run has.
    let per_task = n.div_ceil(8);
    let planned = plan_queries(&queries, &[], Some(per_task), 0);
    let spec = RunSpec {
        run_id: "bench".into(),
        model: "instant".into(),
        endpoints: vec![format!("http://{addr}/v1")],
        judge_model: "instant".into(),
        judge_endpoints: vec![format!("http://{addr}/v1")],
        agent: AgentSettings::default(),
        tools: ToolSettings::default(),
        judge: JudgeSettingsSpec::default(),
        queries: planned.clone(),
        shard_size: 100,
        concurrency: 32,
    };
    record_event(&lake, &spec, "submitted").await?;
    let todo: Vec<(String, i32)> = planned.iter().map(|q| (q.clone(), 1)).collect();
    let config = WorkerConfig {
        concurrency: 4,
        deadline: Duration::from_secs(600),
        client: ClientSettings { concurrency: 128, ..Default::default() },
        threads: 1,
    };
    let started = Instant::now();
    let dead = run_in_process(&lake, &spec, &todo, config, Arc::new(NoProgress)).await?;
    let secs = started.elapsed().as_secs_f64();
    assert!(dead.is_empty(), "{dead:?}");
    let finals = read_run(&lake, "bench").await?.finals().len();
    assert_eq!(finals, todo.len(), "every query has one final result");
    println!("episodes: {finals} in {secs:.2} s: {:.0} episodes/s (target >= 500), results committed to the lake", finals as f64 / secs);
    Ok(())
}
