//! Random and majority-class baselines of the label tasks, from the labels
//! of the queries actually evaluated.

use std::collections::BTreeMap;

use some_schemas::Task;

use crate::tasks::task_def;

#[derive(Debug, Clone, PartialEq)]
pub struct Baseline {
    /// Expected accuracy of a uniform random guess among the task's labels.
    pub random: f64,
    /// Accuracy of always answering the most frequent label.
    pub majority: f64,
    pub majority_label: String,
}

pub fn baselines<'a>(task: Task, labels: impl IntoIterator<Item = &'a str>) -> Option<Baseline> {
    let space = task_def(task).labels()?;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut n = 0usize;
    for l in labels {
        *counts.entry(l).or_default() += 1;
        n += 1;
    }
    if n == 0 {
        return None;
    }
    // Ties go to the label listed first in the task's label space.
    let (majority_label, majority) =
        space.iter().map(|l| (*l, counts.get(l).copied().unwrap_or(0))).fold(("", 0), |best, c| if c.1 > best.1 { c } else { best });
    Some(Baseline {
        random: 100.0 / space.len() as f64,
        majority: 100.0 * majority as f64 / n as f64,
        majority_label: majority_label.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baselines_follow_the_label_counts() {
        let b = baselines(Task::Uea, ["积极", "积极", "悲伤", "无情绪"]).unwrap();
        assert_eq!((b.random, b.majority, b.majority_label.as_str()), (100.0 / 6.0, 50.0, "积极"));
        let b = baselines(Task::Mcr, ["是", "否"]).unwrap();
        assert_eq!((b.random, b.majority, b.majority_label.as_str()), (50.0, 50.0, "是"));
        assert_eq!(baselines(Task::Red, ["x"]), None);
        assert_eq!(baselines(Task::Mid, []), None);
    }
}
