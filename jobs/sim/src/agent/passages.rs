//! General-knowledge passages for the knowledge boundary: a strict JSONL
//! reader and the corpus built into the binary.
//!
//! The paper's agents retrieve Wikipedia paragraphs (HotpotQA) and adopt
//! one only when it is close to the persona's knowledge. HotpotQA's
//! paragraphs are hundreds of megabytes and not in the repository, and the
//! lake's knowledge reports are fact-checks of misinformation, the wrong
//! kind of text; so:
//!
//! - [`load_passages`] reads any corpus written as JSONL, one
//!   `{"title": ..., "text": ...}` object per line, so a user can bring
//!   Wikipedia paragraphs of their own;
//! - [`builtin_passages`] is a corpus every machine can have: WordNet
//!   3.0's noun glosses (short encyclopedic definitions, people, places
//!   and events included), generated from Debian's `wordnet-base` by
//!   `infra/gen-knowledge.py` into the cache (`ensure_knowledge` in
//!   `infra/env.sh`, which the build runs); `infra/knowledge.md` says what
//!   was kept and its licence.
//!
//! The reader is strict and whole: a simulation that silently ran on half a
//! corpus would report a knowledge boundary it never had, so any bad line
//! refuses the file, naming the line, the field and what was wrong. Blank
//! lines are skipped; an `"id"` key is allowed and ignored (corpora often
//! carry one); an empty title is allowed (untitled paragraphs), an empty
//! text is not (there would be nothing to adopt). A `*.zst` file is
//! decompressed first.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::agent::knowledge::PassageStore;
use some_jobs::error::InputError;
use some_jobs::json::{describe, parse_strict, read_file, type_name};

/// What the built-in corpus is, for reports and help text.
pub const BUILTIN_PASSAGES: &str = "WordNet 3.0 noun glosses, 61046 passages";

/// The built-in corpus's file under the cache folder.
const BUILTIN_FILE: &str = "knowledge/wordnet-nouns.jsonl";

/// The keys a passage line may have.
const KEYS: [&str; 3] = ["title", "text", "id"];

/// Reads a JSONL passage file (plain, or zstd-compressed if it ends in
/// `.zst`), refusing it whole at its first bad line.
pub fn load_passages(path: &Path) -> Result<PassageStore, InputError> {
    read_passages(path, &read_file(path)?)
}

/// The built-in general-knowledge corpus ([`BUILTIN_PASSAGES`]), read
/// from [`builtin_passages_path`]. It is read and indexed on each call,
/// about 2.7 s of CPU in a debug build (most of it the BM25 index's
/// tokenizing): build it once per process.
pub fn builtin_passages() -> Result<PassageStore, InputError> {
    builtin_from(&builtin_passages_path())
}

/// The built-in corpus at `path`; its absence is named with the cure.
fn builtin_from(path: &Path) -> Result<PassageStore, InputError> {
    if !path.is_file() {
        return Err(InputError::new(
            path,
            "",
            "the built-in knowledge corpus is not installed: run `source infra/env.sh && ensure_knowledge` \
             (it installs Debian's wordnet-base and runs infra/gen-knowledge.py), or choose another --knowledge",
        ));
    }
    load_passages(path)
}

/// Where the built-in corpus lives: `$SOME_CACHE/knowledge/`, else
/// `~/.cache/some/knowledge/`, as `infra/gen-knowledge.py` writes it.
pub fn builtin_passages_path() -> PathBuf {
    let cache = match std::env::var_os("SOME_CACHE") {
        Some(cache) if !cache.is_empty() => PathBuf::from(cache),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/some"),
    };
    cache.join(BUILTIN_FILE)
}

/// Reads JSONL passage lines; `path` names the source in errors.
fn read_passages(path: &Path, bytes: &[u8]) -> Result<PassageStore, InputError> {
    let mut items = Vec::new();
    for (n, raw) in bytes.split(|b| *b == b'\n').enumerate() {
        let at = format!("line {}", n + 1);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value = parse_strict(raw).map_err(|e| InputError { at: format!("{at} column {}", e.column()), ..describe(path, &e) })?;
        items.push(passage(path, &at, &value)?);
    }
    if items.is_empty() {
        return Err(InputError::new(path, "", "no passage: the file has no non-blank line"));
    }
    Ok(PassageStore::new(items))
}

/// The (title, text) of one line's object.
fn passage(path: &Path, at: &str, value: &Value) -> Result<(String, String), InputError> {
    let obj = value.as_object().ok_or_else(|| InputError::new(path, at, format!("expected an object, found {}", type_name(value))))?;
    if let Some(k) = obj.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(InputError::new(path, at, format!("unknown key {k:?} (a passage has \"title\", \"text\" and an optional \"id\")")));
    }
    let field = |key: &str| -> Result<String, InputError> {
        match obj.get(key) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(InputError::new(path, at, format!("field {key:?}: expected a string, found {}", type_name(other)))),
            None => Err(InputError::new(path, at, format!("field {key:?} is missing"))),
        }
    };
    let title = field("title")?;
    let text = field("text")?;
    if text.trim().is_empty() {
        return Err(InputError::new(path, at, "field \"text\" is empty"));
    }
    Ok((title, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `body` to a temporary file and reads it; the error as
    /// (at, message), the file name checked.
    fn refused(body: &str) -> (String, String) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.jsonl");
        std::fs::write(&f, body).unwrap();
        let e = load_passages(&f).unwrap_err();
        assert_eq!(e.path, f);
        (e.at, e.message)
    }

    fn pair(at: &str, message: &str) -> (String, String) {
        (at.to_string(), message.to_string())
    }

    const GOOD: &str = r#"{"title": "a", "text": "first"}"#;

    #[test]
    fn every_malformed_line_refuses_the_file_naming_line_and_field() {
        let cases = [
            (format!("{GOOD}\nnot json\n"), pair("line 2 column 2", "invalid JSON: expected ident")),
            (
                format!("{GOOD}\n\n{{\"title\": \"b\", \"text\": \"sec"),
                pair("line 3 column 27", "invalid JSON: the JSON ends early (truncated file?)"),
            ),
            (format!("{GOOD}\n[1, 2]\n"), pair("line 2", "expected an object, found an array")),
            (format!("{GOOD}\n{{\"text\": \"x\"}}\n"), pair("line 2", "field \"title\" is missing")),
            (format!("{GOOD}\n{{\"title\": \"x\"}}\n"), pair("line 2", "field \"text\" is missing")),
            (format!("{GOOD}\n{{\"title\": 7, \"text\": \"x\"}}\n"), pair("line 2", "field \"title\": expected a string, found a number")),
            (format!("{GOOD}\n{{\"title\": \"x\", \"text\": null}}\n"), pair("line 2", "field \"text\": expected a string, found null")),
            (format!("{GOOD}\n{{\"title\": \"x\", \"text\": \" \"}}\n"), pair("line 2", "field \"text\" is empty")),
            (
                format!("{GOOD}\n{{\"title\": \"x\", \"text\": \"y\", \"url\": \"u\"}}\n"),
                pair("line 2", "unknown key \"url\" (a passage has \"title\", \"text\" and an optional \"id\")"),
            ),
            (
                format!("{GOOD}\n{{\"title\": \"x\", \"title\": \"y\", \"text\": \"z\"}}\n"),
                pair("line 2 column 22", "invalid JSON: duplicate key \"title\""),
            ),
            ("\n  \n".to_string(), pair("", "no passage: the file has no non-blank line")),
        ];
        for (body, want) in cases {
            assert_eq!(refused(&body), want, "{body:?}");
        }
    }

    #[test]
    fn a_good_file_is_read_to_exact_passages_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.jsonl");
        let body = "\n{\"id\": 17, \"title\": \"Sourdough\", \"text\": \"Bread leavened by a starter.\"}\r\n \t\r\n{\"text\": \"Untitled.\", \"title\": \"\"}";
        std::fs::write(&f, body).unwrap();
        let store = load_passages(&f).unwrap();
        let got: Vec<_> = (0..3).map(|i| store.get(i).map(|p| (p.id, p.title.as_str(), p.text.as_str()))).collect();
        assert_eq!(got, [Some((0, "Sourdough", "Bread leavened by a starter.")), Some((1, "", "Untitled.")), None]);
        let zst = dir.path().join("p.jsonl.zst");
        std::fs::write(&zst, zstd::encode_all(body.as_bytes(), 3).unwrap()).unwrap();
        assert_eq!(load_passages(&zst).unwrap().get(1).map(|p| p.text.clone()), Some("Untitled.".to_string()));
    }

    #[test]
    fn a_missing_builtin_corpus_says_how_to_install_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = builtin_from(&dir.path().join(BUILTIN_FILE)).unwrap_err().to_string();
        assert!(err.contains("knowledge/wordnet-nouns.jsonl") && err.contains("ensure_knowledge"), "{err}");
    }

    #[test]
    fn the_builtin_corpus_loads_whole_and_finds_a_topic() {
        let started = std::time::Instant::now();
        let store = builtin_passages().unwrap();
        eprintln!("built-in corpus: {} passages indexed in {:?}", store.len(), started.elapsed());
        assert_eq!(store.len(), 61046);
        assert_eq!(BUILTIN_PASSAGES, format!("WordNet 3.0 noun glosses, {} passages", store.len()));
        let first = store.get(0).unwrap();
        assert_eq!((first.title.as_str(), first.text.as_str()), ("thing", "an action; \"how could you do such a thing?\""));
        let found: Vec<_> = store.search("sourdough bread baking", 3).iter().map(|p| p.title.as_str()).collect();
        assert_eq!(found, ["French bread", "sour bread, sourdough bread", "baking"]);
        let best = store.search("sourdough bread baking", 1)[0];
        assert_eq!(best.text, "a crusty sourdough bread often baked in long slender tapered loaves or baguettes");
    }
}
