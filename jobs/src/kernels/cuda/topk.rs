//! Host side of the top-k search (`topk.cu`): corpora resident on the
//! device, queries packed and searched in batches, only the final `k`
//! hits per query copied back.

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchArgs, LaunchConfig, PushKernelArg};

use super::{CudaError, CudaKernels};
use crate::kernels::{Corpus, Hit, Matrix};

/// The largest `k` the device keeps on chip (8 lists of `k` hits in shared
/// memory); larger ones go to the CPU kernels.
pub const MAX_K: usize = 256;

/// Queries per group of `topk_partial` and `topk_tiles` (`QUERIES` in topk.cu).
const QUERIES: usize = 8;
/// Query groups per block of `topk_tiles` at most (`MAX_GROUPS` in topk.cu).
const MAX_GROUPS: usize = 4;
/// Bytes of each row a `topk_tiles` chunk copies (`CHUNK_BYTES` in topk.cu).
const CHUNK_BYTES: usize = 64;
/// Dynamic shared memory a kernel may use without asking (48 KiB).
const DEFAULT_SHARED: usize = 48 * 1024;
/// Threads per block, one corpus row each (`THREADS` in topk.cu).
const THREADS: usize = 256;
/// Queries searched per launch, bounding the partial lists' memory.
const QUERY_CHUNK: usize = 512;
/// The index of an empty slot (`NONE` in topk.cu).
const NONE: u32 = u32::MAX;

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
        match self {
            MatrixRef::F16(s) => launch.arg(s),
            MatrixRef::F32(s) => launch.arg(s),
        };
        launch
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
        let element = match self.vectors {
            DeviceMatrix::F16(_) => 2,
            DeviceMatrix::F32(_) => 4,
        };
        self.rows * self.dim * element
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
        // Aligned rows take the tiled kernel, with as many query groups of
        // 8 per block as the batch fills (each tile read serves them all).
        let tiled = dim % 8 == 0;
        let groups = match nq {
            _ if !tiled => 1,
            0..=8 => 1,
            9..=16 => 2,
            _ => MAX_GROUPS,
        };
        let per_block = QUERIES * groups;
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
        let tile_rows = THREADS / groups;
        let tiles = corpus.rows.div_ceil(tile_rows);
        let parts = tiles.min(2 * self.info.multiprocessors as usize).max(1);
        let mut part_score = stream.alloc_zeros::<f32>(nq * parts * k)?;
        let mut part_index = stream.alloc_zeros::<u32>(nq * parts * k)?;
        let (dim_arg, nq_arg, k_arg, parts_arg) = (dim_arg(dim)?, nq as u32, k as u32, parts as u32);
        let f = &self.functions;
        let vectors = corpus.vectors.as_ref();
        let (mut launch, shared) = if tiled {
            let element = match vectors {
                MatrixRef::F16(_) => 2,
                MatrixRef::F32(_) => 4,
            };
            let query_floats = CHUNK_BYTES / element;
            let shared =
                2 * tile_rows * (CHUNK_BYTES + 16) + 2 * per_block * query_floats * 4 + per_block * tile_rows * 4 + per_block * k * 8;
            let function = match vectors {
                MatrixRef::F16(_) => &f.topk_tiles_f16,
                MatrixRef::F32(_) => &f.topk_tiles_f32,
            };
            if shared > DEFAULT_SHARED {
                // A raw driver call: the context must be this thread's (launches bind it themselves).
                stream.context().bind_to_thread()?;
                function.set_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared as i32)?;
            }
            (vectors.launch(stream, &f.topk_tiles_f16, &f.topk_tiles_f32), shared)
        } else {
            (vectors.launch(stream, &f.topk_partial_f16, &f.topk_partial_f32), QUERIES * k * 8 + QUERIES * THREADS * 4)
        };
        let groups_arg = groups as i32;
        launch.arg(&corpus.inv_norms).arg(&rows).arg(&dim_arg).arg(&packed).arg(&query_inv).arg(&nq_arg).arg(&k_arg);
        if tiled {
            launch.arg(&groups_arg);
        }
        launch.arg(&mut part_score).arg(&mut part_index);
        let cfg = LaunchConfig {
            grid_dim: ((padded / per_block) as u32, parts as u32, 1),
            block_dim: (THREADS as u32, 1, 1),
            shared_mem_bytes: shared as u32,
        };
        // SAFETY: the arguments match topk_tiles_* (with `groups`) or topk_partial_* in topk.cu: the corpus of
        // `rows` x `dim`, `padded` packed queries of `dim8` with their inverse norms, and `nq * parts * k` output
        // slots; the shared memory is what the kernel lays out (above the default 48 KiB only when the function
        // was allowed it; topk_partial stays under it for k <= MAX_K).
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
}
