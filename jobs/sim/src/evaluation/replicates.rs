//! Replicates: one configuration run with several seeds, each figure of
//! the report given as the mean over the runs with a 95% interval (the t
//! interval of the mean over replicates; their number is small, so a
//! normal quantile would be too narrow). A Δ (engaged against not engaged)
//! whose interval holds 0 is flagged: across seeds, the run does not tell
//! its sign.
//!
//! Figures are the report's numbers read from its JSON, by path: the
//! tables of diversity, engagement, own posts, followers, actions per
//! stage and stage health (per-turn series and texts are left out). An
//! element of a table is named by its stage, kind, action and bin, so a
//! figure missing from one replicate (no comments in a stage, say) is
//! averaged over the replicates that have it, and says how many.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use some_jobs::render::Table;

/// The report's sections whose numbers are figures.
const SECTIONS: [&str; 6] = ["diversity", "engagement", "own_posts", "followers", "actions", "health"];
/// Fields left out: lists of texts and per-turn series.
const SKIPPED: [&str; 4] = ["per_turn", "top", "top_errors", "initial_edges"];
/// Fields that name an element of a table.
const KEYS: [&str; 5] = ["stage", "kind", "action", "lo", "hi"];

/// One figure across the replicates.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Figure {
    pub path: String,
    /// Replicates that have it.
    pub n: usize,
    pub mean: f64,
    /// `None` with one replicate.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// A Δ whose interval holds 0.
    pub spans_zero: bool,
}

fn leaves(path: &str, v: &Value, out: &mut BTreeMap<String, f64>) {
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.insert(path.to_string(), x);
            }
        }
        Value::Object(m) => {
            for (k, v) in m {
                if !SKIPPED.contains(&k.as_str()) && !KEYS.contains(&k.as_str()) {
                    leaves(&format!("{path}.{k}"), v, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let name: Vec<String> = item
                    .as_object()
                    .map(|m| {
                        KEYS.iter()
                            .filter_map(|k| m.get(*k).filter(|v| !v.is_null()).map(|v| format!("{k}={}", v.to_string().trim_matches('"'))))
                            .collect()
                    })
                    .unwrap_or_default();
                let name = if name.is_empty() { i.to_string() } else { name.join(",") };
                leaves(&format!("{path}[{name}]"), item, out);
            }
        }
        _ => {}
    }
}

/// The figures of one report's JSON, by path.
pub fn figures(report: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for s in SECTIONS {
        if let Some(v) = report.get(s) {
            leaves(s, v, &mut out);
        }
    }
    out
}

/// Student's t quantile for a two-sided 95% interval with `df` degrees of
/// freedom (1.96 past 30).
fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101,
        2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    T.get(df.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// Each figure's mean and interval over the replicates' reports.
pub fn aggregate(reports: &[Value]) -> Vec<Figure> {
    let mut by: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in reports {
        for (path, x) in figures(r) {
            by.entry(path).or_default().push(x);
        }
    }
    by.into_iter()
        .map(|(path, xs)| {
            let n = xs.len();
            let mean = xs.iter().sum::<f64>() / n as f64;
            let (low, high) = if n < 2 {
                (None, None)
            } else {
                let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt();
                let half = t975(n - 1) * sd / (n as f64).sqrt();
                (Some(mean - half), Some(mean + half))
            };
            let spans_zero = path.ends_with(".delta") && low.zip(high).is_some_and(|(l, h)| l <= 0.0 && h >= 0.0);
            Figure { path, n, mean, low, high, spans_zero }
        })
        .collect()
}

/// The figures as one table.
pub fn table(figures: &[Figure], replicates: usize) -> Table {
    let num = |x: Option<f64>| x.map_or_else(|| "-".into(), |x| format!("{x:.4}"));
    Table {
        title: format!("Figures over {replicates} replicates: mean and 95% t interval; Δs whose interval holds 0 are flagged"),
        header: ["Figure", "Replicates", "Mean", "Low", "High", "Flag"].map(String::from).to_vec(),
        left: vec![0, 5],
        highlight: None,
        rows: figures
            .iter()
            .map(|f| {
                vec![
                    f.path.clone(),
                    f.n.to_string(),
                    format!("{:.4}", f.mean),
                    num(f.low),
                    num(f.high),
                    if f.spans_zero { "spans 0".into() } else { String::new() },
                ]
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn report(delta: f64, likes: u64, comments: bool) -> Value {
        let mut engagement =
            vec![json!({"stage": 1, "action": "like", "engaged_count": 3, "tfidf": {"engaged": 0.5, "not_engaged": 0.4, "delta": delta}})];
        if comments {
            engagement.push(json!({"stage": 1, "action": "comment", "engaged_count": 1, "tfidf": {"delta": 0.2}}));
        }
        json!({
            "run": {"posts": 10},
            "engagement": engagement,
            "actions": {"per_stage": [{"stage": 1, "applied": {"like": likes}}], "per_turn": [{"turn": 1, "applied": {"like": 1}}]},
        })
    }

    #[test]
    fn figures_are_averaged_by_name_with_a_t_interval_and_unclear_deltas_are_flagged() {
        let reports = [report(0.1, 10, true), report(-0.05, 12, false), report(0.02, 14, true)];
        let f = aggregate(&reports);
        let get = |p: &str| f.iter().find(|x| x.path == p).unwrap_or_else(|| panic!("{p} not in {f:?}"));
        let likes = get("actions.per_stage[stage=1].applied.like");
        assert_eq!((likes.n, likes.mean), (3, 12.0));
        // sd 2, t(2) 4.303: 12 ± 4.303 · 2 / √3.
        assert!((likes.high.unwrap() - (12.0 + 4.303 * 2.0 / 3f64.sqrt())).abs() < 1e-9);
        assert!(get("engagement[stage=1,action=like].tfidf.delta").spans_zero);
        let comment = get("engagement[stage=1,action=comment].tfidf.delta");
        assert_eq!(comment.n, 2, "missing from one replicate");
        assert!(!comment.spans_zero, "0.2 twice: no spread");
        assert!(f.iter().all(|x| !x.path.starts_with("run") && !x.path.contains("per_turn")), "{f:?}");
    }
}
