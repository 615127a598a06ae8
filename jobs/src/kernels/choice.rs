//! Which kernels a process runs on: `--kernels cpu|cuda|auto`.
//!
//! `auto` takes the GPU when this build has the `cuda` feature and the
//! machine a usable GPU, else the CPU kernels, with a note saying why for
//! the caller to log once. `cuda` insists: no GPU is an error naming the
//! reason.

use std::sync::Arc;

use super::{CpuKernels, Kernels};

/// Whether this build has the CUDA kernels (feature `cuda`).
pub const BUILT_WITH_CUDA: bool = cfg!(feature = "cuda");

/// The `--kernels` choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KernelChoice {
    Cpu,
    Cuda,
    #[default]
    Auto,
}

impl std::str::FromStr for KernelChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "cpu" => Ok(KernelChoice::Cpu),
            "cuda" => Ok(KernelChoice::Cuda),
            "auto" => Ok(KernelChoice::Auto),
            other => Err(format!("unknown kernels {other:?}: expected cpu, cuda or auto")),
        }
    }
}

impl std::fmt::Display for KernelChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KernelChoice::Cpu => "cpu",
            KernelChoice::Cuda => "cuda",
            KernelChoice::Auto => "auto",
        })
    }
}

/// The kernels chosen, and for `auto` on the CPU why the GPU was not used.
pub struct Selected {
    pub kernels: Arc<dyn Kernels>,
    pub note: Option<String>,
}

/// Opens the kernels `choice` names (the CPU kernels on all cores).
pub fn select_kernels(choice: KernelChoice) -> Result<Selected, String> {
    let cpu = || -> Arc<dyn Kernels> { Arc::new(CpuKernels::default()) };
    match choice {
        KernelChoice::Cpu => Ok(Selected { kernels: cpu(), note: None }),
        KernelChoice::Cuda => open_gpu().map(|kernels| Selected { kernels, note: None }).map_err(|why| format!("--kernels cuda: {why}")),
        KernelChoice::Auto => Ok(match open_gpu() {
            Ok(kernels) => Selected { kernels, note: None },
            Err(why) => Selected { kernels: cpu(), note: Some(format!("using the CPU kernels: {why}")) },
        }),
    }
}

#[cfg(feature = "cuda")]
fn open_gpu() -> Result<Arc<dyn Kernels>, String> {
    let kernels = super::CudaKernels::new(0).map_err(|e| e.to_string())?;
    Ok(Arc::new(kernels))
}

#[cfg(not(feature = "cuda"))]
fn open_gpu() -> Result<Arc<dyn Kernels>, String> {
    Err("this build has no CUDA kernels (build with `--features cuda`)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn choices_parse_and_print() {
        for choice in [KernelChoice::Cpu, KernelChoice::Cuda, KernelChoice::Auto] {
            assert_eq!(choice.to_string().parse::<KernelChoice>(), Ok(choice));
        }
        assert_eq!("gpu".parse::<KernelChoice>(), Err("unknown kernels \"gpu\": expected cpu, cuda or auto".to_string()));
    }

    #[test]
    fn auto_says_why_it_runs_on_the_cpu_and_cuda_fails_without_a_gpu() {
        let cpu = select_kernels(KernelChoice::Cpu).unwrap();
        assert_eq!((cpu.kernels.name(), cpu.note), ("cpu", None));
        let auto = select_kernels(KernelChoice::Auto).unwrap();
        match select_kernels(KernelChoice::Cuda) {
            Ok(gpu) => {
                assert_eq!(gpu.kernels.name(), "cuda");
                assert_eq!((auto.kernels.name(), auto.note), ("cuda", None));
            }
            Err(why) => {
                assert!(why.starts_with("--kernels cuda: "), "{why}");
                assert_eq!(auto.kernels.name(), "cpu");
                assert_eq!(auto.note, Some(format!("using the CPU kernels: {}", why.trim_start_matches("--kernels cuda: "))));
            }
        }
    }
}
