//! Compute kernels: top-k cosine similarity and the reference single-pass
//! clustering.
//!
//! [`Kernels`] is the interface the tools call. [`CpuKernels`] is exact and
//! the reference: any other implementation (the CUDA kernels of the GPU
//! workers) must return the same answers on the same input.
//!
//! Vectors are row-major matrices of f32 or f16 ([`Matrix`]); f16 storage
//! is accumulated in f32. A [`Corpus`] is built once per collection (it
//! holds the rows' inverse norms) and searched many times; a
//! [`ResidentCorpus`] owns its vectors where the kernels compute (device
//! memory for a GPU), for a compute worker that serves many searches.
//!
//! - [`choice`]: `--kernels cpu|cuda|auto`.
//! - [`graph`]: the threshold-graph clustering, a parallel approximation of
//!   the single-pass one, and [`rand_agreement`] to compare clusterings.
//! - `cuda` (feature `cuda`): [`CudaKernels`], the same kernels on a GPU.

mod choice;
mod cpu;
#[cfg(feature = "cuda")]
mod cuda;
mod graph;

use std::sync::Arc;

pub use choice::{BUILT_WITH_CUDA, KernelChoice, Selected, select_kernels};
pub use cpu::CpuKernels;
#[cfg(feature = "cuda")]
pub use cuda::{
    ARCHS, CANONICAL_SOURCE, CudaError, CudaKernels, DeviceCorpus, DeviceInfo, MODULE_SOURCES, NVRTC_OPTIONS, TENSOR_SOURCE, compile_ptx,
};
pub use graph::{labels_from_parents, rand_agreement};

/// Row-major vectors, `len / dim` rows of `dim` values.
#[derive(Debug, Clone, Copy)]
pub enum Matrix<'a> {
    F32 { data: &'a [f32], dim: usize },
    F16 { data: &'a [half::f16], dim: usize },
}

impl<'a> Matrix<'a> {
    pub fn dim(&self) -> usize {
        match self {
            Matrix::F32 { dim, .. } | Matrix::F16 { dim, .. } => *dim,
        }
    }

    pub fn rows(&self) -> usize {
        match self {
            Matrix::F32 { data, dim } => data.len() / dim.max(&1),
            Matrix::F16 { data, dim } => data.len() / dim.max(&1),
        }
    }
}

/// One search hit: the row index in the corpus and its cosine similarity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    pub index: u32,
    pub score: f32,
}

/// A collection prepared for repeated search: the vectors and the inverse
/// norm of each row (0 for a zero row, whose similarity is 0).
///
/// Only [`Kernels::corpus`] makes one, so the norms are always the
/// canonical ones of the vectors (bit-identical on every kernel): the
/// scores depend on them, and the GPU's tensor-core estimates are proven
/// within their bound only for those.
#[derive(Debug, Clone)]
pub struct Corpus<'a> {
    vectors: Matrix<'a>,
    inv_norms: Vec<f32>,
}

impl<'a> Corpus<'a> {
    pub fn vectors(&self) -> Matrix<'a> {
        self.vectors
    }

    /// Each row's inverse norm.
    pub fn inv_norms(&self) -> &[f32] {
        &self.inv_norms
    }
}

/// The compute kernels the tools use. Implementations must agree with
/// [`CpuKernels`].
pub trait Kernels: Send + Sync {
    /// A short name for logs and reports ("cpu", "cuda").
    fn name(&self) -> &str;

    /// Prepares a corpus (computes its row norms).
    fn corpus<'a>(&self, vectors: Matrix<'a>) -> Corpus<'a>;

    /// For each query row, the `k` corpus rows with the highest cosine
    /// similarity, best first; ties go to the lower row index. Fewer than
    /// `k` hits if the corpus is smaller.
    fn top_k(&self, queries: Matrix<'_>, corpus: &Corpus<'_>, k: usize) -> Vec<Vec<Hit>>;

    /// The reference single-pass clustering (SoMe's `topic_clustering`):
    /// vectors are visited in order; the first starts cluster 1; each later
    /// vector joins the cluster whose mean (the plain, un-normalised mean of
    /// its members) has the largest dot product with it, if that product is
    /// greater than `theta` (the best is searched from 0, so negative
    /// products never win; the first of equal maxima wins); otherwise it
    /// starts a new cluster. Returns each vector's cluster id, 1, 2, 3... in
    /// creation order.
    fn single_pass_cluster(&self, vectors: Matrix<'_>, theta: f32) -> Vec<u32>;

    /// Keeps `vectors` (`dim` values a row) for many searches: the GPU
    /// kernels copy them to the device once, so a search moves only the
    /// queries and the hits.
    fn keep(self: Arc<Self>, vectors: Vec<f32>, dim: usize) -> Arc<dyn ResidentCorpus>;
}

/// A corpus owned by its kernels between searches.
pub trait ResidentCorpus: Send + Sync {
    fn rows(&self) -> usize;
    fn dim(&self) -> usize;
    /// [`Kernels::top_k`] over the kept vectors.
    fn top_k(&self, queries: Matrix<'_>, k: usize) -> Vec<Vec<Hit>>;
}

/// Vectors kept in host memory with their inverse norms, searched by `K`.
pub struct HostCorpus<K: ?Sized> {
    kernels: Arc<K>,
    vectors: Vec<f32>,
    dim: usize,
    inv_norms: Vec<f32>,
}

impl<K: Kernels + ?Sized> HostCorpus<K> {
    pub fn new(kernels: Arc<K>, vectors: Vec<f32>, dim: usize) -> HostCorpus<K> {
        let inv_norms = kernels.corpus(Matrix::F32 { data: &vectors, dim }).inv_norms;
        HostCorpus { kernels, vectors, dim, inv_norms }
    }

    /// The kept vectors as a [`Corpus`] (the norms are copied: 1/dim of a search's reads).
    pub fn corpus(&self) -> Corpus<'_> {
        Corpus { vectors: Matrix::F32 { data: &self.vectors, dim: self.dim }, inv_norms: self.inv_norms.clone() }
    }
}

impl<K: Kernels + ?Sized> ResidentCorpus for HostCorpus<K> {
    fn rows(&self) -> usize {
        self.inv_norms.len()
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn top_k(&self, queries: Matrix<'_>, k: usize) -> Vec<Vec<Hit>> {
        self.kernels.top_k(queries, &self.corpus(), k)
    }
}
