//! Benchmarks of the CPU kernels against the machine and against numpy.
//!
//! `cargo bench -p some-jobs --bench kernels` prints, in one run:
//!
//! a. the memory bandwidth measured now (a multi-threaded streaming sum over
//!    a buffer far larger than cache) and the bandwidth a single-query top-10
//!    over 1,000,000 x 384 f32 achieves, as a fraction of it: one query is
//!    memory-bound, so this is how close the scan gets to the hardware;
//! b. a batch of 64 queries, top-10, against numpy (BLAS matmul of
//!    normalised vectors, then argpartition), and whether the hits agree;
//! c. single-pass clustering of 100,000 x 384 vectors against two numpy
//!    peers, and whether the ids agree with each.
//!
//! The clustering target (>= 20x) is against "a numpy implementation of the
//! reference algorithm", taken to mean the reference's own procedure
//! written as the reference writes it: a Python loop over the clusters in
//! creation order with one `avg @ v` each, jit-compiled with numba as the
//! reference does (numpy's `@` where numba does not import, and the line
//! says which), and the joined cluster's mean recomputed with `np.mean`
//! over all its members. That is what the reference costs to run. The
//! algorithm can also be restated as vectorised numpy (one matrix-vector
//! product with all the means per vector, running sums), a much stronger
//! peer; its ratio is printed too, with no target, so that nobody takes
//! the first ratio for one against the best numpy can do.
//!
//! numpy runs from this process through the interpreter in `$SOME_PYTHON`,
//! else `$SOME_CACHE/pyenv/bin/python` (`~/.cache/some` by default; the
//! `ensure_numpy` of `infra/env.sh` creates it), else `python3`; when none
//! imports numpy the comparisons say so and why. Both sides read the same
//! data, which this program generates from fixed seeds and writes to a
//! temporary folder as raw little-endian f32.

use std::error::Error;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use half::f16;
use some_jobs::kernels::{CpuKernels, Hit, Kernels, Matrix};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

const ROWS: usize = 1_000_000;
const DIM: usize = 384;
const K: usize = 10;
const BATCH: usize = 64;
const CLUSTER_VECTORS: usize = 100_000;
const TOPICS: usize = 400;
const THETA: f32 = 0.35;
/// Runs of each memory-bound measurement; the best is reported, as the
/// one least disturbed by other work.
const RUNS: usize = 10;

fn main() -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let kernels = CpuKernels::new(threads);
    println!("some-jobs kernels benchmark: {threads} threads, {}", instruction_set());
    println!("load average before: {}", load_average());
    let python = find_python();
    let dir = tempfile::tempdir()?;

    let bandwidth = memory_bandwidth(threads);
    println!("memory bandwidth: {bandwidth:.1} GB/s ({threads}-thread streaming sum over 1.07 GB, best of {RUNS})");

    let corpus = uniform(1, ROWS * DIM);
    let queries = uniform(2, BATCH * DIM);
    let start = Instant::now();
    let prepared = kernels.corpus(Matrix::F32 { data: &corpus, dim: DIM });
    let bytes = (corpus.len() * 4) as f64;
    println!("corpus: {ROWS} x {DIM} f32 ({:.2} GB); corpus() (inverse norms) {:.3} s", bytes / 1e9, start.elapsed().as_secs_f64());

    let single = Matrix::F32 { data: &queries[..DIM], dim: DIM };
    let seconds = best_of(RUNS, || drop(std::hint::black_box(kernels.top_k(single, &prepared, K))));
    let achieved = bytes / seconds / 1e9;
    println!(
        "a. single-query top-{K}, f32: {seconds:.4} s = {achieved:.1} GB/s = {:.0}% of memory bandwidth (target >= 50%)",
        100.0 * achieved / bandwidth
    );
    {
        let halves: Vec<f16> = corpus.iter().copied().map(f16::from_f32).collect();
        let prepared = kernels.corpus(Matrix::F16 { data: &halves, dim: DIM });
        let seconds = best_of(RUNS, || drop(std::hint::black_box(kernels.top_k(single, &prepared, K))));
        let achieved = (halves.len() * 2) as f64 / seconds / 1e9;
        println!(
            "   single-query top-{K}, f16: {seconds:.4} s = {achieved:.1} GB/s = {:.0}% of memory bandwidth",
            100.0 * achieved / bandwidth
        );
    }

    let batch = Matrix::F32 { data: &queries, dim: DIM };
    let mut hits = Vec::new();
    let ours = best_of(3, || hits = kernels.top_k(batch, &prepared, K));
    println!("b. batch of {BATCH} queries, top-{K}: some {ours:.3} s ({:.1} ms a query)", ours * 1e3 / BATCH as f64);
    match &python {
        Err(why) => println!("   numpy comparison skipped: {why}"),
        Ok(python) => {
            write_f32(&dir.path().join("corpus.f32"), &corpus)?;
            write_f32(&dir.path().join("queries.f32"), &queries)?;
            let out = run_python(python, dir.path(), TOP_K_PY, &[ROWS, DIM, BATCH, K].map(|a| a.to_string()))?;
            let (seconds, matmul) = (reported(&out, "seconds")?, reported(&out, "matmul")?);
            println!(
                "   numpy (BLAS matmul of normalised vectors + argpartition, corpus normalised beforehand): {seconds:.3} s, \
                 of which the matmul {matmul:.3} s; some is {:.2}x faster (target >= 1.0x)",
                seconds / ours
            );
            let theirs = read_i64(&dir.path().join("top_k.i64"))?;
            println!("   {}", top_k_agreement(&hits, &theirs, &corpus, &queries));
        }
    }
    drop(prepared);
    drop(corpus);

    let vectors = clustered(3, CLUSTER_VECTORS, DIM, TOPICS);
    let matrix = Matrix::F32 { data: &vectors, dim: DIM };
    let mut ids = Vec::new();
    let ours = best_of(3, || ids = kernels.single_pass_cluster(matrix, THETA));
    let clusters = ids.iter().copied().max().unwrap_or(0);
    println!(
        "c. single-pass clustering of {CLUSTER_VECTORS} x {DIM} (theta {THETA}, {TOPICS} topics drawn): {clusters} clusters; \
         some {ours:.3} s ({:.2} us a vector)",
        ours * 1e6 / CLUSTER_VECTORS as f64
    );
    match &python {
        Err(why) => println!("   numpy comparison skipped: {why}"),
        Ok(python) => {
            write_f32(&dir.path().join("vectors.f32"), &vectors)?;
            let args = [CLUSTER_VECTORS.to_string(), DIM.to_string(), THETA.to_string()];
            println!("   running the reference procedure in Python (a minute or more)...");
            let out = run_python(python, dir.path(), CLUSTER_REFERENCE_PY, &args)?;
            let (seconds, numba) = (reported(&out, "seconds")?, reported(&out, "numba")? == 1.0);
            println!(
                "   reference procedure (Python loop over the clusters, {} avg @ v each, np.mean of the members at each join): \
                 {seconds:.1} s; some is {:.0}x faster (target >= 20x)",
                if numba { "numba-jitted" } else { "numpy (numba unavailable)" },
                seconds / ours
            );
            println!("   {}", id_agreement(&ids, &read_i64(&dir.path().join("ids.i64"))?));
            let out = run_python(python, dir.path(), CLUSTER_PY, &args)?;
            let seconds = reported(&out, "seconds")?;
            println!(
                "   vectorised numpy restatement (sims = means @ v, argmax, running sums; a stronger peer, no target): \
                 {seconds:.3} s; some is {:.1}x faster",
                seconds / ours
            );
            println!("   {}", id_agreement(&ids, &read_i64(&dir.path().join("ids.i64"))?));
        }
    }
    println!("load average after: {}", load_average());
    Ok(())
}

/// The 1, 5 and 15-minute load averages: other work on the machine skews
/// every figure above.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map_or_else(|_| "unknown".to_string(), |s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
}

fn instruction_set() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2")
        && std::arch::is_x86_feature_detected!("fma")
        && std::arch::is_x86_feature_detected!("f16c")
    {
        return "AVX2+FMA+F16C kernels";
    }
    "portable kernels"
}

/// The fastest of `runs` runs of `f`, in seconds.
fn best_of(runs: usize, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// GB/s of `threads` threads each summing its part of a 1.07 GB buffer.
fn memory_bandwidth(threads: usize) -> f64 {
    let mut buffer = vec![0.0f32; 1 << 28];
    let per = buffer.len() / threads;
    std::thread::scope(|scope| {
        for (t, part) in buffer.chunks_mut(per).enumerate() {
            scope.spawn(move || part.iter_mut().enumerate().for_each(|(i, x)| *x = ((i + t) % 7) as f32));
        }
    });
    let seconds = best_of(RUNS, || {
        std::thread::scope(|scope| {
            for part in buffer.chunks(per) {
                scope.spawn(move || std::hint::black_box(sum(part)));
            }
        });
    });
    (buffer.len() * 4) as f64 / seconds / 1e9
}

/// Adds the bits of every value as integers: unlike a float sum, this
/// vectorises without reassociation, so the loads are the only limit.
fn sum(values: &[f32]) -> u32 {
    let mut lanes = [0u32; 16];
    let mut chunks = values.chunks_exact(16);
    for chunk in &mut chunks {
        for (l, x) in lanes.iter_mut().zip(chunk) {
            *l = l.wrapping_add(x.to_bits());
        }
    }
    let rest = chunks.remainder().iter().map(|x| x.to_bits());
    lanes.into_iter().chain(rest).fold(0, u32::wrapping_add)
}

/// SplitMix64, so that the data are the same on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }
}

fn uniform(seed: u64, len: usize) -> Vec<f32> {
    let mut rng = Rng(seed);
    (0..len).map(|_| rng.unit()).collect()
}

fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter_mut().for_each(|x| *x /= norm);
}

/// Unit vectors around `topics` random centres, topic `t` drawn with
/// weight `1 / (t + 10)` (a few popular topics, a long tail), each vector
/// its centre plus an equally long random offset.
fn clustered(seed: u64, n: usize, dim: usize, topics: usize) -> Vec<f32> {
    let mut rng = Rng(seed);
    let mut centres = vec![0.0f32; topics * dim];
    centres.iter_mut().for_each(|x| *x = rng.unit());
    centres.chunks_mut(dim).for_each(normalise);
    let weights: Vec<f64> = (0..topics).map(|t| 1.0 / (t + 10) as f64).collect();
    let total: f64 = weights.iter().sum();
    let mut out = vec![0.0f32; n * dim];
    let mut offset = vec![0.0f32; dim];
    for v in out.chunks_mut(dim) {
        let mut pick = (rng.next() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let topic = weights
            .iter()
            .position(|w| {
                pick -= w;
                pick < 0.0
            })
            .unwrap_or(topics - 1);
        offset.iter_mut().for_each(|x| *x = rng.unit());
        normalise(&mut offset);
        for ((x, c), o) in v.iter_mut().zip(&centres[topic * dim..(topic + 1) * dim]).zip(&offset) {
            *x = c + o;
        }
        normalise(v);
    }
    out
}

fn write_f32(path: &Path, values: &[f32]) -> Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    for v in values {
        out.write_all(&v.to_le_bytes())?;
    }
    out.flush()?;
    Ok(())
}

fn read_i64(path: &Path) -> Result<Vec<i64>> {
    let bytes = std::fs::read(path)?;
    Ok(bytes.chunks_exact(8).map(|b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])).collect())
}

/// How many of a peer's cluster ids equal ours, and where they first differ.
fn id_agreement(ours: &[u32], theirs: &[i64]) -> String {
    let same = ours.iter().zip(theirs).filter(|(a, b)| i64::from(**a) == **b).count();
    let first = ours.iter().zip(theirs).position(|(a, b)| i64::from(*a) != *b);
    format!(
        "cluster ids agree on {same}/{} vectors{}",
        ours.len(),
        first.map_or(String::new(), |i| format!(" (first difference at vector {i})"))
    )
}

/// The first interpreter that imports numpy, or why there is none.
fn find_python() -> std::result::Result<PathBuf, String> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("SOME_PYTHON") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(cache) = std::env::var_os("SOME_CACHE") {
        candidates.push(Path::new(&cache).join("pyenv/bin/python"));
    } else if let Some(home) = std::env::var_os("HOME") {
        candidates.push(Path::new(&home).join(".cache/some/pyenv/bin/python"));
    }
    candidates.push(PathBuf::from("python3"));
    let mut tried = Vec::new();
    for python in candidates {
        match Command::new(&python).args(["-c", "import numpy"]).output() {
            Ok(out) if out.status.success() => return Ok(python),
            Ok(_) => tried.push(format!("{} cannot import numpy", python.display())),
            Err(e) => tried.push(format!("{}: {e}", python.display())),
        }
    }
    Err(format!("no python with numpy ({}); set SOME_PYTHON or run ensure_numpy from infra/env.sh", tried.join("; ")))
}

/// Runs `script` in `dir` with `args`; returns what it printed.
fn run_python(python: &Path, dir: &Path, script: &str, args: &[String]) -> Result<String> {
    let path = dir.join("bench.py");
    std::fs::write(&path, script)?;
    let out = Command::new(python).arg(&path).arg(dir).args(args).output()?;
    if !out.status.success() {
        return Err(format!("{} failed: {}", path.display(), String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The number a script printed on its line `key value`.
fn reported(stdout: &str, key: &str) -> Result<f64> {
    let value =
        stdout.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(' ')).ok_or_else(|| format!("the script printed no {key}"))?;
    Ok(value.trim().parse()?)
}

/// How many queries got exactly numpy's hits, and by how much the others differ.
fn top_k_agreement(hits: &[Vec<Hit>], theirs: &[i64], corpus: &[f32], queries: &[f32]) -> String {
    let mut same = 0;
    let mut worst_gap = 0.0f64;
    for (q, ours) in hits.iter().enumerate() {
        let theirs = &theirs[q * K..(q + 1) * K];
        if ours.iter().zip(theirs).all(|(h, t)| i64::from(h.index) == *t) {
            same += 1;
            continue;
        }
        let cosine = |row: usize| {
            let (a, b) = (&queries[q * DIM..(q + 1) * DIM], &corpus[row * DIM..(row + 1) * DIM]);
            let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
            let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
            dot / norm(a) / norm(b)
        };
        for (h, t) in ours.iter().zip(theirs) {
            worst_gap = worst_gap.max((cosine(h.index as usize) - cosine(*t as usize)).abs());
        }
    }
    if same == hits.len() {
        format!("hits agree: {same}/{} queries have numpy's exact top-{K} indices in order", hits.len())
    } else {
        format!(
            "hits agree: {same}/{} queries identical; the others differ only between rows whose f64 cosines are within {worst_gap:.1e}",
            hits.len()
        )
    }
}

const TOP_K_PY: &str = r#"
import sys, time
import numpy as np
d = sys.argv[1]
n, dim, nq, k = map(int, sys.argv[2:6])
corpus = np.fromfile(f"{d}/corpus.f32", dtype="<f4").reshape(n, dim)
queries = np.fromfile(f"{d}/queries.f32", dtype="<f4").reshape(nq, dim)
def normalised(m):
    norms = np.sqrt(np.einsum("ij,ij->i", m, m))
    return m / np.where(norms > 0, norms, 1)[:, None]
corpus = normalised(corpus)
best, best_matmul = float("inf"), float("inf")
for _ in range(3):
    t = time.perf_counter()
    q = normalised(queries)
    sims = q @ corpus.T
    matmul = time.perf_counter() - t
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    scores = np.take_along_axis(sims, part, axis=1)
    top = np.take_along_axis(part, np.lexsort((part, -scores)), axis=1)
    best, best_matmul = min(best, time.perf_counter() - t), min(best_matmul, matmul)
top.astype("<i8").tofile(f"{d}/top_k.i64")
print("seconds", best)
print("matmul", best_matmul)
"#;

const CLUSTER_PY: &str = r#"
import sys, time
import numpy as np
d = sys.argv[1]
n, dim = map(int, sys.argv[2:4])
theta = np.float32(sys.argv[4])
vectors = np.fromfile(f"{d}/vectors.f32", dtype="<f4").reshape(n, dim)
t = time.perf_counter()
sums = np.zeros((n, dim), dtype=np.float32)
means = np.zeros((n, dim), dtype=np.float32)
counts = np.zeros(n, dtype=np.float32)
ids = np.zeros(n, dtype="<i8")
c = 0
for i in range(n):
    v = vectors[i]
    if c:
        sims = means[:c] @ v
        j = int(np.argmax(sims))
        if sims[j] > 0 and sims[j] > theta:
            sums[j] += v
            counts[j] += 1
            means[j] = sums[j] / counts[j]
            ids[i] = j + 1
            continue
    sums[c] = v
    means[c] = v
    counts[c] = 1
    c += 1
    ids[i] = c
print("seconds", time.perf_counter() - t)
ids.tofile(f"{d}/ids.i64")
"#;

/// The reference's `Single_Pass_Cluster.single_pass`, clustering only: the
/// dictionary of clusters, ids from 1 in creation order, the strict `>`
/// scan from 0 and `np.mean` over the members' list at each join, as it is
/// written there. The jit is compiled before the clock starts; without
/// numba (or the scipy its `@` needs) the same loop calls numpy's `@`.
const CLUSTER_REFERENCE_PY: &str = r#"
import sys, time
import numpy as np
d = sys.argv[1]
n, dim = map(int, sys.argv[2:4])
theta = float(sys.argv[4])
vectors = np.fromfile(f"{d}/vectors.f32", dtype="<f4").reshape(n, dim)
try:
    from numba import jit
    @jit(nopython=True)
    def vector_similarity_1(avg_vector, vector):
        oneSimilarity = avg_vector @ vector.T
        return oneSimilarity
    vector_similarity_1(vectors[0], vectors[0])
    numba = 1
except Exception:
    def vector_similarity_1(avg_vector, vector):
        oneSimilarity = avg_vector @ vector.T
        return oneSimilarity
    numba = 0
ids = np.zeros(n, dtype="<i8")
t = time.perf_counter()
dictTopic = {}
numTopic = 1
for i in range(n):
    vector = vectors[i]
    maxValue = 0
    maxIndex = -1
    for k, cluster in dictTopic.items():
        avgVector = cluster['avgVector']
        oneSimilarity = vector_similarity_1(avgVector, vector)
        if oneSimilarity > maxValue:
            maxValue = oneSimilarity
            maxIndex = k
    if maxValue > theta:
        dictTopic[maxIndex]['vectors'].append(vector)
        dictTopic[maxIndex]['avgVector'] = np.mean(dictTopic[maxIndex]['vectors'], axis=0)
        ids[i] = maxIndex
    else:
        dictTopic[numTopic] = {}
        dictTopic[numTopic]['vectors'] = []
        dictTopic[numTopic]['vectors'].append(vector)
        dictTopic[numTopic]['avgVector'] = vector
        ids[i] = numTopic
        numTopic += 1
print("seconds", time.perf_counter() - t)
print("numba", numba)
ids.tofile(f"{d}/ids.i64")
"#;
