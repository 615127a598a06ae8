//! Top-k and corpus tests against brute force, plus the helpers the
//! clustering tests share: a seeded generator and the canonical dot
//! product written as plain loops.

use std::cmp::Ordering;

use half::f16;

use super::CpuKernels;
use super::dot::Isa;
use crate::kernels::{Hit, Kernels, Matrix};

/// SplitMix64: small, seeded, and the same on every platform.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(super) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [-1, 1).
    pub(super) fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 23) as f32 - 1.0
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The canonical dot product of `dot.rs`, spelled out: eight FMA lanes,
/// the last group padded with zeros, then the fixed reduction.
pub(crate) fn reference_dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        lanes[i % 8] = x.mul_add(*y, lanes[i % 8]);
    }
    for i in a.len()..a.len().div_ceil(8) * 8 {
        lanes[i % 8] = 0.0f32.mul_add(0.0, lanes[i % 8]);
    }
    let l = lanes;
    ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]))
}

fn inverse_norm(x: &[f32], dot: fn(&[f32], &[f32]) -> f32) -> f32 {
    let s = dot(x, x);
    if s > 0.0 { 1.0 / s.sqrt() } else { 0.0 }
}

/// Every score, sorted best first with ties (-0 and +0 included) to the
/// lower index, cut at `k`.
fn brute_force(queries: &[Vec<f32>], corpus: &[Vec<f32>], k: usize, dot: fn(&[f32], &[f32]) -> f32) -> Vec<Vec<Hit>> {
    let inv: Vec<f32> = corpus.iter().map(|c| inverse_norm(c, dot)).collect();
    queries
        .iter()
        .map(|q| {
            let iq = inverse_norm(q, dot);
            let mut hits: Vec<Hit> =
                corpus.iter().enumerate().map(|(i, c)| Hit { index: i as u32, score: dot(q, c) * iq * inv[i] }).collect();
            hits.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(Ordering::Equal).then(a.index.cmp(&b.index)));
            hits.truncate(k);
            hits
        })
        .collect()
}

/// Sums in f64: exact for the small integers of [`integer_rows`], whatever the order.
fn exact_dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum::<f64>() as f32
}

/// Rows of small integers (exact in f16 and in any summation order), with
/// duplicates and zero rows so that ties and zero norms occur.
fn integer_rows(rng: &mut Rng, n: usize, dim: usize) -> Vec<Vec<f32>> {
    let mut rows: Vec<Vec<f32>> = Vec::with_capacity(n);
    for i in 0..n {
        let row = match i % 7 {
            3 => vec![0.0; dim],
            5 if i > 0 => rows[rng.below(i as u64) as usize].clone(),
            _ => (0..dim).map(|_| rng.below(5) as f32 - 2.0).collect(),
        };
        rows.push(row);
    }
    rows
}

fn random_rows(rng: &mut Rng, n: usize, dim: usize) -> Vec<Vec<f32>> {
    (0..n).map(|_| (0..dim).map(|_| rng.unit()).collect()).collect()
}

fn flat(rows: &[Vec<f32>]) -> Vec<f32> {
    rows.concat()
}

fn halves(rows: &[Vec<f32>]) -> Vec<f16> {
    rows.concat().into_iter().map(f16::from_f32).collect()
}

fn widened(rows: &[Vec<f32>]) -> Vec<Vec<f32>> {
    rows.iter().map(|r| r.iter().map(|&x| f16::from_f32(x).to_f32()).collect()).collect()
}

/// Every instruction set this CPU runs, one and three threads, eager threading.
fn all_kernels() -> Vec<CpuKernels> {
    let mut isas = vec![Isa::Portable];
    if Isa::detect() != Isa::Portable {
        isas.push(Isa::detect());
    }
    isas.into_iter().flat_map(|isa| [CpuKernels::eager(1, isa), CpuKernels::eager(3, isa)]).collect()
}

fn search(kernels: &CpuKernels, queries: Matrix<'_>, corpus: Matrix<'_>, k: usize) -> Vec<Vec<Hit>> {
    kernels.top_k(queries, &kernels.corpus(corpus), k)
}

#[test]
fn top_k_of_integer_vectors_is_the_exact_brute_force() {
    let mut rng = Rng::new(7);
    for dim in [5, 16, 19] {
        let corpus = integer_rows(&mut rng, 200, dim);
        let mut queries = integer_rows(&mut rng, 9, dim);
        queries[0] = vec![0.0; dim];
        for k in [1, 3, 10, 200, 250] {
            let expected = brute_force(&queries, &corpus, k, exact_dot);
            for kernels in all_kernels() {
                let (q, c) = (flat(&queries), flat(&corpus));
                let got = search(&kernels, Matrix::F32 { data: &q, dim }, Matrix::F32 { data: &c, dim }, k);
                assert_eq!(got, expected, "f32 dim {dim} k {k} {kernels:?}");
                let (q, c) = (halves(&queries), halves(&corpus));
                let got = search(&kernels, Matrix::F16 { data: &q, dim }, Matrix::F16 { data: &c, dim }, k);
                assert_eq!(got, expected, "f16 dim {dim} k {k} {kernels:?}");
            }
        }
    }
}

#[test]
fn top_k_of_random_vectors_is_the_canonical_brute_force() {
    let mut rng = Rng::new(11);
    for (dim, n) in [(7, 500), (64, 700), (384, 150)] {
        let corpus = random_rows(&mut rng, n, dim);
        let queries = random_rows(&mut rng, 7, dim);
        for k in [1, 10, 37] {
            let expected = brute_force(&queries, &corpus, k, reference_dot);
            let expected_f16 = brute_force(&widened(&queries), &widened(&corpus), k, reference_dot);
            for kernels in all_kernels() {
                let (q, c) = (flat(&queries), flat(&corpus));
                let got = search(&kernels, Matrix::F32 { data: &q, dim }, Matrix::F32 { data: &c, dim }, k);
                assert_eq!(got, expected, "f32 dim {dim} k {k} {kernels:?}");
                let (q, c) = (halves(&queries), halves(&corpus));
                let got = search(&kernels, Matrix::F16 { data: &q, dim }, Matrix::F16 { data: &c, dim }, k);
                assert_eq!(got, expected_f16, "f16 dim {dim} k {k} {kernels:?}");
            }
        }
    }
}

#[test]
fn a_query_gets_the_same_hits_alone_and_in_any_batch() {
    let mut rng = Rng::new(13);
    let dim = 48;
    let corpus = flat(&random_rows(&mut rng, 1000, dim));
    let queries = flat(&random_rows(&mut rng, 11, dim));
    let kernels = CpuKernels::new(2);
    let prepared = kernels.corpus(Matrix::F32 { data: &corpus, dim });
    let batch = kernels.top_k(Matrix::F32 { data: &queries, dim }, &prepared, 5);
    assert_eq!(batch.len(), 11);
    for (i, hits) in batch.iter().enumerate() {
        let alone = kernels.top_k(Matrix::F32 { data: &queries[i * dim..(i + 1) * dim], dim }, &prepared, 5);
        assert_eq!(&alone[0], hits, "query {i}");
        let pair = kernels.top_k(Matrix::F32 { data: &queries[i * dim..(i + 2).min(11) * dim], dim }, &prepared, 5);
        assert_eq!(&pair[0], hits, "query {i} first of a pair");
    }
}

#[test]
fn hand_computed_hits() {
    let corpus = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, -1.0, 0.0];
    let queries = [2.0, 0.0, 0.0, 0.0];
    let kernels = CpuKernels::new(1);
    let prepared = kernels.corpus(Matrix::F32 { data: &corpus, dim: 2 });
    assert_eq!(prepared.inv_norms, vec![1.0, 1.0, std::f32::consts::FRAC_1_SQRT_2, 0.0, 1.0]);
    let hits = kernels.top_k(Matrix::F32 { data: &queries, dim: 2 }, &prepared, 4);
    let hit = |index, score| Hit { index, score };
    assert_eq!(
        hits,
        vec![
            vec![hit(0, 1.0), hit(2, std::f32::consts::FRAC_1_SQRT_2), hit(1, 0.0), hit(3, 0.0)],
            vec![hit(0, 0.0), hit(1, 0.0), hit(2, 0.0), hit(3, 0.0)],
        ]
    );
}

#[test]
fn ties_go_to_the_lower_index_across_threads() {
    let dim = 16;
    let corpus: Vec<f32> = (0..4000 * dim).map(|i| (i % dim) as f32).collect();
    let queries: Vec<f32> = (0..dim).map(|i| 1.0 + i as f32).collect();
    for kernels in all_kernels() {
        let hits = search(&kernels, Matrix::F32 { data: &queries, dim }, Matrix::F32 { data: &corpus, dim }, 6);
        let indices: Vec<u32> = hits[0].iter().map(|h| h.index).collect();
        assert_eq!(indices, vec![0, 1, 2, 3, 4, 5], "{kernels:?}");
        assert!(hits[0].iter().all(|h| h.score == hits[0][0].score), "{kernels:?}");
    }
}

#[test]
fn degenerate_shapes() {
    let kernels = CpuKernels::new(2);
    let empty = kernels.corpus(Matrix::F32 { data: &[], dim: 3 });
    assert_eq!(empty.inv_norms, Vec::<f32>::new());
    let query = [1.0, 2.0, 3.0];
    assert_eq!(kernels.top_k(Matrix::F32 { data: &query, dim: 3 }, &empty, 5), vec![Vec::<Hit>::new()]);
    let one = kernels.corpus(Matrix::F32 { data: &query, dim: 3 });
    assert_eq!(kernels.top_k(Matrix::F32 { data: &query, dim: 3 }, &one, 0), vec![Vec::<Hit>::new()]);
    assert_eq!(kernels.top_k(Matrix::F32 { data: &[], dim: 3 }, &one, 5), Vec::<Vec<Hit>>::new());
    let hits = kernels.top_k(Matrix::F32 { data: &query, dim: 3 }, &one, 5);
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].len(), 1);
    assert_eq!(hits[0][0].index, 0);
    assert_eq!(hits[0][0].score, reference_dot(&query, &query) * one.inv_norms[0] * one.inv_norms[0]);
}

#[test]
fn corpus_norms_are_the_canonical_ones_on_every_path() {
    let mut rng = Rng::new(17);
    for dim in [1, 8, 13, 384] {
        let mut rows = random_rows(&mut rng, 300, dim);
        rows[4] = vec![0.0; dim];
        let expected: Vec<f32> = rows.iter().map(|r| inverse_norm(r, reference_dot)).collect();
        let expected_f16: Vec<f32> = widened(&rows).iter().map(|r| inverse_norm(r, reference_dot)).collect();
        assert_eq!(expected[4], 0.0);
        for kernels in all_kernels() {
            let data = flat(&rows);
            assert_eq!(kernels.corpus(Matrix::F32 { data: &data, dim }).inv_norms, expected, "{kernels:?}");
            let data = halves(&rows);
            assert_eq!(kernels.corpus(Matrix::F16 { data: &data, dim }).inv_norms, expected_f16, "{kernels:?}");
        }
    }
}

#[test]
fn a_nan_row_ranks_below_every_number() {
    let corpus = [f32::NAN, 1.0, -2.0, 0.0, 1.0, 1.0];
    let query = [1.0, 0.0];
    for kernels in all_kernels() {
        let hits = search(&kernels, Matrix::F32 { data: &query, dim: 2 }, Matrix::F32 { data: &corpus, dim: 2 }, 3);
        let indices: Vec<u32> = hits[0].iter().map(|h| h.index).collect();
        assert_eq!(indices, vec![2, 1, 0], "{kernels:?}");
        assert_eq!(hits[0][0].score, std::f32::consts::FRAC_1_SQRT_2, "{kernels:?}");
        assert_eq!(hits[0][1].score, -1.0, "{kernels:?}");
        assert!(hits[0][2].score.is_nan(), "{kernels:?}");
    }
}

#[test]
fn rows_offered_worst_first_fill_a_large_k_correctly() {
    let n = 3000;
    let corpus: Vec<Vec<f32>> = (0..n).map(|i| vec![i as f32 + 1.0, n as f32]).collect();
    let queries = vec![vec![1.0, 0.0]];
    let expected = brute_force(&queries, &corpus, 100, reference_dot);
    let indices: Vec<u32> = expected[0].iter().map(|h| h.index).collect();
    assert_eq!(indices, (n as u32 - 100..n as u32).rev().collect::<Vec<_>>());
    for kernels in all_kernels() {
        let (q, c) = (flat(&queries), flat(&corpus));
        let got = search(&kernels, Matrix::F32 { data: &q, dim: 2 }, Matrix::F32 { data: &c, dim: 2 }, 100);
        assert_eq!(got, expected, "{kernels:?}");
    }
}
