//! JSON written as Python's `json.dumps(value, ensure_ascii=False)` writes
//! it (`", "` and `": "` separators), because the reference embeds posts in
//! queries that way and the query text is part of the benchmark input.

use serde_json::Value;
use serde_json::ser::Formatter;

struct PythonFormatter;

impl Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
        if first { Ok(()) } else { writer.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
        writer.write_all(b": ")
    }
}

pub fn python_json(value: &Value) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    // Serializing a Value into a Vec cannot fail.
    let _ = serde::Serialize::serialize(value, &mut ser);
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn separators_are_pythons() {
        let v: serde_json::Value = serde_json::from_str(r#"{"a": [1, 2], "b": {"c": "中"}}"#).unwrap();
        assert_eq!(super::python_json(&v), r#"{"a": [1, 2], "b": {"c": "中"}}"#);
    }
}
