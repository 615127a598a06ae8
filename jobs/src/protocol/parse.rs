//! Parsing tool calls out of model replies, as the reference does.
//!
//! The reference (SoMe's vendored Qwen-Agent 0.0.27, `nous` prompt) reads a
//! reply in two steps, and so do we:
//!
//! 1. The Nous post-processor (`nous.rs`) splits the reply on
//!    `<tool_call>`: every block after the first tag is a call, read with
//!    JSON5 and, failing that, Qwen-Agent's `extract_fn` string search.
//!    The text before the first tag stays an ordinary assistant message.
//! 2. SoMe's `find_func_call` (`fallback.rs`) scans every assistant
//!    message that carries no call, which after step 1 is exactly that
//!    leading text, for nine other formats (```` ```json ```` fences,
//!    `<function_call>`, `[TOOL_CALLS]`, a name line over a JSON object,
//!    ...) and finally the whole text as one JSON value.
//!
//! A reply's calls are those of step 2 (they come first in the reply)
//! followed by those of step 1, each tagged with its format: `tool_call`,
//! `json_fence`, `function`, `function_call`, `function_calls`,
//! `tool_calls`, `tools`, `tool`, `mistral`, `name_line`, `bare_json`, or
//! `native` for [`from_native`].
//!
//! Step 1 follows upstream Qwen-Agent's `nous_fncall_prompt.py`, read in
//! full. SoMe's `qwen_agent/agent.py` is not in our source index, so step 2
//! rests on the reference notes (its patterns, their order, JSON5, the
//! wrapper, the name/arguments rule, the whole-text try, which messages it
//! scans) and the rules a parity check established (`fallback.rs`): every
//! pattern's calls count, in pattern order; the name-line pattern runs with
//! `re.DOTALL` only, so it reads the start of the reply; the whole text is
//! tried only when no pattern matched at all. One choice is ours: the reply
//! is trimmed before the scan, so a name line after a think block's
//! trailing newline still counts.
//!
//! # Where we differ from the reference, and why
//!
//! - `<think>` blocks are removed before anything is parsed. The reference
//!   strips them only in the fallback scan, so a `<tool_call>` a model only
//!   considered while thinking would run; a thought is not an action.
//! - [`strip_think`] also drops reasoning whose `<think>` was in the prompt
//!   (text up to a lone `</think>`, as DeepSeek-R1 and QwQ templates
//!   produce) and a reasoning block the reply never closed; the reference
//!   keeps both in the final answer.
//! - What the reference would turn into a crash (`fn['name']` on a
//!   `<tool_call>` object without one), a call of a tool named `""`, or a
//!   tool error (unparsable arguments), we report in
//!   [`ParsedReply::malformed`] with an error meant for the model. Failed
//!   calls the reference silently ignores are also reported when they were
//!   plainly meant as calls (`call.rs` says which); the agent loop decides
//!   what to do with them, and `calls` holds only what the reference would
//!   also have run.
//! - `arguments` may be a JSON string holding an object (OpenAI style) or
//!   `""` (read as `{}`), a `<tool_call>` may hold the OpenAI wrapper or a
//!   list of calls, and an unterminated `<tool_call>` is tried as JSON5
//!   before `extract_fn`.
//!
//! Nothing here panics, on any input: text is only sliced at the positions
//! of ASCII markers found in it, and JSON5 input is refused past 128 levels
//! of nesting before the (recursive) parser sees it.

use super::call::{Found, arguments_from_text, snippet};
use super::{Malformed, NativeToolCall, ParsedReply};
use super::{fallback, nous};

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Removes `<think>...</think>` blocks (and an unclosed trailing one).
///
/// In order: every `<think>.*?</think>` (the reference's
/// `re.sub(r'<think>.*?</think>', '', text, flags=re.DOTALL)`); then, if a
/// `</think>` is left, everything up to the last one (reasoning whose
/// opening tag was in the prompt); then, if a `<think>` is left, it and
/// everything after it (reasoning cut off before its end, which holds no
/// answer). The result is trimmed.
pub fn strip_think(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find(THINK_OPEN) {
        let body = &rest[open + THINK_OPEN.len()..];
        let Some(close) = body.find(THINK_CLOSE) else {
            break;
        };
        kept.push_str(&rest[..open]);
        rest = &body[close + THINK_CLOSE.len()..];
    }
    kept.push_str(rest);
    let mut answer = kept.as_str();
    if let Some(close) = answer.rfind(THINK_CLOSE) {
        answer = &answer[close + THINK_CLOSE.len()..];
    }
    if let Some(open) = answer.find(THINK_OPEN) {
        answer = &answer[..open];
    }
    answer.trim().to_string()
}

/// Reads a text-protocol reply.
pub fn parse_reply(text: &str) -> ParsedReply {
    let content = strip_think(text);
    let (before, tagged) = nous::read(&content);
    let mut found = fallback::read(before);
    found.extend(tagged);
    let Found { calls, malformed } = found;
    ParsedReply { content, calls, malformed }
}

/// Reads native tool calls; `content` is the reply's text.
///
/// Each call's `arguments` is parsed as JSON, then as JSON5 (models served
/// behind lenient parsers emit single quotes or trailing commas); an empty
/// string is `{}`. Anything but an object is malformed.
pub fn from_native(content: &str, calls: &[NativeToolCall]) -> ParsedReply {
    let mut found = Found::default();
    for call in calls {
        if call.name.trim().is_empty() {
            found.malformed.push(Malformed {
                format: "native",
                snippet: snippet(&call.arguments),
                error: "the tool call has no name".to_string(),
            });
            continue;
        }
        match arguments_from_text(&call.arguments) {
            Ok(arguments) => found.call(call.name.clone(), arguments, "native"),
            Err(error) => {
                let error = format!("the arguments of `{}` {error}", call.name);
                found.malformed("native", &call.arguments, error);
            }
        }
    }
    let Found { calls, malformed } = found;
    ParsedReply { content: strip_think(content), calls, malformed }
}
