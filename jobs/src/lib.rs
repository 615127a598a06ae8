//! What each unit of work of `some` does, free of any transport: no queue,
//! object store or HTTP type appears here. Jobs take their inputs as values
//! and their backends as traits, so they are tested without a broker.
//!
//! - [`queries`] and [`release`]: the SoMe query files and release layout
//!   read into lake rows (and written back, for synthetic worlds);
//! - [`synth`]: a synthetic SoMe world grounded in the real queries;
//! - [`tasks`]: the eight tasks, one file each (prompt, tools, scoring);
//! - [`tools`], [`protocol`], [`agent`]: the eight tools, reading tool calls
//!   from model text, and the agent loop that runs an episode;
//! - [`scorers`]: label extraction, judging and baselines;
//! - [`kernels`]: similarity and clustering on CPU;
//! - [`chat`] and [`embed`]: the model interfaces jobs call, implemented in
//!   `workers`;
//! - [`render`]: how both reports draw tables and charts.

pub mod agent;
pub mod bootstrap;
pub mod chat;
pub mod embed;
pub mod error;
pub mod json;
pub mod kernels;
pub mod progress;
pub mod prompts;
pub mod protocol;
pub mod queries;
pub mod release;
pub mod render;
pub mod scorers;
pub mod solvers;
pub mod synth;
pub mod tasks;
pub mod testing;
pub mod tools;

pub use error::{Error, InputError, Result};

/// The bundled SoMe query files (`datasets/some` in the repository).
pub fn bundled_datasets_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/some")
}

#[cfg(test)]
mod tests {
    use some_schemas::Task;

    #[test]
    fn the_bundled_release_has_the_published_counts() {
        let rows = crate::queries::read_dataset_dir(&crate::bundled_datasets_dir()).unwrap();
        assert_eq!(crate::queries::read_bundled().unwrap(), rows, "the compiled-in copy is the same");
        assert_eq!(rows.len(), some_schemas::task::PUBLISHED_QUERIES);
        for task in Task::ALL {
            let n = rows.iter().filter(|r| r.task == task).count();
            assert_eq!(n, task.published_queries(), "{task}");
        }
        let ids: std::collections::HashSet<_> = rows.iter().map(|r| &r.query_id).collect();
        assert_eq!(ids.len(), rows.len(), "query ids are unique");
    }
}
