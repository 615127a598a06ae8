//! GPU benchmark: top-k queries per second and achieved memory bandwidth
//! against the device's peak, and the clustering kernels' time.
//!
//! Corpora are synthetic f16 vectors kept resident on the device (the
//! upload is not timed); a batch's time is from the queries' upload to the
//! hits' arrival on the host. Bandwidth counts the corpus bytes once per
//! batch (the kernel's query groups share each tile through L2), the
//! model in README.md.
//!
//! `cargo bench -p some-jobs --features cuda --bench cuda [-- ROWS DIM]`
//! (defaults: 1,000,000 x 384, then 1,000,000 x 2,560). Without a GPU, or
//! without the feature, it prints `skipped: <reason>`.

#[cfg(not(feature = "cuda"))]
fn main() {
    println!("cuda bench: skipped: built without the cuda feature (cargo bench -p some-jobs --features cuda --bench cuda)");
}

#[cfg(feature = "cuda")]
fn main() {
    use some_jobs::kernels::CudaKernels;
    let gpu = match CudaKernels::new(0) {
        Ok(gpu) => gpu,
        Err(why) => {
            println!("cuda bench: skipped: {why}");
            return;
        }
    };
    let info = gpu.device();
    println!(
        "device: {}, {} SMs, {:.0} GB, peak memory bandwidth {:.2} TB/s (from clock and bus width)",
        info.name,
        info.multiprocessors,
        info.memory_bytes as f64 / 1e9,
        info.peak_bandwidth / 1e12
    );
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.replace('_', "").parse().ok()).collect();
    let shapes = match args.as_slice() {
        [rows, dim, ..] => vec![(*rows, *dim)],
        _ => vec![(1_000_000, 384), (1_000_000, 2560)],
    };
    for (rows, dim) in shapes {
        bench::top_k(&gpu, rows, dim);
    }
    bench::clustering(&gpu);
}

#[cfg(feature = "cuda")]
mod bench {
    use std::time::Instant;

    use half::f16;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use some_jobs::kernels::{CpuKernels, CudaKernels, DeviceCorpus, Kernels, Matrix, rand_agreement};

    fn random_f16(n: usize, seed: u64) -> Vec<f16> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n).map(|_| f16::from_f32(rng.random_range(-1.0f32..1.0))).collect()
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    pub fn top_k(gpu: &CudaKernels, rows: usize, dim: usize) {
        let data = random_f16(rows * dim, 1);
        let matrix = Matrix::F16 { data: &data, dim };
        let corpus = gpu.corpus(matrix);
        let resident = match DeviceCorpus::upload(gpu, &corpus) {
            Ok(r) => r,
            Err(e) => {
                println!("top-k {rows} x {dim}: skipped: {e}");
                return;
            }
        };
        let queries = random_f16(256 * dim, 2);
        let bytes = resident.vector_bytes() as f64;
        println!("top-k over {rows} x {dim} f16 ({:.2} GB), k = 10:", bytes / 1e9);
        for batch in [1, 8, 16, 64, 256] {
            let q = Matrix::F16 { data: &queries[..batch * dim], dim };
            let _ = gpu.search(q, &resident, 10);
            let times: Vec<f64> = (0..5)
                .map(|_| {
                    let start = Instant::now();
                    let hits = gpu.search(q, &resident, 10);
                    assert!(hits.is_ok_and(|h| h.len() == batch));
                    start.elapsed().as_secs_f64()
                })
                .collect();
            let t = median(times);
            let bandwidth = bytes / t;
            println!(
                "  batch {batch:>3}: {:>8.2} ms, {:>9.1} queries/s, {:>6.2} TB/s = {:>5.1}% of peak",
                t * 1e3,
                batch as f64 / t,
                bandwidth / 1e12,
                100.0 * bandwidth / gpu.device().peak_bandwidth
            );
        }
    }

    pub fn clustering(gpu: &CudaKernels) {
        let cpu = CpuKernels::default();
        for (n, dim) in [(20_000, 384), (5_000, 2560)] {
            let data = random_f16(n * dim, 3);
            // Random directions are nearly orthogonal: a low theta gives real clusters.
            let theta = 0.02 * dim as f32;
            let vectors = Matrix::F16 { data: &data, dim };
            let start = Instant::now();
            let exact = gpu.try_single_pass_cluster(vectors, theta);
            let t_exact = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let graph = gpu.threshold_graph_cluster(vectors, theta);
            let t_graph = start.elapsed().as_secs_f64();
            let start = Instant::now();
            let on_cpu = cpu.single_pass_cluster(vectors, theta);
            let t_cpu = start.elapsed().as_secs_f64();
            match (exact, graph) {
                (Ok(exact), Ok(graph)) => println!(
                    "clustering {n} x {dim} f16, theta {theta}: exact on GPU {:.1} ms ({} clusters, same as CPU: {}), CPU {:.1} ms; threshold graph {:.1} ms, Rand agreement {:.4}",
                    t_exact * 1e3,
                    exact.iter().max().copied().unwrap_or(0),
                    exact == on_cpu,
                    t_cpu * 1e3,
                    t_graph * 1e3,
                    rand_agreement(&exact, &graph)
                ),
                (e1, e2) => println!("clustering {n} x {dim}: failed: {:?} {:?}", e1.err(), e2.err()),
            }
        }
    }
}
