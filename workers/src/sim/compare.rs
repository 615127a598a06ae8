//! A fork against its parent (or another run of the same line) from the
//! fork's first turn: the rows both committed from then on, and the
//! followers of both states at the last turn both reached, handed to
//! [`some_sim::evaluation::fork`].

use datafusion::prelude::{col, lit};
use some_schemas::sim::{SimActionRow, SimPostRow, sim_actions, sim_posts};
use some_sim::Turn;
use some_sim::evaluation::fork::{ForkComparison, Side, compare};

use super::spec::SimSpec;
use super::state::{SimState, glance};
use crate::error::{Error, Result};
use crate::lake::Lake;

/// Compares `fork` with `other` over the turns from the fork's first to
/// the last both committed.
pub async fn compare_fork(lake: &Lake, fork: &SimSpec, other: &SimSpec, resamples: usize, seed: u64) -> Result<ForkComparison> {
    let Some(point) = &fork.fork else {
        return Err(Error::Invalid(format!("run {} is no fork: `some sim fork` makes one", fork.run_id)));
    };
    let from = point.turn;
    if other.first_turn() > from {
        return Err(Error::Invalid(format!(
            "run {} starts at turn {}, after the fork's first turn {from}: compare with a run that has its own turns from {from}",
            other.run_id,
            other.first_turn()
        )));
    }
    let (f, o) = (glance(lake, fork).await?.next_turn(), glance(lake, other).await?.next_turn());
    let to = f.0.min(o.0);
    if to <= from.0 {
        let short = if f <= from { &fork.run_id } else { &other.run_id };
        return Err(Error::Invalid(format!("run {short} has no committed turn from the fork's first turn {from} on")));
    }
    let to = Turn(to - 1);
    let (f, o) = (SimState::load_platform_until(lake, fork, Some(to)).await?, SimState::load_platform_until(lake, other, Some(to)).await?);
    let followers = |s: &SimState| -> Vec<u32> { s.agents.iter().map(|a| s.platform.followers_count(a.persona.id) as u32).collect() };
    let (ff, of) = (followers(&f), followers(&o));
    let rows = |spec: &SimSpec| {
        let run = spec.run_id.to_string();
        async move {
            let ctx = lake.session().await?;
            let span = |run_col: &str, turn_col: &str| {
                col(run_col).eq(lit(run.as_str())).and(col(turn_col).between(lit(i64::from(from.0)), lit(i64::from(to.0))))
            };
            let actions: Vec<SimActionRow> = lake.read(&ctx, Some(span(sim_actions::run_id, sim_actions::turn))).await?;
            let posts: Vec<SimPostRow> = lake.read(&ctx, Some(span(sim_posts::run_id, sim_posts::turn))).await?;
            Ok::<_, Error>((actions, posts))
        }
    };
    let ((fa, fp), (oa, op)) = (rows(fork).await?, rows(other).await?);
    let parent = Side { run_id: other.run_id.as_str(), turns: &o.turns, actions: &oa, posts: &op, followers: &of };
    let forked = Side { run_id: fork.run_id.as_str(), turns: &f.turns, actions: &fa, posts: &fp, followers: &ff };
    Ok(compare(parent, forked, i64::from(from.0), i64::from(to.0), resamples, seed))
}
