//! Tool dispatch and argument errors, against an in-memory world. The
//! tools' full output is checked against a real lake in `tests/e2e/tools.rs`.

use serde_json::{Map, Value, json};

use super::*;
use crate::kernels::CpuKernels;

fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

async fn call(settings: &ToolSettings, allowed: &[&ToolSpec], name: &str, a: Value) -> ToolOutcome {
    let backend = MemoryBackend::default();
    let kernels = std::sync::Arc::new(CpuKernels::new(1));
    let ctx = ToolContext { backend: &backend, kernels: &kernels, embedder: None, chat: None, settings };
    call_tool(&ctx, &mut Folders::default(), allowed, name, &args(a)).await.expect("the in-memory world always reads")
}

#[test]
fn calls_are_dispatched_and_errors_worded_as_the_reference() {
    let fixed = ToolSettings::default();
    let quirks = ToolSettings { reference_quirks: true, ..Default::default() };
    let only_folder = [&data_folder::SPEC];
    // The in-memory backend never waits on I/O: a plain executor runs the tools.
    futures::executor::block_on(async {
        let out = call(&fixed, &only_folder, "post_search", json!({})).await;
        assert_eq!((out.text.as_str(), out.error), ("Tool post_search does not exists.", true));
        let out = call(&fixed, &ALL_TOOLS, "data_folder", json!({"folder_name": "x", "start_idx": 0})).await;
        assert_eq!(out.text, "An error occurred when calling tool `data_folder`:\nKeyError: 'end_idx'");
        let out = call(&fixed, &ALL_TOOLS, "data_folder", json!({"folder_name": "x", "start_idx": "0", "end_idx": 1})).await;
        assert!(out.text.ends_with("ValueError: 文件夹'x'不存在。请先创建文件夹或检查名称是否正确。"), "{}", out.text);
        let out = call(&quirks, &ALL_TOOLS, "data_folder", json!({"folder_name": "x", "start_idx": "0", "end_idx": 1})).await;
        assert!(out.text.ends_with("TypeError: parameter 'start_idx' must be an integer, got \"0\""), "{}", out.text);
        let out = call(&fixed, &ALL_TOOLS, "user_search", json!({"uid": "404"})).await;
        assert_eq!((out.text.as_str(), out.error), ("未找到用户ID为 404 的数据，请检查用户ID是否正确。\n", false));
        let out = call(&fixed, &ALL_TOOLS, "knowledge_retrieve", json!({"query": "q", "topk": -1})).await;
        assert!(out.text.ends_with("ValueError: The value of topk should be positive integer!"), "{}", out.text);
    });
}
