//! Strict JSON reading for source files.
//!
//! `serde_json` keeps the last of two equal keys without a word; in a query or
//! release file that silently drops data, so [`parse_strict`] refuses it and
//! names the key and position. Files may be plain or zstd-compressed.

use std::fmt;
use std::path::Path;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::InputError;

/// A JSON value whose objects had no duplicate keys.
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strict, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            let Strict(v) = map.next_value()?;
            out.insert(key, v);
        }
        Ok(Value::Object(out))
    }
}

/// Parses one JSON document, refusing duplicate keys at any depth.
pub fn parse_strict(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let Strict(v) = Strict::deserialize(&mut de)?;
    de.end()?;
    Ok(v)
}

/// Reads a file's bytes, decompressing `*.zst`.
pub fn read_file(path: &Path) -> Result<Vec<u8>, InputError> {
    let bytes = std::fs::read(path).map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))?;
    if path.extension().is_some_and(|e| e == "zst") {
        return zstd::decode_all(bytes.as_slice()).map_err(|e| InputError::new(path, "", format!("not a valid zstd stream: {e}")));
    }
    Ok(bytes)
}

/// Reads and strictly parses a JSON file; empty files and syntax errors are
/// reported with the file and the line and column.
pub fn read_json(path: &Path) -> Result<Value, InputError> {
    let bytes = read_file(path)?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(InputError::new(path, "", "the file is empty"));
    }
    parse_strict(&bytes).map_err(|e| describe(path, &e))
}

/// Turns a serde_json error into an input error at its line and column.
pub fn describe(path: &Path, e: &serde_json::Error) -> InputError {
    let what = match e.classify() {
        serde_json::error::Category::Eof => "the JSON ends early (truncated file?)".to_string(),
        _ => {
            // serde_json appends " at line L column C"; we say that in `at`.
            let text = e.to_string();
            text.rsplit_once(" at line ").map_or(text.clone(), |(m, _)| m.to_string())
        }
    };
    InputError::new(path, format!("line {} column {}", e.line(), e.column()), format!("invalid JSON: {what}"))
}

/// A short name for a JSON value's type, for error messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_keys_are_refused_with_their_position() {
        let err = parse_strict(b"{\"a\": 1,\n \"b\": {\"x\": 1, \"x\": 2}}").unwrap_err();
        assert_eq!(err.to_string(), "duplicate key \"x\" at line 2 column 18");
        assert_eq!(parse_strict(b"{\"a\": [1, {\"b\": null}]}").unwrap()["a"][1]["b"], Value::Null);
    }

    #[test]
    fn key_order_is_kept() {
        let v = parse_strict("{\"z\": 1, \"a\": 2}".as_bytes()).unwrap();
        assert_eq!(serde_json::to_string(&v).unwrap(), "{\"z\":1,\"a\":2}");
    }

    #[test]
    fn truncated_and_empty_files_name_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, "{\"a\": [1, 2").unwrap();
        let err = read_json(&p).unwrap_err();
        assert_eq!(err.at, "line 1 column 11");
        assert_eq!(err.message, "invalid JSON: the JSON ends early (truncated file?)");
        std::fs::write(&p, "  \n").unwrap();
        assert_eq!(read_json(&p).unwrap_err().message, "the file is empty");
        std::fs::write(&p, "{\"a\": tru}").unwrap();
        assert!(read_json(&p).unwrap_err().message.starts_with("invalid JSON: expected ident"));
    }
}
