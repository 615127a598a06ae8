//! SoMe's own fallback (`find_func_call` in its `qwen_agent/agent.py`):
//! the call formats of models that ignore the `<tool_call>` instruction.
//!
//! The patterns are tried in the reference's order on text that holds no
//! `<think>` block; the first pattern that yields a call is the answer
//! (the reference's source is not in our index, so whether it stops there
//! or collects every pattern's calls could not be checked; stopping keeps
//! a model that writes one call in two formats from running it twice).
//! Every match of that pattern counts, in order. When no pattern yields a
//! call, the whole text is tried as one JSON value (the notes say "when
//! nothing matches"; the two readings differ only for a reply that is a
//! call as a whole and also holds a non-call match, such as a `<tool>` tag
//! inside one of its strings, which we read as the call it is).
//!
//! The Python patterns are `re.findall(open + '(.*?)' + close, text,
//! re.DOTALL)`; a lazy group between two literals is the text up to the
//! first `close` after `open`, which plain substring search finds without a
//! regex engine. The last pattern, `^([A-Za-z0-9_]+)\n({.*?})(?=\w*\n|$)`
//! (GLM-4-0414's format: the tool name on one line, its arguments as a
//! JSON object on the next), uses a look-ahead, which the `regex` crate
//! lacks; [`name_line`] implements it by hand. The notes give no flags for
//! it; we assume `re.MULTILINE` (the `^` only makes sense per line) and
//! `re.DOTALL` (as in GLM's own parser, so the object may span lines).

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
    for (open, close, format, intent) in PATTERNS {
        for block in find_all(text, open, close) {
            read_block(block, open, format, intent, &mut found);
        }
        if !found.calls.is_empty() {
            return found;
        }
    }
    name_line(text, &mut found);
    if !found.calls.is_empty() {
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

/// `re.findall(r'^([A-Za-z0-9_]+)\n({.*?})(?=\w*\n|$)', text, re.M | re.S)`,
/// each match a call of the named tool with the object as its arguments
/// (an object that does not parse is ignored).
fn name_line(text: &str, found: &mut Found) {
    let mut line_start = Some(0);
    while let Some(start) = line_start {
        let rest = &text[start..];
        let name_len = rest.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        let object_start = start + name_len + 1;
        let mut next = start;
        if name_len > 0 && rest[name_len..].starts_with("\n{") {
            // No accepted `}` after this `{` means none after any later one.
            let Some(end) = lazy_object_end(text, object_start) else {
                return;
            };
            if let Ok(serde_json::Value::Object(arguments)) = json5(&text[object_start..end]) {
                found.call(rest[..name_len].to_string(), arguments, "name_line");
            }
            next = end;
        }
        line_start = text[next..].find('\n').map(|i| next + i + 1);
    }
}

/// The end of the shortest `{.*?}` starting at `open` that the look-ahead
/// `(?=\w*\n|$)` accepts: after the `}`, word characters then a newline,
/// or the end of the line or text.
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
