//! MID from LIAR-RAW and RAWFC (Yang et al., COLING 2022): each claim
//! becomes a query with its verdict, each of its raw reports an entry of the
//! knowledge base the tools search.
//!
//! LIAR-RAW is one JSON list per split; RAWFC is a folder with one JSON
//! object per claim. Both give `event_id`, `claim`, `label` and `reports`
//! (each with `content` and `link`). RAWFC's verdicts are already SoMe's
//! (true, half, false); LIAR-RAW's six PolitiFact ratings map to them in
//! pairs (true and mostly-true: true; half-true and barely-true: half;
//! false and pants-fire: false). The reference published no mapping; this
//! one is inferred: the release's MID keys are LIAR ids (`11972.json`,
//! 1,251 of them, LIAR-RAW's test split) and RAWFC ids (200, its test
//! split), and LIAR's published test-split label counts folded this way,
//! plus RAWFC's three near-equal thirds, come close to the release's 510
//! true, 540 half, 401 false; no other folding of the ordered six comes close.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use some_jobs::InputError;
use some_jobs::json::{read_json, type_name};
use some_schemas::KnowledgeRow;

/// The two source formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    LiarRaw,
    Rawfc,
}

/// One claim read from a source.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub event_id: String,
    pub claim: String,
    /// SoMe's verdict: true, half or false.
    pub label: &'static str,
    /// (content, link) of each report.
    pub reports: Vec<(String, Option<String>)>,
    /// Where it was read, for errors: the file and the entry.
    pub from: (PathBuf, String),
}

/// SoMe's verdict for a source's label.
pub fn verdict(format: Format, label: &str) -> Option<&'static str> {
    match (format, label) {
        (_, "true") | (Format::LiarRaw, "mostly-true") => Some("true"),
        (Format::Rawfc, "half") | (Format::LiarRaw, "half-true" | "barely-true") => Some("half"),
        (_, "false") | (Format::LiarRaw, "pants-fire") => Some("false"),
        _ => None,
    }
}

/// Reads a LIAR-RAW split file (a JSON list of claims).
pub fn read_liar_raw(path: &Path) -> Result<Vec<Claim>, InputError> {
    let root = read_json(path)?;
    let list = root
        .as_array()
        .ok_or_else(|| InputError::new(path, "the top level", format!("expected a list of claims, found {}", type_name(&root))))?;
    list.iter().enumerate().map(|(i, v)| claim(Format::LiarRaw, path, &format!("[{i}]"), v)).collect()
}

/// Reads a RAWFC split: a folder of per-claim JSON files (or one such file).
pub fn read_rawfc(path: &Path) -> Result<Vec<Claim>, InputError> {
    let files = if path.is_dir() {
        let mut files: Vec<PathBuf> = std::fs::read_dir(path)
            .map_err(|e| InputError::new(path, "", format!("cannot list: {e}")))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(InputError::new(path, "", "no .json claim files in the folder"));
        }
        files
    } else {
        vec![path.to_path_buf()]
    };
    files.iter().map(|f| claim(Format::Rawfc, f, "the top level", &read_json(f)?)).collect()
}

fn claim(format: Format, path: &Path, at: &str, v: &Value) -> Result<Claim, InputError> {
    let o = v.as_object().ok_or_else(|| InputError::new(path, at, format!("expected a claim object, found {}", type_name(v))))?;
    let text = |o: &Map<String, Value>, at: &str, name: &str| -> Result<String, InputError> {
        match o.get(name) {
            Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
            Some(Value::Number(n)) if name == "event_id" => Ok(n.to_string()),
            Some(other) => {
                Err(InputError::new(path, format!("{at}.{name}"), format!("expected a non-empty string, found {}", type_name(other))))
            }
            None => Err(InputError::new(path, format!("{at}.{name}"), "required field is missing")),
        }
    };
    let label = text(o, at, "label")?;
    let label = verdict(format, &label).ok_or_else(|| {
        let known = match format {
            Format::LiarRaw => "true, mostly-true, half-true, barely-true, false, pants-fire",
            Format::Rawfc => "true, half, false",
        };
        InputError::new(path, format!("{at}.label"), format!("unknown verdict {label:?}; expected one of {known}"))
    })?;
    let reports_at = format!("{at}.reports");
    let reports = match o.get("reports") {
        Some(Value::Array(list)) => list,
        Some(other) => return Err(InputError::new(path, &reports_at, format!("expected a list, found {}", type_name(other)))),
        None => return Err(InputError::new(path, &reports_at, "required field is missing")),
    };
    let mut kept = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        let at = format!("{reports_at}[{i}]");
        let r = r.as_object().ok_or_else(|| InputError::new(path, &at, format!("expected a report object, found {}", type_name(r))))?;
        // An empty report (a page that could not be fetched) has nothing to retrieve.
        let Some(content) = r.get("content").and_then(Value::as_str).filter(|c| !c.trim().is_empty()) else { continue };
        let link = r.get("link").and_then(Value::as_str).filter(|l| !l.is_empty()).map(str::to_string);
        kept.push((content.to_string(), link));
    }
    Ok(Claim {
        event_id: text(o, at, "event_id")?,
        claim: text(o, at, "claim")?,
        label,
        reports: kept,
        from: (path.to_path_buf(), at.to_string()),
    })
}

/// MID's ground truth and knowledge base from the claims of every source.
#[derive(Debug, Clone)]
pub struct Imported {
    /// `{event_id: {"claim", "label"}}`, the release's layout.
    pub ground_truth: Value,
    pub knowledge: Vec<KnowledgeRow>,
    pub per_label: BTreeMap<&'static str, usize>,
}

/// Merges claims (in the order given) into one set; an event id seen twice
/// is an error naming both places.
pub fn merge(claims: Vec<Claim>) -> Result<Imported, InputError> {
    let mut seen: HashMap<String, (PathBuf, String)> = HashMap::new();
    let mut ground_truth = Map::new();
    let mut knowledge = Vec::new();
    let mut per_label = BTreeMap::new();
    for c in claims {
        if let Some((file, at)) = seen.get(&c.event_id) {
            return Err(InputError::new(
                &c.from.0,
                format!("{}.event_id", c.from.1),
                format!("event id {:?} is also at {} {at}: every claim needs its own id", c.event_id, file.display()),
            ));
        }
        seen.insert(c.event_id.clone(), c.from.clone());
        *per_label.entry(c.label).or_default() += 1;
        ground_truth.insert(c.event_id, json!({"claim": c.claim, "label": c.label}));
        for (content, link) in c.reports {
            knowledge.push(KnowledgeRow { doc_index: knowledge.len() as i64, content, link, extra: None });
        }
    }
    if ground_truth.is_empty() {
        return Err(InputError::new("", "", "no claims were read"));
    }
    Ok(Imported { ground_truth: Value::Object(ground_truth), knowledge, per_label })
}

/// The knowledge base in the release's `knowledge_base.json` layout.
pub fn knowledge_json(rows: &[KnowledgeRow]) -> Value {
    Value::Array(rows.iter().map(|k| json!({"content": k.content, "link": k.link})).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn liar(dir: &Path, body: &str) -> PathBuf {
        let path = dir.join("test.json");
        std::fs::write(&path, body).unwrap();
        path
    }

    #[test]
    fn every_source_verdict_maps_to_one_of_the_three() {
        for (format, label, want) in [
            (Format::LiarRaw, "mostly-true", "true"),
            (Format::LiarRaw, "barely-true", "half"),
            (Format::LiarRaw, "pants-fire", "false"),
            (Format::Rawfc, "half", "half"),
        ] {
            assert_eq!(verdict(format, label), Some(want), "{label}");
        }
        assert_eq!(verdict(Format::Rawfc, "mostly-true"), None, "RAWFC has only three verdicts");
        assert_eq!(verdict(Format::LiarRaw, "half"), None);
    }

    #[test]
    fn both_formats_merge_into_queries_and_a_knowledge_base() {
        let dir = tempfile::tempdir().unwrap();
        let liar_file = liar(
            dir.path(),
            r#"[{"event_id": "11972.json", "claim": "A wall takes years.", "label": "mostly-true", "explain": "",
                 "reports": [{"content": "Experts say years.", "link": "http://a"}, {"content": " ", "link": "http://dead"}]}]"#,
        );
        let rawfc = dir.path().join("rawfc");
        std::fs::create_dir(&rawfc).unwrap();
        std::fs::write(
            rawfc.join("195391.json"),
            r#"{"event_id": 195391, "claim": "Pigs fly.", "label": "false", "reports": [{"content": "They do not."}]}"#,
        )
        .unwrap();
        let mut claims = read_liar_raw(&liar_file).unwrap();
        claims.extend(read_rawfc(&rawfc).unwrap());
        let imported = merge(claims).unwrap();
        assert_eq!(
            imported.ground_truth,
            json!({"11972.json": {"claim": "A wall takes years.", "label": "true"}, "195391": {"claim": "Pigs fly.", "label": "false"}})
        );
        assert_eq!(imported.knowledge.len(), 2, "the empty report is left out");
        assert_eq!((imported.knowledge[1].doc_index, imported.knowledge[1].link.as_deref()), (1, None));
    }

    #[test]
    fn a_bad_claim_is_refused_naming_where() {
        let dir = tempfile::tempdir().unwrap();
        for (body, at, says) in [
            (r#"[{"event_id": "1", "claim": "c", "label": "half", "reports": []}]"#, "[0].label", "unknown verdict"),
            (r#"[{"event_id": "1", "label": "true", "reports": []}]"#, "[0].claim", "missing"),
            (r#"[{"event_id": "1", "claim": "c", "label": "true", "reports": 3}]"#, "[0].reports", "expected a list"),
            (r#"{"event_id": "1"}"#, "the top level", "expected a list of claims"),
        ] {
            let e = read_liar_raw(&liar(dir.path(), body)).unwrap_err();
            assert_eq!(e.at, at, "{e}");
            assert!(e.message.contains(says), "{e}");
        }
        let one = r#"[{"event_id": "1", "claim": "c", "label": "true", "reports": []}]"#;
        let mut twice = read_liar_raw(&liar(dir.path(), one)).unwrap();
        twice.extend(twice.clone());
        assert!(merge(twice).unwrap_err().message.contains("is also at"));
    }
}
