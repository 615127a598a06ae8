//! Reading one parsed JSON value as a tool call, shared by every format.
//!
//! The reference accepts an object with `name` and `arguments`, unwrapping
//! the OpenAI `{"type": "function", "function": {...}}` wrapper; we also
//! accept a list of such objects and `arguments` given as a JSON string
//! (OpenAI style). What is not a call is either ignored or reported as
//! [`Malformed`], depending on [`Intent`]: inside a tag that only exists to
//! carry calls (`<tool_call>`, `<function_call>`, ...) anything unreadable
//! is a failed call, while a ```` ```json ```` fence or a bare JSON answer
//! is only a failed call when it clearly tried to be one, so that a final
//! answer that happens to be JSON is never turned into an error.

use serde_json::{Map, Value};

use super::{Malformed, ToolCall};
use crate::json::type_name;

/// How the prompt spells a call, for error messages.
pub(super) const CALL_SHAPE: &str = "{\"name\": <function-name>, \"arguments\": <args-json-object>}";

/// The longest [`Malformed::snippet`], in characters.
const SNIPPET_CHARS: usize = 200;

/// The deepest nesting of `[`/`{` we hand to the JSON5 parser, which
/// recurses without a limit (serde_json stops at 128 too).
const MAX_DEPTH: usize = 128;

/// How the text that produced a value was meant, which decides whether a
/// value that is not a call is an error or just not a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Intent {
    /// Found in a tag that only carries calls: anything unreadable is a failed call.
    Explicit,
    /// Found where ordinary answers also appear (a fence, the bare reply).
    Implicit,
}

/// The calls and failed calls read so far, in reply order.
#[derive(Debug, Default)]
pub(super) struct Found {
    pub calls: Vec<ToolCall>,
    pub malformed: Vec<Malformed>,
}

impl Found {
    pub fn call(&mut self, name: String, arguments: Map<String, Value>, format: &'static str) {
        self.calls.push(ToolCall { name, arguments, format });
    }

    pub fn malformed(&mut self, format: &'static str, text: &str, error: String) {
        self.malformed.push(Malformed { format, snippet: snippet(text), error });
    }

    pub fn extend(&mut self, other: Found) {
        self.calls.extend(other.calls);
        self.malformed.extend(other.malformed);
    }
}

/// At most [`SNIPPET_CHARS`] characters of `text`, trimmed (cut on a
/// character boundary, never inside one).
pub(super) fn snippet(text: &str) -> String {
    text.trim().chars().take(SNIPPET_CHARS).collect()
}

/// Python's `json5.loads`: any JSON5 value, surrounding whitespace allowed.
pub(super) fn json5(text: &str) -> Result<Value, String> {
    check_depth(text)?;
    json5::from_str::<Value>(text).map_err(|e| e.to_string())
}

/// Refuses text nested deeper than [`MAX_DEPTH`]. Strings and comments are
/// skipped as the JSON5 lexer skips them, so on every prefix the parser can
/// accept this count is at least the parser's recursion depth.
fn check_depth(text: &str) -> Result<(), String> {
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                while let Some(d) = chars.next() {
                    if d == '\\' {
                        chars.next();
                    } else if d == c {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'/') => {
                for d in chars.by_ref() {
                    if matches!(d, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
                        break;
                    }
                }
            }
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                let mut star = false;
                for d in chars.by_ref() {
                    if star && d == '/' {
                        break;
                    }
                    star = d == '*';
                }
            }
            '[' | '{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(format!("nested more than {MAX_DEPTH} levels deep"));
                }
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Qwen-Agent's `json_loads`, which its tools apply to an arguments string:
/// newlines trimmed, a Markdown fence removed, then JSON, then JSON5. An
/// empty string is `{}` (OpenAI sends `""` for a call without arguments).
pub(super) fn arguments_from_text(text: &str) -> Result<Map<String, Value>, String> {
    let mut text = text.trim_matches('\n');
    if text.starts_with("```") && text.ends_with("\n```") {
        // Drop the first and the last line, as `'\n'.join(lines[1:-1])`.
        let body = text.split_once('\n').map_or("", |(_, rest)| rest);
        text = body.rsplit_once('\n').map_or("", |(middle, _)| middle);
    }
    if text.trim().is_empty() {
        return Ok(Map::new());
    }
    let value = match serde_json::from_str::<Value>(text) {
        Ok(value) => value,
        Err(json_error) => match json5(text) {
            Ok(value) => value,
            Err(_) => return Err(format!("are not valid JSON: {json_error}")),
        },
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(format!("must be a JSON object, got {}", type_name(&other))),
    }
}

/// Reads `value` (parsed from `text`) as one call or a list of calls.
pub(super) fn read_value(value: Value, text: &str, format: &'static str, intent: Intent, found: &mut Found) {
    match value {
        Value::Object(map) => read_object(map, text, format, intent, found),
        Value::Array(items) => {
            if items.is_empty() && intent == Intent::Explicit {
                found.malformed(format, text, "the list of tool calls is empty".to_string());
            }
            for item in items {
                let item_text = item.to_string();
                match item {
                    Value::Object(map) => read_object(map, &item_text, format, intent, found),
                    other if intent == Intent::Explicit => {
                        found.malformed(format, &item_text, not_an_object(&other));
                    }
                    _ => {}
                }
            }
        }
        other if intent == Intent::Explicit => found.malformed(format, text, not_an_object(&other)),
        _ => {}
    }
}

fn not_an_object(value: &Value) -> String {
    format!("a tool call must be a JSON object {CALL_SHAPE}, got {}", type_name(value))
}

/// One object: a call, a failed call, or (for [`Intent::Implicit`]) nothing.
fn read_object(mut map: Map<String, Value>, text: &str, format: &'static str, intent: Intent, found: &mut Found) {
    if map.get("type").and_then(Value::as_str) == Some("function")
        && let Some(Value::Object(inner)) = map.get("function")
    {
        map = inner.clone();
    }
    let explicit = intent == Intent::Explicit;
    let name = match map.get("name") {
        Some(Value::String(name)) => name.clone(),
        Some(other) if explicit || map.contains_key("arguments") => {
            let error = format!("the tool call's \"name\" must be a string, got {}", type_name(other));
            return found.malformed(format, text, error);
        }
        None if explicit => {
            let error = "a tool call needs a \"name\" and an \"arguments\" object; this one has no \"name\"".to_string();
            return found.malformed(format, text, error);
        }
        _ => return,
    };
    let Some(arguments) = map.get("arguments") else {
        // `{"name", "parameters"}` is Llama 3's own format; a tool schema
        // echoed from the prompt also has "parameters", but with a "description".
        let llama_style = map.contains_key("parameters") && !map.contains_key("description");
        if explicit || llama_style {
            let hint = if map.contains_key("parameters") { "; put them in \"arguments\", not \"parameters\"" } else { "" };
            found.malformed(format, text, format!("the call to `{name}` has no \"arguments\"{hint}"));
        }
        return;
    };
    let arguments = match arguments {
        Value::Object(arguments) => Ok(arguments.clone()),
        Value::String(arguments) => arguments_from_text(arguments),
        other => Err(format!("must be a JSON object, got {}", type_name(other))),
    };
    match arguments {
        Ok(arguments) => found.call(name, arguments, format),
        Err(error) => found.malformed(format, text, format!("the arguments of `{name}` {error}")),
    }
}
