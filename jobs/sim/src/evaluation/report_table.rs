//! The cells both the report's tables and the human evaluation's write
//! (drawn by `some_jobs::render`), apart so neither report module imports
//! the other.

pub(super) fn stage_label(stage: u32) -> String {
    if stage == 0 { "seeding".into() } else { format!("stage {stage}") }
}

pub(super) fn num(v: Option<f64>, places: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.places$}"))
}
