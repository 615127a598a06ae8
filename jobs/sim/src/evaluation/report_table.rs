//! The table cells both renderings of the report share ([`crate::evaluation::report_html`]
//! draws them; [`crate::evaluation::report_human`] builds its own with them), apart so
//! neither report module imports the other.

/// One table of the report, as both renderers print it.
pub(super) struct Table {
    pub(super) title: String,
    pub(super) header: Vec<String>,
    pub(super) rows: Vec<Vec<String>>,
    /// Columns of words, aligned left; the others are numbers.
    pub(super) left: &'static [usize],
}

pub(super) fn stage_label(stage: u32) -> String {
    if stage == 0 { "seeding".into() } else { format!("stage {stage}") }
}

pub(super) fn num(v: Option<f64>, places: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.places$}"))
}
