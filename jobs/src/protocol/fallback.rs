//! SoMe's own fallback (`find_func_call` in its `qwen_agent/agent.py`):
//! the call formats of models that ignore the `<tool_call>` instruction,
//! read as the reference reads them, on text that holds no `<think>` block.
//!
//! - Every pattern is tried, in the reference's order, and every call any
//!   of them yields counts, in that order (a model that writes one call in
//!   two formats runs it twice, as under the reference).
//! - The whole text is tried as one JSON value only when no pattern matched
//!   at all: a match that yields no call (a fence holding an answer, a
//!   `<tool>` tag inside a call's string) still rules that out.
//!
//! The Python patterns are `re.findall(open + '(.*?)' + close, text,
//! re.DOTALL)`; a lazy group between two literals is the text up to the
//! first `close` after `open`, which plain substring search finds without a
//! regex engine. The last pattern, `^([A-Za-z0-9_]+)\n({.*?})(?=\w*\n|$)`
//! (GLM-4-0414's format: the tool name on one line, its arguments as a
//! JSON object on the next), is compiled with `re.DOTALL` only, so `^` is
//! the start of the text: at most one such call, and only when the reply
//! (its surrounding whitespace trimmed, as every reply here is) starts with it. It uses a look-ahead, which the `regex` crate lacks;
//! [`name_line`] implements it by hand.

use super::call::{CALL_SHAPE, Found, Intent, json5, read_value};

/// One `open(.*?)close` pattern: `(open, close, format, intent)`.
type Pattern = (&'static str, &'static str, &'static str, Intent);

/// The reference's patterns, in its order. A ```` ```json ```` fence and a
/// `<tools>` block (the prompt lists the tool schemas in one, and models
/// echo it) also hold things that are not calls, hence `Implicit`.
/// `<tool_call>` never matches here, since the text given to [`read`] ends
/// before the first `<tool_call>` (the Nous step takes the rest); it stays
/// for fidelity to the reference's list.
const PATTERNS: [Pattern; 9] = [
    ("```json", "```", "json_fence", Intent::Implicit),
    ("<function>", "</function>", "function", Intent::Explicit),
    ("<function_call>", "</function_call>", "function_call", Intent::Explicit),
    ("<function_calls>", "</function_calls>", "function_calls", Intent::Explicit),
    ("<tool_call>", "</tool_call>", "tool_call", Intent::Explicit),
    ("<tool_calls>", "</tool_calls>", "tool_calls", Intent::Explicit),
    ("<tools>", "</tools>", "tools", Intent::Implicit),
    ("<tool>", "</tool>", "tool", Intent::Explicit),
    ("[TOOL_CALLS]tool_call>", "</tool_call>", "mistral", Intent::Explicit),
];

/// Reads `text` (think-stripped, no `<tool_call>` in it) with the fallback patterns.
pub(super) fn read(text: &str) -> Found {
    let mut found = Found::default();
    let mut matched = false;
    for (open, close, format, intent) in PATTERNS {
        for block in find_all(text, open, close) {
            matched = true;
            read_block(block, open, format, intent, &mut found);
        }
    }
    matched |= name_line(text, &mut found);
    if matched {
        return found;
    }
    let whole = text.trim();
    match json5(whole) {
        Ok(value) => read_value(value, whole, "bare_json", Intent::Implicit, &mut found),
        Err(error) if whole.starts_with(['{', '[']) && looks_like_call(whole) => {
            found.malformed("bare_json", whole, format!("could not parse the reply as JSON: {error}"));
        }
        Err(_) => {}
    }
    found
}

fn read_block(block: &str, open: &str, format: &'static str, intent: Intent, found: &mut Found) {
    let trimmed = block.trim();
    match json5(trimmed) {
        Ok(value) => read_value(value, trimmed, format, intent, found),
        Err(error) if intent == Intent::Explicit || looks_like_call(trimmed) => {
            let error = format!("could not parse the {open} block as JSON: {error}; write {CALL_SHAPE}");
            found.malformed(format, trimmed, error);
        }
        Err(_) => {}
    }
}

/// Whether unparsable text in a fence or bare reply was meant as a call.
fn looks_like_call(text: &str) -> bool {
    (text.contains("\"name\"") || text.contains("'name'")) && (text.contains("\"arguments\"") || text.contains("'arguments'"))
}

/// `re.findall(re.escape(open) + '(.*?)' + re.escape(close), text, re.DOTALL)`.
fn find_all<'t>(text: &'t str, open: &str, close: &str) -> Vec<&'t str> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(open) {
        let start = from + i + open.len();
        let Some(j) = text[start..].find(close) else {
            break;
        };
        blocks.push(&text[start..start + j]);
        from = start + j + close.len();
    }
    blocks
}

/// `re.findall(r'^([A-Za-z0-9_]+)\n({.*?})(?=\w*\n|$)', text, re.DOTALL)`:
/// a call of the named tool with the object as its arguments (an object
/// that does not parse is ignored). Returns whether the pattern matched.
fn name_line(text: &str, found: &mut Found) -> bool {
    let name_len = text.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
    if name_len == 0 || !text[name_len..].starts_with("\n{") {
        return false;
    }
    let object_start = name_len + 1;
    let Some(end) = lazy_object_end(text, object_start) else {
        return false;
    };
    if let Ok(serde_json::Value::Object(arguments)) = json5(&text[object_start..end]) {
        found.call(text[..name_len].to_string(), arguments, "name_line");
    }
    true
}

/// The end of the shortest `{.*?}` starting at `open` that the look-ahead
/// `(?=\w*\n|$)` accepts: after the `}`, word characters then a newline,
/// or the end of the text.
fn lazy_object_end(text: &str, open: usize) -> Option<usize> {
    let mut from = open + 1;
    while let Some(i) = text[from..].find('}') {
        let end = from + i + 1;
        let after = text[end..].trim_start_matches(|c: char| c.is_alphanumeric() || c == '_');
        if after.starts_with('\n') || text.len() == end {
            return Some(end);
        }
        from = end;
    }
    None
}
