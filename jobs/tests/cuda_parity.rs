//! GPU parity: the CUDA kernels give the CPU kernels' answers.
//!
//! Top-k: the same row ids in the same order and the same scores, with a
//! tolerance of 0 (bit-identical): both sides run the same canonical dot
//! product, rounding for rounding (`kernels/cuda/canonical.cuh`), so any
//! difference is a bug, not noise; batches of 64 and more, whose dots the
//! tensor cores estimate, included. Clustering: identical ids for the exact
//! single-pass clustering (its dots with the means estimated on the tensor
//! cores for aligned dimensions); identical ids for the threshold-graph
//! variant against its CPU reference, and its agreement with the exact
//! clustering printed.
//!
//! Needs a GPU: without one (or in a build without the `cuda` feature) it
//! prints `skipped: <reason>` and runs nothing; it never passes silently.
//! Run with `cargo test -p some-jobs --features cuda --test cuda_parity`.
//! A plain `main` (no test harness) so that the line is always shown.

#[cfg(not(feature = "cuda"))]
fn main() {
    println!("cuda_parity: skipped: built without the cuda feature (cargo test -p some-jobs --features cuda --test cuda_parity)");
}

#[cfg(feature = "cuda")]
fn main() {
    use some_jobs::kernels::CudaKernels;
    match CudaKernels::new(0) {
        Ok(gpu) => {
            let gpu = std::sync::Arc::new(gpu);
            println!("cuda_parity: running on {} (compute capability {:?})", gpu.device().name, gpu.device().compute_capability);
            parity::run(&gpu);
            assert_eq!(gpu.fallbacks(), 0, "no call fell back to the CPU");
            println!("cuda_parity: all parity checks passed");
        }
        Err(why) => println!("cuda_parity: skipped: {why}"),
    }
}

#[cfg(feature = "cuda")]
mod parity {
    use std::sync::Arc;

    use half::f16;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use some_jobs::kernels::{CpuKernels, CudaKernels, DeviceCorpus, Hit, Kernels, Matrix, rand_agreement};

    /// `n` vectors of `dim` around `centres` random directions, so that
    /// clustering finds structure and top-k has near-ties.
    fn clustered(n: usize, dim: usize, centres: usize, seed: u64) -> Vec<f32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let centre: Vec<f32> = (0..centres * dim).map(|_| rng.random_range(-1.0f32..1.0)).collect();
        (0..n)
            .flat_map(|_| {
                let c = rng.random_range(0..centres);
                (0..dim).map(|j| centre[c * dim + j] + 0.4 * rng.random_range(-1.0f32..1.0)).collect::<Vec<_>>()
            })
            .collect()
    }

    fn halves(values: &[f32]) -> Vec<f16> {
        values.iter().map(|&x| f16::from_f32(x)).collect()
    }

    fn same_hits(case: &str, cpu: &[Vec<Hit>], gpu: &[Vec<Hit>]) {
        assert_eq!(cpu.len(), gpu.len(), "{case}: queries");
        for (q, (c, g)) in cpu.iter().zip(gpu).enumerate() {
            let ids = |h: &[Hit]| h.iter().map(|h| h.index).collect::<Vec<_>>();
            assert_eq!(ids(c), ids(g), "{case}: query {q}: row ids");
            for (a, b) in c.iter().zip(g) {
                assert_eq!(a.score.to_bits(), b.score.to_bits(), "{case}: query {q} row {}: {} vs {}", a.index, a.score, b.score);
            }
        }
    }

    pub fn run(gpu: &Arc<CudaKernels>) {
        let cpu = CpuKernels::default();
        top_k(gpu, &cpu);
        tensor_cores(gpu, &cpu);
        kept(gpu, &cpu);
        clustering(gpu, &cpu);
    }

    fn top_k(gpu: &CudaKernels, cpu: &CpuKernels) {
        // Aligned and unaligned dimensions, f16 and f32 storage, a corpus that is not a whole number of tiles.
        for (rows, dim) in [(20_011, 384), (3_001, 100), (2_000, 2560)] {
            let corpus_f32 = clustered(rows, dim, 50, rows as u64);
            let mut corpus_f16 = halves(&corpus_f32);
            // Duplicate rows: equal scores, which must go to the lower row.
            let copy = corpus_f16[..dim].to_vec();
            corpus_f16[5 * dim..6 * dim].copy_from_slice(&copy);
            let queries_f32 = clustered(41, dim, 50, 7);
            let queries_f16 = halves(&queries_f32);
            for (label, corpus) in [("f16", Matrix::F16 { data: &corpus_f16, dim }), ("f32", Matrix::F32 { data: &corpus_f32, dim })] {
                let prepared = cpu.corpus(corpus);
                let on_gpu = gpu.corpus(corpus);
                assert_eq!(
                    prepared.inv_norms().iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    on_gpu.inv_norms().iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                    "{label} {rows}x{dim}: inverse norms"
                );
                let resident = DeviceCorpus::upload(gpu, &prepared).expect("upload");
                for batch in [1, 7, 9, 41] {
                    for k in [1, 10, 100, 256] {
                        for queries in
                            [Matrix::F16 { data: &queries_f16[..batch * dim], dim }, Matrix::F32 { data: &queries_f32[..batch * dim], dim }]
                        {
                            let case = format!("{label} corpus {rows}x{dim}, {batch} queries, k={k}");
                            let expected = cpu.top_k(queries, &prepared, k);
                            same_hits(&case, &expected, &gpu.search(queries, &resident, k).expect("search"));
                            same_hits(&case, &expected, &gpu.top_k(queries, &prepared, k));
                        }
                    }
                }
                println!("cuda_parity: top-k {label} {rows}x{dim}: same ids and bit-identical scores (batches 1-41, k 1-256)");
            }
        }
    }

    /// Batches of 64 queries and more (`topk_mma`: tensor-core estimates,
    /// canonical re-scoring) give the same answers: a dimension that is a
    /// whole number of chunks and one that is not, an unaligned one (which
    /// keeps `topk_partial`), duplicate rows (ties), a zero row, rows whose
    /// norms leave the estimate's trusted range (f32), and a zero query, all
    /// of whose pairs are re-scored. Batches of 16 and 41 (`topk_tiles`, 2
    /// and 4 groups) and the `k` around the 48 KiB of shared memory a kernel
    /// has without opting in, static arrays included: `topk_mma` from
    /// k = 31, `topk_tiles` from 87 (f16) and 103 (f32) with 4 groups, 126
    /// and 142 with 2. Each with as many blocks as fill the device (one tile
    /// each at 5,003 rows) and with 3, each walking 13 or more tiles, whose
    /// lists fill and whose floors carry from tile to tile. The CPU answers
    /// once with k = 256; the best k of that are its answer for any smaller k.
    fn tensor_cores(gpu: &CudaKernels, cpu: &CpuKernels) {
        let rows = 5_003;
        let ks = [1, 10, 30, 31, 32, 86, 87, 88, 100, 102, 103, 104, 125, 126, 128, 141, 142, 144, 256];
        for dim in [384, 392, 100] {
            let mut corpus_f32 = clustered(rows, dim, 50, dim as u64);
            let copy = corpus_f32[3 * dim..4 * dim].to_vec();
            corpus_f32[11 * dim..12 * dim].copy_from_slice(&copy);
            corpus_f32[7 * dim..8 * dim].fill(0.0);
            let corpus_f16 = halves(&corpus_f32);
            corpus_f32[13 * dim..14 * dim].iter_mut().for_each(|x| *x *= 1e-30);
            corpus_f32[17 * dim..18 * dim].iter_mut().for_each(|x| *x *= 1e25);
            let mut queries_f32 = clustered(130, dim, 50, dim as u64 + 1);
            queries_f32[..dim].fill(0.0);
            let queries_f16 = halves(&queries_f32);
            for (label, corpus) in [("f16", Matrix::F16 { data: &corpus_f16, dim }), ("f32", Matrix::F32 { data: &corpus_f32, dim })] {
                let prepared = cpu.corpus(corpus);
                let resident = DeviceCorpus::upload(gpu, &prepared).expect("upload");
                for batch in [16, 41, 64, 130] {
                    let f32_queries = Matrix::F32 { data: &queries_f32[..batch * dim], dim };
                    let f16_queries = Matrix::F16 { data: &queries_f16[..batch * dim], dim };
                    for queries in [f32_queries, f16_queries] {
                        let expected = cpu.top_k(queries, &prepared, 256);
                        for blocks in [None, Some(3)] {
                            gpu.limit_blocks(blocks);
                            for k in ks {
                                let case = format!("{label} corpus {rows}x{dim}, {batch} queries, k={k}, blocks {blocks:?}");
                                let best: Vec<Vec<Hit>> = expected.iter().map(|hits| hits[..k].to_vec()).collect();
                                same_hits(&case, &best, &gpu.search(queries, &resident, k).expect("search"));
                            }
                        }
                        gpu.limit_blocks(None);
                    }
                }
                println!(
                    "cuda_parity: top-k {label} {rows}x{dim}, batches 16-130, all blocks and 3: same ids and bit-identical scores (k 1-256)"
                );
            }
        }
        many_rows(gpu, cpu);
    }

    /// A corpus of 200,000 rows at dimension 64 with as many blocks as fill
    /// the device: each walks several tiles, and the tensor cores take the
    /// `k` for which a block has at least 4 rows a hit (the others go to
    /// `topk_tiles`).
    fn many_rows(gpu: &CudaKernels, cpu: &CpuKernels) {
        let (rows, dim) = (200_000, 64);
        let corpus_f32 = clustered(rows, dim, 100, 64);
        let corpus_f16 = halves(&corpus_f32);
        let queries = clustered(130, dim, 100, 65);
        for (label, corpus) in [("f16", Matrix::F16 { data: &corpus_f16, dim }), ("f32", Matrix::F32 { data: &corpus_f32, dim })] {
            let prepared = cpu.corpus(corpus);
            let resident = DeviceCorpus::upload(gpu, &prepared).expect("upload");
            let queries = Matrix::F32 { data: &queries, dim };
            let expected = cpu.top_k(queries, &prepared, 256);
            for k in [1, 10, 31, 32, 100, 189, 190, 256] {
                let best: Vec<Vec<Hit>> = expected.iter().map(|hits| hits[..k].to_vec()).collect();
                same_hits(
                    &format!("{label} corpus {rows}x{dim}, 130 queries, k={k}"),
                    &best,
                    &gpu.search(queries, &resident, k).expect("search"),
                );
            }
            println!("cuda_parity: top-k {label} {rows}x{dim}, 130 queries: same ids and bit-identical scores (k 1-256)");
        }
    }

    /// A corpus kept on the device for a compute worker answers as the CPU
    /// does, `k` past the device's limit included (the host copy answers).
    fn kept(gpu: &Arc<CudaKernels>, cpu: &CpuKernels) {
        let (rows, dim) = (5_003, 384);
        let vectors = clustered(rows, dim, 50, 11);
        let queries = clustered(17, dim, 50, 12);
        let kept = gpu.clone().keep(vectors.clone(), dim);
        let prepared = cpu.corpus(Matrix::F32 { data: &vectors, dim });
        for k in [1, 10, 256, 300] {
            let q = Matrix::F32 { data: &queries, dim };
            same_hits(&format!("kept {rows}x{dim}, k={k}"), &cpu.top_k(q, &prepared, k), &kept.top_k(q, k));
        }
        println!("cuda_parity: a kept corpus answers as the CPU (k 1-300)");
    }

    fn clustering(gpu: &CudaKernels, cpu: &CpuKernels) {
        // Aligned dimensions estimate the dots with the means on the tensor cores (392: not a whole number of
        // chunks); 100 computes them all canonically. The last case adds zero and tiny vectors, whose norms are
        // outside the estimates' bound. Each runs with as many blocks as fill the device and with 2.
        let cases = [(3_000, 384, 40, 0.5), (1_000, 100, 10, 0.5), (500, 2560, 5, 2.0), (2_000, 384, 200, -1.0), (1_500, 392, 30, 0.0)];
        for (i, (n, dim, centres, theta)) in cases.into_iter().enumerate() {
            let mut values = clustered(n, dim, centres, n as u64 + 1);
            if i == cases.len() - 1 {
                values[10 * dim..13 * dim].fill(0.0);
                values[70 * dim..71 * dim].iter_mut().for_each(|x| *x *= 1e-25);
            }
            let values_f16 = halves(&values);
            for (label, vectors) in [("f16", Matrix::F16 { data: &values_f16, dim }), ("f32", Matrix::F32 { data: &values, dim })] {
                let exact = cpu.single_pass_cluster(vectors, theta);
                let on_gpu = gpu.try_single_pass_cluster(vectors, theta).expect("exact clustering on the device");
                assert_eq!(exact, on_gpu, "{label} {n}x{dim} theta {theta}: exact cluster ids");
                // Two blocks walk all the means' tiles, carrying the copies from one tile to the next.
                gpu.limit_blocks(Some(2));
                let few_blocks = gpu.try_single_pass_cluster(vectors, theta).expect("exact clustering on the device, 2 blocks");
                gpu.limit_blocks(None);
                assert_eq!(exact, few_blocks, "{label} {n}x{dim} theta {theta}: exact cluster ids with 2 blocks");
                let graph = cpu.threshold_graph_cluster(vectors, theta);
                let graph_gpu = gpu.threshold_graph_cluster(vectors, theta).expect("threshold graph on the device");
                assert_eq!(graph, graph_gpu, "{label} {n}x{dim} theta {theta}: threshold-graph ids");
                let clusters = exact.iter().max().copied().unwrap_or(0);
                println!(
                    "cuda_parity: clustering {label} {n}x{dim} theta {theta}: exact ids identical ({clusters} clusters); threshold graph identical to its CPU reference, Rand agreement with exact {:.4}",
                    rand_agreement(&exact, &graph)
                );
            }
        }
    }
}
