//! The reference single-pass clustering, computed in blocks.
//!
//! The algorithm is sequential: each vector's choice depends on every mean
//! the previous vectors moved. Done literally it is one matrix-vector
//! product per vector, which streams all the means through the core for
//! eight multiply-adds a cache line and leaves the FMA units idle.
//!
//! So vectors are taken in blocks. First, in parallel, the dots of all the
//! block's vectors with all the means as they stand (a cache-blocked matrix
//! product, [`dot::scan`], in chunks of clusters shared by a [`Crew`]). Then the
//! vectors are decided one by one: a vector only lacks its dots with the
//! clusters that earlier vectors of the block changed or created, which it
//! recomputes from the current means (the "dirty" list). Every dot used is
//! the canonical dot of the vector and the mean as the reference sees them
//! at that step, so the ids are the reference's exactly. The dirty list
//! grows with the block, the parallel step with the number of clusters;
//! [`block_len`] balances the two.
//!
//! A cluster's mean is its running f32 sum divided by its count, kept in
//! one contiguous buffer so that the means are a matrix the tiles read.

use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::Thread;

use super::crew::Crew;
use super::dot::{self, Isa, Pack};
use crate::kernels::Matrix;

/// The most vectors in a block.
const MAX_BLOCK: usize = 48;

/// Clusters as the reference holds them: sums, counts and means.
struct Clusters {
    dim: usize,
    sums: Vec<f32>,
    means: Vec<f32>,
    counts: Vec<u32>,
}

impl Clusters {
    fn len(&self) -> usize {
        self.counts.len()
    }

    fn means(&self) -> Matrix<'_> {
        Matrix::F32 { data: &self.means, dim: self.dim }
    }

    fn create(&mut self, vector: &[f32]) {
        self.sums.extend_from_slice(vector);
        self.means.extend_from_slice(vector);
        self.counts.push(1);
    }

    fn join(&mut self, cluster: usize, vector: &[f32]) {
        let span = cluster * self.dim..(cluster + 1) * self.dim;
        self.counts[cluster] += 1;
        let count = self.counts[cluster] as f32;
        let sums = &mut self.sums[span.clone()];
        for (s, v) in sums.iter_mut().zip(vector) {
            *s += v;
        }
        for (m, s) in self.means[span].iter_mut().zip(sums.iter()) {
            *m = s / count;
        }
    }
}

/// Clusters per item of a parallel step: about 25 microseconds of work for
/// a block of 64 vectors of 384 dimensions, small enough to balance well.
const CHUNK: usize = 32;

/// What the threads share: the clusters and the block, read during the
/// parallel step and written between steps, and the step's output.
struct Shared {
    isa: Isa,
    clusters: RwLock<Clusters>,
    block: RwLock<Pack>,
    /// Chunk `j` holds the block's dots with the clusters `j * CHUNK..`,
    /// vector by vector.
    chunks: RwLock<Vec<Mutex<Vec<f32>>>>,
}

impl Shared {
    fn compute_chunk(&self, j: usize) {
        let clusters = read(&self.clusters);
        let block = read(&self.block);
        let chunks = read(&self.chunks);
        let span = j * CHUNK..clusters.len().min((j + 1) * CHUNK);
        let mut out = lock(&chunks[j]);
        out.clear();
        out.resize(span.len() * block.len(), 0.0);
        let mut sink = RowSink { first: span.start, span: span.len(), out: &mut out };
        dot::scan(self.isa, clusters.means(), span, &block, &mut sink);
    }
}

/// `parallel_work`: the multiply-adds below which a block's parallel step
/// stays on one thread.
pub(crate) fn single_pass_cluster(isa: Isa, threads: usize, parallel_work: usize, vectors: Matrix<'_>, theta: f32) -> Vec<u32> {
    let (n, dim) = (vectors.rows(), vectors.dim());
    let threads = if n * MAX_BLOCK * dim < parallel_work { 1 } else { threads };
    let shared = Shared {
        isa,
        clusters: RwLock::new(Clusters { dim, sums: Vec::new(), means: Vec::new(), counts: Vec::new() }),
        block: RwLock::new(Pack::new(dim)),
        chunks: RwLock::new(Vec::new()),
    };
    let crew = Crew::default();
    std::thread::scope(|scope| {
        let (crew, shared) = (&crew, &shared);
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(move || crew.serve(|j| shared.compute_chunk(j)))).collect();
        let workers: Vec<Thread> = handles.iter().map(|h| h.thread().clone()).collect();
        let _dismiss = crew.dismiss_on_drop(&workers);
        run(shared, crew, &workers, parallel_work, vectors, theta)
    })
}

fn run(shared: &Shared, crew: &Crew, workers: &[Thread], parallel_work: usize, vectors: Matrix<'_>, theta: f32) -> Vec<u32> {
    let (n, dim) = (vectors.rows(), vectors.dim());
    let mut ids = Vec::with_capacity(n);
    let mut scratch = Scratch::default();
    let mut start = 0;
    while start < n {
        let known = read(&shared.clusters).len();
        let len = block_len(known).min(n - start);
        write(&shared.block).fill(vectors, start..start + len);
        let count = known.div_ceil(CHUNK);
        let mut chunks = write(&shared.chunks);
        let slots = count.max(chunks.len());
        chunks.resize_with(slots, || Mutex::new(Vec::new()));
        drop(chunks);
        let helpers = if known * len * dim < parallel_work { &[][..] } else { workers };
        crew.run(count, helpers, |j| shared.compute_chunk(j));
        decide(shared, count, theta, &mut scratch, &mut ids);
        start += len;
    }
    ids
}

/// Buffers of [`decide`], kept across blocks.
#[derive(Default)]
struct Scratch {
    /// The dots of the block's vectors with the clusters created during
    /// the block, vector by vector.
    fresh: Vec<f32>,
    /// The clusters changed or created during the block.
    dirty: Vec<usize>,
    is_dirty: Vec<bool>,
}

/// Assigns the block's vectors one by one, from the chunks' dots and the
/// dots with dirty clusters recomputed from their current means; appends
/// their ids.
fn decide(shared: &Shared, count: usize, theta: f32, scratch: &mut Scratch, ids: &mut Vec<u32>) {
    let mut clusters = write(&shared.clusters);
    let block = read(&shared.block);
    let chunks = read(&shared.chunks);
    let mut parts: Vec<MutexGuard<'_, Vec<f32>>> = chunks[..count].iter().map(lock).collect();
    let (known, len) = (clusters.len(), block.len());
    let Scratch { fresh, dirty, is_dirty } = scratch;
    fresh.clear();
    fresh.resize(len * len, 0.0);
    is_dirty.clear();
    is_dirty.resize(known + len, false);
    dirty.clear();
    for i in 0..len {
        for_each_fresh_dot(shared.isa, clusters.means(), dirty, &block, i, |c, d| {
            let slot = if c < known {
                let part = &mut parts[c / CHUNK];
                let span = part.len() / len;
                &mut part[i * span + c % CHUNK]
            } else {
                &mut fresh[i * len + c - known]
            };
            *slot = d;
        });
        let rows = parts.iter().map(|p| {
            let span = p.len() / len;
            &p[i * span..(i + 1) * span]
        });
        let new = &fresh[i * len..i * len + clusters.len() - known];
        let chosen = match first_max(rows.chain([new])) {
            Some((c, dot)) if dot > theta => {
                clusters.join(c, block.row(i));
                c
            }
            _ => {
                clusters.create(block.row(i));
                clusters.len() - 1
            }
        };
        if !is_dirty[chosen] {
            is_dirty[chosen] = true;
            dirty.push(chosen);
        }
        ids.push(chosen as u32 + 1);
    }
}

/// Vectors per block: enough to spread the parallel step's overhead, few
/// enough that recomputing dirty dots stays small next to it.
fn block_len(clusters: usize) -> usize {
    (clusters / 4).clamp(16, MAX_BLOCK)
}

/// Stores the dots of the block's vectors with `span` clusters from
/// `first`, vector by vector.
struct RowSink<'a> {
    first: usize,
    span: usize,
    out: &'a mut [f32],
}

impl dot::Sink for RowSink<'_> {
    #[inline]
    fn take<const R: usize, const Q: usize>(&mut self, first_row: usize, first_query: usize, dots: &[[f32; Q]; R]) {
        for (r, dots) in dots.iter().enumerate() {
            let column = first_row + r - self.first;
            for (q, &d) in dots.iter().enumerate() {
                self.out[(first_query + q) * self.span + column] = d;
            }
        }
    }
}

/// The first cluster with the largest dot, and that dot, if it is above 0:
/// what the reference's scan finds, which moves to a cluster only if its
/// dot is strictly greater than the best so far, starting from 0. `rows`
/// hold the dots of consecutive clusters.
fn first_max<'a>(rows: impl Iterator<Item = &'a [f32]> + Clone) -> Option<(usize, f32)> {
    let top = rows.clone().map(max_of).fold(f32::NEG_INFINITY, f32::max);
    if top <= 0.0 {
        return None;
    }
    let mut offset = 0;
    for row in rows {
        if let Some(j) = position_of(row, top) {
            return Some((offset + j, top));
        }
        offset += row.len();
    }
    None
}

/// The largest value, NaN ignored, in lanes of 8 that vectorise.
fn max_of(row: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = row.chunks_exact(8);
    for chunk in &mut chunks {
        for (lane, &d) in lanes.iter_mut().zip(chunk) {
            *lane = lane.max(d);
        }
    }
    lanes.iter().chain(chunks.remainder()).fold(f32::NEG_INFINITY, |a, &b| a.max(b))
}

fn position_of(row: &[f32], value: f32) -> Option<usize> {
    let mut chunks = row.chunks_exact(8);
    for (k, chunk) in (&mut chunks).enumerate() {
        if chunk.iter().fold(false, |found, &d| found | (d == value)) {
            return chunk.iter().position(|&d| d == value).map(|j| k * 8 + j);
        }
    }
    let done = row.len() - chunks.remainder().len();
    chunks.remainder().iter().position(|&d| d == value).map(|j| done + j)
}

/// Vector `i`'s dots with the clusters in `dirty`, from their current means.
fn for_each_fresh_dot(isa: Isa, means: Matrix<'_>, dirty: &[usize], block: &Pack, i: usize, mut f: impl FnMut(usize, f32)) {
    let mut groups = dirty.chunks_exact(8);
    for group in &mut groups {
        let ids: [usize; 8] = std::array::from_fn(|r| group[r]);
        for (c, d) in ids.into_iter().zip(dot::tile::<8, 1>(isa, means, ids, block, i)) {
            f(c, d[0]);
        }
    }
    for &c in groups.remainder() {
        f(c, dot::tile::<1, 1>(isa, means, [c], block, i)[0][0]);
    }
}

fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

fn lock<T>(lock: &Mutex<T>) -> MutexGuard<'_, T> {
    lock.lock().unwrap_or_else(PoisonError::into_inner)
}
