//! Properties: no input makes the parser panic, and a valid call written
//! in any format reads back as exactly that call.

use proptest::prelude::*;
use serde_json::{Map, Value};

use super::{NativeToolCall, ToolCall, from_native, parse_reply, strip_think};

/// Pieces that steer random text into the parser's branches.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("<tool_call>".to_string()),
        Just("</tool_call>".to_string()),
        Just("<think>".to_string()),
        Just("</think>".to_string()),
        Just("```json".to_string()),
        Just("```".to_string()),
        Just("<function_call>".to_string()),
        Just("</function_call>".to_string()),
        Just("[TOOL_CALLS]tool_call>".to_string()),
        Just("\"name\": \"".to_string()),
        Just("\", \"".to_string()),
        Just("\"arguments\": ".to_string()),
        Just("{\"name\": \"a\", \"arguments\": {}}".to_string()),
        "[a-z_]{1,5}\n\\{".prop_map(|s| s.to_string()),
        "[{}\\[\\]\"':,\n /*\\\\0-9a-z微]{0,6}",
    ]
}

fn stitched() -> impl Strategy<Value = String> {
    prop::collection::vec(token(), 0..30).prop_map(|parts| parts.concat())
}

/// Markers that end a block or a thought wherever they appear, inside a
/// JSON string too (the reference's regexes do not know JSON either).
const MARKERS: [&str; 6] = ["```", "</tool", "</function", "[TOOL_CALLS]", "<think>", "</think>"];

fn text_value(pattern: &'static str) -> impl Strategy<Value = Value> {
    pattern.prop_filter("holds a block marker", |s: &String| !MARKERS.iter().any(|m| s.contains(m))).prop_map(Value::from)
}

fn arguments() -> impl Strategy<Value = Map<String, Value>> {
    let value =
        prop_oneof![text_value("\\PC{0,20}"), text_value("[\"'`{}\\[\\]\\\\:,<>/a-z 微博\n]{0,20}"), any::<i64>().prop_map(Value::from),];
    prop::collection::vec(("[a-z_]{1,10}", value), 0..5).prop_map(|pairs| pairs.into_iter().collect())
}

/// The call written in `format`, as a model would.
fn write(format: &str, name: &str, arguments: &Map<String, Value>) -> String {
    let object = serde_json::json!({"name": name, "arguments": arguments}).to_string();
    let args = Value::Object(arguments.clone()).to_string();
    match format {
        "tool_call" => format!("<tool_call>\n{object}\n</tool_call>"),
        "json_fence" => format!("好的，我来搜索。\n```json\n{object}\n```"),
        "function" => format!("<function>{object}</function>"),
        "function_call" => format!("<function_call>\n{object}\n</function_call>"),
        "function_calls" => format!("<function_calls>[{object}]</function_calls>"),
        "tool_calls" => format!("<tool_calls>\n[{{\"type\": \"function\", \"function\": {object}}}]\n</tool_calls>"),
        "tools" => format!("<tools>{object}</tools>"),
        "tool" => format!("<tool>{object}</tool>"),
        "mistral" => format!("[TOOL_CALLS]tool_call>[{object}]</tool_call>"),
        "name_line" => format!("{name}\n{args}"),
        _ => object,
    }
}

const FORMATS: [&str; 11] = [
    "tool_call",
    "json_fence",
    "function",
    "function_call",
    "function_calls",
    "tool_calls",
    "tools",
    "tool",
    "mistral",
    "name_line",
    "bare_json",
];

/// The block formats in the reference's pattern order.
const BLOCK_FORMATS: [&str; 8] = ["json_fence", "function", "function_call", "function_calls", "tool_calls", "tools", "tool", "mistral"];

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in any::<String>()) {
        let parsed = parse_reply(&text);
        prop_assert_eq!(parsed.content, strip_think(&text));
        let native = NativeToolCall { id: "1".into(), name: text.clone(), arguments: text.clone() };
        from_native(&text, &[native]);
    }

    #[test]
    fn stitched_markup_never_panics(text in stitched()) {
        let parsed = parse_reply(&text);
        for malformed in &parsed.malformed {
            prop_assert!(malformed.snippet.chars().count() <= 200);
        }
    }

    #[test]
    fn calls_in_two_formats_both_count_in_pattern_order(
        first in 0..BLOCK_FORMATS.len(),
        second in 0..BLOCK_FORMATS.len(),
        arguments in arguments(),
        name_line_first in any::<bool>(),
    ) {
        prop_assume!(first != second);
        let (a, b) = (BLOCK_FORMATS[first], BLOCK_FORMATS[second]);
        let mut text = format!("{}\n{}", write(a, "first", &arguments), write(b, "second", &arguments));
        let mut expected = vec![
            ToolCall { name: "first".into(), arguments: arguments.clone(), format: a },
            ToolCall { name: "second".into(), arguments: arguments.clone(), format: b },
        ];
        if second < first {
            expected.reverse();
        }
        // The name-line pattern is the reference's last; it reads only the
        // start of the reply.
        if name_line_first {
            text = format!("{}\n{text}", write("name_line", "lead", &arguments));
            expected.push(ToolCall { name: "lead".into(), arguments: arguments.clone(), format: "name_line" });
        }
        let parsed = parse_reply(&text);
        prop_assert_eq!(parsed.calls, expected, "{}", text);
    }

    #[test]
    fn a_name_line_after_the_start_is_no_call(name in "[a-z_]{1,20}", arguments in arguments(), lead in "[^\\s<`\\[][^\\n<`\\[]{0,19}") {
        let text = format!("{lead}\n{}", write("name_line", &name, &arguments));
        prop_assert_eq!(parse_reply(&text).calls, vec![], "{}", text);
    }

    #[test]
    fn a_valid_call_reads_back_in_every_format(name in "[a-z_]{1,20}", arguments in arguments()) {
        for format in FORMATS {
            let text = write(format, &name, &arguments);
            let parsed = parse_reply(&text);
            let expected = ToolCall { name: name.clone(), arguments: arguments.clone(), format };
            prop_assert_eq!(parsed.calls, vec![expected], "{}", text);
            prop_assert_eq!(parsed.malformed, vec![], "{}", text);
        }
        let native = NativeToolCall { id: "1".into(), name: name.clone(), arguments: Value::Object(arguments.clone()).to_string() };
        let expected = ToolCall { name, arguments, format: "native" };
        prop_assert_eq!(from_native("", &[native]).calls, vec![expected]);
    }
}
