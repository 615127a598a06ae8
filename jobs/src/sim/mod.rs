//! The persona-driven social-media simulation of "Knowledge Boundary and
//! Persona Dynamic Shape A Better Social Media Agent" (Zhou et al., arXiv
//! 2403.19275), free of transport: the orchestration (queue, lake, CLI)
//! calls these parts, which are pure functions of their inputs and a
//! [`crate::chat::ChatModel`].
//!
//! Who the agents are:
//! - [`persona`]: the persona and the paper's enriched fields;
//!   [`persona_sets`]: the OASIS and RecAgent loaders; [`enrich`]: the
//!   enrichment prompt and its strict reader.
//!
//! The sandbox:
//! - [`platform`]: state, actions applied in (agent, seq) order, digest;
//! - [`feed`]: candidates and the [`feed::Ranker`] trait, the live feed;
//!   [`digest`]: mastodon_digest and recency × similarity;
//!   [`digest_index`]: the same digest feeds for many viewers at once.
//! - [`activity`]: one-hour turns, Pareto activity, the paper's preset.
//!
//! The agent:
//! - [`plan`]: planning; [`dynamic`]: the dynamic persona; [`memory`];
//!   [`reflect`]: reflection and summaries; [`decide`]: the action prompts;
//!   [`step`]: one agent's turn.
//! - [`tfidf`], [`bm25`], [`knowledge`]: the knowledge boundary;
//!   [`passages`]: JSONL passage files and the built-in WordNet corpus.
//!
//! Lake rows: [`rows`] builds a turn's rows for the `sim_*` tables.
//!
//! Evaluation: [`metrics`] (distinct-n, engaged vs browsed-only similarity,
//! followers, actions per stage), [`quality`] (the LLM-judge rubric) and
//! [`health`] (dark feeds, stages without posts or interactions);
//! [`report`] puts them together, [`report_html`] renders it. The human
//! evaluation: [`review`] (the items annotators judge, sampled with their
//! context), [`review_file`] (the file they fill in, read back strictly)
//! and [`report_human`] (their scores beside the paper's and against the
//! judge's).
//!
//! A turn, as the orchestration runs it:
//! 1. for each agent, [`activity::activation`] says whether it acts (the
//!    preset's phase says who may, and whose posts it sees);
//! 2. for each active agent, [`feed::feed`] over the state at the start of
//!    the turn with a [`feed::Ranker`], then [`step::agent_step`];
//! 3. [`platform::Platform::apply_turn`] with all the steps' actions;
//!    [`platform::Platform::digest`] goes into the turn's row.
//!
//! The authors released no code, prompts or data; every choice made where
//! the paper is silent is written in the doc comment of the module that
//! makes it. Prompts are in `prompts/sim/`, in our own wording.

pub mod activity;
pub mod bm25;
pub mod decide;
pub mod decide_feed;
pub mod digest;
pub mod digest_index;
pub mod dynamic;
pub mod enrich;
pub mod error;
pub mod feed;
pub mod health;
pub mod ids;
pub mod knowledge;
pub mod memory;
pub mod metrics;
pub mod passages;
pub mod persona;
pub mod persona_sets;
pub mod plan;
pub mod platform;
pub mod quality;
pub mod reflect;
pub mod report;
pub mod report_html;
pub mod report_human;
mod report_table;
pub mod review;
pub mod review_file;
pub mod rows;
pub mod step;
pub mod tfidf;

#[cfg(test)]
mod test_model;

pub use activity::{Activation, Phase, Preset, activation, pareto_levels};
pub use decide::FeedPost;
pub use digest::{MastodonDigest, RecencySimilarity, Scorer, Threshold};
pub use digest_index::DigestIndex;
pub use error::ReplyError;
pub use feed::{FeedSettings, LiveFeed, Ranked, Ranker, Timeline, feed};
pub use ids::{AgentId, PostId, Turn};
pub use knowledge::{KnowledgeSettings, PassageStore, load_hotpotqa};
pub use memory::Memory;
pub use passages::{BUILTIN_PASSAGES, builtin_passages, load_passages};
pub use persona::{Persona, Profile};
pub use plan::Plan;
pub use platform::{Action, AgentAction, ApplyError, Outcome, Platform};
pub use step::{BrowseMode, Step, StepContext, StepError, StepInput, StepSettings, agent_step};
