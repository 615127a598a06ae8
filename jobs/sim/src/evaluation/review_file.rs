//! The review file annotators fill in: written as JSONL and CSV
//! ([`to_jsonl`], [`to_csv`]), read back strictly ([`read`], [`validate`])
//! and turned into `sim_reviews` rows ([`merge`]).
//!
//! Columns: the item and its context ([`ReviewItem`]'s fields, in order),
//! then `annotator` and the score columns, named as `sim_reviews` names
//! them (`rationality`, `reflection`, `informativeness`, `consistency`,
//! `humanness`, `knowledge`). The scales are the paper's, per column: 0/1
//! for rationality, reflection (Ref) and knowledge (Know), 1-3 for the
//! three text-quality scores (the LLM judge's rubric). A JSONL line carries
//! only its kind's score keys; a CSV row has every score column, with
//! `n/a` where its kind takes no such score.
//!
//! Reading is all or nothing: the first wrong thing refuses the whole file
//! with an [`InputError`] naming the file, the line and the field (a score
//! off its scale, an item the run does not have, a kind that is not the
//! item's, a missing or unknown column, a truncated JSONL line, a CSV row
//! with fewer fields than its header, a score given to a kind that takes
//! none, the same item twice by one annotator). A row whose scores are all
//! empty was not reviewed and is skipped; one with some scores empty is an
//! error, so a half-done row never counts. Context columns are not read
//! back (a spreadsheet may rewrap them) and may be deleted; the identity
//! columns and the score columns may not.
//!
//! Re-imports: the table is append-only and the latest import of an
//! (item, annotator) counts. [`merge`] drops rows whose scores equal the
//! ones that count already, so importing a file twice stores it once, and
//! it dates an import a second past the run's latest if the clock has not
//! moved on, so "latest" is never a tie. A row left empty in a later file
//! does not withdraw earlier scores.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde_json::{Map, Value};
use some_schemas::Timestamp;
use some_schemas::sim::{ReviewKind, Score, SimReviewRow, sim_reviews};

use crate::evaluation::review::{ReviewIndex, ReviewItem};
use some_jobs::error::{Error, InputError};

/// What a CSV score cell holds where the item's kind takes no such score.
pub const NOT_APPLICABLE: &str = "n/a";
/// The identity columns every row must keep.
const IDENTITY: [&str; 4] = [sim_reviews::item_id, sim_reviews::run_id, sim_reviews::kind, sim_reviews::annotator];

/// A review file's format, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Csv,
}

impl Format {
    pub fn of(path: &Path) -> Result<Format, InputError> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("jsonl") => Ok(Format::Jsonl),
            Some("csv") => Ok(Format::Csv),
            _ => Err(InputError::new(path, "", "a review file is .jsonl or .csv")),
        }
    }
}

/// The item's fields as an ordered JSON object.
fn fields(item: &ReviewItem) -> Result<Map<String, Value>, Error> {
    match serde_json::to_value(item) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(Error::Invalid("a review item is not a JSON object".into())),
        Err(e) => Err(Error::Invalid(format!("review item {}: {e}", item.item_id))),
    }
}

fn kind_of(item: &ReviewItem) -> Result<ReviewKind, Error> {
    ReviewKind::parse(&item.kind).ok_or_else(|| Error::Invalid(format!("review item {}: unknown kind {:?}", item.item_id, item.kind)))
}

/// Every column of the CSV, in order.
pub fn columns() -> Result<Vec<String>, Error> {
    let mut out: Vec<String> = fields(&ReviewItem::default())?.keys().cloned().collect();
    out.extend(Score::ALL.iter().map(|s| s.column().to_string()));
    Ok(out)
}

/// One JSON object per line: the item's non-empty context, its annotator
/// and its kind's scores as nulls.
pub fn to_jsonl(items: &[ReviewItem]) -> Result<String, Error> {
    let mut out = String::new();
    for item in items {
        let mut map = fields(item)?;
        map.retain(|k, v| IDENTITY.contains(&k.as_str()) || !(v.is_null() || v.as_str() == Some("")));
        for s in kind_of(item)?.scores() {
            map.insert(s.column().to_string(), Value::Null);
        }
        out.push_str(&Value::Object(map).to_string());
        out.push('\n');
    }
    Ok(out)
}

/// The CSV, one row per item, every column.
pub fn to_csv(items: &[ReviewItem]) -> Result<Vec<u8>, Error> {
    let csv_error = |e: csv::Error| Error::Invalid(format!("writing the review CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(columns()?).map_err(csv_error)?;
    for item in items {
        let mut row: Vec<String> = fields(item)?
            .into_values()
            .map(|v| match v {
                Value::Null => String::new(),
                Value::String(s) => s,
                other => other.to_string(),
            })
            .collect();
        let scores = kind_of(item)?.scores();
        row.extend(Score::ALL.iter().map(|s| if scores.contains(s) { String::new() } else { NOT_APPLICABLE.to_string() }));
        w.write_record(row).map_err(csv_error)?;
    }
    w.into_inner().map_err(|e| Error::Invalid(format!("writing the review CSV: {e}")))
}

/// One row of a review file, read but not yet checked against the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Where the row starts in the file, from 1.
    pub line: u64,
    pub item_id: String,
    pub run_id: String,
    pub kind: String,
    pub annotator: String,
    /// The score columns the row has, each empty or on its scale.
    pub scores: BTreeMap<Score, Option<i32>>,
}

fn at(path: &Path, line: u64, field: &str, message: impl Into<String>) -> InputError {
    InputError::new(path, format!("line {line}, field {field}"), message)
}

/// A score cell: empty (or `n/a`), or a whole number on the score's scale.
fn score_text(score: Score, text: &str) -> Result<Option<i32>, String> {
    let t = text.trim();
    if t.is_empty() || t.eq_ignore_ascii_case(NOT_APPLICABLE) {
        return Ok(None);
    }
    let v: i32 = t.parse().map_err(|_| format!("{t:?} is not a whole number"))?;
    let (lo, hi) = score.range();
    if !(lo..=hi).contains(&v) {
        return Err(format!("{v} is off the scale: {} is scored {lo}-{hi}", score.label()));
    }
    Ok(Some(v))
}

fn score_json(score: Score, v: &Value) -> Result<Option<i32>, String> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => score_text(score, s),
        Value::Number(n) => match n.as_i64() {
            Some(i) => score_text(score, &i.to_string()),
            None => Err(format!("{n} is not a whole number")),
        },
        other => Err(format!("{other} is not a score")),
    }
}

/// Reads a review file of either format (by extension); see the module doc.
pub fn read(path: &Path, bytes: &[u8]) -> Result<Vec<Line>, InputError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let lines = match Format::of(path)? {
        Format::Jsonl => read_jsonl(path, bytes)?,
        Format::Csv => read_csv(path, bytes)?,
    };
    if lines.is_empty() {
        return Err(InputError::new(path, "", "the file has no rows"));
    }
    Ok(lines)
}

fn known_columns() -> Result<Vec<String>, InputError> {
    columns().map_err(|e| InputError::new("", "", e.to_string()))
}

fn read_jsonl(path: &Path, bytes: &[u8]) -> Result<Vec<Line>, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError::new(path, "", format!("is not UTF-8: {e}")))?;
    let known = known_columns()?;
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i as u64 + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let map: Map<String, Value> = serde_json::from_str(raw)
            .map_err(|e| InputError::new(path, format!("line {line}"), format!("is not one whole JSON object (a truncated line?): {e}")))?;
        if let Some(k) = map.keys().find(|k| !known.contains(k)) {
            return Err(at(path, line, k, "unknown column"));
        }
        let text = |field: &str| -> Result<String, InputError> {
            match map.get(field) {
                None => Err(at(path, line, field, "missing column")),
                Some(Value::Null) if field == sim_reviews::annotator => Ok(String::new()),
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(at(path, line, field, format!("{other} is not text"))),
            }
        };
        let mut scores = BTreeMap::new();
        for s in Score::ALL {
            if let Some(v) = map.get(s.column()) {
                scores.insert(s, score_json(s, v).map_err(|m| at(path, line, s.column(), m))?);
            }
        }
        out.push(Line {
            line,
            item_id: text(sim_reviews::item_id)?,
            run_id: text(sim_reviews::run_id)?,
            kind: text(sim_reviews::kind)?,
            annotator: text(sim_reviews::annotator)?,
            scores,
        });
    }
    Ok(out)
}

fn read_csv(path: &Path, bytes: &[u8]) -> Result<Vec<Line>, InputError> {
    let known = known_columns()?;
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| InputError::new(path, "line 1", format!("invalid CSV header: {e}")))?
        .iter()
        .map(String::from)
        .collect();
    let mut index: HashMap<&str, usize> = HashMap::new();
    for (i, h) in header.iter().enumerate() {
        if !known.contains(h) {
            return Err(at(path, 1, h, "unknown column"));
        }
        if index.insert(h, i).is_some() {
            return Err(at(path, 1, h, "duplicate column"));
        }
    }
    let required = IDENTITY.into_iter().chain(Score::ALL.iter().map(|s| s.column()));
    if let Some(missing) = required.into_iter().find(|c| !index.contains_key(c)) {
        return Err(at(path, 1, missing, "missing column"));
    }
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            InputError::new(path, format!("line {line}"), format!("invalid CSV: {e}"))
        })?;
        let line = record.position().map_or(0, |p| p.line());
        if record.len() < header.len() {
            let message = format!("missing: the row has {} fields, the header {}", record.len(), header.len());
            return Err(at(path, line, &header[record.len()], message));
        }
        if record.len() > header.len() {
            return Err(InputError::new(
                path,
                format!("line {line}"),
                format!("the row has {} fields, the header {}", record.len(), header.len()),
            ));
        }
        let cell = |c: &str| index.get(c).and_then(|i| record.get(*i)).unwrap_or_default().to_string();
        let mut scores = BTreeMap::new();
        for s in Score::ALL {
            scores.insert(s, score_text(s, &cell(s.column())).map_err(|m| at(path, line, s.column(), m))?);
        }
        out.push(Line {
            line,
            item_id: cell(sim_reviews::item_id),
            run_id: cell(sim_reviews::run_id),
            kind: cell(sim_reviews::kind),
            annotator: cell(sim_reviews::annotator),
            scores,
        });
    }
    Ok(out)
}

/// The scored rows of a file, checked against the run.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// Dated [`Timestamp`] 0 until [`merge`] dates them.
    pub rows: Vec<SimReviewRow>,
    /// Rows with every score empty: not reviewed, skipped.
    pub unscored: usize,
}

/// Checks every line against the run's items (see the module doc);
/// `annotator` fills empty annotator cells; `source` is what rows record
/// as their file.
pub fn validate(
    path: &Path,
    lines: &[Line],
    index: &ReviewIndex,
    run_id: &str,
    annotator: Option<&str>,
    source: &str,
) -> Result<Checked, InputError> {
    let mut rows = Vec::new();
    let mut unscored = 0;
    let mut seen: HashMap<(String, String), u64> = HashMap::new();
    for l in lines {
        let err = |field: &str, message: String| at(path, l.line, field, message);
        if l.run_id != run_id {
            return Err(err(sim_reviews::run_id, format!("{:?} is not the run imported to ({run_id})", l.run_id)));
        }
        let item = index
            .get(&l.item_id)
            .ok_or_else(|| err(sim_reviews::item_id, format!("unknown item {:?}: run {run_id} has no such reviewable item", l.item_id)))?;
        if l.kind != item.kind.as_str() {
            return Err(err(sim_reviews::kind, format!("{:?} is not the item's kind ({})", l.kind, item.kind.as_str())));
        }
        let wanted = item.kind.scores();
        let mut row = SimReviewRow {
            item_id: l.item_id.clone(),
            kind: item.kind.as_str().to_string(),
            annotator: String::new(),
            rationality: None,
            reflection: None,
            informativeness: None,
            consistency: None,
            humanness: None,
            knowledge: None,
            source: source.to_string(),
            imported_at: Timestamp(0),
            run_id: run_id.to_string(),
        };
        for s in Score::ALL {
            match (wanted.contains(&s), l.scores.get(&s)) {
                (true, None) => return Err(err(s.column(), format!("missing column: a {} item is scored on it", item.kind.as_str()))),
                (false, Some(Some(v))) => {
                    return Err(err(s.column(), format!("{v} given, but a {} item takes no {} score", item.kind.as_str(), s.column())));
                }
                (true, Some(v)) => s.set(&mut row, *v),
                (false, _) => {}
            }
        }
        let given: Vec<bool> = wanted.iter().map(|s| s.of(&row).is_some()).collect();
        if given.iter().all(|g| !g) {
            unscored += 1;
            continue;
        }
        if let Some(i) = given.iter().position(|g| !g) {
            return Err(err(wanted[i].column(), "empty while the row's other scores are given: score all of them or none".into()));
        }
        row.annotator = match (l.annotator.trim(), annotator) {
            ("", Some(a)) => a.to_string(),
            ("", None) => return Err(err(sim_reviews::annotator, "empty: fill it in, or import with --annotator NAME".into())),
            (a, _) => a.to_string(),
        };
        if let Some(first) = seen.insert((row.item_id.clone(), row.annotator.clone()), l.line) {
            return Err(err(sim_reviews::item_id, format!("{} is scored by {} on line {first} already", row.item_id, row.annotator)));
        }
        rows.push(row);
    }
    Ok(Checked { rows, unscored })
}

/// The rows that count: per (item, annotator), the latest import.
pub fn latest(rows: &[SimReviewRow]) -> Vec<&SimReviewRow> {
    let mut by: BTreeMap<(&str, &str), &SimReviewRow> = BTreeMap::new();
    for r in rows {
        let key = (r.item_id.as_str(), r.annotator.as_str());
        if by.get(&key).is_none_or(|l| r.imported_at >= l.imported_at) {
            by.insert(key, r);
        }
    }
    by.into_values().collect()
}

/// What an import stores.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    /// The rows to append, dated.
    pub rows: Vec<SimReviewRow>,
    /// Scores of (item, annotator) pairs not reviewed before.
    pub added: usize,
    /// Scores that replace different earlier ones.
    pub replaced: usize,
    /// Scores equal to the ones that count already: not stored again.
    pub unchanged: usize,
}

/// The rows of `incoming` that change what counts, dated `now` or a second
/// after the latest import of `existing`, whichever is later.
pub fn merge(existing: &[SimReviewRow], incoming: Vec<SimReviewRow>, now: Timestamp) -> Merge {
    let current: HashMap<(&str, &str), &SimReviewRow> =
        latest(existing).into_iter().map(|r| ((r.item_id.as_str(), r.annotator.as_str()), r)).collect();
    let at = existing.iter().map(|r| r.imported_at.0 + 1).fold(now.0, i64::max);
    let mut out = Merge { rows: Vec::new(), added: 0, replaced: 0, unchanged: 0 };
    for mut r in incoming {
        match current.get(&(r.item_id.as_str(), r.annotator.as_str())) {
            Some(c) if Score::ALL.iter().all(|s| s.of(c) == s.of(&r)) => {
                out.unchanged += 1;
                continue;
            }
            Some(_) => out.replaced += 1,
            None => out.added += 1,
        }
        r.imported_at = Timestamp(at);
        out.rows.push(r);
    }
    out
}

#[cfg(test)]
#[path = "review_file_tests.rs"]
mod tests;
