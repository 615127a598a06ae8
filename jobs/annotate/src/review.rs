//! Human review of model-made annotations, as the paper's annotators
//! checked every event summary and emotion label.
//!
//! Each model-made annotation is an [`Item`]: its editable fields, whether
//! it is kept, the source posts it came from and its provenance (pipeline,
//! model, prompt, votes, seed, reviewer). Items live beside the ground
//! truth they make (`annotations.jsonl` in the task folder, which the query
//! reader does not read), export as JSONL and CSV for annotators, and a
//! corrected file imports back: checked whole first (an unknown item, a
//! wrong label, a missing column, a truncated line refuses all of it,
//! naming the line and field), then each changed field is recorded (who,
//! when, old and new value) and the ground truth is made again from the items.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value, json};
use some_jobs::InputError;
use some_jobs::tasks::EMOTIONS;
use some_schemas::Task;

/// The file of items beside a task's ground truth.
pub const ITEMS_FILE: &str = "annotations.jsonl";

/// One model-made annotation.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Stable across exports: the query key and the annotation's place in it.
    pub id: String,
    /// The query it belongs to: a RED window key, a UEA user id.
    pub key: String,
    /// What an annotator may change, by column (see [`editable`]).
    pub fields: BTreeMap<String, String>,
    pub keep: bool,
    /// The posts it was made from.
    pub sources: Vec<String>,
    pub provenance: Map<String, Value>,
}

/// The columns an annotator may change, per task.
pub fn editable(task: Task) -> &'static [&'static str] {
    match task {
        Task::Red => &["标题", "摘要", "时间", "地点"],
        Task::Uea => &["weibo_id", "emotion"],
        _ => &[],
    }
}

impl Item {
    fn to_json(&self) -> Value {
        json!({"item": self.id, "key": self.key, "fields": self.fields, "keep": self.keep, "sources": self.sources, "provenance": self.provenance})
    }

    fn from_json(path: &Path, line: usize, v: &Value) -> Result<Item, InputError> {
        let at = |field: &str| format!("line {line}.{field}");
        let bad = |field: &str| InputError::new(path, at(field), "missing or of the wrong type");
        let text = |field: &str| v.get(field).and_then(Value::as_str).map(str::to_string).ok_or_else(|| bad(field));
        let fields = v.get("fields").and_then(Value::as_object).ok_or_else(|| bad("fields"))?;
        Ok(Item {
            id: text("item")?,
            key: text("key")?,
            fields: fields.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect(),
            keep: v.get("keep").and_then(Value::as_bool).ok_or_else(|| bad("keep"))?,
            sources: v
                .get("sources")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("sources"))?
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect(),
            provenance: v.get("provenance").and_then(Value::as_object).cloned().ok_or_else(|| bad("provenance"))?,
        })
    }
}

/// Writes the items, one JSON object a line.
pub fn items_jsonl(items: &[Item]) -> String {
    items.iter().map(|i| format!("{}\n", i.to_json())).collect()
}

/// Reads the items written by [`items_jsonl`].
pub fn read_items(path: &Path) -> Result<Vec<Item>, InputError> {
    let text = std::fs::read_to_string(path).map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let v: Value =
                serde_json::from_str(l).map_err(|e| InputError::new(path, format!("line {}", i + 1), format!("invalid JSON: {e}")))?;
            Item::from_json(path, i + 1, &v)
        })
        .collect()
}

/// The ground truth the kept items make, in the release's layout.
pub fn ground_truth(task: Task, items: &[Item]) -> Value {
    let mut per_key: Vec<(String, Vec<Value>)> = Vec::new();
    for item in items.iter().filter(|i| i.keep) {
        let entry: Map<String, Value> =
            editable(task).iter().map(|c| (c.to_string(), json!(item.fields.get(*c).cloned().unwrap_or_default()))).collect();
        match per_key.iter_mut().find(|(k, _)| *k == item.key) {
            Some((_, list)) => list.push(Value::Object(entry)),
            None => per_key.push((item.key.clone(), vec![Value::Object(entry)])),
        }
    }
    if task == Task::Red {
        per_key.sort_by(|a, b| a.0.cmp(&b.0));
    }
    Value::Object(per_key.into_iter().map(|(k, v)| (k, Value::Array(v))).collect())
}

/// The columns of an annotator file: the item, its query, the editable
/// fields, keep (yes or no), then what the annotator reads but does not edit.
fn columns(task: Task) -> Vec<&'static str> {
    let mut c = vec!["item", "key"];
    c.extend(editable(task));
    c.extend(["keep", "sources", "provenance"]);
    c
}

/// The items as JSONL for annotators.
pub fn export_jsonl(task: Task, items: &[Item]) -> String {
    items
        .iter()
        .map(|i| {
            let mut row = Map::new();
            row.insert("item".into(), json!(i.id));
            row.insert("key".into(), json!(i.key));
            for c in editable(task) {
                row.insert(c.to_string(), json!(i.fields.get(*c).cloned().unwrap_or_default()));
            }
            row.insert("keep".into(), json!(if i.keep { "yes" } else { "no" }));
            row.insert("sources".into(), json!(i.sources));
            row.insert("provenance".into(), Value::Object(i.provenance.clone()));
            format!("{}\n", Value::Object(row))
        })
        .collect()
}

/// The items as CSV for annotators (sources one per line in their cell).
pub fn export_csv(task: Task, items: &[Item]) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(columns(task)).expect("writing to memory");
    for i in items {
        let mut record = vec![i.id.clone(), i.key.clone()];
        record.extend(editable(task).iter().map(|c| i.fields.get(*c).cloned().unwrap_or_default()));
        record.push(if i.keep { "yes" } else { "no" }.into());
        record.push(i.sources.join("\n"));
        record.push(Value::Object(i.provenance.clone()).to_string());
        w.write_record(record).expect("writing to memory");
    }
    w.into_inner().expect("writing to memory")
}

/// One reviewed line: the item and its editable fields and keep, as the
/// annotator left them.
#[derive(Debug, Clone, PartialEq)]
pub struct Reviewed {
    pub item: String,
    pub fields: BTreeMap<String, String>,
    pub keep: bool,
}

/// Reads an annotator file (`.jsonl` or `.csv`) and checks every line
/// against the items; any fault refuses the whole file.
pub fn read_review(task: Task, path: &Path, items: &[Item]) -> Result<Vec<Reviewed>, InputError> {
    let bytes = std::fs::read(path).map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))?;
    let lines: Vec<(usize, BTreeMap<String, String>)> = match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl") => jsonl_lines(path, &bytes)?,
        Some("csv") => csv_lines(path, &bytes)?,
        _ => return Err(InputError::new(path, "", "expected a .jsonl or .csv file")),
    };
    if lines.is_empty() {
        return Err(InputError::new(path, "", "the file has no reviewed lines"));
    }
    let known: HashSet<&str> = items.iter().map(|i| i.id.as_str()).collect();
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for (line, row) in lines {
        let at = |field: &str| format!("line {line}.{field}");
        let field = |name: &str| row.get(name).cloned().ok_or_else(|| InputError::new(path, at(name), "required column is missing"));
        let item = field("item")?;
        if !known.contains(item.as_str()) {
            return Err(InputError::new(path, at("item"), format!("unknown item {item:?}: not one of this annotation's")));
        }
        if !seen.insert(item.clone()) {
            return Err(InputError::new(path, at("item"), format!("item {item:?} is reviewed twice")));
        }
        let keep = match field("keep")?.trim() {
            "yes" => true,
            "no" => false,
            other => return Err(InputError::new(path, at("keep"), format!("expected yes or no, found {other:?}"))),
        };
        let mut fields = BTreeMap::new();
        for c in editable(task) {
            let value = field(c)?.trim().to_string();
            if keep && value.is_empty() {
                return Err(InputError::new(path, at(c), "empty in a kept annotation"));
            }
            if *c == "emotion" && keep && !EMOTIONS.contains(&value.as_str()) {
                return Err(InputError::new(path, at(c), format!("unknown label {value:?}; expected one of {EMOTIONS:?}")));
            }
            fields.insert(c.to_string(), value);
        }
        out.push(Reviewed { item, fields, keep });
    }
    Ok(out)
}

/// A file's rows, each with its line number and its fields by column.
type Lines = Vec<(usize, BTreeMap<String, String>)>;

fn jsonl_lines(path: &Path, bytes: &[u8]) -> Result<Lines, InputError> {
    let text = std::str::from_utf8(bytes).map_err(|e| InputError::new(path, "", format!("not UTF-8: {e}")))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)
            .map_err(|e| InputError::new(path, format!("line {}", i + 1), format!("not a whole JSON object (truncated?): {e}")))?;
        let o = v.as_object().ok_or_else(|| InputError::new(path, format!("line {}", i + 1), "expected a JSON object"))?;
        let row = o
            .iter()
            .filter_map(|(k, v)| match v {
                Value::String(s) => Some((k.clone(), s.clone())),
                Value::Array(_) | Value::Object(_) => None,
                other => Some((k.clone(), other.to_string())),
            })
            .collect();
        out.push((i + 1, row));
    }
    Ok(out)
}

fn csv_lines(path: &Path, bytes: &[u8]) -> Result<Lines, InputError> {
    let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(bytes);
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| InputError::new(path, "line 1", format!("cannot read the header: {e}")))?
        .iter()
        .map(str::to_string)
        .collect();
    let mut out = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            InputError::new(path, format!("line {line}"), format!("not a whole CSV record (truncated?): {e}"))
        })?;
        let line = record.position().map_or(0, |p| p.line()) as usize;
        out.push((line, header.iter().cloned().zip(record.iter().map(str::to_string)).collect()));
    }
    Ok(out)
}

/// One recorded change.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub item: String,
    pub field: String,
    pub old: String,
    pub new: String,
}

/// Applies reviewed lines to the items; every changed field is a change,
/// and a reviewed item names its reviewer in its provenance.
pub fn apply(items: &mut [Item], reviewed: &[Reviewed], annotator: &str) -> Vec<Change> {
    let mut changes = Vec::new();
    for r in reviewed {
        let Some(item) = items.iter_mut().find(|i| i.id == r.item) else { continue };
        for (field, new) in &r.fields {
            let old = item.fields.get(field).cloned().unwrap_or_default();
            if old != *new {
                changes.push(Change { item: r.item.clone(), field: field.clone(), old, new: new.clone() });
                item.fields.insert(field.clone(), new.clone());
            }
        }
        if item.keep != r.keep {
            let word = |k: bool| if k { "yes" } else { "no" }.to_string();
            changes.push(Change { item: r.item.clone(), field: "keep".into(), old: word(item.keep), new: word(r.keep) });
            item.keep = r.keep;
        }
        item.provenance.insert("reviewer".into(), json!(annotator));
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items() -> Vec<Item> {
        let item = |id: &str, key: &str, emotion: &str| Item {
            id: id.into(),
            key: key.into(),
            fields: BTreeMap::from([("weibo_id".into(), "p1".into()), ("emotion".into(), emotion.into())]),
            keep: true,
            sources: vec!["想起外婆，眼眶又湿了".into()],
            provenance: Map::from_iter([("pipeline".into(), json!("uea")), ("model".into(), json!("m"))]),
        };
        vec![item("uea:1:0", "1", "悲伤"), item("uea:2:0", "2", "积极")]
    }

    fn write(dir: &Path, name: &str, body: &[u8]) -> std::path::PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, body).unwrap();
        path
    }

    #[test]
    fn an_exported_file_edited_and_imported_records_each_change() {
        let dir = tempfile::tempdir().unwrap();
        let mut items = items();
        for (name, body) in [("r.jsonl", export_jsonl(Task::Uea, &items).into_bytes()), ("r.csv", export_csv(Task::Uea, &items))] {
            let unchanged = read_review(Task::Uea, &write(dir.path(), name, &body), &items).unwrap();
            assert!(apply(&mut items.clone(), &unchanged, "ann").is_empty(), "{name}: an untouched file changes nothing");
        }
        let edited = export_csv(Task::Uea, &items);
        let edited = String::from_utf8(edited).unwrap().replacen("积极", "惊奇", 1).replacen(",yes,", ",no,", 1);
        let reviewed = read_review(Task::Uea, &write(dir.path(), "e.csv", edited.as_bytes()), &items).unwrap();
        let changes = apply(&mut items, &reviewed, "ann");
        assert_eq!(changes.len(), 2, "{changes:?}");
        assert_eq!(changes[0], Change { item: "uea:1:0".into(), field: "keep".into(), old: "yes".into(), new: "no".into() });
        assert_eq!((changes[1].field.as_str(), changes[1].old.as_str(), changes[1].new.as_str()), ("emotion", "积极", "惊奇"));
        assert_eq!(items[1].provenance["reviewer"], "ann");
        assert_eq!(ground_truth(Task::Uea, &items), json!({"2": [{"weibo_id": "p1", "emotion": "惊奇"}]}));
        let back = dir.path().join(ITEMS_FILE);
        std::fs::write(&back, items_jsonl(&items)).unwrap();
        assert_eq!(read_items(&back).unwrap(), items);
    }

    #[test]
    fn a_bad_annotator_file_is_refused_naming_the_line_and_field() {
        let dir = tempfile::tempdir().unwrap();
        let items = items();
        let good = export_jsonl(Task::Uea, &items);
        let first = good.lines().next().unwrap();
        for (name, body, at, says) in [
            ("a.jsonl", good.replacen("悲伤", "开心", 1), "line 1.emotion", "unknown label"),
            ("b.jsonl", good.replacen("uea:2:0", "uea:9:9", 1), "line 2.item", "unknown item"),
            ("c.jsonl", good.replacen("\"keep\":\"yes\",", "", 1), "line 1.keep", "missing"),
            ("d.jsonl", format!("{first}\n{}", &first[..first.len() / 2]), "line 2", "truncated"),
            ("e.csv", "item,key,weibo_id,keep\nuea:1:0,1,p1,yes\n".into(), "line 2.emotion", "missing"),
            ("f.csv", "item,key,weibo_id,emotion,keep\nuea:1:0,1,p1,悲伤\n".into(), "line 2", "truncated"),
            ("g.jsonl", format!("{first}\n{first}\n"), "line 2.item", "twice"),
        ] {
            let e = read_review(Task::Uea, &write(dir.path(), name, body.as_bytes()), &items).unwrap_err();
            assert_eq!(e.at, at, "{name}: {e}");
            assert!(e.message.contains(says), "{name}: {e}");
        }
    }
}
