//! Percentile bootstrap intervals (95%): paired, for two runs measured on
//! the same units (queries, turns, agents), and of one statistic of one
//! sample. Resamples come from the caller's seeded generator, so a
//! comparison prints the same interval every time.

use rand::Rng;

/// Two means, their difference, and the difference's 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Delta {
    pub baseline: f64,
    pub run: f64,
    pub delta: f64,
    pub low: f64,
    pub high: f64,
}

impl Delta {
    /// Whether the interval holds 0: the runs may not differ.
    pub fn spans_zero(&self) -> bool {
        self.low <= 0.0 && self.high >= 0.0
    }
}

/// A statistic and its 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Interval {
    pub value: f64,
    pub low: f64,
    pub high: f64,
}

fn percentile_interval(mut draws: Vec<f64>) -> (f64, f64) {
    draws.sort_by(f64::total_cmp);
    let at = |q: f64| draws[((draws.len() - 1) as f64 * q).round() as usize];
    (at(0.025), at(0.975))
}

/// Paired bootstrap of the mean difference `run - baseline` over `pairs`
/// (baseline, run): `resamples` resamples of the pairs with replacement.
/// `pairs` must not be empty.
pub fn paired(pairs: &[(f64, f64)], resamples: usize, rng: &mut impl Rng) -> Delta {
    let n = pairs.len();
    let mean = |f: &dyn Fn(&(f64, f64)) -> f64| pairs.iter().map(f).sum::<f64>() / n as f64;
    let (baseline, run) = (mean(&|p| p.0), mean(&|p| p.1));
    let diffs: Vec<f64> = pairs.iter().map(|(b, r)| r - b).collect();
    let means = (0..resamples.max(1)).map(|_| (0..n).map(|_| diffs[rng.random_range(0..n)]).sum::<f64>() / n as f64).collect();
    let (low, high) = percentile_interval(means);
    Delta { baseline, run, delta: run - baseline, low, high }
}

/// `statistic` of `sample` and its interval over `resamples` resamples
/// with replacement; `None` where the statistic is undefined on the sample.
pub fn of<T: Clone>(sample: &[T], statistic: impl Fn(&[T]) -> Option<f64>, resamples: usize, rng: &mut impl Rng) -> Option<Interval> {
    let value = statistic(sample)?;
    let n = sample.len();
    let draws: Vec<f64> = (0..resamples.max(1))
        .filter_map(|_| statistic(&(0..n).map(|_| sample[rng.random_range(0..n)].clone()).collect::<Vec<T>>()))
        .collect();
    if draws.is_empty() {
        return None;
    }
    let (low, high) = percentile_interval(draws);
    Some(Interval { value, low, high })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn a_constant_difference_has_a_point_interval_and_noise_widens_it() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let same: Vec<(f64, f64)> = (0..20).map(|i| (f64::from(i), f64::from(i) + 2.0)).collect();
        let d = paired(&same, 500, &mut rng);
        assert_eq!((d.delta, d.low, d.high), (2.0, 2.0, 2.0));
        assert!(!d.spans_zero());
        let noisy: Vec<(f64, f64)> = (0..20).map(|i| (0.0, if i % 2 == 0 { 1.0 } else { -1.0 })).collect();
        let d = paired(&noisy, 500, &mut rng);
        assert!(d.low < 0.0 && d.high > 0.0 && d.spans_zero(), "{d:?}");
        let mean = |s: &[f64]| (!s.is_empty()).then(|| s.iter().sum::<f64>() / s.len() as f64);
        let i = of(&[1.0, 2.0, 3.0, 4.0], mean, 500, &mut rng).unwrap();
        assert!(i.low >= 1.0 && i.high <= 4.0 && i.low < i.value && i.value < i.high, "{i:?}");
        assert!(of(&[] as &[f64], mean, 10, &mut rng).is_none());
    }
}
