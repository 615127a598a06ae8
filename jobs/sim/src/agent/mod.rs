//! One simulated agent: who it is, when it acts, what it knows, and its
//! turn.
//!
//! - Who: [`persona`] (the persona and the paper's enriched fields),
//!   [`persona_sets`] (the OASIS and RecAgent loaders), [`enrich`] (the
//!   enrichment prompt and its strict reader).
//! - When: [`activity`] (one-hour turns, Pareto activity, the paper's
//!   preset) and [`plan`] (the weekly plan the agent writes).
//! - What it knows: [`knowledge`] (the knowledge boundary), [`tfidf`] and
//!   [`bm25`] (its retrieval), [`passages`] (JSONL passage files and the
//!   built-in WordNet corpus).
//! - Asking it: [`interview`] (interviews and surveys as of a turn),
//!   [`select`] (choosing agents by id, kind, share or persona field).
//! - Its turn: [`dynamic`] (the dynamic persona), [`memory`], [`reflect`]
//!   (reflection and summaries), [`decide`] and [`decide_feed`] (the action
//!   prompts, per post or for the whole feed), and [`step`], which runs
//!   them in order.

pub mod activity;
pub mod bm25;
pub mod decide;
pub mod decide_feed;
pub mod dynamic;
pub mod enrich;
pub mod interview;
pub mod knowledge;
pub mod memory;
pub mod passages;
pub mod persona;
pub mod persona_sets;
pub mod plan;
pub mod reflect;
pub mod select;
pub mod step;
pub mod tfidf;

#[cfg(test)]
pub(crate) mod test_model;
