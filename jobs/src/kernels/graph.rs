//! The threshold-graph clustering, the parallel variant of the single-pass
//! clustering, and how to measure its agreement with the exact one.
//!
//! Each vector links to the earliest earlier vector whose dot with it is
//! above `theta`, or to itself if there is none; a cluster is a tree of
//! these links, and ids are 1, 2, 3... in the order of the trees' first
//! vectors, as the single-pass ids are in creation order. Unlike the
//! single-pass clustering, no vector's link depends on another's, so the
//! links are computed all at once (on a GPU, one thread per vector). It is
//! an approximation: a "leader" clustering in which a cluster is judged by
//! its members' own vectors rather than by a running mean. The exact
//! clustering stays the default; [`rand_agreement`] reports how far the
//! variant is from it on given data.

/// Cluster ids from links to earlier vectors (`parents[i] <= i`, a vector
/// that starts a tree links to itself); `None` if a link points forward.
pub fn labels_from_parents(parents: &[u32]) -> Option<Vec<u32>> {
    let mut labels: Vec<u32> = Vec::with_capacity(parents.len());
    let mut trees = 0;
    for (i, &p) in parents.iter().enumerate() {
        let p = p as usize;
        if p == i {
            trees += 1;
            labels.push(trees);
        } else {
            labels.push(*labels.get(p)?);
        }
    }
    Some(labels)
}

/// The Rand index of two clusterings of the same vectors: the fraction of
/// pairs of vectors on which they agree (together in both, or apart in
/// both). 1 for identical partitions whatever the ids; 1 for fewer than two
/// vectors.
///
/// # Panics
/// If the clusterings differ in length.
pub fn rand_agreement(a: &[u32], b: &[u32]) -> f64 {
    assert_eq!(a.len(), b.len(), "rand_agreement: clusterings of different lengths");
    let n = a.len() as u64;
    if n < 2 {
        return 1.0;
    }
    let pairs = |m: u64| m * m.saturating_sub(1) / 2;
    let count = |keys: &mut dyn Iterator<Item = (u32, u32)>| {
        let mut sizes = std::collections::HashMap::<(u32, u32), u64>::new();
        for key in keys {
            *sizes.entry(key).or_default() += 1;
        }
        sizes.values().map(|&m| pairs(m)).sum::<u64>()
    };
    let together_a = count(&mut a.iter().map(|&x| (x, 0)));
    let together_b = count(&mut b.iter().map(|&y| (y, 0)));
    let together_both = count(&mut a.iter().zip(b).map(|(&x, &y)| (x, y)));
    let total = pairs(n);
    let disagree = together_a + together_b - 2 * together_both;
    (total - disagree) as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_become_ids_in_first_vector_order() {
        assert_eq!(labels_from_parents(&[0, 0, 2, 1, 4, 2]), Some(vec![1, 1, 2, 1, 3, 2]));
        assert_eq!(labels_from_parents(&[]), Some(vec![]));
        assert_eq!(labels_from_parents(&[0, 2, 2]), None, "a forward link is an error");
    }

    #[test]
    fn rand_agreement_counts_agreeing_pairs() {
        assert_eq!(rand_agreement(&[1, 1, 2, 2], &[5, 5, 9, 9]), 1.0, "the same partition under other ids");
        // Pairs: (0,1) together in both; (2,3) together in a only; the other 4 apart in both.
        assert_eq!(rand_agreement(&[1, 1, 2, 2], &[1, 1, 2, 3]), 5.0 / 6.0);
        assert_eq!(rand_agreement(&[1, 1, 1], &[1, 2, 3]), 0.0);
        assert_eq!(rand_agreement(&[7], &[3]), 1.0);
    }
}
