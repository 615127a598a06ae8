//! Clustering tests: a hand-computed case pinning each rule of the
//! reference, and parity with a plain-loops implementation at scale.

use half::f16;

use super::CpuKernels;
use super::dot::Isa;
use super::tests::{Rng, reference_dot};
use crate::kernels::{Kernels, Matrix};

/// The reference algorithm as plainly as it can be written.
fn plain_cluster(vectors: &[Vec<f32>], theta: f32) -> Vec<u32> {
    let mut sums: Vec<Vec<f32>> = Vec::new();
    let mut means: Vec<Vec<f32>> = Vec::new();
    let mut counts: Vec<u32> = Vec::new();
    let mut ids = Vec::new();
    for v in vectors {
        let mut best = None;
        let mut best_dot = 0.0;
        for (c, mean) in means.iter().enumerate() {
            let d = reference_dot(v, mean);
            if d > best_dot {
                best_dot = d;
                best = Some(c);
            }
        }
        match best {
            Some(c) if best_dot > theta => {
                counts[c] += 1;
                for (s, x) in sums[c].iter_mut().zip(v) {
                    *s += x;
                }
                means[c] = sums[c].iter().map(|s| s / counts[c] as f32).collect();
                ids.push(c as u32 + 1);
            }
            _ => {
                sums.push(v.clone());
                means.push(v.clone());
                counts.push(1);
                ids.push(means.len() as u32);
            }
        }
    }
    ids
}

/// `n` unit vectors around `centres` random centres, in random order.
fn clustered(rng: &mut Rng, n: usize, dim: usize, centres: usize, noise: f32) -> Vec<Vec<f32>> {
    let unit = |v: Vec<f32>| {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / norm).collect::<Vec<f32>>()
    };
    let centres: Vec<Vec<f32>> = (0..centres).map(|_| unit((0..dim).map(|_| rng.unit()).collect())).collect();
    (0..n)
        .map(|_| {
            let centre = &centres[rng.below(centres.len() as u64) as usize];
            let offset = unit((0..dim).map(|_| rng.unit()).collect());
            unit(centre.iter().zip(offset).map(|(c, o)| c + noise * o).collect())
        })
        .collect()
}

fn kernels() -> Vec<CpuKernels> {
    let mut all = vec![CpuKernels::new(1), CpuKernels::eager(3, Isa::detect())];
    if Isa::detect() != Isa::Portable {
        all.push(CpuKernels::eager(2, Isa::Portable));
    }
    all
}

#[test]
fn hand_computed_clusters() {
    #[rustfmt::skip]
    let vectors = [
        1.0, 0.0,  // no cluster yet: starts 1
        0.0, 1.0,  // dot 0 with cluster 1 is not above 0: starts 2
        1.0, 1.0,  // dots 1 and 1: the first maximum, 1, wins; mean of 1 is now (1, 0.5)
        0.0, 0.5,  // dots 0.25 and 0.5: 0.5 is not above theta 0.5: starts 3
        -1.0, 0.0, // dots -1, 0, 0: nothing above 0: starts 4
        0.0, 2.0,  // dots 1, 2, 1, 0: joins 2, whose un-normalised mean becomes (0, 1.5)
        0.0, 1.0,  // dots 0.5, 1.5, 0.5, 0: joins 2
    ];
    for kernels in kernels() {
        let ids = kernels.single_pass_cluster(Matrix::F32 { data: &vectors, dim: 2 }, 0.5);
        assert_eq!(ids, vec![1, 2, 1, 3, 4, 2, 2], "{kernels:?}");
        let halves: Vec<f16> = vectors.iter().copied().map(f16::from_f32).collect();
        let ids = kernels.single_pass_cluster(Matrix::F16 { data: &halves, dim: 2 }, 0.5);
        assert_eq!(ids, vec![1, 2, 1, 3, 4, 2, 2], "f16 {kernels:?}");
    }
}

#[test]
fn a_negative_theta_still_needs_a_positive_product() {
    let vectors = [1.0, 0.0, -1.0, 0.0, 0.0, 1.0, 0.5, 0.5];
    let ids = CpuKernels::new(1).single_pass_cluster(Matrix::F32 { data: &vectors, dim: 2 }, -0.5);
    assert_eq!(ids, vec![1, 2, 3, 1]);
}

#[test]
fn no_vectors_no_clusters() {
    let ids = CpuKernels::new(2).single_pass_cluster(Matrix::F32 { data: &[], dim: 4 }, 0.5);
    assert_eq!(ids, Vec::<u32>::new());
}

/// Theta sits just below a typical member's product with its cluster mean,
/// so that many decisions are close and the 50 topics split into 134
/// clusters, most of them formed while the blocks and threads run.
#[test]
fn ten_thousand_vectors_cluster_exactly_as_the_plain_loops() {
    let mut rng = Rng::new(23);
    let (dim, theta) = (32, 0.45);
    let vectors = clustered(&mut rng, 10_000, dim, 50, 0.9);
    let expected = plain_cluster(&vectors, theta);
    assert_eq!(expected.iter().copied().max(), Some(134));
    let data = vectors.concat();
    for kernels in [CpuKernels::new(1), CpuKernels::eager(3, Isa::detect())] {
        let ids = kernels.single_pass_cluster(Matrix::F32 { data: &data, dim }, theta);
        assert_eq!(ids, expected, "{kernels:?}");
    }
}

#[test]
fn f16_and_portable_clustering_match_the_plain_loops() {
    let mut rng = Rng::new(29);
    let (dim, theta) = (19, 0.3);
    let vectors = clustered(&mut rng, 1500, dim, 20, 1.0);
    let widened: Vec<Vec<f32>> = vectors.iter().map(|v| v.iter().map(|&x| f16::from_f32(x).to_f32()).collect()).collect();
    let expected = plain_cluster(&vectors, theta);
    let expected_f16 = plain_cluster(&widened, theta);
    let (data, halves) = (vectors.concat(), widened.concat().into_iter().map(f16::from_f32).collect::<Vec<_>>());
    for kernels in kernels() {
        assert_eq!(kernels.single_pass_cluster(Matrix::F32 { data: &data, dim }, theta), expected, "{kernels:?}");
        assert_eq!(kernels.single_pass_cluster(Matrix::F16 { data: &halves, dim }, theta), expected_f16, "f16 {kernels:?}");
    }
}
