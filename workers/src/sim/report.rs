//! A run's report from the lake: the committed turns' rows (rows of a turn
//! still being committed are left out) and the run's imported human
//! reviews, handed to `some_sim::evaluation::report`.

use std::collections::{BTreeMap, BTreeSet};

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use datafusion::prelude::{Expr, SessionContext, col, lit};
use some_schemas::RunId;
use some_schemas::sim::SimRunRow;
use some_schemas::sim::{
    SimActionRow, SimAgentRow, SimFeedRow, SimFollowRow, SimInterviewRow, SimPostRow, SimTurnRow, sim_actions, sim_agents, sim_feeds,
    sim_follows, sim_interviews, sim_posts, sim_steps, sim_turns,
};
use some_sim::agent::step::StepFailure;
use some_sim::evaluation::replicates::{Figure, aggregate};
use some_sim::evaluation::report::{self, Judge, ReportError, ReportInput, SimReport};

use super::review::read_reviews;
use super::spec::SimSpec;
use super::spec::load_sim;
use super::state::lineage;
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
    let agents: Vec<SimAgentRow> = lake.read(&ctx, Some(col(sim_agents::run_id).eq(lit(spec.agents_run().as_str())))).await?;
    let mut posts: Vec<SimPostRow> = lake.read(&ctx, committed(sim_posts::run_id, sim_posts::turn)).await?;
    // Shown but not the run's own texts: injected posts, and a fork's
    // parents' posts from before it.
    let mut context: BTreeSet<i64> = super::interventions::injected_posts(lake, spec, last).await?;
    for (parent, until) in lineage(lake, spec).await? {
        let filter = col(sim_posts::run_id).eq(lit(parent.run_id.as_str())).and(col(sim_posts::turn).lt(lit(i64::from(until.0))));
        let before: Vec<SimPostRow> = lake.read(&ctx, Some(filter)).await?;
        context.extend(before.iter().map(|p| p.post_id));
        context.extend(super::interventions::injected_posts(lake, &parent, i64::from(until.0) - 1).await?);
        posts.extend(before);
    }
    let actions: Vec<SimActionRow> = lake.read(&ctx, committed(sim_actions::run_id, sim_actions::turn)).await?;
    let feeds: Vec<SimFeedRow> = lake.read(&ctx, committed(sim_feeds::run_id, sim_feeds::turn)).await?;
    let follows: Vec<SimFollowRow> = lake.read(&ctx, committed(sim_follows::run_id, sim_follows::turn)).await?;
    let groups: BTreeMap<i64, String> = if spec.groups.is_empty() {
        BTreeMap::new()
    } else {
        let mut out = BTreeMap::new();
        for a in &agents {
            let persona: some_sim::Persona = serde_json::from_str(&a.persona).map_err(|e| {
                Error::Invalid(format!("sim_agents of run {}, agent {}: the persona does not read: {e}", spec.run_id, a.agent_id))
            })?;
            out.insert(a.agent_id, spec.group_name(&persona).to_string());
        }
        out
    };
    let reviews = read_reviews(lake, &ctx, spec.run_id.as_str()).await?;
    let interviews: Vec<SimInterviewRow> = lake.read(&ctx, Some(col(sim_interviews::run_id).eq(run()))).await?;
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
        interviews: &interviews,
        context: &context,
        groups: &groups,
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

/// The figures of every run of `spec`'s replicate group, over their
/// reports (with the embedder's similarity if `embedder`, no judge), and
/// how many runs there are; `None` for a run that is no replicate.
pub async fn replicate_figures(
    lake: &Lake,
    spec: &SimSpec,
    embedder: bool,
    client: &ClientSettings,
    threads: usize,
) -> Result<Option<(usize, Vec<Figure>)>> {
    let Some(group) = spec.replicate.as_ref().map(|r| r.group.clone()) else { return Ok(None) };
    let runs: Vec<SimRunRow> = lake.read(&lake.session().await?, None).await?;
    let ids: BTreeSet<RunId> = runs.into_iter().map(|r| r.run_id).collect();
    let mut reports = Vec::new();
    for id in ids {
        let member = load_sim(lake, &id).await?.spec;
        if member.replicate.as_ref().is_some_and(|r| r.group == group) {
            let r = sim_report(lake, &member, embedder, None, client, threads).await?;
            reports.push(serde_json::to_value(&r).map_err(|e| Error::Invalid(format!("report of run {id}: {e}")))?);
        }
    }
    Ok(Some((reports.len(), aggregate(&reports))))
}
