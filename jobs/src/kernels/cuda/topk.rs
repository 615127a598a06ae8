//! Host side of the top-k search (`topk.cu`): corpora resident on the
//! device, queries packed and searched in batches, only the final `k`
//! hits per query copied back.

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchArgs, LaunchConfig, PushKernelArg};

use super::tensor::{self, CHUNK_BYTES, MMA_COLS, MMA_ROWS, THREADS, TILE_SHARED};
use super::{CudaError, CudaKernels, Functions};
use crate::kernels::{Corpus, Hit, Matrix};

/// The largest `k` the device keeps on chip (8 lists of `k` hits in shared
/// memory); larger ones go to the CPU kernels.
pub const MAX_K: usize = 256;

/// Queries per group of `topk_partial` and `topk_tiles` (`QUERIES` in topk.cu).
const QUERIES: usize = 8;
/// Query groups per block of `topk_tiles` at most (`MAX_GROUPS` in topk.cu).
const MAX_GROUPS: usize = 4;
/// Queries per block of `topk_mma` (the tile product's columns), and the
/// smallest batch that takes it. Its 64 x 128 tile of tensor-core dots
/// would run partly empty below; and from 64 queries `topk_tiles`, at 32
/// queries a block, reads the corpus twice and does 32 CUDA-core FMAs per
/// element read, well past where it turns compute-bound (batch 10 to 20 in
/// README's model), which is where the tensor cores' throughput pays for
/// the re-scoring. Not tuned on a device yet.
pub(super) const MMA_QUERIES: usize = MMA_COLS;
/// Pairs `topk_mma` re-scores per round, a pair and a score each (`QUEUE` in topk.cu).
const QUEUE: usize = THREADS;
/// The tensor-core path wants each block's share of the corpus to be at
/// least this many times `k` rows: its floors become finite only once a
/// query's list holds `k` hits, and until then every pair is re-scored.
const MMA_ROWS_PER_K: usize = 4;
/// The largest dimension `topk_mma` takes: [`mma_epsilon`] is derived up to it.
const MAX_MMA_DIM: usize = 1 << 16;
/// Queries searched per launch, bounding the partial lists' memory.
const QUERY_CHUNK: usize = 512;
/// The index of an empty slot (`NONE` in topk.cu).
const NONE: u32 = u32::MAX;

/// The kernel a chunk of queries is searched with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Path {
    /// `topk_partial_*`: rows not 16-byte aligned (`dim` not a multiple of 8).
    Rows,
    /// `topk_tiles_*` with `groups` query groups of 8 per block.
    Tiles { groups: usize },
    /// `topk_mma_*`: tensor-core estimates, canonical re-scoring.
    TensorCores,
}

/// What the choice of a path depends on besides the search itself.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    /// Dynamic shared memory a block of `topk_mma` may use: the device's
    /// limit less the kernel's static shared memory (see [`Room`]).
    pub(super) mma_shared: usize,
    /// Blocks that share the walk over the corpus for a group of queries,
    /// at most.
    pub(super) parts: usize,
}

impl Path {
    /// The path for `nq` queries of `dim` against `rows` rows of `element`
    /// bytes, `k` hits each. Aligned rows take the tiled kernels, with as
    /// many queries per block as the batch fills (each read of a tile
    /// serves them all); large batches take the tensor cores where their
    /// lists fit the device's shared memory and each block's share of the
    /// corpus is at least [`MMA_ROWS_PER_K`]·`k` rows (below that, most
    /// pairs would be re-scored).
    pub(super) fn choose(nq: usize, dim: usize, element: usize, k: usize, rows: usize, limits: Limits) -> Path {
        if !dim.is_multiple_of(8) {
            return Path::Rows;
        }
        let tensor_fits = Path::TensorCores.shared(element, k) <= limits.mma_shared;
        let share = rows / Path::TensorCores.parts(rows, limits.parts);
        if nq >= MMA_QUERIES && dim <= MAX_MMA_DIM && tensor_fits && share >= MMA_ROWS_PER_K * k {
            return Path::TensorCores;
        }
        Path::Tiles {
            groups: match nq {
                0..=8 => 1,
                9..=16 => 2,
                _ => MAX_GROUPS,
            },
        }
    }

    /// The blocks that share the walk over `rows` rows for a group of
    /// queries: one per tile, `max` at most.
    fn parts(self, rows: usize, max: usize) -> usize {
        rows.div_ceil(self.tile_rows()).min(max).max(1)
    }

    fn queries_per_block(self) -> usize {
        match self {
            Path::Rows => QUERIES,
            Path::Tiles { groups } => QUERIES * groups,
            Path::TensorCores => MMA_QUERIES,
        }
    }

    fn tile_rows(self) -> usize {
        match self {
            Path::Rows => THREADS,
            Path::Tiles { groups } => THREADS / groups,
            Path::TensorCores => MMA_ROWS,
        }
    }

    /// The dynamic shared memory the kernel lays out, bytes.
    fn shared(self, element: usize, k: usize) -> usize {
        let (queries, rows) = (self.queries_per_block(), self.tile_rows());
        let lists = queries * k * 8;
        let row_bytes = CHUNK_BYTES + 16;
        match self {
            Path::Rows => lists + queries * rows * 4,
            Path::Tiles { .. } => 2 * rows * row_bytes + 2 * queries * (CHUNK_BYTES / element) * 4 + queries * rows * 4 + lists,
            Path::TensorCores => TILE_SHARED + QUEUE * 8 + lists,
        }
    }
}

/// The dynamic shared memory each top-k kernel may use on this device: the
/// device's limit per block less the kernel's static shared memory (its
/// `__shared__` arrays, as the driver reports them for the loaded function:
/// ptxas counted 32 bytes for `topk_partial`, 384 for `topk_tiles` and 528
/// for `topk_mma` when this was written). Static and dynamic together must
/// fit the limit, and past the default 48 KiB a launch needs the function's
/// opt-in, which [`Room::opt_in`] gives once, when the kernels are loaded,
/// for all of its room: no launch asks for it again, and none can exceed it
/// unnoticed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Room {
    rows: usize,
    tiles: usize,
    mma: usize,
}

impl Room {
    /// Queries each top-k kernel's static shared memory and allows it the
    /// rest of the device's `max_shared` bytes per block.
    pub(crate) fn opt_in(f: &Functions, max_shared: usize) -> Result<Room, CudaError> {
        let room = |instances: [&CudaFunction; 2]| -> Result<usize, CudaError> {
            let mut least = max_shared;
            for function in instances {
                // Binds the context to this thread, as the raw set_attribute below needs.
                let fixed = usize::try_from(function.shared_size_bytes()?).unwrap_or(max_shared);
                let dynamic = max_shared.saturating_sub(fixed);
                let attribute = CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
                function.set_attribute(attribute, i32::try_from(dynamic).unwrap_or(i32::MAX))?;
                least = least.min(dynamic);
            }
            Ok(least)
        };
        Ok(Room {
            rows: room([&f.topk_partial_f16, &f.topk_partial_f32])?,
            tiles: room([&f.topk_tiles_f16, &f.topk_tiles_f32])?,
            mma: room([&f.topk_mma_f16, &f.topk_mma_f32])?,
        })
    }

    /// The room of the kernel of `path`, bytes.
    fn of(self, path: Path) -> usize {
        match path {
            Path::Rows => self.rows,
            Path::Tiles { .. } => self.tiles,
            Path::TensorCores => self.mma,
        }
    }
}

/// ε, the bound on |estimate − canonical cosine| that `topk_mma_*` uses
/// (an f32 corpus rounded to tf32 when `tf32_corpus`), for a query and a
/// row whose inverse norms are in [2^-50, 2^50] (`trusted` in topk.cu;
/// every other pair is re-scored). The derivation, with u = 2^-24 (f32),
/// h = 2^-11 (f16 and tf32, rounded to nearest), γ_j = ju / (1 − ju),
/// m = ⌈d / 8⌉ (the canonical chain) and n the number of products the
/// tensor cores sum (d rounded up to 32, the last chunk's zeros included):
///
/// - Every term below is relative to P = Σ|q_i c_i|·Q·R, where Q and R are
///   the inverse norms: P ≤ (‖q‖Q)(‖c‖R) by Cauchy–Schwarz, and an inverse
///   norm is 1 / √ of a canonical self-dot (relative error ≤ γ_{m+3}) with
///   a rounded root and quotient, so ‖x‖·inv ≤ 1 + γ_{m+5} and
///   P ≤ P̄ = (1 + γ_{m+5})². So the bound holds whatever the norms.
/// - Canonical score s = fl(fl(D·Q)·R), D the canonical dot: each product
///   passes through at most m chained FMAs and 3 additions, so
///   |D − q·c| ≤ γ_{m+3}·Σ|q_i c_i| and |s − (q·c)QR| ≤ γ_{m+5}·P.
/// - Estimate a = fl(A·R / σ), σ the query scale (2^14 for f16, exact),
///   A the tensor cores' sum of q̂_i ĉ_i. q̂_i = round(fl(q_i·Q)·σ): relative
///   error ≤ h after the product's u, plus 2^-39 absolute (after / σ) for
///   the elements among f16's subnormals; ĉ_i = c_i (f16) or rounded to
///   tf32 (relative ≤ h). Products of two 11-bit significands are exact.
///   The accumulation is not documented; measurements (Fasi, Higham,
///   Mikaitis and Pranesh, "Numerical behavior of NVIDIA tensor cores",
///   2021) found exact products, each step's terms aligned to the largest
///   and truncated, subnormal f16 inputs kept. We allow each step of
///   j ≥ 1 products (j + 2)·2^-22 times the sum of its terms' magnitudes,
///   twice the truncation error of an f32 accumulator. Its terms are the j
///   products and the accumulator, itself at most (1 + α)·Σ|q̂_i ĉ_i|, so
///   over n products |A − Σ q̂_i ĉ_i| ≤ α·Σ|q̂_i ĉ_i| with
///   α = β / (1 − β), β = 3n·2^-22 ([`tensor::accumulation`]). With
///   e = (1 + h)(1 + u)(1 + h_c) − 1 (h_c = h for tf32 rows, else 0):
///   |a − (q·c)QR| ≤ P·(e + α(1 + e) + u(1 + α)(1 + e)).
/// - Adding the two: ε = (1 + 2^-20)·P̄·(γ_{m+5} + e + α(1 + e) +
///   u(1 + α)(1 + e)) + 2^-30·(d + 8), rounded up to f32. The first factor
///   covers the rounding of this very computation, the last term every
///   subnormal and underflow effect (2^-39·√d for f16 queries,
///   (8m + 7)·2^-150·QR for underflow in the canonical dots, with
///   QR ≤ 2^100; less for tf32).
///
/// A pair is left out only if its estimate is below the k-th score minus
/// ε, so its canonical score is below the k-th.
///
/// For d = 384 that is about 7.7e-4 (f16) and 1.3e-3 (f32); nearly all of
/// it is the rounding of the inputs and the allowance for the sum.
pub(super) fn mma_epsilon(dim: usize, tf32_corpus: bool) -> f32 {
    let m = dim.div_ceil(8) as f64;
    let p = (1.0 + tensor::gamma(m + 5.0)).powi(2);
    let e = (1.0 + tensor::H) * (1.0 + tensor::U) * (1.0 + if tf32_corpus { tensor::H } else { 0.0 }) - 1.0;
    let alpha = tensor::accumulation(dim);
    let relative = tensor::gamma(m + 5.0) + e + alpha * (1.0 + e) + tensor::U * (1.0 + alpha) * (1.0 + e);
    tensor::round_up((1.0 + (-20f64).exp2()) * p * relative + (-30f64).exp2() * (dim as f64 + 8.0))
}

/// Vectors on the device, in their storage type (f16 as its bits).
pub(crate) enum DeviceMatrix {
    F16(CudaSlice<u16>),
    F32(CudaSlice<f32>),
}

impl DeviceMatrix {
    pub(crate) fn upload(kernels: &CudaKernels, m: Matrix<'_>) -> Result<DeviceMatrix, CudaError> {
        Ok(match m {
            Matrix::F16 { data, .. } => {
                DeviceMatrix::F16(kernels.stream.clone_htod(half::slice::HalfFloatSliceExt::reinterpret_cast(data))?)
            }
            Matrix::F32 { data, .. } => DeviceMatrix::F32(kernels.stream.clone_htod(data)?),
        })
    }

    pub(crate) fn as_ref(&self) -> MatrixRef<'_> {
        match self {
            DeviceMatrix::F16(s) => MatrixRef::F16(s),
            DeviceMatrix::F32(s) => MatrixRef::F32(s),
        }
    }
}

/// A borrowed [`DeviceMatrix`], to pass as a kernel argument.
#[derive(Clone, Copy)]
pub(crate) enum MatrixRef<'a> {
    F16(&'a CudaSlice<u16>),
    F32(&'a CudaSlice<f32>),
}

impl<'a> MatrixRef<'a> {
    /// A launch of the f16 or the f32 instance of a kernel, with this
    /// matrix as its first argument.
    pub(crate) fn launch(self, stream: &'a CudaStream, f16: &'a CudaFunction, f32: &'a CudaFunction) -> LaunchArgs<'a> {
        let mut launch = match self {
            MatrixRef::F16(_) => stream.launch_builder(f16),
            MatrixRef::F32(_) => stream.launch_builder(f32),
        };
        self.push(&mut launch);
        launch
    }

    /// Adds this matrix as the launch's next argument.
    fn push(self, launch: &mut LaunchArgs<'a>) {
        match self {
            MatrixRef::F16(s) => launch.arg(s),
            MatrixRef::F32(s) => launch.arg(s),
        };
    }

    /// Bytes per element.
    fn element(self) -> usize {
        match self {
            MatrixRef::F16(_) => 2,
            MatrixRef::F32(_) => 4,
        }
    }
}

/// A corpus uploaded once and searched many times: its vectors and inverse
/// norms stay in device memory until dropped.
pub struct DeviceCorpus {
    pub(crate) vectors: DeviceMatrix,
    inv_norms: CudaSlice<f32>,
    rows: usize,
    dim: usize,
}

impl DeviceCorpus {
    /// Copies a prepared corpus to the device.
    pub fn upload(kernels: &CudaKernels, corpus: &Corpus<'_>) -> Result<DeviceCorpus, CudaError> {
        let (rows, dim) = (corpus.vectors.rows(), corpus.vectors.dim());
        check_rows(rows)?;
        if corpus.inv_norms.len() != rows {
            return Err(CudaError::Input(format!("the corpus has {rows} rows but {} inverse norms", corpus.inv_norms.len())));
        }
        Ok(DeviceCorpus {
            vectors: DeviceMatrix::upload(kernels, corpus.vectors)?,
            inv_norms: kernels.stream.clone_htod(corpus.inv_norms.as_slice())?,
            rows,
            dim,
        })
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes of vectors a search reads per pass over the corpus.
    pub fn vector_bytes(&self) -> usize {
        self.rows * self.dim * self.vectors.as_ref().element()
    }
}

fn check_rows(rows: usize) -> Result<u32, CudaError> {
    u32::try_from(rows)
        .ok()
        .filter(|&r| r < NONE)
        .ok_or_else(|| CudaError::Input(format!("{rows} rows: the device kernels index rows with 32 bits")))
}

fn dim_arg(dim: usize) -> Result<i32, CudaError> {
    i32::try_from(dim).map_err(|_| CudaError::Input(format!("dimension {dim} is too large")))
}

/// Each row's inverse norm, computed on the device.
pub(crate) fn inverse_norms(kernels: &CudaKernels, vectors: Matrix<'_>) -> Result<Vec<f32>, CudaError> {
    let rows = vectors.rows();
    if rows == 0 {
        return Ok(Vec::new());
    }
    let device = DeviceMatrix::upload(kernels, vectors)?;
    let out = device_inverse_norms(kernels, device.as_ref(), rows, vectors.dim())?;
    Ok(kernels.stream.clone_dtoh(&out)?)
}

fn device_inverse_norms(kernels: &CudaKernels, m: MatrixRef<'_>, rows: usize, dim: usize) -> Result<CudaSlice<f32>, CudaError> {
    let (n, dim) = (check_rows(rows)?, dim_arg(dim)?);
    let mut out = kernels.stream.alloc_zeros::<f32>(rows)?;
    let f = &kernels.functions;
    let cfg = LaunchConfig { grid_dim: (n.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let mut launch = m.launch(&kernels.stream, &f.inverse_norms_f16, &f.inverse_norms_f32);
    launch.arg(&n).arg(&dim).arg(&mut out);
    // SAFETY: the arguments match inverse_norms_* in topk.cu: `n` rows of `dim` values and `n` outputs.
    unsafe { launch.launch(cfg) }?;
    Ok(out)
}

impl CudaKernels {
    /// For each query, the `k` rows of a resident corpus with the highest
    /// cosine similarity, best first, ties to the lower row: the same hits
    /// and scores as [`crate::kernels::Kernels::top_k`] of the CPU kernels.
    pub fn search(&self, queries: Matrix<'_>, corpus: &DeviceCorpus, k: usize) -> Result<Vec<Vec<Hit>>, CudaError> {
        if queries.dim() != corpus.dim {
            return Err(CudaError::Input(format!("queries have {} dimensions, the corpus {}", queries.dim(), corpus.dim)));
        }
        if k > MAX_K {
            return Err(CudaError::Input(format!("k = {k}: the device keeps at most {MAX_K} hits per query")));
        }
        let k = k.min(corpus.rows);
        let mut hits = Vec::with_capacity(queries.rows());
        for start in (0..queries.rows()).step_by(QUERY_CHUNK) {
            let end = queries.rows().min(start + QUERY_CHUNK);
            if k == 0 {
                hits.extend((start..end).map(|_| Vec::new()));
                continue;
            }
            hits.extend(self.search_chunk(queries, start..end, corpus, k)?);
        }
        Ok(hits)
    }

    fn search_chunk(
        &self,
        queries: Matrix<'_>,
        range: std::ops::Range<usize>,
        corpus: &DeviceCorpus,
        k: usize,
    ) -> Result<Vec<Vec<Hit>>, CudaError> {
        let (dim, nq) = (corpus.dim, range.len());
        let dim8 = dim.div_ceil(8) * 8;
        let vectors = corpus.vectors.as_ref();
        let limits = Limits { mma_shared: self.room.mma, parts: self.blocks(2 * self.info.multiprocessors as usize) };
        let path = Path::choose(nq, dim, vectors.element(), k, corpus.rows, limits);
        let shared = path.shared(vectors.element(), k);
        let room = self.room.of(path);
        if shared > room {
            return Err(CudaError::Input(format!("k = {k} needs {shared} bytes of shared memory per block; the kernel has {room}")));
        }
        let per_block = path.queries_per_block();
        let padded = nq.div_ceil(per_block) * per_block;
        let mut packed = vec![0.0f32; padded * dim8];
        for (dst, row) in packed.chunks_exact_mut(dim8).zip(range) {
            let dst = &mut dst[..dim];
            match queries {
                Matrix::F32 { data, .. } => dst.copy_from_slice(&data[row * dim..(row + 1) * dim]),
                Matrix::F16 { data, .. } => half::slice::HalfFloatSliceExt::convert_to_f32_slice(&data[row * dim..(row + 1) * dim], dst),
            }
        }
        let stream = &self.stream;
        let packed = stream.clone_htod(&packed)?;
        let query_inv = device_inverse_norms(self, MatrixRef::F32(&packed), padded, dim8)?;

        let rows = check_rows(corpus.rows)?;
        let parts = path.parts(corpus.rows, limits.parts);
        let mut part_score = stream.alloc_zeros::<f32>(nq * parts * k)?;
        let mut part_index = stream.alloc_zeros::<u32>(nq * parts * k)?;
        let (dim_arg, nq_arg, k_arg, parts_arg) = (dim_arg(dim)?, nq as u32, k as u32, parts as u32);
        let f = &self.functions;
        let (f16, f32) = match path {
            Path::Rows => (&f.topk_partial_f16, &f.topk_partial_f32),
            Path::Tiles { .. } => (&f.topk_tiles_f16, &f.topk_tiles_f32),
            Path::TensorCores => (&f.topk_mma_f16, &f.topk_mma_f32),
        };
        let mma_queries = match path {
            Path::TensorCores => Some(self.mma_queries(vectors, &packed, &query_inv, padded, dim)?),
            _ => None,
        };
        let groups_arg = match path {
            Path::Tiles { groups } => groups as i32,
            _ => 1,
        };
        let eps = mma_epsilon(dim, matches!(vectors, MatrixRef::F32(_)));
        let mut launch = vectors.launch(stream, f16, f32);
        launch.arg(&corpus.inv_norms).arg(&rows).arg(&dim_arg).arg(&packed).arg(&query_inv).arg(&nq_arg).arg(&k_arg);
        match (path, &mma_queries) {
            (Path::Tiles { .. }, _) => {
                launch.arg(&groups_arg);
            }
            (Path::TensorCores, Some(rounded)) => {
                rounded.as_ref().push(&mut launch);
                launch.arg(&eps);
            }
            _ => {}
        }
        launch.arg(&mut part_score).arg(&mut part_index);
        let cfg = LaunchConfig {
            grid_dim: ((padded / per_block) as u32, parts as u32, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: shared as u32,
        };
        // SAFETY: the arguments match topk_partial_*, topk_tiles_* (with `groups`) or topk_mma_* (with the
        // rounded queries and eps) in topk.cu: the corpus of `rows` x `dim`, `padded` packed queries of `dim8`
        // with their inverse norms (and rounded), and `nq * parts * k` output slots; the shared memory is what
        // the kernel lays out, within the room the function was allowed (Room: its static shared memory
        // counted).
        unsafe { launch.launch(cfg) }?;

        let mut out_score = stream.alloc_zeros::<f32>(nq * k)?;
        let mut out_index = stream.alloc_zeros::<u32>(nq * k)?;
        let mut merge = stream.launch_builder(&f.topk_merge);
        merge.arg(&part_score).arg(&part_index).arg(&parts_arg).arg(&k_arg).arg(&mut out_score).arg(&mut out_index);
        let cfg = LaunchConfig { grid_dim: (nq as u32, 1, 1), block_dim: (32, 1, 1), shared_mem_bytes: (k * 8) as u32 };
        // SAFETY: the arguments match topk_merge: `nq` queries of `parts` lists of `k` slots, `nq * k` outputs.
        unsafe { merge.launch(cfg) }?;

        let scores = stream.clone_dtoh(&out_score)?;
        let indices = stream.clone_dtoh(&out_index)?;
        Ok(scores
            .chunks_exact(k)
            .zip(indices.chunks_exact(k))
            .map(|(s, i)| s.iter().zip(i).take_while(|(_, i)| **i != NONE).map(|(&score, &index)| Hit { index, score }).collect())
            .collect())
    }

    /// The packed queries as `topk_mma_*` takes them (`mma_queries_*`):
    /// f16 for an f16 corpus, tf32 (stored as f32) for an f32 one.
    fn mma_queries(
        &self,
        corpus: MatrixRef<'_>,
        packed: &CudaSlice<f32>,
        query_inv: &CudaSlice<f32>,
        n: usize,
        dim: usize,
    ) -> Result<DeviceMatrix, CudaError> {
        let stream = &self.stream;
        let (n_arg, dim_arg) = (check_rows(n)?, dim_arg(dim)?);
        let f = &self.functions;
        let (mut rounded, function) = match corpus {
            MatrixRef::F16(_) => (DeviceMatrix::F16(stream.alloc_zeros::<u16>(n * dim)?), &f.mma_queries_f16),
            MatrixRef::F32(_) => (DeviceMatrix::F32(stream.alloc_zeros::<f32>(n * dim)?), &f.mma_queries_f32),
        };
        let mut launch = stream.launch_builder(function);
        launch.arg(packed).arg(query_inv).arg(&n_arg).arg(&dim_arg);
        match &mut rounded {
            DeviceMatrix::F16(s) => launch.arg(s),
            DeviceMatrix::F32(s) => launch.arg(s),
        };
        let elements = u32::try_from((n * dim).div_ceil(256)).map_err(|_| CudaError::Input(format!("{n} queries of {dim}: too many")))?;
        let cfg = LaunchConfig { grid_dim: (elements, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: matches mma_queries_* in topk.cu: `n` packed queries of `dim` (a multiple of 8, so dim8) with
        // their inverse norms, and `n * dim` outputs of the corpus's type.
        unsafe { launch.launch(cfg) }?;
        Ok(rounded)
    }
}
