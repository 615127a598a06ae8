//! Host side of the clustering kernels (`cluster.cu`): the exact
//! single-pass clustering, block by block (its dots with the means
//! estimated on the tensor cores where the dimension is aligned), and the
//! threshold-graph variant.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::tensor::{self, MMA_ROWS, THREADS, TILE_SHARED};
use super::topk::DeviceMatrix;
use super::{CudaError, CudaKernels};
use crate::kernels::{Matrix, labels_from_parents};

/// Vectors per block of the exact clustering: their dots with the means as
/// they stand are computed by the whole device at once, then decided one by
/// one (`BLOCK` dirty clusters at most to recompute per vector).
const BLOCK: usize = 64;
// A block's vectors are the columns of one tile product.
const _: () = assert!(BLOCK <= tensor::MMA_COLS);
/// Threads of `cluster_decide_*` (`DECIDE_THREADS` in cluster.cu).
const DECIDE_THREADS: u32 = 256;

fn sizes(vectors: Matrix<'_>) -> Result<(u32, i32), CudaError> {
    let (n, dim) = (vectors.rows(), vectors.dim());
    let n = u32::try_from(n).ok().filter(|&n| n < u32::MAX).ok_or_else(|| CudaError::Input(format!("{n} vectors: too many to cluster")))?;
    let dim = i32::try_from(dim).map_err(|_| CudaError::Input(format!("dimension {dim} is too large")))?;
    Ok((n, dim))
}

/// The bound on |estimate − canonical dot| of `cluster_estimates`, relative
/// to √(self-dot of the vector)·√(self-dot of the mean), for vectors of
/// `dim` rounded to tf32 when `tf32_vectors` (f16 ones are exact in it),
/// means rounded to tf32, and self-dots in [2^-60, 2^60] (`estimate_bound`
/// in cluster.cu; other pairs are computed canonically). As
/// [`super::topk::mma_epsilon`] derives for cosines, with m = ⌈d / 8⌉:
/// the rounding of the inputs e = (1 + h)(1 + h_v) − 1, the tensor cores'
/// sum α(1 + e) and the canonical dot's γ_{m+3}, all relative to
/// Σ|v_i c_i| ≤ ‖v‖‖c‖ ≤ √(sv·sc) / (1 − γ_{m+3}), a canonical self-dot
/// being within γ_{m+3} of the squared norm. The raw dot has no final
/// rounding to add. Norms in [2^-30, 2^30] keep every subnormal and
/// underflow effect below 2^-60·(d + 8) relative to ‖v‖‖c‖; (1 + 2^-20)
/// covers the rounding of this computation (the device rounds its part
/// up).
pub(super) fn cluster_epsilon(dim: usize, tf32_vectors: bool) -> f32 {
    let gamma = tensor::gamma(dim.div_ceil(8) as f64 + 3.0);
    let e = (1.0 + tensor::H) * (1.0 + if tf32_vectors { tensor::H } else { 0.0 }) - 1.0;
    let relative = (gamma + e + tensor::accumulation(dim) * (1.0 + e)) / (1.0 - gamma);
    tensor::round_up((1.0 + (-20f64).exp2()) * relative + (-60f64).exp2() * (dim as f64 + 8.0))
}

/// The reference single-pass clustering, exactly, with the running sums and
/// means in device memory (8 bytes per dimension per cluster).
pub(super) fn single_pass(kernels: &CudaKernels, vectors: Matrix<'_>, theta: f32) -> Result<Vec<u32>, CudaError> {
    let (n32, dim32) = sizes(vectors)?;
    let (n, dim) = (vectors.rows(), vectors.dim());
    if n == 0 {
        return Ok(Vec::new());
    }
    let stream = &kernels.stream;
    let device = DeviceMatrix::upload(kernels, vectors)?;
    let mut sums = stream.alloc_zeros::<f32>(n * dim)?;
    let mut means = stream.alloc_zeros::<f32>(n * dim)?;
    let mut mean_sq = stream.alloc_zeros::<f32>(n)?;
    let mut counts = stream.alloc_zeros::<u32>(n)?;
    let mut count = stream.alloc_zeros::<u32>(1)?;
    let mut flags = stream.alloc_zeros::<u32>(n)?;
    let mut dirty = stream.alloc_zeros::<u32>(BLOCK)?;
    let mut ids = stream.alloc_zeros::<u32>(n)?;
    let mut dots = stream.alloc_zeros::<f32>(BLOCK * n)?;
    // Nothing left out until cluster_candidates says otherwise.
    let mut reach = stream.clone_htod(&[f32::NEG_INFINITY; BLOCK])?;
    // Aligned dimensions estimate the dots on the tensor cores.
    let estimated = dim.is_multiple_of(8);
    let mut columns = stream.alloc_zeros::<f32>(if estimated { BLOCK * dim } else { 1 })?;
    let eps_rel = cluster_epsilon(dim, matches!(vectors, Matrix::F32 { .. }));
    let f = &kernels.functions;
    // The cluster count stays on the device: every block's launches are
    // enqueued at once, and the host waits only for the ids at the end.
    // The dots' grid covers at most `start` clusters (there are no more),
    // in as many blocks as fill the device, striding over the rest.
    let fill = kernels.blocks(4 * kernels.info.multiprocessors as usize) as u32;
    let mut start = 0u32;
    while start < n32 {
        let len = (n32 - start).min(BLOCK as u32);
        if start > 0 && estimated {
            let mut launch = device.as_ref().launch(stream, &f.tf32_vectors_f16, &f.tf32_vectors_f32);
            launch.arg(&start).arg(&len).arg(&dim32).arg(&mut columns);
            // One thread per value, counted in usize: `len * dim` passes u32 from dimension 2^26.
            let blocks = u32::try_from((len as usize * dim).div_ceil(256))
                .map_err(|_| CudaError::Input(format!("{len} vectors of dimension {dim}: too many values for one launch")))?;
            let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: matches tf32_vectors_* in cluster.cu: `len` vectors of `dim` from `start`, BLOCK * dim outputs.
            unsafe { launch.launch(cfg) }?;
            let mut launch = stream.launch_builder(&f.cluster_estimates_tf32);
            launch.arg(&means).arg(&count).arg(&dim32).arg(&columns).arg(&len).arg(&mut dots);
            let tiles = start.div_ceil(MMA_ROWS as u32).min(fill);
            let cfg = LaunchConfig { grid_dim: (1, tiles, 1), block_dim: (THREADS as u32, 1, 1), shared_mem_bytes: TILE_SHARED as u32 };
            // SAFETY: matches cluster_estimates_tf32: the `*count <= start` means of `dim` (a multiple of 8), `len`
            // tf32 vectors, `dots` holds BLOCK * n >= len * count values; TILE_SHARED, with no static shared memory
            // (ptxas), is under the default 48 KiB.
            unsafe { launch.launch(cfg) }?;
            let mut launch = device.as_ref().launch(stream, &f.cluster_candidates_f16, &f.cluster_candidates_f32);
            launch.arg(&start).arg(&dim32).arg(&means).arg(&mean_sq).arg(&count).arg(&theta).arg(&eps_rel);
            launch.arg(&mut dots).arg(&mut reach);
            let cfg = LaunchConfig { grid_dim: (len, 1, 1), block_dim: (DECIDE_THREADS, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: matches cluster_candidates_*: one block per vector, the estimates of `dots` for `*count`
            // clusters with their self-dots in `mean_sq`, BLOCK reach slots.
            unsafe { launch.launch(cfg) }?;
        } else if start > 0 {
            let mut launch = device.as_ref().launch(stream, &f.cluster_dots_f16, &f.cluster_dots_f32);
            launch.arg(&start).arg(&dim32).arg(&means).arg(&count).arg(&mut dots);
            let cfg = LaunchConfig { grid_dim: (start.div_ceil(256).min(fill), len, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: matches cluster_dots_* in cluster.cu: `len` vectors from `start`, the `*count <= start`
            // means of `dim`, and `dots` holds BLOCK * n >= len * count values.
            unsafe { launch.launch(cfg) }?;
        }
        let mut launch = device.as_ref().launch(stream, &f.cluster_decide_f16, &f.cluster_decide_f32);
        launch.arg(&start).arg(&len).arg(&dim32).arg(&theta).arg(&mut sums).arg(&mut means).arg(&mut counts).arg(&mut count);
        launch.arg(&dots).arg(&reach).arg(&mut mean_sq).arg(&mut flags).arg(&mut dirty).arg(&mut ids);
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (DECIDE_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: matches cluster_decide_*: room for n clusters in sums, means, mean_sq, counts and flags, BLOCK
        // reach values, `len <= BLOCK` dirty slots, n ids.
        unsafe { launch.launch(cfg) }?;
        start += len;
    }
    Ok(stream.clone_dtoh(&ids)?)
}

/// The threshold-graph clustering: links on the device, trees on the host.
pub(super) fn threshold_graph(kernels: &CudaKernels, vectors: Matrix<'_>, theta: f32) -> Result<Vec<u32>, CudaError> {
    let (n, dim) = sizes(vectors)?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let stream = &kernels.stream;
    let device = DeviceMatrix::upload(kernels, vectors)?;
    let mut parents = stream.alloc_zeros::<u32>(n as usize)?;
    let f = &kernels.functions;
    let mut launch = device.as_ref().launch(stream, &f.threshold_parent_f16, &f.threshold_parent_f32);
    launch.arg(&n).arg(&dim).arg(&theta).arg(&mut parents);
    let cfg = LaunchConfig { grid_dim: (n.div_ceil(128), 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: matches threshold_parent_*: n vectors of dim, n parents.
    unsafe { launch.launch(cfg) }?;
    let parents = stream.clone_dtoh(&parents)?;
    labels_from_parents(&parents).ok_or_else(|| CudaError::Input("the device returned a link to a later vector".into()))
}
