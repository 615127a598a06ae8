//! How reports are drawn, for the benchmark's report (`some report`) and
//! the simulation's (`some sim report`) alike: tables as aligned text or
//! HTML, HTML escaping, and the frame of an SVG chart with a value axis.
//! Each report decides what its tables and bars hold; this decides how
//! they look, once.

use std::fmt::Write as _;

/// One table of a report.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns of words, aligned left; the others are numbers.
    pub left: Vec<usize>,
    /// A row drawn out (the run among published rows), if any.
    pub highlight: Option<usize>,
}

impl Table {
    /// The table as text: a title line, then the header and rows in
    /// columns two spaces apart; "(none)" for no row.
    pub fn text(&self, out: &mut String) {
        let widths: Vec<usize> = (0..self.header.len())
            .map(|i| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(i))
                    .map(|c| c.chars().count())
                    .chain([self.header[i].chars().count()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |cells: &[String]| {
            let mut s = String::new();
            for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
                let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                if self.left.contains(&i) {
                    let _ = write!(s, "{c}{pad}  ");
                } else {
                    let _ = write!(s, "{pad}{c}  ");
                }
            }
            s.trim_end().to_string()
        };
        let _ = writeln!(out, "\n{}", self.title);
        let _ = writeln!(out, "{}", line(&self.header));
        if self.rows.is_empty() {
            out.push_str("(none)\n");
        }
        for row in &self.rows {
            let _ = writeln!(out, "{}", line(row));
        }
    }

    /// The table as HTML under an `<h2>` title; left columns carry class
    /// `w`, the highlighted row class `run` (see [`STYLE`]).
    pub fn html(&self, out: &mut String) {
        let class = |i: usize| if self.left.contains(&i) { " class=\"w\"" } else { "" };
        let _ = write!(out, "<h2>{}</h2><table><tr>", escape(&self.title));
        for (i, h) in self.header.iter().enumerate() {
            let _ = write!(out, "<th{}>{}</th>", class(i), escape(h));
        }
        out.push_str("</tr>");
        if self.rows.is_empty() {
            let _ = write!(out, "<tr><td class=\"w\" colspan=\"{}\">none</td></tr>", self.header.len());
        }
        for (r, row) in self.rows.iter().enumerate() {
            out.push_str(if self.highlight == Some(r) { "<tr class=\"run\">" } else { "<tr>" });
            for (i, c) in row.iter().enumerate() {
                let _ = write!(out, "<td{}>{}</td>", class(i), escape(c));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
    }
}

/// The style both reports' pages use for tables and legends.
pub const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#1a202c;max-width:60em}\
table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #cbd5e0;padding:2px 8px;text-align:right}\
td.w,th.w{text-align:left}tr.run{font-weight:bold;background:#ebf8ff}pre{background:#f7fafc;padding:1em}.legend{font-size:90%}";

/// At most `n` characters of `text`, the last of them an ellipsis where
/// the text was cut: for a long text in a table cell or a list line.
pub fn cut(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let kept: String = text.chars().take(n.saturating_sub(1)).collect();
    format!("{}…", kept.trim_end())
}

/// Text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The frame of an SVG chart: its size and the margins its axes take.
#[derive(Debug, Clone, Copy)]
pub struct Chart {
    pub width: f64,
    pub height: f64,
    /// Room for the value axis's numbers and name.
    pub left: f64,
    pub top: f64,
    /// Room for the category labels and the axis name.
    pub bottom: f64,
}

impl Chart {
    pub const DEFAULT: Chart = Chart { width: 720.0, height: 260.0, left: 48.0, top: 16.0, bottom: 40.0 };

    /// The opening tag, labelled for screen readers.
    pub fn open(&self, label: &str) -> String {
        format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" role=\"img\" aria-label=\"{}\">",
            escape(label),
            w = self.width,
            h = self.height
        )
    }

    /// The baseline of the bars.
    pub fn bottom_y(&self) -> f64 {
        self.height - self.bottom
    }

    /// Where `v` of a value axis from 0 to `max` is drawn.
    pub fn y(&self, v: f64, max: f64) -> f64 {
        let bottom = self.bottom_y();
        bottom - (bottom - self.top) * (v / max.max(f64::MIN_POSITIVE)).clamp(0.0, 1.0)
    }

    /// Both axes, the value axis from 0 to `max` (labelled at both ends),
    /// each with its name.
    pub fn axes(&self, svg: &mut String, max: f64, y_name: &str, x_name: &str) {
        let (left, top, width, height) = (self.left, self.top, self.width, self.height);
        let bottom = self.bottom_y();
        let middle = top + (bottom - top) / 2.0;
        let _ = write!(
            svg,
            "<line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{bottom}\" stroke=\"#4a5568\"/>\
<line x1=\"{left}\" y1=\"{bottom}\" x2=\"{width}\" y2=\"{bottom}\" stroke=\"#4a5568\"/>\
<text x=\"{0}\" y=\"{1}\" font-size=\"11\" text-anchor=\"end\">{max}</text>\
<text x=\"{0}\" y=\"{bottom}\" font-size=\"11\" text-anchor=\"end\">0</text>\
<text x=\"14\" y=\"{middle}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 {middle})\">{2}</text>\
<text x=\"{3:.1}\" y=\"{4:.1}\" font-size=\"12\" text-anchor=\"middle\">{5}</text>",
            left - 4.0,
            top + 4.0,
            escape(y_name),
            left + (width - left) / 2.0,
            height - 6.0,
            escape(x_name),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_text_keeps_n_characters_with_its_ellipsis() {
        assert_eq!(cut("微博用户的帖子", 7), "微博用户的帖子");
        assert_eq!(cut("微博用户的帖子", 4), "微博用…");
        assert_eq!(cut("one two three", 5), "one…", "no space before the ellipsis");
    }

    fn table() -> Table {
        Table {
            title: "Scores".into(),
            header: vec!["Model".into(), "RED".into()],
            rows: vec![vec!["this <run>".into(), "1.5".into()], vec!["GPT-4o".into(), "12.25".into()]],
            left: vec![0],
            highlight: Some(0),
        }
    }

    #[test]
    fn text_tables_align_words_left_and_numbers_right() {
        let mut out = String::new();
        table().text(&mut out);
        assert_eq!(out, "\nScores\nModel         RED\nthis <run>    1.5\nGPT-4o      12.25\n");
        let mut empty = String::new();
        Table { rows: Vec::new(), ..table() }.text(&mut empty);
        assert!(empty.ends_with("Model  RED\n(none)\n"), "{empty}");
    }

    #[test]
    fn html_tables_escape_cells_and_mark_words_and_the_run() {
        let mut out = String::new();
        table().html(&mut out);
        assert_eq!(
            out,
            "<h2>Scores</h2><table><tr><th class=\"w\">Model</th><th>RED</th></tr>\
<tr class=\"run\"><td class=\"w\">this &lt;run&gt;</td><td>1.5</td></tr><tr><td class=\"w\">GPT-4o</td><td>12.25</td></tr></table>"
        );
        assert_eq!(escape("a&'\""), "a&amp;&#39;&quot;");
    }

    #[test]
    fn a_chart_has_a_labelled_value_axis() {
        let c = Chart::DEFAULT;
        let mut svg = c.open("scores");
        c.axes(&mut svg, 100.0, "score", "task");
        assert!(svg.contains(">100</text>") && svg.contains(">0</text>") && svg.contains(">score</text>") && svg.contains(">task</text>"));
        assert_eq!((c.y(0.0, 100.0), c.y(100.0, 100.0), c.y(50.0, 100.0)), (220.0, 16.0, 118.0));
    }
}
