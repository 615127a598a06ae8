//! JSON schema to GBNF, llama.cpp's grammar format, so the built-in model
//! can only write replies that follow a request's schema.
//!
//! llama-cpp-2 exposes llama.cpp's own converter only behind its `common`
//! feature, which compiles llama.cpp's C++ common library into the build;
//! the simulation's schemas use a small part of JSON schema, converted here
//! instead:
//!
//! - `object` with `properties`, every one of them in `required` (written in
//!   the order `required` lists them) and no others (`additionalProperties`
//!   absent or `false`);
//! - `string` with `minLength` / `maxLength` (counted in characters, an
//!   escape being one), or with an anchored `pattern` made of literal
//!   characters, character classes, `\d` and `?`, `*`, `+`, `{m,n}`;
//! - `integer` and `number`: no minus sign when `minimum` is 0 or more, and
//!   no more integer digits than `maximum` has; the bounds themselves are
//!   not enforced (the reply's parser checks them);
//! - `boolean`, `enum` of any JSON values, `array` with `items`, `minItems`
//!   and `maxItems`.
//!
//! Anything else (optional properties, `anyOf`, `$ref`, `format`, other
//! pattern syntax) is an error naming the keyword and where it is: a
//! constraint is never dropped without saying so. `description` and
//! `title` are ignored.
//!
//! Strings take JSON's characters (no raw control characters), so a reply
//! is always valid JSON; whitespace between tokens is at most one space or
//! one newline and an indent, so a model cannot fill its reply with blanks.

use serde_json::Value;

use crate::error::{Error, Result};

const CHAR: &str = r#"[^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})"#;
const WS: &str = r#"| " " | "\n" [ \t]{0,20}"#;

/// The GBNF grammar of `schema`, its root rule named `root`.
pub fn to_gbnf(schema: &Value) -> Result<String> {
    let mut g = Grammar::default();
    g.rule("root", schema, "#")?;
    let mut out = String::new();
    for (name, body) in &g.rules {
        out.push_str(&format!("{name} ::= {body}\n"));
    }
    if g.uses_char {
        out.push_str(&format!("char ::= {CHAR}\n"));
    }
    out.push_str(&format!("ws ::= {WS}\n"));
    Ok(out)
}

#[derive(Default)]
struct Grammar {
    rules: Vec<(String, String)>,
    uses_char: bool,
}

fn unsupported(at: &str, what: impl std::fmt::Display) -> Error {
    Error::Invalid(format!("JSON schema at {at}: {what} is not supported by the built-in model's grammar"))
}

/// A GBNF string literal matching `text` exactly.
fn literal(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A rule name from a property name: lowercase letters, digits and `-`.
fn rule_name(key: &str) -> String {
    let name: String = key.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
    if name.is_empty() { "value".into() } else { name }
}

/// The repetition suffix for `min` to `max` occurrences (`None`: no bound).
fn repeat(min: u64, max: Option<u64>) -> String {
    match (min, max) {
        (0, Some(1)) => "?".into(),
        (0, None) => "*".into(),
        (1, None) => "+".into(),
        (1, Some(1)) => String::new(),
        (m, Some(n)) if m == n => format!("{{{m}}}"),
        (m, Some(n)) => format!("{{{m},{n}}}"),
        (m, None) => format!("{{{m},}}"),
    }
}

fn count(schema: &Value, key: &str, at: &str) -> Result<Option<u64>> {
    match schema.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| unsupported(at, format!("{key} {v} (not a whole number)"))),
    }
}

const KNOWN: [&str; 15] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "enum",
    "description",
    "title",
];

impl Grammar {
    /// Adds a rule named `name` (or a free variant of it) for `schema`;
    /// returns the name used.
    fn rule(&mut self, name: &str, schema: &Value, at: &str) -> Result<String> {
        let mut unique = name.to_string();
        let mut n = 2;
        while self.rules.iter().any(|(r, _)| *r == unique) || unique == "char" || unique == "ws" {
            unique = format!("{name}-{n}");
            n += 1;
        }
        let index = self.rules.len();
        self.rules.push((unique.clone(), String::new()));
        let body = self.body(&unique, schema, at)?;
        self.rules[index].1 = body;
        Ok(unique)
    }

    fn body(&mut self, name: &str, schema: &Value, at: &str) -> Result<String> {
        let Some(map) = schema.as_object() else { return Err(unsupported(at, format!("the schema {schema}"))) };
        if let Some(key) = map.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(unsupported(at, format!("the keyword {key:?}")));
        }
        if let Some(values) = schema.get("enum") {
            let values =
                values.as_array().filter(|v| !v.is_empty()).ok_or_else(|| unsupported(at, "an enum that is not a non-empty list"))?;
            return Ok(values.iter().map(|v| literal(&v.to_string())).collect::<Vec<_>>().join(" | "));
        }
        match schema.get("type").and_then(Value::as_str) {
            Some("object") => self.object(name, schema, at),
            Some("array") => {
                let items = schema.get("items").ok_or_else(|| unsupported(at, "an array without items"))?;
                let (min, max) = (count(schema, "minItems", at)?.unwrap_or(0), count(schema, "maxItems", at)?);
                if max == Some(0) {
                    return Ok(r#""[" ws "]""#.into());
                }
                let item = self.rule(&format!("{name}-item"), items, &format!("{at}/items"))?;
                let rest = format!(r#"("," ws {item}){}"#, repeat(min.saturating_sub(1), max.map(|m| m - 1)));
                let rest = if max == Some(1) { String::new() } else { format!(" {rest}") };
                Ok(if min == 0 { format!(r#""[" ws ({item}{rest})? ws "]""#) } else { format!(r#""[" ws {item}{rest} ws "]""#) })
            }
            Some("string") => self.string(schema, at),
            Some(t @ ("integer" | "number")) => {
                let sign = if schema.get("minimum").and_then(Value::as_f64).is_some_and(|m| m >= 0.0) { "" } else { r#""-"? "# };
                let digits =
                    schema.get("maximum").and_then(Value::as_f64).filter(|m| *m >= 1.0).map_or(16, |m| m.trunc().to_string().len() as u64);
                let int = format!(r#"("0" | [1-9] [0-9]{{0,{}}})"#, digits - 1);
                Ok(if t == "integer" { format!("{sign}{int}") } else { format!(r#"{sign}{int} ("." [0-9]{{1,16}})?"#) })
            }
            Some("boolean") => Ok(r#""true" | "false""#.into()),
            other => Err(unsupported(at, format!("the type {other:?}"))),
        }
    }

    fn object(&mut self, name: &str, schema: &Value, at: &str) -> Result<String> {
        if !matches!(schema.get("additionalProperties"), None | Some(Value::Bool(false))) {
            return Err(unsupported(at, "additionalProperties other than false"));
        }
        let properties =
            schema.get("properties").and_then(Value::as_object).ok_or_else(|| unsupported(at, "an object without properties"))?;
        let required: Vec<&str> =
            schema.get("required").and_then(Value::as_array).map_or(Vec::new(), |r| r.iter().filter_map(Value::as_str).collect());
        if let Some(optional) = properties.keys().find(|k| !required.contains(&k.as_str())) {
            return Err(unsupported(at, format!("the optional property {optional:?}")));
        }
        let mut parts = Vec::new();
        for key in required {
            let property = properties.get(key).ok_or_else(|| unsupported(at, format!("the required property {key:?} without a schema")))?;
            let rule_name = if name == "root" { rule_name(key) } else { format!("{name}-{}", rule_name(key)) };
            let rule = self.rule(&rule_name, property, &format!("{at}/properties/{key}"))?;
            let key_json = serde_json::Value::String(key.to_string()).to_string();
            parts.push(format!(r#"{} ws ":" ws {rule}"#, literal(&key_json)));
        }
        Ok(if parts.is_empty() { r#""{" ws "}""#.into() } else { format!(r#""{{" ws {} ws "}}""#, parts.join(r#" "," ws "#)) })
    }

    fn string(&mut self, schema: &Value, at: &str) -> Result<String> {
        let (min, max) = (count(schema, "minLength", at)?.unwrap_or(0), count(schema, "maxLength", at)?);
        let Some(pattern) = schema.get("pattern") else {
            self.uses_char = true;
            return Ok(if max == Some(0) { r#""\"\"""#.into() } else { format!(r#""\"" char{} "\"""#, repeat(min, max)) });
        };
        if min > 0 || max.is_some() {
            return Err(unsupported(at, "a pattern with minLength or maxLength"));
        }
        let pattern = pattern.as_str().ok_or_else(|| unsupported(at, "a pattern that is not a string"))?;
        Ok(format!(r#""\"" {} "\"""#, pattern_body(pattern).map_err(|e| unsupported(at, format!("the pattern {pattern:?} ({e})")))?))
    }
}

/// A GBNF sequence for an anchored pattern of literals, classes, `\d` and
/// quantifiers.
fn pattern_body(pattern: &str) -> std::result::Result<String, String> {
    let inner = pattern.strip_prefix('^').and_then(|p| p.strip_suffix('$')).ok_or("it is not anchored with ^ and $")?;
    let chars: Vec<char> = inner.chars().collect();
    let mut atoms: Vec<String> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        let atom = match c {
            '[' => {
                let end = chars[i..].iter().position(|&c| c == ']').ok_or("an unclosed [")? + i;
                let class: String = chars[i..end].iter().collect();
                if class.is_empty() || !class.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '^' | ' ' | ':' | '.' | '_')) {
                    return Err(format!("the class [{class}]"));
                }
                i = end + 1;
                format!("[{class}]")
            }
            '\\' => {
                let e = *chars.get(i).ok_or("a trailing \\")?;
                i += 1;
                match e {
                    'd' => "[0-9]".into(),
                    e if e.is_ascii_punctuation() && !matches!(e, '"' | '\\') => literal(&e.to_string()),
                    e => return Err(format!("the escape \\{e}")),
                }
            }
            '?' | '*' | '+' | '{' => {
                let last = atoms.last_mut().ok_or("a quantifier with nothing before it")?;
                if c == '{' {
                    let end = chars[i..].iter().position(|&c| c == '}').ok_or("an unclosed {")? + i;
                    let counts: String = chars[i..end].iter().collect();
                    if counts.is_empty() || !counts.chars().all(|c| c.is_ascii_digit() || c == ',') {
                        return Err(format!("the quantifier {{{counts}}}"));
                    }
                    i = end + 1;
                    last.push_str(&format!("{{{counts}}}"));
                } else {
                    last.push(c);
                }
                continue;
            }
            '.' | '(' | ')' | '|' | '^' | '$' | ']' | '}' | '"' => return Err(format!("the character {c:?}")),
            c => literal(&c.to_string()),
        };
        atoms.push(atom);
    }
    Ok(atoms.join(" "))
}

#[cfg(test)]
#[path = "gbnf_tests.rs"]
mod tests;
