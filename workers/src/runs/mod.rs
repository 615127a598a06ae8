//! The run lifecycle: what a run is ([`spec`]) and may spend ([`budget`]),
//! what the lake records of it ([`record`], [`results`]), running its shards
//! ([`episodes`]) and scoring them ([`scoring`], [`judging`]), and reading it
//! back ([`report`], [`compare`], [`progress`], [`view`]).
//!
//! Modules here depend one way: `budget` ← `spec` ← `record`, `results`,
//! `scoring` ← `episodes`, `judging` ← `report`, `compare`, `view`. The coordinator and the
//! worker loop (crate root) publish and consume the jobs.

pub mod budget;
pub mod compare;
pub mod episodes;
pub mod judging;
pub mod progress;
pub mod record;
pub mod report;
pub mod results;
pub mod scoring;
pub mod spec;
pub mod view;

pub use episodes::{Finished, Runner, worker_name};
pub use judging::{JudgeRunner, JudgedShard};
pub use record::{RunRecord, Stop, load_run, record_event, record_judging, record_stop};
pub use results::{Compacted, FinalResult, RerunFilter, RunRows, compact, plan_queries, read_run, todo, unscored};
pub use spec::{JudgingSpec, RunSpec, check_judging_name};
