//! A run's report from the lake: the committed turns' rows (rows of a turn
//! still being committed are left out) and the run's imported human
//! reviews, handed to `some_sim::evaluation::report`.

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use datafusion::prelude::{Expr, SessionContext, col, lit};
use some_schemas::sim::{
    SimActionRow, SimAgentRow, SimFeedRow, SimFollowRow, SimPostRow, SimTurnRow, sim_actions, sim_agents, sim_feeds, sim_follows,
    sim_posts, sim_steps, sim_turns,
};
use some_sim::agent::step::StepFailure;
use some_sim::evaluation::report::{self, Judge, ReportError, ReportInput, SimReport};

use super::review::read_reviews;
use super::spec::SimSpec;
use crate::error::{Error, Result};
use crate::lake::Lake;
use crate::llm::{ClientSettings, chat_model, installed_embedder};

/// The skipped parts of the steps that match `filter`, with their turns;
/// only two columns are read (a step's memory is most of its row).
async fn read_skipped(ctx: &SessionContext, filter: Option<Expr>) -> Result<Vec<(i64, StepFailure)>> {
    let mut df = ctx.table(sim_steps::TABLE).await?;
    if let Some(filter) = filter {
        df = df.filter(filter)?;
    }
    let df = df.filter(col(sim_steps::failures).not_eq(lit("[]")))?.select_columns(&[sim_steps::turn, sim_steps::failures])?;
    let mut out = Vec::new();
    for batch in df.collect().await? {
        let (turns, failures) = (batch.column(0).as_primitive::<Int64Type>(), batch.column(1).as_string::<i32>());
        for i in 0..batch.num_rows() {
            if failures.is_null(i) {
                continue;
            }
            let parsed: Vec<StepFailure> = serde_json::from_str(failures.value(i)).map_err(|e| {
                Error::Invalid(format!("sim_steps: the failures of a step at turn {} are not readable: {e}", turns.value(i)))
            })?;
            out.extend(parsed.into_iter().map(|f| (turns.value(i), f)));
        }
    }
    Ok(out)
}

/// Who rates text quality, and how many texts per group.
#[derive(Debug, Clone)]
pub struct JudgeSpec {
    pub model: String,
    pub endpoints: Vec<String>,
    pub sample: usize,
}

/// Builds the report of a run; `embedder` adds the embedder's similarity
/// beside TF-IDF's.
pub async fn sim_report(
    lake: &Lake,
    spec: &SimSpec,
    embedder: bool,
    judge: Option<&JudgeSpec>,
    client: &ClientSettings,
    threads: usize,
) -> Result<SimReport> {
    let ctx = lake.session().await?;
    let run = || lit(spec.run_id.as_str());
    let turns: Vec<SimTurnRow> = lake.read(&ctx, Some(col(sim_turns::run_id).eq(run()))).await?;
    let last = turns.iter().map(|t| t.turn).max().unwrap_or(-1);
    let committed = |run_col: &str, turn_col: &str| -> Option<Expr> { Some(col(run_col).eq(run()).and(col(turn_col).lt_eq(lit(last)))) };
    let agents: Vec<SimAgentRow> = lake.read(&ctx, Some(col(sim_agents::run_id).eq(run()))).await?;
    let posts: Vec<SimPostRow> = lake.read(&ctx, committed(sim_posts::run_id, sim_posts::turn)).await?;
    let actions: Vec<SimActionRow> = lake.read(&ctx, committed(sim_actions::run_id, sim_actions::turn)).await?;
    let feeds: Vec<SimFeedRow> = lake.read(&ctx, committed(sim_feeds::run_id, sim_feeds::turn)).await?;
    let follows: Vec<SimFollowRow> = lake.read(&ctx, committed(sim_follows::run_id, sim_follows::turn)).await?;
    let reviews = read_reviews(lake, &ctx, spec.run_id.as_str()).await?;
    let skipped = read_skipped(&ctx, committed(sim_steps::run_id, sim_steps::turn)).await?;
    let input = ReportInput {
        agents: &agents,
        posts: &posts,
        actions: &actions,
        feeds: &feeds,
        follows: &follows,
        turns: &turns,
        reviews: &reviews,
        skipped: &skipped,
        preset: &spec.preset,
    };
    let embedder = if embedder { installed_embedder(&spec.embedding_model)? } else { None };
    let judge_model = judge.map(|j| chat_model(&j.model, &j.endpoints, client, threads)).transpose()?;
    let judge = judge.zip(judge_model.as_ref()).map(|(j, model)| Judge { model: model.as_ref(), sample: j.sample });
    report::build(input, embedder.as_deref(), judge).await.map_err(|e| match e {
        ReportError::Row { .. } => Error::Invalid(format!("simulation {}: {e}", spec.run_id)),
        ReportError::Embed(e) => Error::Embed(e),
        ReportError::Judge(e) => Error::Model(e),
        ReportError::Review(e) => Error::Job(e).context(format!("simulation {}", spec.run_id)),
    })
}
