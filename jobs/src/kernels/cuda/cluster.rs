//! Host side of the clustering kernels (`cluster.cu`): the exact
//! single-pass clustering, block by block, and the threshold-graph variant.

use cudarc::driver::{LaunchConfig, PushKernelArg};

use super::topk::DeviceMatrix;
use super::{CudaError, CudaKernels};
use crate::kernels::{Matrix, labels_from_parents};

/// Vectors per block of the exact clustering: their dots with the means as
/// they stand are computed by the whole device at once, then decided one by
/// one (`BLOCK` dirty clusters at most to recompute per vector).
const BLOCK: usize = 64;
/// Threads of `cluster_decide_*` (`DECIDE_THREADS` in cluster.cu).
const DECIDE_THREADS: u32 = 256;

fn sizes(vectors: Matrix<'_>) -> Result<(u32, i32), CudaError> {
    let (n, dim) = (vectors.rows(), vectors.dim());
    let n = u32::try_from(n).ok().filter(|&n| n < u32::MAX).ok_or_else(|| CudaError::Input(format!("{n} vectors: too many to cluster")))?;
    let dim = i32::try_from(dim).map_err(|_| CudaError::Input(format!("dimension {dim} is too large")))?;
    Ok((n, dim))
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
    let mut counts = stream.alloc_zeros::<u32>(n)?;
    let mut count = stream.alloc_zeros::<u32>(1)?;
    let mut flags = stream.alloc_zeros::<u32>(n)?;
    let mut dirty = stream.alloc_zeros::<u32>(BLOCK)?;
    let mut ids = stream.alloc_zeros::<u32>(n)?;
    let mut dots = stream.alloc_zeros::<f32>(BLOCK * n)?;
    let f = &kernels.functions;
    // The cluster count stays on the device: every block's two launches are
    // enqueued at once, and the host waits only for the ids at the end.
    // The dots' grid covers at most `start` clusters (there are no more),
    // in as many blocks as fill the device, striding over the rest.
    let fill = 4 * kernels.info.multiprocessors;
    let mut start = 0u32;
    while start < n32 {
        let len = (n32 - start).min(BLOCK as u32);
        if start > 0 {
            let mut launch = device.as_ref().launch(stream, &f.cluster_dots_f16, &f.cluster_dots_f32);
            launch.arg(&start).arg(&dim32).arg(&means).arg(&count).arg(&mut dots);
            let cfg = LaunchConfig { grid_dim: (start.div_ceil(256).min(fill), len, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: matches cluster_dots_* in cluster.cu: `len` vectors from `start`, the `*count <= start`
            // means of `dim`, and `dots` holds BLOCK * n >= len * count values.
            unsafe { launch.launch(cfg) }?;
        }
        let mut launch = device.as_ref().launch(stream, &f.cluster_decide_f16, &f.cluster_decide_f32);
        launch.arg(&start).arg(&len).arg(&dim32).arg(&theta).arg(&mut sums).arg(&mut means).arg(&mut counts).arg(&mut count);
        launch.arg(&dots).arg(&mut flags).arg(&mut dirty).arg(&mut ids);
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (DECIDE_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: matches cluster_decide_*: room for n clusters in sums, means, counts and flags, `len <= BLOCK`
        // dirty slots, n ids.
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
