//! What a run did, measured and judged.
//!
//! - [`metrics`]: distinct-n, engaged vs browsed-only similarity,
//!   followers, actions per stage; [`health`]: dark feeds, stages without
//!   posts or interactions; [`live`]: the last turns' actions and busiest
//!   posts; [`quality`]: the LLM-judge rubric.
//! - [`report`] puts them together; [`report_html`] renders it.
//! - The human evaluation: [`review`] (the items annotators judge, sampled
//!   with their context), [`review_file`] (the file they fill in, read back
//!   strictly) and [`report_human`] (their scores beside the paper's and
//!   against the judge's).
//! - [`interviews`]: the run's interviews and surveys tabulated; [`fork`]:
//!   a counterfactual fork against its parent; [`replicates`]: a report's
//!   figures over runs of several seeds.

pub mod fork;
pub mod health;
pub mod interviews;
pub mod live;
pub mod metrics;
pub mod quality;
pub mod replicates;
pub mod report;
pub mod report_html;
pub mod report_human;
mod report_table;
pub mod review;
pub mod review_file;
