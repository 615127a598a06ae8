//! Replies in every format the reference reads, as models really write
//! them, with exact expectations. Failed calls are in `tests/malformed.rs`.

mod malformed;

use serde_json::{Value, json};

use super::{Malformed, NativeToolCall, ParsedReply, ToolCall, from_native, parse_reply, strip_think};

pub(super) fn call(name: &str, arguments: Value, format: &'static str) -> ToolCall {
    let Value::Object(arguments) = arguments else { panic!("test arguments must be an object") };
    ToolCall { name: name.to_string(), arguments, format }
}

pub(super) fn reply(content: &str, calls: Vec<ToolCall>, malformed: Vec<Malformed>) -> ParsedReply {
    ParsedReply { content: content.to_string(), calls, malformed }
}

#[test]
fn qwen3_tool_call_with_a_fake_call_in_its_thoughts() {
    let text = "<think>\n用户想知道台风的讨论。也许先调用 <tool_call>\n{\"name\": \"user_search\", \"arguments\": {\"user_id\": \"1\"}}\n</tool_call> 不对，应该搜索帖子。\n</think>\n\n<tool_call>\n{\"name\": \"post_search\", \"arguments\": {\"query\": \"台风 杜苏芮\", \"max_num\": 20}}\n</tool_call>";
    let content = "<tool_call>\n{\"name\": \"post_search\", \"arguments\": {\"query\": \"台风 杜苏芮\", \"max_num\": 20}}\n</tool_call>";
    let calls = vec![call("post_search", json!({"query": "台风 杜苏芮", "max_num": 20}), "tool_call")];
    assert_eq!(parse_reply(text), reply(content, calls, vec![]));
}

#[test]
fn several_tool_calls_in_one_reply_keep_their_order() {
    let text = "我先建立文件夹，再检索帖子。\n<tool_call>\n{\"name\": \"data_folder\", \"arguments\": {\"folder_name\": \"posts\", \"operation\": \"create\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"post_search\", \"arguments\": {\"query\": \"iPhone 15\", \"folder_name\": \"posts\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"topic_clustering\", \"arguments\": {\"folder_name\": \"posts\"}}\n</tool_call>";
    let calls = vec![
        call("data_folder", json!({"folder_name": "posts", "operation": "create"}), "tool_call"),
        call("post_search", json!({"query": "iPhone 15", "folder_name": "posts"}), "tool_call"),
        call("topic_clustering", json!({"folder_name": "posts"}), "tool_call"),
    ];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn a_tool_call_without_its_closing_tag() {
    let spaced = "<tool_call>\n{\"name\": \"post_retrieve\", \"arguments\": {\"query\": \"高考作文\", \"top_k\": 5}}";
    let calls = vec![call("post_retrieve", json!({"query": "高考作文", "top_k": 5}), "tool_call")];
    assert_eq!(parse_reply(spaced), reply(spaced, calls.clone(), vec![]));
    // `extract_fn` needs `"name": "`; JSON5 reads the compact spelling too.
    let compact = "<tool_call>{\"name\":\"post_retrieve\",\"arguments\":{\"query\":\"高考作文\",\"top_k\":5}}";
    assert_eq!(parse_reply(compact), reply(compact, calls, vec![]));
}

#[test]
fn extract_fn_recovers_a_call_closed_with_the_wrong_bracket() {
    let text = "<tool_call>\n{\"name\": \"post_search\", \"arguments\": {\"query\": \"油价\"}]\n</tool_call>";
    let calls = vec![call("post_search", json!({"query": "油价"}), "tool_call")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn qwen_coder_answers_with_a_json_fence() {
    let text = "```json\n{\"name\": \"post_search\", \"arguments\": {\"query\": \"新能源汽车 降价\", \"max_num\": 50}}\n```";
    let calls = vec![call("post_search", json!({"query": "新能源汽车 降价", "max_num": 50}), "json_fence")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn a_json_fence_with_a_list_of_calls_and_prose_around_it() {
    let text = "I will search both topics.\n```json\n[\n  {\"name\": \"topic_search\", \"arguments\": {\"query\": \"AI\"}},\n  {\"name\": \"topic_search\", \"arguments\": {\"query\": \"robots\"}}\n]\n```\nThen I will summarize.";
    let calls =
        vec![call("topic_search", json!({"query": "AI"}), "json_fence"), call("topic_search", json!({"query": "robots"}), "json_fence")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn function_tag() {
    let text = "<function>{\"name\": \"user_search\", \"arguments\": {\"user_id\": \"5674213890\"}}</function>";
    let calls = vec![call("user_search", json!({"user_id": "5674213890"}), "function")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn function_call_tag_with_single_quotes_and_a_trailing_comma() {
    let text = "<function_call>\n{'name': 'data_folder', 'arguments': {'folder_name': 'a', 'start_idx': 0,},}\n</function_call>";
    let calls = vec![call("data_folder", json!({"folder_name": "a", "start_idx": 0}), "function_call")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn function_calls_tag_with_a_list() {
    let text = "<function_calls>\n[{\"name\": \"post_search\", \"arguments\": {\"query\": \"a\"}}, {\"name\": \"post_search\", \"arguments\": {\"query\": \"b\"}}]\n</function_calls>";
    let calls =
        vec![call("post_search", json!({"query": "a"}), "function_calls"), call("post_search", json!({"query": "b"}), "function_calls")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn tool_calls_tag_in_the_openai_wrapper_with_string_arguments() {
    let text = "<tool_calls>\n[{\"type\": \"function\", \"function\": {\"name\": \"topic_summarization\", \"arguments\": \"{\\\"folder_name\\\": \\\"c1\\\"}\"}}]\n</tool_calls>";
    let calls = vec![call("topic_summarization", json!({"folder_name": "c1"}), "tool_calls")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn tools_tag() {
    let text = "<tools>\n{\"name\": \"knowledge_retrieve\", \"arguments\": {\"query\": \"Is 5G linked to COVID-19?\"}}\n</tools>";
    let calls = vec![call("knowledge_retrieve", json!({"query": "Is 5G linked to COVID-19?"}), "tools")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn an_echoed_tool_schema_in_tools_is_not_a_call() {
    let text = "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"post_search\", \"description\": \"搜索帖子\", \"parameters\": [{\"name\": \"query\", \"type\": \"string\", \"required\": true}]}}\n</tools>\n我需要先搜索。";
    assert_eq!(parse_reply(text), reply(text, vec![], vec![]));
}

#[test]
fn tool_tag() {
    let text = "<tool>{\"name\": \"post_retrieve\", \"arguments\": {\"query\": \"Apple event\"}}</tool>";
    let calls = vec![call("post_retrieve", json!({"query": "Apple event"}), "tool")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn mistral_tool_calls_marker() {
    let text = "[TOOL_CALLS]tool_call>[{\"name\": \"post_search\", \"arguments\": {\"query\": \"Paris 2024\"}}]</tool_call>";
    let calls = vec![call("post_search", json!({"query": "Paris 2024"}), "mistral")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn glm4_name_line_over_its_arguments_only_at_the_start_of_the_reply() {
    // The reference compiles `^…` without re.MULTILINE: one call, the first.
    let text =
        "post_search\n{\"query\": \"华为 发布会\", \"filter\": {\"min_likes\": 10}}\ntopic_clustering\n{\"folder_name\": \"huawei\"}";
    let calls = vec![call("post_search", json!({"query": "华为 发布会", "filter": {"min_likes": 10}}), "name_line")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
    let later = "我来调用工具：\npost_search\n{\"query\": \"华为\"}";
    assert_eq!(parse_reply(later).calls, vec![]);
}

#[test]
fn a_bare_json_call() {
    let text = "  {\"name\": \"user_search\", \"arguments\": {\"user_id\": \"12\"}}\n";
    let content = "{\"name\": \"user_search\", \"arguments\": {\"user_id\": \"12\"}}";
    let calls = vec![call("user_search", json!({"user_id": "12"}), "bare_json")];
    assert_eq!(parse_reply(text), reply(content, calls, vec![]));
}

#[test]
fn every_fallback_pattern_counts_in_the_references_order() {
    let text = "<function_call>{\"name\": \"b\", \"arguments\": {}}</function_call>\n```json\n{\"name\": \"a\", \"arguments\": {}}\n```";
    assert_eq!(parse_reply(text).calls, vec![call("a", json!({}), "json_fence"), call("b", json!({}), "function_call")]);
}

#[test]
fn the_whole_reply_is_read_as_json_only_when_no_pattern_matched() {
    // A call whose string holds a `<tool>…</tool>` pair: the pattern matches
    // (and yields nothing), so the reference never reads the whole reply.
    let text = "{\"name\": \"post_search\", \"arguments\": {\"query\": \"<tool>x</tool>\"}}";
    let parsed = parse_reply(text);
    assert_eq!(parsed.calls, vec![]);
    assert_eq!(parsed.malformed.len(), 1, "{:?}", parsed.malformed);
}

#[test]
fn calls_in_the_text_before_a_tool_call_come_first() {
    // The reference keeps that text as a message of its own, which
    // `find_func_call` scans because it carries no call.
    let text = "```json\n{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n```\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"y\": 2}}\n</tool_call>";
    let calls = vec![call("a", json!({"x": 1}), "json_fence"), call("b", json!({"y": 2}), "tool_call")];
    assert_eq!(parse_reply(text), reply(text, calls, vec![]));
}

#[test]
fn a_final_answer_in_chinese_has_no_calls() {
    let text = "<think>\n根据检索结果，大部分用户持负面态度。\n</think>\n\n综上所述，该事件的主要情绪为：愤怒。";
    assert_eq!(parse_reply(text), reply("综上所述，该事件的主要情绪为：愤怒。", vec![], vec![]));
}

#[test]
fn an_answer_holding_json_that_is_not_a_call() {
    let fenced = "最终答案如下：\n```json\n{\"label\": \"谣言\", \"confidence\": 0.9, \"name\": \"张三\"}\n```";
    assert_eq!(parse_reply(fenced), reply(fenced, vec![], vec![]));
    let bare = "{\"answer\": [\"A\", \"C\"], \"reason\": \"两条帖子都提到了\"}";
    assert_eq!(parse_reply(bare), reply(bare, vec![], vec![]));
    let broken = "```json\n{\"label\": 谣言}\n```";
    assert_eq!(parse_reply(broken), reply(broken, vec![], vec![]));
}

#[test]
fn strip_think_removes_closed_lone_and_unclosed_reasoning() {
    assert_eq!(strip_think("<think>a</think>b<think>c\n</think> d "), "b d");
    assert_eq!(strip_think("reasoning whose tag was in the prompt</think>\n\nanswer"), "answer");
    assert_eq!(strip_think("answer<think>cut off while thinking"), "answer");
    assert_eq!(strip_think("<think>a<think>b</think>c</think>d"), "d");
    assert_eq!(strip_think("r</think>x<think>y"), "x");
    assert_eq!(strip_think("no thoughts at all"), "no thoughts at all");
    assert_eq!(strip_think("<think>only thinking</think>"), "");
}

#[test]
fn native_calls() {
    let native = |name: &str, arguments: &str| NativeToolCall { id: "call_1".into(), name: name.into(), arguments: arguments.into() };
    let calls = [
        native("post_search", "{\"query\": \"高铁\", \"max_num\": 5}"),
        native("topic_clustering", ""),
        native("data_folder", "{folder_name: 'x', start_idx: 0,}"),
    ];
    let expected = vec![
        call("post_search", json!({"query": "高铁", "max_num": 5}), "native"),
        call("topic_clustering", json!({}), "native"),
        call("data_folder", json!({"folder_name": "x", "start_idx": 0}), "native"),
    ];
    assert_eq!(from_native("<think>plan</think>\n好的。", &calls), reply("好的。", expected, vec![]));
}
