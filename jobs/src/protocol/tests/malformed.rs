//! Failed calls: each reported once, with the exact error the model gets.

use serde_json::json;

use super::{call, reply};
use crate::protocol::{Malformed, NativeToolCall, from_native, parse_reply};

const HINT: &str = "; write {\"name\": <function-name>, \"arguments\": <args-json-object>}";

fn bad(format: &'static str, snippet: &str, error: &str) -> Malformed {
    Malformed { format, snippet: snippet.to_string(), error: error.to_string() }
}

/// The reply's malformed entries, asserting it has no call.
fn only_malformed(text: &str) -> Vec<Malformed> {
    let parsed = parse_reply(text);
    assert_eq!(parsed.calls, vec![], "{text}");
    parsed.malformed
}

#[test]
fn a_tool_call_block_that_is_not_json() {
    let block = "{\"name\": \"post_search\" \"arguments\": {\"query\": \"x\"}}";
    let error = format!("could not parse the <tool_call> block as JSON: expected comma at line 1 column 24{HINT}");
    assert_eq!(only_malformed(&format!("<tool_call>\n{block}\n</tool_call>")), vec![bad("tool_call", block, &error)]);
}

#[test]
fn unescaped_quotes_in_chinese_arguments() {
    let block = "{\"name\": \"post_search\", \"arguments\": {\"query\": \"他说\"你好\"\"}}";
    let error = format!("could not parse the <tool_call> block as JSON: expected comma at line 1 column 52{HINT}");
    assert_eq!(only_malformed(&format!("<tool_call>\n{block}\n</tool_call>")), vec![bad("tool_call", block, &error)]);
}

#[test]
fn an_unterminated_tool_call_missing_its_last_brace() {
    let block = "{\"name\": \"post_search\", \"arguments\": {\"query\": \"a\"}";
    let error =
        format!("could not parse the <tool_call> block (it has no </tool_call>) as JSON: EOF parsing object at line 1 column 1{HINT}");
    assert_eq!(only_malformed(&format!("<tool_call>\n{block}")), vec![bad("tool_call", block, &error)]);
}

#[test]
fn arguments_that_are_not_an_object() {
    let cases = [
        ("{\"name\": \"post_search\", \"arguments\": [\"x\"]}", "the arguments of `post_search` must be a JSON object, got an array"),
        ("{\"name\": \"post_search\", \"arguments\": null}", "the arguments of `post_search` must be a JSON object, got null"),
        ("{\"name\": \"post_search\", \"arguments\": \"[1, 2]\"}", "the arguments of `post_search` must be a JSON object, got an array"),
        (
            "{\"name\": \"post_search\", \"arguments\": \"{'query': \"}",
            "the arguments of `post_search` are not valid JSON: key must be a string at line 1 column 2",
        ),
    ];
    for (block, error) in cases {
        assert_eq!(only_malformed(&format!("<tool_call>\n{block}\n</tool_call>")), vec![bad("tool_call", block, error)]);
    }
}

#[test]
fn a_name_that_is_not_a_string_or_is_missing() {
    let number = "{\"name\": 42, \"arguments\": {}}";
    let error = "the tool call's \"name\" must be a string, got a number";
    assert_eq!(only_malformed(&format!("<function_call>{number}</function_call>")), vec![bad("function_call", number, error)]);
    let nameless = "{\"arguments\": {\"query\": \"x\"}}";
    let error = "a tool call needs a \"name\" and an \"arguments\" object; this one has no \"name\"";
    assert_eq!(only_malformed(&format!("<tool_call>{nameless}</tool_call>")), vec![bad("tool_call", nameless, error)]);
}

#[test]
fn llama_parameters_instead_of_arguments() {
    let object = "{\"name\": \"post_search\", \"parameters\": {\"query\": \"x\"}}";
    let error = "the call to `post_search` has no \"arguments\"; put them in \"arguments\", not \"parameters\"";
    assert_eq!(only_malformed(&format!("```json\n{object}\n```")), vec![bad("json_fence", object, error)]);
    assert_eq!(only_malformed(object), vec![bad("bare_json", object, error)]);
}

#[test]
fn a_broken_call_in_a_fence_is_reported_but_broken_prose_json_is_not() {
    let object = "{\"name\": \"post_search\", \"arguments\": {\"query\": \"x\"}";
    let error = format!("could not parse the ```json block as JSON: EOF parsing object at line 1 column 1{HINT}");
    assert_eq!(only_malformed(&format!("```json\n{object}\n```")), vec![bad("json_fence", object, &error)]);
    assert_eq!(only_malformed("```json\n{\"label\": 谣言\n```"), vec![]);
}

#[test]
fn xml_invoke_inside_a_call_tag() {
    let block = "<invoke name=\"post_search\"><parameter name=\"query\">x</parameter></invoke>";
    let error = format!("could not parse the <function_call> block as JSON: expected value at line 1 column 1{HINT}");
    assert_eq!(only_malformed(&format!("<function_call>\n{block}\n</function_call>")), vec![bad("function_call", block, &error)]);
}

#[test]
fn a_list_with_one_good_call_and_one_bad_item() {
    let parsed = parse_reply("<tool_calls>[{\"name\": \"a\", \"arguments\": {}}, 3]</tool_calls>");
    assert_eq!(parsed.calls, vec![call("a", json!({}), "tool_calls")]);
    let error = "a tool call must be a JSON object {\"name\": <function-name>, \"arguments\": <args-json-object>}, got a number";
    assert_eq!(parsed.malformed, vec![bad("tool_calls", "3", error)]);
    let empty = only_malformed("<function_calls>[]</function_calls>");
    assert_eq!(empty, vec![bad("function_calls", "[]", "the list of tool calls is empty")]);
}

#[test]
fn deep_nesting_is_refused_without_recursing() {
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let error = format!("could not parse the <tool_call> block as JSON: nested more than 128 levels deep{HINT}");
    let snippet = "[".repeat(200);
    assert_eq!(only_malformed(&format!("<tool_call>{nested}</tool_call>")), vec![bad("tool_call", &snippet, &error)]);
}

#[test]
fn snippets_stop_at_200_characters_on_a_character_boundary() {
    let query = "微博热搜".repeat(100);
    let block = format!("{{\"name\": \"post_search\", \"arguments\": [\"{query}\"]}}");
    let malformed = only_malformed(&format!("<tool_call>{block}</tool_call>"));
    let expected: String = block.chars().take(200).collect();
    assert_eq!(malformed.len(), 1);
    assert_eq!(malformed[0].snippet, expected);
    assert_eq!(malformed[0].snippet.chars().count(), 200);
}

#[test]
fn blank_tool_call_blocks_and_loose_name_lines_are_not_calls() {
    assert_eq!(parse_reply("<tool_call>\n\n"), reply("<tool_call>", vec![], vec![]));
    let text = "answer\n{not json at all}";
    assert_eq!(parse_reply(text), reply(text, vec![], vec![]));
}

#[test]
fn malformed_native_calls() {
    let native = |name: &str, arguments: &str| NativeToolCall { id: "call_9".into(), name: name.into(), arguments: arguments.into() };
    let calls = [native("post_search", "{\"query\": "), native("post_search", "[1]"), native("post_search", "\"{}\""), native(" ", "{}")];
    let expected = vec![
        bad("native", "{\"query\":", "the arguments of `post_search` are not valid JSON: EOF while parsing a value at line 1 column 10"),
        bad("native", "[1]", "the arguments of `post_search` must be a JSON object, got an array"),
        bad("native", "\"{}\"", "the arguments of `post_search` must be a JSON object, got a string"),
        bad("native", "{}", "the tool call has no name"),
    ];
    assert_eq!(from_native("", &calls), reply("", vec![], expected));
}
