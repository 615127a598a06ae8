//! The CUDA kernels: [`CudaKernels`], the same answers as [`CpuKernels`]
//! computed on an NVIDIA GPU (feature `cuda`).
//!
//! The kernels are CUDA C in `cuda/*.cu`, embedded in the binary and
//! compiled at start-up with NVRTC for the device's architecture (sm_80 or
//! sm_90 PTX, which the driver turns into machine code). cudarc loads
//! `libcuda` and `libnvrtc` at run time, so this builds with no CUDA
//! installed, and a machine without them gets a [`CudaError`] from
//! [`CudaKernels::new`] rather than a crash. `infra/cuda-check.sh` compiles
//! the same files with the same options in CI, where no GPU exists.
//!
//! Exactness: every score the kernels return or decide by is the canonical
//! dot product of the CPU kernels, followed step by step with explicitly
//! rounded operations (`cuda/canonical.cuh`), so scores and cluster ids are
//! bit-identical to [`CpuKernels`], not merely close. Tensor-core
//! estimates only choose which pairs to score, within a proven error bound.
//!
//! - [`topk`]: corpora resident on the device, batched top-k cosine; large
//!   batches estimate the dots on the tensor cores and re-score every pair
//!   the estimate cannot rule out with the canonical dot.
//! - [`cluster`]: the exact single-pass clustering, whose dots with the
//!   means are likewise estimated on the tensor cores and computed
//!   canonically where the estimate cannot decide, and the parallel
//!   threshold-graph variant.
//!
//! The [`Kernels`] methods cannot return errors; if the device fails in one
//! (out of memory, a lost device), that call is answered by the CPU kernels
//! (the same answer) and counted in [`CudaKernels::fallbacks`].

mod cluster;
mod tensor;
#[cfg(test)]
mod tests;
mod topk;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, DriverError};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};

pub use self::topk::DeviceCorpus;
use super::{Corpus, CpuKernels, Hit, HostCorpus, Kernels, Matrix, ResidentCorpus};

/// The device code every module starts with: the canonical dot product.
pub const CANONICAL_SOURCE: &str = include_str!("cuda/canonical.cuh");

/// The device code every module has next: the tensor-core tile product
/// whose estimates choose what the canonical dot scores.
pub const TENSOR_SOURCE: &str = include_str!("cuda/tensor.cuh");

/// The kernel modules, by name: each is compiled as [`CANONICAL_SOURCE`]
/// and [`TENSOR_SOURCE`] followed by its own source.
pub const MODULE_SOURCES: [(&str, &str); 2] = [("topk", include_str!("cuda/topk.cu")), ("cluster", include_str!("cuda/cluster.cu"))];

/// NVRTC options, one a line: no contraction or fast math, so that the
/// device rounds as the CPU kernels do.
pub const NVRTC_OPTIONS: &str = include_str!("cuda/nvrtc-options.txt");

/// The architectures the kernels are compiled for.
pub const ARCHS: [&str; 2] = ["sm_80", "sm_90"];

/// Why the CUDA kernels cannot run.
#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("no CUDA driver: libcuda.so was not found (is this a machine with an NVIDIA GPU and its driver?)")]
    NoDriver,
    #[error(
        "no NVRTC: libnvrtc.so was not found (install CUDA 12's NVRTC, e.g. the nvidia-cuda-nvrtc-cu12 wheel, and put its lib folder on LD_LIBRARY_PATH)"
    )]
    NoNvrtc,
    #[error("the CUDA driver reports no GPU")]
    NoDevice,
    #[error("GPU {device} has compute capability {major}.{minor}; the kernels need 8.0 or newer")]
    TooOld { device: String, major: i32, minor: i32 },
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    #[error("NVRTC could not compile the {module} kernels for {arch}: {error}")]
    Compile { module: &'static str, arch: &'static str, error: CompileError },
    #[error("{0}")]
    Input(String),
}

/// Compiles every kernel module to PTX for `arch` (one of [`ARCHS`]), as
/// [`CudaKernels::new`] does: `(module, ptx)` pairs. Needs libnvrtc only,
/// no GPU.
pub fn compile_ptx(arch: &'static str) -> Result<Vec<(&'static str, Ptx)>, CudaError> {
    // SAFETY: only looks the library up.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(CudaError::NoNvrtc);
    }
    MODULE_SOURCES
        .iter()
        .map(|&(module, source)| {
            let options = CompileOptions {
                arch: Some(arch),
                options: NVRTC_OPTIONS.split_whitespace().map(str::to_string).collect(),
                name: Some(format!("{module}.cu")),
                ..Default::default()
            };
            let ptx = cudarc::nvrtc::compile_ptx_with_opts(format!("{CANONICAL_SOURCE}\n{TENSOR_SOURCE}\n{source}"), options)
                .map_err(|error| CudaError::Compile { module, arch, error })?;
            Ok((module, ptx))
        })
        .collect()
}

/// The loaded kernels.
pub(crate) struct Functions {
    pub(crate) inverse_norms_f16: CudaFunction,
    pub(crate) inverse_norms_f32: CudaFunction,
    pub(crate) topk_partial_f16: CudaFunction,
    pub(crate) topk_partial_f32: CudaFunction,
    pub(crate) topk_tiles_f16: CudaFunction,
    pub(crate) topk_tiles_f32: CudaFunction,
    pub(crate) mma_queries_f16: CudaFunction,
    pub(crate) mma_queries_f32: CudaFunction,
    pub(crate) topk_mma_f16: CudaFunction,
    pub(crate) topk_mma_f32: CudaFunction,
    pub(crate) topk_merge: CudaFunction,
    pub(crate) cluster_dots_f16: CudaFunction,
    pub(crate) cluster_dots_f32: CudaFunction,
    pub(crate) tf32_vectors_f16: CudaFunction,
    pub(crate) tf32_vectors_f32: CudaFunction,
    pub(crate) cluster_estimates_tf32: CudaFunction,
    pub(crate) cluster_candidates_f16: CudaFunction,
    pub(crate) cluster_candidates_f32: CudaFunction,
    pub(crate) cluster_decide_f16: CudaFunction,
    pub(crate) cluster_decide_f32: CudaFunction,
    pub(crate) threshold_parent_f16: CudaFunction,
    pub(crate) threshold_parent_f32: CudaFunction,
}

/// The device a [`CudaKernels`] runs on.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub name: String,
    pub compute_capability: (i32, i32),
    pub multiprocessors: u32,
    /// Peak memory bandwidth from the memory clock and bus width, bytes/s.
    pub peak_bandwidth: f64,
    pub memory_bytes: usize,
    /// Shared memory one block may ask for, bytes.
    pub max_shared_per_block: usize,
}

/// Kernels on one GPU. Cheap to share: all methods take `&self`.
pub struct CudaKernels {
    stream: Arc<CudaStream>,
    functions: Functions,
    info: DeviceInfo,
    /// The top-k kernels' dynamic shared memory, allowed once at load.
    room: topk::Room,
    cpu: CpuKernels,
    fallbacks: AtomicU64,
    /// [`CudaKernels::limit_blocks`]'s cap, 0 for none.
    block_cap: AtomicUsize,
}

impl std::fmt::Debug for CudaKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaKernels").field("device", &self.info).finish_non_exhaustive()
    }
}

impl CudaKernels {
    /// Opens GPU `ordinal` and compiles the kernels for it (NVRTC, a second
    /// or so).
    pub fn new(ordinal: usize) -> Result<CudaKernels, CudaError> {
        // SAFETY: only looks the library up.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(CudaError::NoDriver);
        }
        if CudaContext::device_count()? < 1 {
            return Err(CudaError::NoDevice);
        }
        let ctx = CudaContext::new(ordinal)?;
        let attr = |a| ctx.attribute(a);
        let (major, minor) =
            (attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?, attr(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?);
        let name = ctx.name()?;
        let arch = match major {
            9.. => "sm_90",
            8 => "sm_80",
            _ => return Err(CudaError::TooOld { device: name, major, minor }),
        };
        let clock_khz = f64::from(attr(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)?);
        let bus_bits = f64::from(attr(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)?);
        let info = DeviceInfo {
            name,
            compute_capability: (major, minor),
            multiprocessors: u32::try_from(attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?).unwrap_or(1).max(1),
            peak_bandwidth: 2.0 * clock_khz * 1000.0 * bus_bits / 8.0,
            memory_bytes: ctx.total_mem()?,
            max_shared_per_block: usize::try_from(attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?).unwrap_or(0),
        };
        let mut modules = std::collections::HashMap::new();
        for (module, ptx) in compile_ptx(arch)? {
            modules.insert(module, ctx.load_module(ptx)?);
        }
        let load = |module: &str, name: &str| -> Result<CudaFunction, CudaError> {
            let m = modules.get(module).ok_or_else(|| CudaError::Input(format!("no kernel module {module}")))?;
            Ok(m.load_function(name)?)
        };
        let functions = Functions {
            inverse_norms_f16: load("topk", "inverse_norms_f16")?,
            inverse_norms_f32: load("topk", "inverse_norms_f32")?,
            topk_partial_f16: load("topk", "topk_partial_f16")?,
            topk_partial_f32: load("topk", "topk_partial_f32")?,
            topk_tiles_f16: load("topk", "topk_tiles_f16")?,
            topk_tiles_f32: load("topk", "topk_tiles_f32")?,
            mma_queries_f16: load("topk", "mma_queries_f16")?,
            mma_queries_f32: load("topk", "mma_queries_f32")?,
            topk_mma_f16: load("topk", "topk_mma_f16")?,
            topk_mma_f32: load("topk", "topk_mma_f32")?,
            topk_merge: load("topk", "topk_merge")?,
            cluster_dots_f16: load("cluster", "cluster_dots_f16")?,
            cluster_dots_f32: load("cluster", "cluster_dots_f32")?,
            tf32_vectors_f16: load("cluster", "tf32_vectors_f16")?,
            tf32_vectors_f32: load("cluster", "tf32_vectors_f32")?,
            cluster_estimates_tf32: load("cluster", "cluster_estimates_tf32")?,
            cluster_candidates_f16: load("cluster", "cluster_candidates_f16")?,
            cluster_candidates_f32: load("cluster", "cluster_candidates_f32")?,
            cluster_decide_f16: load("cluster", "cluster_decide_f16")?,
            cluster_decide_f32: load("cluster", "cluster_decide_f32")?,
            threshold_parent_f16: load("cluster", "threshold_parent_f16")?,
            threshold_parent_f32: load("cluster", "threshold_parent_f32")?,
        };
        let room = topk::Room::opt_in(&functions, info.max_shared_per_block)?;
        Ok(CudaKernels {
            stream: ctx.default_stream(),
            functions,
            info,
            room,
            cpu: CpuKernels::default(),
            fallbacks: AtomicU64::new(0),
            block_cap: AtomicUsize::new(0),
        })
    }

    /// At most `blocks` blocks (`None`: as many as fill the device) share
    /// each walk over a corpus, or over the means of the exact clustering,
    /// so that each block walks many tiles: for tests of what carries from
    /// one tile to the next, on small inputs. The answers do not change.
    #[doc(hidden)]
    pub fn limit_blocks(&self, blocks: Option<usize>) {
        self.block_cap.store(blocks.unwrap_or(0), Ordering::Relaxed);
    }

    /// `fill`, the blocks that fill the device, or fewer if so limited.
    fn blocks(&self, fill: usize) -> usize {
        match self.block_cap.load(Ordering::Relaxed) {
            0 => fill,
            cap => cap.min(fill),
        }
    }

    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    /// How many [`Kernels`] calls the CPU kernels answered because the
    /// device failed.
    pub fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// The parallel clustering variant: each vector joins the tree of the
    /// earliest earlier vector whose dot with it is above `theta` (see
    /// `cuda/cluster.cu`). Ids as [`CpuKernels::threshold_graph_cluster`],
    /// exactly; compare with the exact clustering with
    /// [`super::rand_agreement`].
    pub fn threshold_graph_cluster(&self, vectors: Matrix<'_>, theta: f32) -> Result<Vec<u32>, CudaError> {
        cluster::threshold_graph(self, vectors, theta)
    }

    /// The exact single-pass clustering on the device, or the device's error.
    pub fn try_single_pass_cluster(&self, vectors: Matrix<'_>, theta: f32) -> Result<Vec<u32>, CudaError> {
        cluster::single_pass(self, vectors, theta)
    }

    fn fall_back<T>(&self, result: Result<T, CudaError>, cpu: impl FnOnce() -> T) -> T {
        result.unwrap_or_else(|_| {
            self.fallbacks.fetch_add(1, Ordering::Relaxed);
            cpu()
        })
    }
}

impl Kernels for CudaKernels {
    fn name(&self) -> &str {
        "cuda"
    }

    fn corpus<'a>(&self, vectors: Matrix<'a>) -> Corpus<'a> {
        if vectors.rows() == 0 {
            return self.cpu.corpus(vectors);
        }
        let inv_norms = topk::inverse_norms(self, vectors);
        match inv_norms {
            Ok(inv_norms) => Corpus { vectors, inv_norms },
            Err(_) => {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                self.cpu.corpus(vectors)
            }
        }
    }

    /// Uploads the corpus for this call; keep a [`DeviceCorpus`] with
    /// [`CudaKernels::search`] to search a resident one.
    fn top_k(&self, queries: Matrix<'_>, corpus: &Corpus<'_>, k: usize) -> Vec<Vec<Hit>> {
        assert_eq!(queries.dim(), corpus.vectors.dim(), "top_k: queries and corpus differ in dimension");
        assert_eq!(corpus.inv_norms.len(), corpus.vectors.rows(), "top_k: the corpus needs one inverse norm per row");
        // Nothing to search (no device buffer of zero bytes), or more hits than fit on chip.
        if k == 0 || k > topk::MAX_K || corpus.vectors.rows() == 0 || queries.rows() == 0 {
            return self.cpu.top_k(queries, corpus, k);
        }
        let result = DeviceCorpus::upload(self, corpus).and_then(|d| self.search(queries, &d, k));
        self.fall_back(result, || self.cpu.top_k(queries, corpus, k))
    }

    fn single_pass_cluster(&self, vectors: Matrix<'_>, theta: f32) -> Vec<u32> {
        let result = cluster::single_pass(self, vectors, theta);
        self.fall_back(result, || self.cpu.single_pass_cluster(vectors, theta))
    }

    /// Uploads the vectors once. A host copy stays for what the device
    /// cannot answer (`k` past [`topk::MAX_K`], a device error).
    fn keep(self: Arc<Self>, vectors: Vec<f32>, dim: usize) -> Arc<dyn ResidentCorpus> {
        let host = HostCorpus::new(Arc::new(self.cpu.clone()), vectors, dim);
        let device = match host.rows() {
            0 => None,
            _ => {
                let uploaded = DeviceCorpus::upload(&self, &host.corpus());
                self.fall_back(uploaded.map(Some), || None)
            }
        };
        Arc::new(KeptOnDevice { kernels: self, device, host })
    }
}

/// A [`ResidentCorpus`] in device memory.
struct KeptOnDevice {
    kernels: Arc<CudaKernels>,
    device: Option<DeviceCorpus>,
    host: HostCorpus<CpuKernels>,
}

impl ResidentCorpus for KeptOnDevice {
    fn rows(&self) -> usize {
        self.host.rows()
    }

    fn dim(&self) -> usize {
        self.host.dim()
    }

    fn top_k(&self, queries: Matrix<'_>, k: usize) -> Vec<Vec<Hit>> {
        match &self.device {
            Some(device) if (1..=topk::MAX_K).contains(&k) && queries.rows() > 0 => {
                let result = self.kernels.search(queries, device, k);
                self.kernels.fall_back(result, || self.host.top_k(queries, k))
            }
            _ => self.host.top_k(queries, k),
        }
    }
}
