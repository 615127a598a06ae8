//! The review file written, filled in and read back; every malformed file
//! refused whole with its line and field named; re-imports merged.

use std::path::Path;

use super::*;
use crate::evaluation::review::tests::rows;
use crate::evaluation::review::{ItemSources, items};

const HEADER: &str = "item_id,run_id,kind,annotator,rationality,reflection,informativeness,consistency,humanness,knowledge\n";

fn index() -> ReviewIndex {
    ReviewIndex::build(rows().rows()).unwrap()
}

/// Reads and checks `text` as the file `name`, as an import does.
fn import(name: &str, text: &str, annotator: Option<&str>) -> Result<Checked, String> {
    let path = Path::new(name);
    let lines = read(path, text.as_bytes()).map_err(|e| e.to_string())?;
    validate(path, &lines, &index(), "r", annotator, name).map_err(|e| e.to_string())
}

fn exported() -> Vec<ReviewItem> {
    let r = rows();
    let index = index();
    let memories = HashMap::new();
    let src = ItemSources { agents: &r.agents, posts: &r.posts, actions: &r.actions, memories: &memories, passages: None };
    let keys: Vec<_> = ["like:t1:a1:s1", "post_text:p1", "comment_text:p2"].iter().map(|id| index.get(id).unwrap()).collect();
    items(&keys, &src, "r").unwrap()
}

#[test]
fn the_export_has_the_kinds_score_columns_empty_and_reads_back_once_filled() {
    let items = exported();
    let jsonl = to_jsonl(&items).unwrap();
    let first: Map<String, Value> = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    let keys: Vec<&str> = first.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "item_id",
            "run_id",
            "kind",
            "stage",
            "turn",
            "agent_id",
            "username",
            "question",
            "persona",
            "target_post_id",
            "target_author",
            "target_text",
            "annotator",
            "rationality"
        ]
    );
    assert_eq!((first["rationality"].clone(), first["target_post_id"].clone()), (Value::Null, Value::from(0)));
    let post: Map<String, Value> = serde_json::from_str(jsonl.lines().nth(1).unwrap()).unwrap();
    let scores: Vec<&str> = post.keys().rev().take(4).map(String::as_str).collect();
    assert_eq!(scores, ["knowledge", "humanness", "consistency", "informativeness"]);
    assert_eq!(post["passages"], "[0] (passage not in the lake's knowledge now)", "no passage store given");

    let csv = String::from_utf8(to_csv(&items).unwrap()).unwrap();
    assert!(csv.starts_with("item_id,run_id,kind,stage,turn,agent_id,username,question,persona,persona_knowledge,target_post_id,target_author,target_text,post_id,text,topic,passages,followee,followee_persona,history,reflection_note,annotator,rationality,reflection,informativeness,consistency,humanness,knowledge\n"), "{csv}");
    assert_eq!(csv.lines().filter(|l| l.ends_with(",,n/a,n/a,n/a,n/a,n/a")).count(), 1, "the like: annotator and rationality empty");

    // Filled in as an annotator would: the spreadsheet's cells, the JSONL's nulls.
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(r.headers().unwrap()).unwrap();
    for (record, scores) in
        r.records().zip([["1", "n/a", "n/a", "n/a", "n/a", "n/a"], ["n/a", "n/a", "3", "2", "3", "1"], ["n/a", "n/a", "", "", "", "n/a"]])
    {
        let record = record.unwrap();
        let mut cells: Vec<&str> = record.iter().take(record.len() - 7).collect();
        cells.push("ann");
        cells.extend(scores);
        w.write_record(cells).unwrap();
    }
    let filled = String::from_utf8(w.into_inner().unwrap()).unwrap();
    let checked = import("review.csv", &filled, None).unwrap();
    assert_eq!(checked.unscored, 1, "the comment was left empty");
    let got: Vec<_> =
        checked.rows.iter().map(|r| (r.item_id.as_str(), r.annotator.as_str(), r.rationality, r.informativeness, r.knowledge)).collect();
    assert_eq!(got, [("like:t1:a1:s1", "ann", Some(1), None, None), ("post_text:p1", "ann", None, Some(3), Some(1))]);

    let filled = jsonl.replacen("\"rationality\":null", "\"rationality\":0", 1);
    let checked = import("review.jsonl", &filled, Some("bo")).unwrap();
    assert_eq!((checked.rows.len(), checked.unscored), (1, 2));
    assert_eq!(
        (checked.rows[0].annotator.as_str(), checked.rows[0].rationality, checked.rows[0].source.as_str()),
        ("bo", Some(0), "review.jsonl")
    );
}

#[test]
fn a_score_off_its_scale_is_refused_with_its_line_and_field() {
    let good = "like:t1:a1:s1,r,like,ann,1,n/a,n/a,n/a,n/a,n/a\n";
    let e = import("review.csv", &format!("{HEADER}{good}post_text:p1,r,post_text,ann,n/a,n/a,4,2,2,1\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 3, field informativeness: 4 is off the scale: Info is scored 1-3");
    let e = import("review.csv", &format!("{HEADER}like:t1:a1:s1,r,like,ann,2,n/a,n/a,n/a,n/a,n/a\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field rationality: 2 is off the scale: Rationality is scored 0-1");
    let e = import("review.csv", &format!("{HEADER}like:t1:a1:s1,r,like,ann,yes,n/a,n/a,n/a,n/a,n/a\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field rationality: \"yes\" is not a whole number");
    let e = import("review.jsonl", r#"{"item_id":"like:t1:a1:s1","run_id":"r","kind":"like","annotator":"a","rationality":0.5}"#, None)
        .unwrap_err();
    assert_eq!(e, "review.jsonl: at line 1, field rationality: 0.5 is not a whole number");
}

#[test]
fn an_unknown_item_a_wrong_kind_or_another_run_is_refused() {
    let good = "like:t1:a1:s1,r,like,ann,1,n/a,n/a,n/a,n/a,n/a\n";
    let e = import("review.csv", &format!("{HEADER}{good}like:t2:a1:s1,r,like,ann,1,n/a,n/a,n/a,n/a,n/a\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 3, field item_id: unknown item \"like:t2:a1:s1\": run r has no such reviewable item");
    let e = import("review.csv", &format!("{HEADER}like:t1:a1:s1,r,reblog,ann,1,n/a,n/a,n/a,n/a,n/a\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field kind: \"reblog\" is not the item's kind (like)");
    let e = import("review.csv", &format!("{HEADER}like:t1:a1:s1,s,like,ann,1,n/a,n/a,n/a,n/a,n/a\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field run_id: \"s\" is not the run imported to (r)");
    let e = import("review.csv", &format!("{HEADER}{good}{good}"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 3, field item_id: like:t1:a1:s1 is scored by ann on line 2 already");
}

#[test]
fn missing_or_unknown_columns_and_short_rows_are_refused() {
    let e = import("review.csv", "item_id,run_id,kind,annotator,rationality,reflection,informativeness,consistency,knowledge\n", None)
        .unwrap_err();
    assert_eq!(e, "review.csv: at line 1, field humanness: missing column");
    let e = import("review.csv", &format!("{}notes\n", HEADER.trim_end().to_string() + ","), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 1, field notes: unknown column");
    // A row cut short, as a truncated file leaves its last row.
    let e = import("review.csv", &format!("{HEADER}like:t1:a1:s1,r,like,ann,1,n/a,n/a"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field consistency: missing: the row has 7 fields, the header 10");
    let e = import("review.csv", &format!("{HEADER}like:t1:a1:s1,r,like,ann,1,n/a,n/a,n/a,n/a,n/a,1\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2: the row has 11 fields, the header 10");
    let line =
        r#"{"item_id":"post_text:p1","run_id":"r","kind":"post_text","annotator":"a","informativeness":2,"consistency":2,"humanness":2}"#;
    let e = import("review.jsonl", line, None).unwrap_err();
    assert_eq!(e, "review.jsonl: at line 1, field knowledge: missing column: a post_text item is scored on it");
    let e = import("review.jsonl", r#"{"item_id":"like:t1:a1:s1","run_id":"r","kind":"like","rationality":1}"#, None).unwrap_err();
    assert_eq!(e, "review.jsonl: at line 1, field annotator: missing column");
    assert_eq!(import("review.csv", HEADER, None).unwrap_err(), "review.csv: the file has no rows");
    assert_eq!(import("review.txt", HEADER, None).unwrap_err(), "review.txt: a review file is .jsonl or .csv");
}

#[test]
fn a_truncated_jsonl_line_is_refused_with_its_line() {
    let good = r#"{"item_id":"like:t1:a1:s1","run_id":"r","kind":"like","annotator":"a","rationality":1}"#;
    let e =
        import("review.jsonl", &format!("{good}\n{{\"item_id\":\"post_text:p1\",\"run_id\":\"r\",\"kind\":\"post_te\n"), None).unwrap_err();
    assert!(e.starts_with("review.jsonl: at line 2: is not one whole JSON object (a truncated line?): EOF while parsing a string"), "{e}");
}

#[test]
fn scores_a_kind_does_not_take_half_scored_rows_and_missing_annotators_are_refused() {
    let e = import("review.csv", &format!("{HEADER}comment_text:p2,r,comment_text,ann,n/a,n/a,2,2,2,1\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field knowledge: 1 given, but a comment_text item takes no knowledge score");
    let e = import("review.csv", &format!("{HEADER}post_text:p1,r,post_text,ann,,,2,,3,1\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field consistency: empty while the row's other scores are given: score all of them or none");
    let e = import("review.csv", &format!("{HEADER}like:t1:a1:s1,r,like,,1,,,,,\n"), None).unwrap_err();
    assert_eq!(e, "review.csv: at line 2, field annotator: empty: fill it in, or import with --annotator NAME");
    let ok = import("review.csv", &format!("{HEADER}like:t1:a1:s1,r,like,,1,,,,,\n"), Some("cy")).unwrap();
    assert_eq!(ok.rows[0].annotator, "cy");
}

fn scored(item: &str, annotator: &str, rationality: i32, at: i64) -> SimReviewRow {
    SimReviewRow {
        item_id: item.into(),
        kind: "like".into(),
        annotator: annotator.into(),
        rationality: Some(rationality),
        reflection: None,
        informativeness: None,
        consistency: None,
        humanness: None,
        knowledge: None,
        source: "f.csv".into(),
        imported_at: Timestamp(at),
        run_id: "r".into(),
    }
}

#[test]
fn a_reimport_stores_only_what_changed_and_the_latest_import_counts() {
    let first = merge(&[], vec![scored("a", "ann", 1, 0), scored("b", "ann", 0, 0)], Timestamp(100));
    assert_eq!((first.added, first.replaced, first.unchanged), (2, 0, 0));
    assert!(first.rows.iter().all(|r| r.imported_at == Timestamp(100)));
    let stored = first.rows.clone();

    let same = merge(&stored, vec![scored("a", "ann", 1, 0), scored("b", "ann", 0, 0)], Timestamp(100));
    assert_eq!((same.rows.len(), same.unchanged), (0, 2), "the same file again stores nothing");

    // The clock has not moved on: the new import is dated a second later.
    let changed = merge(&stored, vec![scored("a", "ann", 0, 0), scored("a", "bo", 1, 0)], Timestamp(100));
    assert_eq!((changed.added, changed.replaced, changed.unchanged), (1, 1, 0));
    assert!(changed.rows.iter().all(|r| r.imported_at == Timestamp(101)));
    let all = [stored, changed.rows].concat();
    let counted: Vec<_> = latest(&all).into_iter().map(|r| (r.item_id.as_str(), r.annotator.as_str(), r.rationality)).collect();
    assert_eq!(counted, [("a", "ann", Some(0)), ("a", "bo", Some(1)), ("b", "ann", Some(0))]);
}
