//! The built-in models: a registry of what can be installed, and the
//! installer (`some models fetch`).

pub mod fetch;
pub mod registry;

pub use fetch::{fetch, installed, models_dir, require};
pub use registry::{E5_SMALL, MINILM, MODELS, ModelKind, ModelSpec, QWEN_05B, SMOLLM2, model};
