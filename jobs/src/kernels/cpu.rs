//! The exact CPU kernels: the reference every other [`Kernels`] must match.
//!
//! "Exact" means one fixed f32 computation per answer, whatever the thread
//! count, the batch a query arrives in, or whether the CPU has AVX2: every
//! similarity goes through the canonical dot product of [`dot`], and the
//! cosine of a query and a row is `(dot * inv_norm(query)) * inv_norm(row)`
//! with `inv_norm(x) = 1 / sqrt(dot(x, x))` (0 for a zero row).
//!
//! - [`dot`]: the canonical dot product, its AVX2 + FMA + F16C tiles
//!   ([`avx2`]) and portable ones ([`portable`]), and the cache-blocked scan
//!   that reads each corpus block once for a whole batch of queries.
//! - [`select`]: per-thread top-k buffers and their merge.
//! - [`cluster`]: the single-pass clustering, in blocks.
//! - [`graph`]: the threshold-graph clustering, the parallel variant's
//!   reference.
//! - [`crew`]: threads kept across the clustering's many short parallel
//!   steps.
//!
//! Threads are `std::thread::scope` threads, started only when the work is
//! large enough to pay for them. `corpus` and `top_k` split the rows into
//! one contiguous range per thread; each thread keeps its own top-k per
//! query, merged at the end, so the search shares nothing while it runs.

#[cfg(target_arch = "x86_64")]
mod avx2;
mod cluster;
mod crew;
mod dot;
mod graph;
mod portable;
mod select;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_cluster;

use std::ops::Range;
use std::sync::Arc;

use self::dot::{Isa, Pack};
use self::select::Selector;
use super::{Corpus, Hit, HostCorpus, Kernels, Matrix, ResidentCorpus};

/// Multiply-adds below which a call runs on one thread: starting a thread
/// costs about as much as this much arithmetic.
const PARALLEL_WORK: usize = 1 << 20;

/// Multi-threaded CPU kernels; the reference implementation.
#[derive(Debug, Clone)]
pub struct CpuKernels {
    threads: usize,
    isa: Isa,
    parallel_work: usize,
}

impl CpuKernels {
    pub fn new(threads: usize) -> CpuKernels {
        CpuKernels { threads: threads.max(1), isa: Isa::detect(), parallel_work: PARALLEL_WORK }
    }

    /// The threshold-graph clustering ([`crate::kernels::graph`]): the
    /// parallel approximation of [`Kernels::single_pass_cluster`], on one
    /// thread; the reference for the GPU's.
    pub fn threshold_graph_cluster(&self, vectors: Matrix<'_>, theta: f32) -> Vec<u32> {
        graph::threshold_graph_cluster(self.isa, vectors, theta)
    }

    /// Kernels on a given instruction set that start threads for any work,
    /// so that small test inputs take the multi-threaded paths.
    #[cfg(test)]
    fn eager(threads: usize, isa: Isa) -> CpuKernels {
        CpuKernels { threads: threads.max(1), isa, parallel_work: 1 }
    }

    /// Splits `rows` rows into at most `self.threads` ranges of at least
    /// `self.parallel_work` multiply-adds each (`work_per_row` per row).
    fn ranges(&self, rows: usize, work_per_row: usize) -> Vec<Range<usize>> {
        let threads = self.threads.min((rows * work_per_row / self.parallel_work).max(1));
        let per = rows.div_ceil(threads).max(1);
        (0..rows).step_by(per).map(|start| start..rows.min(start + per)).collect()
    }
}

impl Default for CpuKernels {
    fn default() -> Self {
        CpuKernels::new(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

impl Kernels for CpuKernels {
    fn name(&self) -> &str {
        "cpu"
    }

    fn corpus<'a>(&self, vectors: Matrix<'a>) -> Corpus<'a> {
        let mut inv_norms = vec![0.0; vectors.rows()];
        let ranges = self.ranges(vectors.rows(), vectors.dim());
        let isa = self.isa;
        std::thread::scope(|scope| {
            let mut rest = inv_norms.as_mut_slice();
            for (t, range) in ranges.iter().enumerate() {
                let (part, tail) = rest.split_at_mut(range.len());
                rest = tail;
                let first = range.start;
                let mut work = move || {
                    dot::self_dots(isa, vectors, first, part);
                    part.iter_mut().for_each(|x| *x = dot::inverse_norm(*x));
                };
                if t + 1 == ranges.len() {
                    work();
                } else {
                    scope.spawn(work);
                }
            }
        });
        Corpus { vectors, inv_norms }
    }

    /// # Panics
    /// If the queries and the corpus differ in dimension, or the corpus
    /// does not hold one inverse norm per row.
    fn top_k(&self, queries: Matrix<'_>, corpus: &Corpus<'_>, k: usize) -> Vec<Vec<Hit>> {
        let rows = corpus.vectors.rows();
        assert_eq!(queries.dim(), corpus.vectors.dim(), "top_k: queries and corpus differ in dimension");
        assert_eq!(corpus.inv_norms.len(), rows, "top_k: the corpus needs one inverse norm per row");
        let k = k.min(rows);
        if k == 0 {
            return vec![Vec::new(); queries.rows()];
        }
        let mut pack = Pack::new(queries.dim());
        pack.fill(queries, 0..queries.rows());
        let query_inv = dot::pack_inverse_norms(self.isa, &pack);
        let ranges = self.ranges(rows, queries.dim() * pack.len());
        let (isa, pack, query_inv) = (self.isa, &pack, &query_inv);
        let search = move |range: Range<usize>| {
            let mut sink = select::Scores { selector: Selector::new(pack.len(), k), query_inv, row_inv: &corpus.inv_norms };
            dot::scan(isa, corpus.vectors, range, pack, &mut sink);
            sink.selector
        };
        let parts: Vec<Selector> = std::thread::scope(|scope| {
            let (last, others) = ranges.split_last().map_or((0..0, &[][..]), |(l, o)| (l.clone(), o));
            let handles: Vec<_> = others.iter().map(|r| scope.spawn(move || search(r.clone()))).collect();
            let mut parts = vec![search(last)];
            for handle in handles {
                match handle.join() {
                    Ok(part) => parts.push(part),
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            parts
        });
        select::merge(&parts, pack.len(), k)
    }

    fn single_pass_cluster(&self, vectors: Matrix<'_>, theta: f32) -> Vec<u32> {
        cluster::single_pass_cluster(self.isa, self.threads, self.parallel_work, vectors, theta)
    }

    fn keep(self: Arc<Self>, vectors: Vec<f32>, dim: usize) -> Arc<dyn ResidentCorpus> {
        Arc::new(HostCorpus::new(self, vectors, dim))
    }
}
