//! Tests of the CUDA kernels that need no GPU: the sources compile with
//! NVRTC (where libnvrtc is found), and a machine without a driver gets an
//! error, not a crash. The parity tests, which need a GPU, are in
//! `jobs/tests/cuda_parity.rs`.

use super::*;

/// Every `extern "C" __global__` kernel of a module's source.
fn kernels_in(source: &str) -> Vec<&str> {
    source
        .split("extern \"C\" __global__ void ")
        .skip(1)
        .filter_map(|rest| {
            let rest = match rest.strip_prefix("__launch_bounds__") {
                Some(bounds) => &bounds[bounds.find(')')? + 1..],
                None => rest,
            };
            rest.split('(').next().map(str::trim)
        })
        .collect()
}

#[test]
fn every_kernel_compiles_to_ptx_for_each_architecture_or_nvrtc_is_reported_missing() {
    for arch in ARCHS {
        match compile_ptx(arch) {
            Ok(modules) => {
                assert_eq!(modules.len(), MODULE_SOURCES.len());
                for ((module, ptx), (name, source)) in modules.iter().zip(MODULE_SOURCES) {
                    assert_eq!(*module, name);
                    let ptx = ptx.to_src();
                    assert!(ptx.contains(&format!(".target {arch}")), "{module} targets {arch}");
                    let kernels = kernels_in(source);
                    assert!(!kernels.is_empty(), "{module} has kernels");
                    for kernel in kernels {
                        assert!(ptx.contains(&format!(".entry {kernel}(")), "{module}.cu: no PTX entry for {kernel} on {arch}");
                    }
                }
            }
            Err(CudaError::NoNvrtc) => {
                println!("skipped: libnvrtc.so not found (infra/cuda-check.sh compiles the kernels in CI)");
                return;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn a_broken_kernel_is_a_compile_error_naming_the_module() {
    // SAFETY: only looks the library up.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        println!("skipped: libnvrtc.so not found");
        return;
    }
    let options = CompileOptions { arch: Some("sm_90"), ..Default::default() };
    let broken = format!("{CANONICAL_SOURCE}\nextern \"C\" __global__ void k(float* x) {{ x[0] = undeclared; }}");
    let error = cudarc::nvrtc::compile_ptx_with_opts(broken, options).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("undeclared"), "{error}");
}

#[test]
fn the_kernel_list_is_read_from_the_sources() {
    let topk = kernels_in(MODULE_SOURCES[0].1);
    assert_eq!(
        topk,
        [
            "inverse_norms_f16",
            "inverse_norms_f32",
            "topk_partial_f16",
            "topk_partial_f32",
            "topk_tiles_f16",
            "topk_tiles_f32",
            "topk_merge"
        ]
    );
}

#[test]
fn without_a_driver_opening_a_gpu_is_an_error_not_a_crash() {
    match CudaKernels::new(0) {
        Ok(kernels) => assert_eq!(kernels.name(), "cuda"),
        Err(e) => {
            // SAFETY: only looks the library up.
            let driver = unsafe { cudarc::driver::sys::is_culib_present() };
            assert!(driver || matches!(e, CudaError::NoDriver), "{e}");
        }
    }
}
