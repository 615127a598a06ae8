//! The persona-driven social-media simulation of "Knowledge Boundary and
//! Persona Dynamic Shape A Better Social Media Agent" (Zhou et al., arXiv
//! 2403.19275), free of transport: the orchestration in `some-workers`
//! (queue, lake, coordinator) calls these parts, which are pure functions
//! of their inputs and a [`some_jobs::chat::ChatModel`].
//!
//! Five areas, each depending only on those listed before it:
//! - [`platform`]: the sandbox's state, the actions applied to it in
//!   (agent, seq) order, its digest; [`platform::ids`] names agents, posts
//!   and turns.
//! - [`feed`]: the candidates a viewer may be shown and the rankers that
//!   order them, one file each, chosen by name from
//!   [`feed::rankers::Rankers`].
//! - [`agent`]: who an agent is (persona, enrichment, persona sets), when
//!   it acts (activity), what it knows (knowledge boundary) and one turn of
//!   it (plan, dynamic persona, memory, reflection, decisions:
//!   [`agent::step`]).
//! - [`intervention`]: what a researcher does to a run from outside it
//!   (posts, removals, follows, persona changes, mutes and boosts).
//! - [`evaluation`]: metrics, health warnings, the LLM judge, the report
//!   and the human evaluation.
//!
//! Beside them: [`error`] (unusable replies and their retries, shared by
//! every question the agents and the judge are asked), [`vector`] (cosine)
//! and [`rows`] (a turn's rows for the lake's `sim_*` tables);
//! [`testing`] answers every simulation prompt for tests without a model.
//!
//! A turn, as the orchestration runs it:
//! 1. for each agent, [`agent::activity::activation`] says whether it acts
//!    (the preset's phase says who may, and whose posts it sees);
//! 2. for each active agent, [`feed::feed`] over the state at the start of
//!    the turn with a [`feed::Ranker`], then [`agent::step::agent_step`];
//! 3. [`platform::Platform::apply_turn`] with all the steps' actions;
//!    [`platform::Platform::digest`] goes into the turn's row.
//!
//! The authors released no code, prompts or data; every choice made where
//! the paper is silent is written in the doc comment of the module that
//! makes it. Prompts are in `jobs/sim/prompts/`, in our own wording.

pub mod agent;
pub mod error;
pub mod evaluation;
pub mod feed;
pub mod intervention;
pub mod platform;
pub mod rows;
pub mod testing;
pub mod vector;

pub use agent::activity::{Activation, Phase, Preset, activation, pareto_levels};
pub use agent::decide::FeedPost;
pub use agent::knowledge::{KnowledgeSettings, PassageStore, load_hotpotqa};
pub use agent::memory::Memory;
pub use agent::passages::{BUILTIN_PASSAGES, builtin_passages, load_passages};
pub use agent::persona::{Persona, Profile};
pub use agent::plan::Plan;
pub use agent::step::{BrowseMode, Step, StepContext, StepError, StepInput, StepSettings, agent_step};
pub use error::ReplyError;
pub use feed::rankers::mastodon_digest::DigestIndex;
pub use feed::rankers::mastodon_digest::{MastodonDigest, Scorer, Threshold};
pub use feed::rankers::{RankerChoice, Rankers};
pub use feed::{FeedSettings, Ranked, Ranker, Timeline, feed};
pub use platform::ids::{AgentId, PostId, Turn};
pub use platform::{Action, AgentAction, ApplyError, Outcome, Platform};
