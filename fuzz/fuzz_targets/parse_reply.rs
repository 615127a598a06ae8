//! Arbitrary bytes into the tool-call parser: it must never panic, abort
//! or overflow its stack, whatever a model replies.

#![no_main]

use libfuzzer_sys::fuzz_target;
use some_jobs::protocol::{NativeToolCall, from_native, parse_reply, strip_think};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse_reply(&text);
    assert_eq!(parsed.content, strip_think(&text));
    assert!(
        parsed
            .malformed
            .iter()
            .all(|m| m.snippet.chars().count() <= 200)
    );
    // The first line is the tool's name, the rest its arguments text.
    let (name, arguments) = text.split_once('\n').unwrap_or((&text, ""));
    let native = NativeToolCall {
        id: "call_0".to_string(),
        name: name.to_string(),
        arguments: arguments.to_string(),
    };
    from_native(&text, &[native]);
});
