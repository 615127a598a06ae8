//! The human evaluation on the lake: `some sim review export` reads a run's
//! committed rows, samples the items annotators judge and writes them with
//! their context as JSONL and CSV; `some sim review import` reads a filled
//! file back, checks it whole against the run and appends what changed to
//! `sim_reviews` in one commit. What is sampled, how the file reads and how
//! re-imports merge are `some_sim::{evaluation::review, evaluation::review_file}`.
//!
//! Only committed turns count, as for the report: an item of a turn still
//! being committed is neither exported nor accepted. The context of a
//! follow needs the agent's memory after the reflecting step, so export
//! replays the memory changes of just those agents' steps (a run's steps
//! are its largest table);
//! a post's passages come from the lake's knowledge rows, numbered as the
//! run's workers numbered them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use datafusion::prelude::{SessionContext, col, lit};
use some_schemas::sim::{
    ReviewKind, SimActionRow, SimAgentRow, SimPostRow, SimReviewRow, SimTurnRow, sim_actions, sim_agents, sim_posts, sim_reviews, sim_turns,
};
use some_schemas::{KnowledgeRow, Timestamp};
use some_sim::PassageStore;
use some_sim::evaluation::review::{ItemSources, ReviewIndex, ReviewRows, SampleSettings, items, sample};
use some_sim::evaluation::review_file::{self, merge, to_csv, to_jsonl, validate};
use some_sim::{Memory, Preset, Turn};

use super::spec::SimSpec;
use super::state::memories_of;
use crate::error::{Error, Result};
use crate::lake::Lake;

/// A run's committed agents, posts and actions.
struct Committed {
    ctx: SessionContext,
    agents: Vec<SimAgentRow>,
    posts: Vec<SimPostRow>,
    actions: Vec<SimActionRow>,
}

impl Committed {
    async fn read(lake: &Lake, run: &str) -> Result<Committed> {
        let ctx = lake.session().await?;
        let turns: Vec<SimTurnRow> = lake.read(&ctx, Some(col(sim_turns::run_id).eq(lit(run)))).await?;
        let last = turns.iter().map(|t| t.turn).max().unwrap_or(-1);
        let committed = |run_col: &str, turn_col: &str| Some(col(run_col).eq(lit(run)).and(col(turn_col).lt_eq(lit(last))));
        let agents = lake.read(&ctx, Some(col(sim_agents::run_id).eq(lit(run)))).await?;
        let posts = lake.read(&ctx, committed(sim_posts::run_id, sim_posts::turn)).await?;
        let actions = lake.read(&ctx, committed(sim_actions::run_id, sim_actions::turn)).await?;
        Ok(Committed { ctx, agents, posts, actions })
    }

    fn index(&self, preset: &Preset) -> Result<ReviewIndex> {
        Ok(ReviewIndex::build(ReviewRows { agents: &self.agents, posts: &self.posts, actions: &self.actions, preset })?)
    }
}

/// What an export wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct Exported {
    pub jsonl: PathBuf,
    pub csv: PathBuf,
    pub by_kind: BTreeMap<ReviewKind, usize>,
    /// Reviewable items of the run, sampled or not.
    pub reviewable: usize,
}

/// Writes `dir/review.jsonl` and `dir/review.csv` with the sample.
pub async fn export(lake: &Lake, spec: &SimSpec, dir: &Path, settings: &SampleSettings) -> Result<Exported> {
    let run = spec.run_id.as_str();
    let rows = Committed::read(lake, run).await?;
    let index = rows.index(&spec.preset)?;
    let keys = sample(&index, settings);
    let follows: BTreeSet<(i64, i64)> = keys.iter().filter(|k| k.kind == ReviewKind::Follow).map(|k| (k.agent, k.turn)).collect();
    let memories = memories_after(lake, spec, &follows).await?;
    let with_knowledge = keys.iter().filter_map(|k| k.post).any(|p| rows.posts.iter().any(|r| r.post_id == p && r.knowledge.is_some()));
    let passages = if with_knowledge {
        let knowledge: Vec<KnowledgeRow> = lake.read(&rows.ctx, None).await?;
        Some(PassageStore::from_knowledge(&knowledge))
    } else {
        None
    };
    let src =
        ItemSources { agents: &rows.agents, posts: &rows.posts, actions: &rows.actions, memories: &memories, passages: passages.as_ref() };
    let items = items(&keys, &src, run)?;
    std::fs::create_dir_all(dir).map_err(Error::io(format!("create {}", dir.display())))?;
    let (jsonl, csv) = (dir.join("review.jsonl"), dir.join("review.csv"));
    std::fs::write(&jsonl, to_jsonl(&items)?).map_err(Error::io(format!("write {}", jsonl.display())))?;
    std::fs::write(&csv, to_csv(&items)?).map_err(Error::io(format!("write {}", csv.display())))?;
    let mut by_kind = BTreeMap::new();
    for k in &keys {
        *by_kind.entry(k.kind).or_default() += 1;
    }
    Ok(Exported { jsonl, csv, by_kind, reviewable: index.len() })
}

/// What an import stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// Rows of the file with scores.
    pub scored: usize,
    /// Rows of the file left empty.
    pub unscored: usize,
    pub added: usize,
    pub replaced: usize,
    pub unchanged: usize,
}

/// Reads `file` (JSONL or CSV, by extension), checks it whole and appends
/// the scores that change what counts; `annotator` fills empty annotator
/// cells. Any error stores nothing.
pub async fn import(lake: &Lake, spec: &SimSpec, file: &Path, annotator: Option<&str>) -> Result<Imported> {
    let run = spec.run_id.as_str();
    let bytes = std::fs::read(file).map_err(Error::io(format!("read {}", file.display())))?;
    let lines = review_file::read(file, &bytes)?;
    let rows = Committed::read(lake, run).await?;
    let index = rows.index(&spec.preset)?;
    let checked = validate(file, &lines, &index, run, annotator, &file.display().to_string())?;
    let existing = read_reviews(lake, &rows.ctx, run).await?;
    let scored = checked.rows.len();
    let m = merge(&existing, checked.rows, Timestamp::now());
    if !m.rows.is_empty() {
        let mut txn = lake.txn();
        txn.write_rows(m.rows).await?;
        txn.commit().await?;
    }
    Ok(Imported { scored, unscored: checked.unscored, added: m.added, replaced: m.replaced, unchanged: m.unchanged })
}

/// Every imported row of a run (the report takes the latest per item and annotator).
pub async fn read_reviews(lake: &Lake, ctx: &SessionContext, run: &str) -> Result<Vec<SimReviewRow>> {
    lake.read(ctx, Some(col(sim_reviews::run_id).eq(lit(run)))).await
}

/// Each agent's memory after its step in a turn, for the (agent, turn)
/// pairs of `keys`.
async fn memories_after(lake: &Lake, spec: &SimSpec, keys: &BTreeSet<(i64, i64)>) -> Result<HashMap<(i64, i64), Memory>> {
    let mut out = HashMap::new();
    let Some(last) = keys.iter().map(|k| k.1).max() else { return Ok(out) };
    let agents: Vec<i64> = keys.iter().map(|k| k.0).collect::<BTreeSet<_>>().into_iter().collect();
    memories_of(lake, spec, Some(&agents), Turn(last as u32), |agent, turn, memory| {
        if keys.contains(&(i64::from(agent.0), turn)) {
            out.insert((i64::from(agent.0), turn), memory.clone());
        }
    })
    .await?;
    Ok(out)
}
