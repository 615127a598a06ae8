//! The built-in embedders by name.

use some_jobs::embed::{EmbedError, Embedder, Purpose};

use super::{E5Small, MiniLm};
use crate::error::{Error, Result};
use crate::models::{E5_SMALL, MINILM, ModelKind, ModelSpec, installed, model, require};

/// A built-in embedder, run in this process.
#[derive(Clone)]
pub enum BuiltinEmbedder {
    E5Small(E5Small),
    MiniLm(MiniLm),
}

impl BuiltinEmbedder {
    /// The built-in embedding model called `name`.
    pub fn spec(name: &str) -> Result<&'static ModelSpec> {
        let spec = model(name).map_err(Error::Unknown)?;
        if spec.kind != ModelKind::Embedding {
            return Err(Error::Unknown(format!("{name} is a chat model, not an embedding model")));
        }
        Ok(spec)
    }

    /// Loads the installed model `name`, or says how to install it.
    pub fn load(name: &str) -> Result<BuiltinEmbedder> {
        let spec = Self::spec(name)?;
        let dir = require(spec)?;
        Self::load_from(spec, &dir)
    }

    /// Loads `name` if it is installed.
    pub fn load_if_installed(name: &str) -> Result<Option<BuiltinEmbedder>> {
        let spec = Self::spec(name)?;
        installed(spec).map(|dir| Self::load_from(spec, &dir)).transpose()
    }

    fn load_from(spec: &ModelSpec, dir: &std::path::Path) -> Result<BuiltinEmbedder> {
        match spec.name {
            n if n == E5_SMALL.name => Ok(BuiltinEmbedder::E5Small(E5Small::load(dir)?)),
            n if n == MINILM.name => Ok(BuiltinEmbedder::MiniLm(MiniLm::load(dir)?)),
            other => Err(Error::Unknown(format!("no in-process runner for the embedding model {other}"))),
        }
    }

    fn inner(&self) -> &dyn Embedder {
        match self {
            BuiltinEmbedder::E5Small(e) => e,
            BuiltinEmbedder::MiniLm(e) => e,
        }
    }
}

#[async_trait::async_trait]
impl Embedder for BuiltinEmbedder {
    fn model(&self) -> &str {
        self.inner().model()
    }

    fn dim(&self) -> usize {
        self.inner().dim()
    }

    async fn embed(&self, texts: &[String], purpose: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        self.inner().embed(texts, purpose).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_embedder_has_a_measured_clustering_threshold_and_no_other_model_does() {
        let mut embedders: Vec<&str> = crate::models::MODELS.iter().filter(|m| m.kind == ModelKind::Embedding).map(|m| m.name).collect();
        let mut measured: Vec<&str> = some_jobs::embed::MEASURED_CLUSTER_THRESHOLDS.iter().map(|(m, _)| *m).collect();
        embedders.sort();
        measured.sort();
        assert_eq!(embedders, measured);
    }

    #[test]
    fn the_default_embedding_model_is_a_built_in_embedder() {
        let spec = BuiltinEmbedder::spec(some_jobs::embed::DEFAULT_EMBEDDING_MODEL).unwrap();
        assert_eq!(spec.kind, ModelKind::Embedding);
        let err = BuiltinEmbedder::spec("qwen2.5-coder-0.5b-instruct").err().unwrap().to_string();
        assert!(err.contains("chat model"), "{err}");
    }
}
