//! Dense-vector similarity, shared by the dynamic persona's relevance and
//! the recency × similarity ranker.

/// Cosine similarity; 0 when either vector is zero or the sizes differ.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 { 0.0 } else { dot / (na.sqrt() * nb.sqrt()) }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_zero_vector_or_a_size_mismatch_has_no_similarity() {
        assert_eq!(super::cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
        assert_eq!(super::cosine(&[1.0], &[1.0, 0.0]), 0.0);
        assert!((super::cosine(&[1.0, 0.0], &[1.0, 1.0]) - 0.5f64.sqrt()).abs() < 1e-12);
    }
}
