//! The Nous post-processor: `<tool_call>` blocks, as Qwen-Agent's
//! `NousFnCallPrompt.postprocess_fncall_messages` reads them.
//!
//! The reply is split on `<tool_call>`; the text before the first one is
//! ordinary text (returned for SoMe's fallback scan), every later piece
//! that is not blank is one call attempt:
//!
//! - with a `</tool_call>` in it: what precedes the first `</tool_call>`,
//!   trimmed, is parsed with JSON5; if that fails, [`extract_fn`] (string
//!   search for `"name": "` and `"arguments": `) is tried, as the reference
//!   does; what the tail after `</tool_call>` says is dropped, as upstream.
//! - without one (the reply stopped inside the block): the reference only
//!   runs [`extract_fn`] and ignores the block when it finds no name. We
//!   first try JSON5 on the trimmed block, so a complete object whose
//!   closing tag is missing is read whatever its spacing (`extract_fn`
//!   needs exactly `"name": "` and `", "`).
//!
//! Where the reference would crash (`fn['name']` on an object without one,
//! a list instead of an object) or call a tool named `""`, we report a
//! [`Malformed`](super::Malformed) instead. A list of calls and the OpenAI
//! wrapper are accepted here as in the fallback formats.

use super::call::{CALL_SHAPE, Found, Intent, arguments_from_text, json5, read_value};

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const FORMAT: &str = "tool_call";

/// Splits `content` at its first `<tool_call>`: returns the text before it
/// and the calls read from the blocks after it.
pub(super) fn read(content: &str) -> (&str, Found) {
    let mut found = Found::default();
    let mut pieces = content.split(OPEN);
    let before = pieces.next().unwrap_or_default();
    for piece in pieces {
        if piece.trim().is_empty() {
            continue;
        }
        match piece.split_once(CLOSE) {
            Some((block, _tail)) => read_block(block, true, &mut found),
            None => read_block(piece, false, &mut found),
        }
    }
    (before, found)
}

fn read_block(block: &str, terminated: bool, found: &mut Found) {
    let trimmed = block.trim();
    let parse_error = match json5(trimmed) {
        Ok(value) => return read_value(value, trimmed, FORMAT, Intent::Explicit, found),
        Err(error) => error,
    };
    // The reference hands `extract_fn` the trimmed block when it is
    // terminated, and the raw piece when it is not.
    let (name, arguments) = extract_fn(if terminated { trimmed } else { block });
    if !name.is_empty()
        && let Some(Ok(arguments)) = arguments.map(arguments_from_text)
    {
        return found.call(name.to_string(), arguments, FORMAT);
    }
    let what = if terminated { "the <tool_call> block" } else { "the <tool_call> block (it has no </tool_call>)" };
    let error = format!("could not parse {what} as JSON: {parse_error}; write {CALL_SHAPE}");
    found.malformed(FORMAT, trimmed, error);
}

/// Qwen-Agent's `extract_fn`: the name is what follows the first
/// `"name": "` up to the next `", "`, the arguments what follows the first
/// `"arguments": `, trimmed and with its last character (the closing brace
/// of the call object) removed. Each marker counts only past position 0
/// (`i > 0` upstream). Arguments of two characters or fewer become `""`;
/// `None` when the marker is absent.
fn extract_fn(text: &str) -> (&str, Option<&str>) {
    const NAME_START: &str = "\"name\": \"";
    const NAME_END: &str = "\", \"";
    const ARGS_START: &str = "\"arguments\": ";
    let mut name = "";
    if let Some(i) = text.find(NAME_START).filter(|&i| i > 0) {
        let rest = &text[i + NAME_START.len()..];
        if let Some(j) = rest.find(NAME_END) {
            name = &rest[..j];
        }
    }
    let arguments = text.find(ARGS_START).filter(|&k| k > 0).map(|k| {
        let arguments = text[k + ARGS_START.len()..].trim();
        match arguments.char_indices().nth(2) {
            // More than two characters: drop the last one.
            Some(_) => arguments.char_indices().next_back().map_or("", |(last, _)| &arguments[..last]),
            None => "",
        }
    });
    (name, arguments)
}
