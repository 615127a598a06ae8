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
            "mma_queries_f16",
            "mma_queries_f32",
            "topk_mma_f16",
            "topk_mma_f32",
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

#[test]
fn large_aligned_batches_take_the_tensor_cores_where_their_shared_memory_fits() {
    use super::topk::{Limits, MMA_QUERIES, Path};
    // The opt-in limits of an A100 and of an sm_86 part, less topk_mma's 528 bytes of static shared memory.
    let (a100, small) = (163 * 1024 - 528, 99 * 1024 - 528);
    let limits = |mma_shared| Limits { mma_shared, parts: 216 };
    let rows = 1_000_000;
    for element in [2, 4] {
        assert_eq!(Path::choose(MMA_QUERIES, 384, element, 256, rows, limits(a100)), Path::TensorCores);
        assert_eq!(Path::choose(512, 2560, element, 10, rows, limits(a100)), Path::TensorCores);
        assert_eq!(Path::choose(MMA_QUERIES - 1, 384, element, 10, rows, limits(a100)), Path::Tiles { groups: 4 });
        assert_eq!(Path::choose(9, 384, element, 10, rows, limits(a100)), Path::Tiles { groups: 2 });
        assert_eq!(Path::choose(512, 100, element, 10, rows, limits(a100)), Path::Rows, "unaligned rows");
        assert_eq!(Path::choose(512, 1 << 17, element, 10, rows, limits(a100)), Path::Tiles { groups: 4 }, "past the derived bound");
        assert_eq!(Path::choose(512, 384, element, 64, rows, limits(small)), Path::TensorCores);
        assert_eq!(Path::choose(512, 384, element, 256, rows, limits(small)), Path::Tiles { groups: 4 }, "64 lists of 256 need more");
    }
}

#[test]
fn the_tensor_cores_need_the_static_shared_memory_counted() {
    use super::tensor::TILE_SHARED;
    use super::topk::{Limits, Path};
    // k = 31 needs 30720 + 256 * 8 + 64 * 31 * 8 = 48640 bytes of dynamic shared memory: under 48 KiB, but not
    // with the static 528 bytes. The choice takes the room left after the static memory.
    let dynamic = |k: usize| TILE_SHARED + 256 * 8 + 64 * k * 8;
    assert_eq!(dynamic(31), 48_640);
    assert!(dynamic(31) <= 48 * 1024 && dynamic(31) + 528 > 48 * 1024 && dynamic(30) + 528 <= 48 * 1024);
    let limits = |mma_shared| Limits { mma_shared, parts: 4 };
    assert_eq!(Path::choose(64, 384, 2, 31, 100_000, limits(dynamic(31))), Path::TensorCores);
    assert_eq!(Path::choose(64, 384, 2, 31, 100_000, limits(dynamic(31) - 1)), Path::Tiles { groups: 4 });
}

#[test]
fn the_tensor_cores_are_left_to_the_tiles_when_a_block_has_few_rows_per_hit() {
    use super::topk::{Limits, Path};
    let limits = |parts| Limits { mma_shared: 227 * 1024, parts };
    // 264 blocks (an H100's 132 multiprocessors, two each): a block's share of 5,003 rows is one tile of 128,
    // enough for k up to 32 (4 rows per hit) only.
    assert_eq!(Path::choose(64, 384, 2, 31, 5_003, limits(264)), Path::TensorCores);
    assert_eq!(Path::choose(64, 384, 2, 32, 5_003, limits(264)), Path::Tiles { groups: 4 }, "125 rows a block for 32 hits");
    assert_eq!(Path::choose(64, 384, 4, 256, 5_003, limits(264)), Path::Tiles { groups: 4 });
    // Fewer blocks, each walking many tiles.
    assert_eq!(Path::choose(64, 384, 4, 256, 5_003, limits(4)), Path::TensorCores, "1,250 rows a block");
    assert_eq!(Path::choose(64, 384, 4, 256, 5_003, limits(5)), Path::Tiles { groups: 4 }, "1,000 rows a block");
    // A large corpus shared by many blocks.
    assert_eq!(Path::choose(130, 64, 2, 189, 200_000, limits(264)), Path::TensorCores, "757 rows a block");
    assert_eq!(Path::choose(130, 64, 2, 190, 200_000, limits(264)), Path::Tiles { groups: 4 });
    // A corpus smaller than one tile.
    assert_eq!(Path::choose(64, 384, 2, 1, 3, limits(264)), Path::Tiles { groups: 4 }, "3 rows for 1 hit");
    assert_eq!(Path::choose(64, 384, 2, 1, 4, limits(264)), Path::TensorCores);
}

#[test]
fn the_accumulation_allowance_covers_errors_that_compound() {
    use super::tensor::accumulation;
    // The worst case of the model: all of S in the first product, then one product a step, each step erring by
    // 3·2^-22 times its terms, the accumulator (S plus the error so far) included. The error compounds to
    // ((1 + c)^n − 1)·S, past the first-order 3n·2^-22·S.
    for dim in [8usize, 64, 384, 2560, 1 << 16] {
        let n = dim.div_ceil(32) * 32;
        let c = 3.0 * 2f64.powi(-22);
        let compounded = (0..n).fold(0.0f64, |error, _| error + c * (1.0 + error));
        assert!(compounded > c * n as f64, "dim {dim}: {compounded}");
        assert!(accumulation(dim) >= compounded, "dim {dim}: {} < {compounded}", accumulation(dim));
        assert!(accumulation(dim) < 1.03 * compounded, "dim {dim}: not much looser");
    }
}

/// A value rounded to tf32 (to nearest, ties away), as `cvt.rna.tf32.f32`.
fn tf32(x: f32) -> f32 {
    f32::from_bits((x.to_bits() + 0x1000) & !0x1fff)
}

/// The tensor cores' sum of the products of two rounded vectors, modelled
/// as measured (exact products, each step truncated toward zero), one
/// product a step.
fn modelled_sum(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).fold(0.0f32, |sum, (&x, &y)| {
        let exact = f64::from(sum) + f64::from(x) * f64::from(y);
        let nearest = exact as f32;
        if f64::from(nearest).abs() > exact.abs() { f32::from_bits(nearest.to_bits() - 1) } else { nearest }
    })
}

/// `topk_mma`'s estimate of a pair's cosine, from the query, its inverse
/// norm, the row (widened) and its inverse norm, with the inputs rounded as
/// the kernels round them.
fn modelled_estimate(query: &[f32], query_inv: f32, row: &[f32], row_inv: f32, tf32_row: bool) -> f32 {
    let scale = if tf32_row { 1.0 } else { 16384.0 };
    let scaled = query.iter().map(|&q| q * query_inv * scale);
    let (query, row): (Vec<f32>, Vec<f32>) = if tf32_row {
        (scaled.map(tf32).collect(), row.iter().copied().map(tf32).collect())
    } else {
        (scaled.map(|q| half::f16::from_f32(q).to_f32()).collect(), row.to_vec())
    };
    modelled_sum(&query, &row) * (row_inv * (1.0 / scale))
}

#[test]
fn the_modelled_tensor_core_estimate_is_within_epsilon_of_the_canonical_cosine() {
    use rand::{Rng, SeedableRng};

    use super::topk::mma_epsilon;

    let cpu = CpuKernels::default();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(29);
    for dim in [8, 64, 384, 1000, 2560] {
        // Near-duplicates of a few directions (cosines near 1 and near-ties), rows scaled from tiny to
        // huge, and one row dominated by a single element.
        let centres: Vec<f32> = (0..4 * dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let mut vector = |scale: f32| -> Vec<f32> {
            let c = rng.random_range(0..4);
            (0..dim).map(|j| scale * (centres[c * dim + j] + 0.05 * rng.random_range(-1.0f32..1.0))).collect()
        };
        let queries: Vec<f32> = (0..12).flat_map(|i| vector(if i % 3 == 0 { 1e-6 } else { 3.0 })).collect();
        let mut rows: Vec<f32> = (0..60).flat_map(|_| vector(1.0)).collect();
        rows[..dim].iter_mut().enumerate().for_each(|(j, x)| *x = if j == 0 { 100.0 } else { 1e-3 });
        let rows_f16: Vec<half::f16> = rows.iter().map(|&x| half::f16::from_f32(x)).collect();
        let scaled: Vec<f32> = rows.iter().enumerate().map(|(i, &x)| x * [1e-12, 1.0, 1e12][i / dim % 3]).collect();
        let query_inv = cpu.corpus(Matrix::F32 { data: &queries, dim }).inv_norms;
        let widened: Vec<f32> = rows_f16.iter().map(|x| x.to_f32()).collect();
        for (corpus, values, tf32) in
            [(Matrix::F16 { data: &rows_f16, dim }, &widened, false), (Matrix::F32 { data: &scaled, dim }, &scaled, true)]
        {
            let prepared = cpu.corpus(corpus);
            let eps = mma_epsilon(dim, tf32);
            assert!(eps < 1e-2, "dim {dim}: eps {eps}");
            let hits = cpu.top_k(Matrix::F32 { data: &queries, dim }, &prepared, corpus.rows());
            let mut worst = 0.0f32;
            for (q, hits) in hits.iter().enumerate() {
                for hit in hits {
                    let r = hit.index as usize;
                    let row = &values[r * dim..(r + 1) * dim];
                    let estimate = modelled_estimate(&queries[q * dim..(q + 1) * dim], query_inv[q], row, prepared.inv_norms[r], tf32);
                    let error = (estimate - hit.score).abs();
                    assert!(error <= eps, "dim {dim} tf32 {tf32}: query {q} row {r}: |{estimate} - {}| > {eps}", hit.score);
                    worst = worst.max(error);
                }
            }
            println!("dim {dim} tf32 {tf32}: eps {eps:.3e}, worst modelled error {worst:.3e}");
        }
    }
}

#[test]
fn the_modelled_tensor_core_estimate_of_a_dot_with_a_mean_is_within_its_bound() {
    use rand::{Rng, SeedableRng};

    use super::cluster::cluster_epsilon;
    use crate::kernels::cpu::tests::reference_dot;

    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(30);
    for dim in [8, 64, 384, 1000, 2560] {
        let centre: Vec<f32> = (0..dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        let mut near = |scale: f32, spread: f32| -> Vec<f32> {
            centre.iter().map(|&c| scale * (c + spread * rng.random_range(-1.0f32..1.0))).collect()
        };
        // Means near the vectors (dots near the largest) and far from them, at norms from 2^-25 to 2^25.
        let means: Vec<Vec<f32>> = [1e-7, 1.0, 3e6].iter().flat_map(|&s| [near(s, 0.05), near(s, 2.0)]).collect();
        let vectors: Vec<Vec<f32>> = (0..20).map(|i| near([1e-7, 1.0, 3e6][i % 3], 0.1)).collect();
        for tf32_vectors in [false, true] {
            let eps_rel = cluster_epsilon(dim, tf32_vectors);
            let mut worst = 0.0f64;
            for vector in &vectors {
                // f16 vectors are exact in tf32; keep those in f16's range.
                let vector: Vec<f32> = match tf32_vectors {
                    true => vector.clone(),
                    false => vector.iter().map(|&x| half::f16::from_f32(x.clamp(-6e4, 6e4)).to_f32()).collect(),
                };
                let rounded: Vec<f32> = vector.iter().copied().map(tf32).collect();
                for mean in &means {
                    let estimate = modelled_sum(&rounded, &mean.iter().copied().map(tf32).collect::<Vec<_>>());
                    let dot = reference_dot(&vector, mean);
                    let (sv, sm) = (reference_dot(&vector, &vector), reference_dot(mean, mean));
                    if !(2f32.powi(-60)..=2f32.powi(60)).contains(&sv) || !(2f32.powi(-60)..=2f32.powi(60)).contains(&sm) {
                        continue;
                    }
                    let bound = f64::from(eps_rel) * f64::from(sv).sqrt() * f64::from(sm).sqrt();
                    let error = (f64::from(estimate) - f64::from(dot)).abs();
                    assert!(error <= bound, "dim {dim} tf32 {tf32_vectors}: |{estimate} - {dot}| > {bound}");
                    worst = worst.max(error / bound);
                }
            }
            assert!(eps_rel < 1e-2, "dim {dim}: {eps_rel}");
            println!("dim {dim} tf32 vectors {tf32_vectors}: eps_rel {eps_rel:.3e}, worst modelled error {worst:.3} of the bound");
        }
    }
}
