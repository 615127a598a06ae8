//! Pearson's r on pairs worked out by hand, and why there is none.

use super::*;

fn r(x: &[f64], y: &[f64]) -> f64 {
    pearson(x, y).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn pearson_gives_the_hand_worked_values() {
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // Deviations (-1.5, -0.5, 0.5, 1.5) and (-0.5, -1.5, 1.5, 0.5): covariance 3, both norms sqrt(5).
    assert!(close(r(&[1.0, 2.0, 3.0, 4.0], &[2.0, 1.0, 4.0, 3.0]), 0.6));
    assert!(close(r(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), -1.0));
    assert!(close(r(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]), 1.0));
    // Deviations (-1, 0, 1) and (2/3, 2/3, -4/3): r = -2 / (sqrt(2) * sqrt(24) / 3) = -sqrt(3) / 2.
    assert!(close(r(&[1.0, 2.0, 3.0], &[3.0, 3.0, 1.0]), -(3f64.sqrt()) / 2.0));
}

#[test]
fn too_few_pairs_or_scores_that_do_not_vary_give_no_r_and_say_why() {
    assert_eq!(pearson(&[1.0, 2.0], &[1.0, 3.0]), Err("2 pairs; needs at least 3".to_string()));
    assert_eq!(pearson(&[], &[]), Err("0 pairs; needs at least 3".to_string()));
    assert_eq!(pearson(&[1.0, 2.0, 3.0], &[2.0, 2.0, 2.0]), Err("the judge's scores do not vary (all 2)".to_string()));
    assert_eq!(pearson(&[3.0, 3.0, 3.0], &[1.0, 2.0, 2.0]), Err("the human scores do not vary (all 3)".to_string()));
    assert_eq!(pearson(&[1.0, 2.0, 3.0], &[1.0, 2.0]), Err("3 values against 2".to_string()));
}

#[test]
fn without_reviews_the_caveat_says_how_to_get_them() {
    let c = caveats(None);
    assert_eq!(c.len(), 1);
    assert!(c[0].starts_with("No human scores: `some sim review export`"), "{c:?}");
}
