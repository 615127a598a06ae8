//! Where the tools' similarity and clustering run: the kernels of this
//! process, or a compute worker that keeps each knowledge base resident
//! (on its GPU where it has one) and batches the searches of many agents
//! (`some_workers::compute`). Both give the same answers: the remote side
//! runs the same [`Kernels`].

use std::sync::Arc;

use super::backend::{BackendError, KnowledgeIndex};
use crate::kernels::{Hit, Kernels, Matrix};

/// What a search runs over.
#[derive(Clone, Copy)]
pub enum SearchCorpus<'a> {
    /// The knowledge base with `model`'s vectors: a compute worker keeps
    /// it, so only the query travels.
    Knowledge { model: &'a str, index: &'a KnowledgeIndex },
    /// Vectors of this call (a folder's posts), `dim` values a row.
    Vectors { data: &'a [f32], dim: usize },
}

/// The tools' similarity and clustering. A failure is the world's (a
/// compute worker that cannot be reached), never the model's.
#[async_trait::async_trait]
pub trait KernelService: Send + Sync {
    /// For logs and reports ("cpu", "cuda", "remote").
    fn name(&self) -> String;
    /// The `k` rows of `corpus` most similar to `query`, as
    /// [`Kernels::top_k`].
    async fn top_k(&self, corpus: SearchCorpus<'_>, query: &[f32], k: usize) -> Result<Vec<Hit>, BackendError>;
    /// [`Kernels::single_pass_cluster`] of `vectors`, `dim` values a row.
    async fn single_pass_cluster(&self, vectors: &[f32], dim: usize, theta: f32) -> Result<Vec<u32>, BackendError>;
}

/// The kernels of this process.
#[async_trait::async_trait]
impl<K: Kernels + ?Sized> KernelService for Arc<K> {
    fn name(&self) -> String {
        Kernels::name(self.as_ref()).to_string()
    }

    async fn top_k(&self, corpus: SearchCorpus<'_>, query: &[f32], k: usize) -> Result<Vec<Hit>, BackendError> {
        let (data, dim) = match corpus {
            SearchCorpus::Knowledge { index, .. } => (index.vectors.as_slice(), index.dim),
            SearchCorpus::Vectors { data, dim } => (data, dim),
        };
        let corpus = self.corpus(Matrix::F32 { data, dim });
        Ok(Kernels::top_k(self.as_ref(), Matrix::F32 { data: query, dim }, &corpus, k).pop().unwrap_or_default())
    }

    async fn single_pass_cluster(&self, vectors: &[f32], dim: usize, theta: f32) -> Result<Vec<u32>, BackendError> {
        Ok(Kernels::single_pass_cluster(self.as_ref(), Matrix::F32 { data: vectors, dim }, theta))
    }
}
