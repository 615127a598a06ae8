//! Splitting a total over items with minimums and weights.

/// Gives each item its minimum, then the rest of `total` in proportion to
/// `weights` (largest remainder, ties to the earlier item), so the parts sum
/// to `total` exactly.
pub fn apportion(total: u64, weights: &[f64], minimums: &[u64]) -> Result<Vec<u64>, String> {
    assert_eq!(weights.len(), minimums.len(), "one weight per minimum");
    let floor: u64 = minimums.iter().sum();
    if floor > total {
        return Err(format!("the required data ({floor}) exceeds the volume asked for ({total})"));
    }
    let rest = total - floor;
    let weight_sum: f64 = weights.iter().sum();
    if weights.is_empty() || weight_sum <= 0.0 {
        if rest > 0 {
            return Err(format!("nothing to spread {rest} items over"));
        }
        return Ok(minimums.to_vec());
    }
    let shares: Vec<f64> = weights.iter().map(|w| w / weight_sum * rest as f64).collect();
    let mut parts: Vec<u64> = shares.iter().map(|s| s.floor() as u64).collect();
    let mut left = rest - parts.iter().sum::<u64>();
    let mut order: Vec<usize> = (0..parts.len()).collect();
    order.sort_by(|&a, &b| (shares[b] - shares[b].floor()).total_cmp(&(shares[a] - shares[a].floor())).then(a.cmp(&b)));
    for i in order {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    Ok(parts.iter().zip(minimums).map(|(p, m)| p + m).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_respect_minimums_and_sum_exactly() {
        let parts = apportion(100, &[1.0, 1.0, 2.0], &[0, 30, 0]).unwrap();
        assert_eq!(parts, vec![18, 47, 35]);
        assert_eq!(parts.iter().sum::<u64>(), 100);
        assert!(apportion(10, &[1.0], &[11]).unwrap_err().contains("exceeds"));
        assert_eq!(apportion(5, &[], &[]).unwrap_err(), "nothing to spread 5 items over");
    }
}
