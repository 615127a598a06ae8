//! The threshold-graph clustering on the CPU (see [`crate::kernels::graph`]):
//! the reference for the GPU variant, with the canonical dot product, so
//! both give the same links.

use super::dot::{self, Isa, Pack};
use crate::kernels::{Matrix, labels_from_parents};

/// Cluster ids of the threshold-graph clustering. Quadratic in the number
/// of vectors (each scans the earlier ones until a link is found).
pub(crate) fn threshold_graph_cluster(isa: Isa, vectors: Matrix<'_>, theta: f32) -> Vec<u32> {
    let n = vectors.rows();
    let mut pack = Pack::new(vectors.dim());
    pack.fill(vectors, 0..n);
    let parents: Vec<u32> =
        (0..n).map(|i| (0..i).find(|&j| dot::tile::<1, 1>(isa, vectors, [j], &pack, i)[0][0] > theta).unwrap_or(i) as u32).collect();
    labels_from_parents(&parents).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::kernels::{CpuKernels, Kernels, Matrix, rand_agreement};

    #[test]
    fn links_go_to_the_earliest_vector_above_theta() {
        let data = [1.0, 0.0, 0.0, 1.0, 0.9, 0.1, 0.1, 0.9, -1.0, 0.0];
        let vectors = Matrix::F32 { data: &data, dim: 2 };
        let kernels = CpuKernels::new(1);
        assert_eq!(kernels.threshold_graph_cluster(vectors, 0.5), vec![1, 2, 1, 2, 3]);
        assert_eq!(kernels.single_pass_cluster(vectors, 0.5), vec![1, 2, 1, 2, 3], "here the exact clustering agrees");
    }

    #[test]
    fn a_chain_stays_together_where_a_running_mean_splits_it() {
        // v2 is above theta with v1 (0.8) but not with the mean of v0 and v1 (0.4).
        let data = [1.0, 0.0, 0.6, 0.8, 0.0, 1.0];
        let vectors = Matrix::F32 { data: &data, dim: 2 };
        let kernels = CpuKernels::new(1);
        let graph = kernels.threshold_graph_cluster(vectors, 0.5);
        let exact = kernels.single_pass_cluster(vectors, 0.5);
        assert_eq!((graph.as_slice(), exact.as_slice()), (&[1, 1, 1][..], &[1, 1, 2][..]));
        assert_eq!(rand_agreement(&graph, &exact), 1.0 / 3.0);
    }

    #[test]
    fn f16_and_f32_storage_of_the_same_values_link_the_same() {
        let values: Vec<f32> = (0..40 * 12).map(|i| ((i * 7919) % 23) as f32 / 23.0 - 0.3).collect();
        let halves: Vec<half::f16> = values.iter().map(|&x| half::f16::from_f32(x)).collect();
        let widened: Vec<f32> = halves.iter().map(|x| x.to_f32()).collect();
        let kernels = CpuKernels::new(1);
        let a = kernels.threshold_graph_cluster(Matrix::F16 { data: &halves, dim: 12 }, 0.5);
        let b = kernels.threshold_graph_cluster(Matrix::F32 { data: &widened, dim: 12 }, 0.5);
        assert_eq!(a, b);
        assert!(a.iter().max() > Some(&1) && a.iter().max() < Some(&40), "a mix of links and new trees: {a:?}");
    }
}
