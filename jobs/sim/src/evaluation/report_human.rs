//! The report's human-evaluation section: the scores imported into
//! `sim_reviews` (`some sim review import`), averaged per stage and kind
//! like the paper's Table 1 (Rationality column), its Ref and Table 3, with
//! the published values beside them; and, where the LLM judge rated the
//! same texts, the Pearson correlation of human and judge scores.
//!
//! Choices:
//! - Only the latest import of each (item, annotator) counts
//!   (`review_file::latest`). A mean is over ratings, one per item and
//!   annotator, as the paper's are (its 3 annotators × 30 texts per stage
//!   give means in ninetieths).
//! - A correlation pairs, per text, the mean of its annotators' scores
//!   with the judge's score, per dimension (Info, Cons, Hum) for posts,
//!   comments and both. With fewer than [`MIN_PAIRS`] pairs, or a side
//!   whose scores do not vary, there is no r, and the reason is said.
//! - The paper's Table 1 gives stage two's reblog rationality as 0.022
//!   beside 0.622 for "not reblog" (and calls reblogs well scored); it is
//!   printed as published, with a note.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use some_schemas::sim::{ReviewKind, Score, SimReviewRow, sim_reviews};

use crate::evaluation::quality::Quality;
use crate::evaluation::quality::TextKind;
use crate::evaluation::report_table::{num, stage_label};
use crate::evaluation::review::ReviewIndex;
use crate::evaluation::review_file::latest;
use some_jobs::error::Error;
use some_jobs::render::Table;

/// Pairs below which a correlation is not given.
pub const MIN_PAIRS: usize = 3;

/// Table 1's Rationality column for the engaged rows: (stage, kind, value).
const PAPER_RATIONALITY: [(u32, ReviewKind, f64); 6] = [
    (1, ReviewKind::Like, 0.678),
    (1, ReviewKind::Reblog, 0.656),
    (1, ReviewKind::Comment, 0.544),
    (2, ReviewKind::Like, 0.778),
    (2, ReviewKind::Reblog, 0.022),
    (2, ReviewKind::Comment, 0.477),
];
/// The reflection score of the paper's "Results of Reflection", over both stages.
const PAPER_REF: f64 = 0.644;
/// Table 3: (stage, kind, Info, Cons, Hum, Know).
const PAPER_TABLE3: [(u32, ReviewKind, [Option<f64>; 4]); 4] = [
    (1, ReviewKind::CommentText, [Some(2.422), Some(1.922), Some(2.533), None]),
    (2, ReviewKind::CommentText, [Some(2.522), Some(2.011), Some(2.600), None]),
    (1, ReviewKind::PostText, [Some(2.733), Some(2.911), Some(2.600), Some(0.889)]),
    (2, ReviewKind::PostText, [Some(2.589), Some(2.944), Some(2.667), Some(0.778)]),
];
const TEXT_SCORES: [Score; 3] = [Score::Informativeness, Score::Consistency, Score::Humanness];

/// The human-evaluation section.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanReport {
    pub annotators: Vec<String>,
    /// Items with at least one rating.
    pub items: usize,
    pub groups: Vec<HumanGroup>,
    /// Empty when no judge rated texts.
    pub correlations: Vec<Correlation>,
    /// The judge the correlations are with, if one ran.
    pub judge: Option<String>,
}

/// The ratings of one stage's items of one kind.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanGroup {
    pub stage: u32,
    pub kind: ReviewKind,
    pub items: usize,
    /// One per score the kind takes, in [`ReviewKind::scores`] order.
    pub scores: Vec<ScoreMean>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoreMean {
    pub score: Score,
    /// Ratings (item × annotator).
    pub n: usize,
    pub mean: Option<f64>,
}

/// Human against judge on one dimension.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Correlation {
    /// `None`: posts and comments together.
    pub kind: Option<TextKind>,
    pub score: Score,
    /// Texts both rated.
    pub pairs: usize,
    pub r: Option<f64>,
    /// Why there is no r.
    pub why: Option<String>,
}

/// Pearson's r, or why there is none.
pub fn pearson(x: &[f64], y: &[f64]) -> Result<f64, String> {
    if x.len() != y.len() {
        return Err(format!("{} values against {}", x.len(), y.len()));
    }
    if x.len() < MIN_PAIRS {
        return Err(format!("{} pairs; needs at least {MIN_PAIRS}", x.len()));
    }
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum::<f64>().sqrt();
    let sy: f64 = y.iter().map(|b| (b - my).powi(2)).sum::<f64>().sqrt();
    match (sx > 0.0, sy > 0.0) {
        (false, _) => Err(format!("the human scores do not vary (all {mx})")),
        (_, false) => Err(format!("the judge's scores do not vary (all {my})")),
        _ => Ok(cov / (sx * sy)),
    }
}

fn judge_score(q: &Quality, s: Score) -> Option<f64> {
    match s {
        Score::Informativeness => Some(f64::from(q.informativeness)),
        Score::Consistency => Some(f64::from(q.consistency)),
        Score::Humanness => Some(f64::from(q.humanness)),
        _ => None,
    }
}

/// The section from the imported rows; `judged` are the judge's ratings by
/// post id, when a judge ran. A review of an item the run does not have
/// is an error: the rows contradict each other.
pub fn build(reviews: &[SimReviewRow], index: &ReviewIndex, judge: Option<(&str, &BTreeMap<i64, Quality>)>) -> Result<HumanReport, Error> {
    let rows = latest(reviews);
    let mut by_group: BTreeMap<(u32, ReviewKind), Vec<&SimReviewRow>> = BTreeMap::new();
    // Per text and dimension, the human scores.
    let mut per_text: BTreeMap<(i64, TextKind, Score), Vec<f64>> = BTreeMap::new();
    for r in &rows {
        let item = index.get(&r.item_id).ok_or_else(|| {
            Error::Invalid(format!(
                "{}: item {} of run {}: not an item of the run's committed turns",
                sim_reviews::TABLE,
                r.item_id,
                r.run_id
            ))
        })?;
        by_group.entry((item.stage, item.kind)).or_default().push(r);
        let text = match item.kind {
            ReviewKind::PostText => TextKind::Post,
            ReviewKind::CommentText => TextKind::Comment,
            _ => continue,
        };
        for s in TEXT_SCORES {
            if let (Some(post), Some(v)) = (item.post, s.of(r)) {
                per_text.entry((post, text, s)).or_default().push(f64::from(v));
            }
        }
    }
    let groups = by_group
        .into_iter()
        .map(|((stage, kind), rs)| HumanGroup {
            stage,
            kind,
            items: rs.iter().map(|r| &r.item_id).collect::<BTreeSet<_>>().len(),
            scores: kind
                .scores()
                .iter()
                .map(|s| {
                    let v: Vec<f64> = rs.iter().filter_map(|r| s.of(r)).map(f64::from).collect();
                    ScoreMean { score: *s, n: v.len(), mean: (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64) }
                })
                .collect(),
        })
        .collect();
    let mut correlations = Vec::new();
    if let Some((_, judged)) = judge {
        for kind in [Some(TextKind::Post), Some(TextKind::Comment), None] {
            for s in TEXT_SCORES {
                let (mut x, mut y) = (Vec::new(), Vec::new());
                for ((post, k, score), v) in &per_text {
                    let j = judged.get(post).and_then(|q| judge_score(q, *score));
                    if let (true, Some(j)) = (*score == s && kind.is_none_or(|kind| kind == *k), j) {
                        x.push(v.iter().sum::<f64>() / v.len() as f64);
                        y.push(j);
                    }
                }
                let r = pearson(&x, &y);
                correlations.push(Correlation { kind, score: s, pairs: x.len(), r: r.as_ref().ok().copied(), why: r.err() });
            }
        }
    }
    Ok(HumanReport {
        annotators: rows.iter().map(|r| r.annotator.clone()).collect::<BTreeSet<_>>().into_iter().collect(),
        items: rows.iter().map(|r| &r.item_id).collect::<BTreeSet<_>>().len(),
        groups,
        correlations,
        judge: judge.map(|(name, _)| name.to_string()),
    })
}

/// The notes the section adds to the report's caveats.
pub fn caveats(h: Option<&HumanReport>) -> Vec<String> {
    let Some(h) = h else {
        return vec![
            "No human scores: `some sim review export` writes items for annotators, `some sim review import` reads their scores.".into(),
        ];
    };
    let mut out = vec![format!(
        "Human scores are on the paper's scales (rationality, Ref and Know 0/1; Info, Cons and Hum 1-3); the paper's three annotators rated 30 agents' actions, 60 posts and 60 comments, ours {} annotator(s) rated {} items.",
        h.annotators.len(),
        h.items
    )];
    out.push(format!("The paper's Ref ({PAPER_REF}) is over both stages; it is shown beside each stage's. Its stage-two reblog rationality is printed as 0.022 beside 0.622 for \"not reblog\", likely a typo; shown as published."));
    if h.judge.is_none() {
        out.push("Human scores were not correlated with the LLM judge's: run the report with --judge-sample N (the judge then also rates every reviewed text).".into());
    }
    out
}

fn kind_label(k: ReviewKind) -> &'static str {
    match k {
        ReviewKind::PostText => "post",
        ReviewKind::CommentText => "comment",
        other => other.as_str(),
    }
}

/// The section's tables, in the report's layout.
pub(super) fn tables(h: &HumanReport) -> Vec<Table> {
    fn mean_of(g: &HumanGroup, s: Score) -> Option<&ScoreMean> {
        g.scores.iter().find(|m| m.score == s)
    }
    let mut actions = Vec::new();
    let mut texts = Vec::new();
    for g in &h.groups {
        let ratings = g.scores.first().map_or(0, |m| m.n);
        let head = vec![stage_label(g.stage), kind_label(g.kind).into(), g.items.to_string(), ratings.to_string()];
        match g.kind {
            ReviewKind::PostText | ReviewKind::CommentText => {
                let paper = PAPER_TABLE3.iter().find(|p| p.0 == g.stage && p.1 == g.kind).map(|p| p.2);
                let mut row = head;
                for s in [Score::Informativeness, Score::Consistency, Score::Humanness, Score::Knowledge] {
                    row.push(mean_of(g, s).map_or("-".into(), |m| num(m.mean, 3)));
                }
                row.extend((0..4).map(|i| num(paper.and_then(|p| p[i]), 3)));
                texts.push(row);
            }
            kind => {
                let paper = if kind == ReviewKind::Follow {
                    Some(PAPER_REF)
                } else {
                    PAPER_RATIONALITY.iter().find(|p| p.0 == g.stage && p.1 == kind).map(|p| p.2)
                };
                let mut row = head;
                row.push(g.scores.first().map_or("-".into(), |m| num(m.mean, 3)));
                row.push(num(paper, 3));
                actions.push(row);
            }
        }
    }
    let mut out = vec![
        Table {
            title: "Human evaluation: action rationality and Ref (follows), 0-1 (the paper's Table 1, Rationality column, and its Ref)"
                .into(),
            header: ["Stage", "Action", "Items", "Ratings", "Mean", "Paper"].map(String::from).to_vec(),
            rows: actions,
            left: vec![0, 1],
            highlight: None,
        },
        Table {
            title: "Human evaluation: text quality, Info/Cons/Hum 1-3 and Know 0-1 (the paper's Table 3)".into(),
            header: [
                "Stage",
                "Kind",
                "Items",
                "Ratings",
                "Info",
                "Cons",
                "Hum",
                "Know",
                "Paper Info",
                "Paper Cons",
                "Paper Hum",
                "Paper Know",
            ]
            .map(String::from)
            .to_vec(),
            rows: texts,
            left: vec![0, 1],
            highlight: None,
        },
    ];
    if let Some(judge) = &h.judge {
        out.push(Table {
            title: format!("Human scores against the LLM judge's ({judge}), Pearson r over texts both rated"),
            header: ["Kind", "Score", "Pairs", "r", "Why no r"].map(String::from).to_vec(),
            rows: h
                .correlations
                .iter()
                .map(|c| {
                    vec![
                        c.kind.map_or("post+comment", TextKind::as_str).into(),
                        c.score.label().into(),
                        c.pairs.to_string(),
                        num(c.r, 3),
                        c.why.clone().unwrap_or_default(),
                    ]
                })
                .collect(),
            left: vec![0, 1, 4],
            highlight: None,
        });
    }
    out
}

#[cfg(test)]
#[path = "report_human_tests.rs"]
mod tests;
