//! The persona-driven simulation on the pipeline: its spec and lifecycle
//! ([`spec`]), the coordinator that runs turns ([`coordinator`]) and the
//! vectors its similarity ranker needs ([`vectors`]), the
//! shards workers run ([`shard`], [`work`]), interventions ([`interventions`]), interviews of its
//! agents ([`interview`]), a fork against its parent ([`compare`]), a run's state as the lake
//! holds it ([`state`]), its report ([`report`]) and the human evaluation's
//! export and import ([`review`]). The simulation itself (agents, platform, feeds,
//! metrics) is `some_sim`, free of transport.

pub mod compare;
pub mod coordinator;
pub mod interventions;
pub mod interview;
pub mod report;
pub mod review;
pub mod shard;
pub mod spec;
pub mod state;
pub mod vectors;
pub mod work;

pub use coordinator::{Drive, Until, drive};
pub use spec::{Fork, KnowledgeSource, PersonaSet, RelevanceSource, SimRecord, SimSpec, load_sim, record_event};
pub use state::SimState;
pub use work::SimRunner;
