//! The paper's tool-use analyses, read from stored transcripts.
//!
//! - One-attempt success (OSR, the paper's Figure 3): an episode planned its
//!   tool chain in one attempt when it made at least one tool call and none
//!   of its calls failed. Otherwise its first failure is classified as the
//!   paper does: the call's *format* could not be read, the model chose a
//!   *tool* the task does not have, or the tool rejected its *parameters*.
//! - Tool-calling hallucination (Figure 4, second measure): the episode never
//!   ran a tool because every call it attempted was malformed.
//! - Tool-response hallucination (Figure 4, first measure) needs a run with
//!   [`super::AgentSettings::failing_tools`]: the share of its episodes the
//!   judge still counts as completed.

use serde::{Deserialize, Serialize};
use some_schemas::Task;

use super::Transcript;
use crate::tasks::task_def;

/// Why a tool chain needed more than one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainFailure {
    /// The episode answered without calling any tool.
    NoToolCall,
    /// A tool call could not be read.
    Format,
    /// A tool the task does not offer.
    ToolChoice,
    /// The tool rejected the call's arguments.
    Parameters,
}

impl ChainFailure {
    pub const ALL: [ChainFailure; 4] = [ChainFailure::NoToolCall, ChainFailure::Format, ChainFailure::ToolChoice, ChainFailure::Parameters];

    pub fn as_str(self) -> &'static str {
        match self {
            ChainFailure::NoToolCall => "no_tool_call",
            ChainFailure::Format => "format",
            ChainFailure::ToolChoice => "tool_choice",
            ChainFailure::Parameters => "parameters",
        }
    }
}

/// The first failure of an episode's tool chain; `None` means it succeeded
/// in one attempt.
pub fn first_chain_failure(task: Task, transcript: &Transcript) -> Option<ChainFailure> {
    let offered = task_def(task).tools;
    for call in &transcript.calls {
        if !call.malformed.is_empty() {
            return Some(ChainFailure::Format);
        }
        if let Some(tool) = transcript.tool_results.iter().find(|t| t.call_index == call.index && t.error) {
            return Some(if offered.iter().any(|o| o.name == tool.name) { ChainFailure::Parameters } else { ChainFailure::ToolChoice });
        }
    }
    if transcript.tool_results.is_empty() { Some(ChainFailure::NoToolCall) } else { None }
}

/// Whether the episode attempted tool calls but never got one read.
pub fn tool_calling_hallucination(transcript: &Transcript) -> bool {
    transcript.tool_results.is_empty() && transcript.calls.iter().any(|c| !c.malformed.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{CallRecord, ToolRecord};
    use crate::chat::Usage;

    fn call(index: u32, malformed: &[&str]) -> CallRecord {
        CallRecord {
            index,
            latency_ms: 0,
            usage: Usage::default(),
            temperature: None,
            seed: None,
            model: String::new(),
            finish_reason: None,
            call_formats: Vec::new(),
            malformed: malformed.iter().map(|m| m.to_string()).collect(),
            error: None,
            place: None,
        }
    }

    fn tool(call_index: u32, name: &str, error: bool) -> ToolRecord {
        ToolRecord {
            call_index,
            name: name.into(),
            arguments: serde_json::Value::Null,
            format: "tool_call".into(),
            error,
            model_calls: 0,
            chars: 0,
        }
    }

    #[test]
    fn the_first_failure_of_a_chain_is_classified() {
        let t = |calls, tool_results| Transcript { messages: Vec::new(), calls, tool_results };
        let ok = t(vec![call(1, &[]), call(2, &[])], vec![tool(1, "post_search", false)]);
        assert_eq!(first_chain_failure(Task::Red, &ok), None);
        let wrong_params = t(vec![call(1, &[]), call(2, &[])], vec![tool(1, "post_search", true), tool(1, "data_folder", false)]);
        assert_eq!(first_chain_failure(Task::Red, &wrong_params), Some(ChainFailure::Parameters));
        // RED has no knowledge_retrieve: a call to it is a wrong choice.
        let wrong_tool = t(vec![call(1, &[]), call(2, &[])], vec![tool(1, "knowledge_retrieve", true)]);
        assert_eq!(first_chain_failure(Task::Red, &wrong_tool), Some(ChainFailure::ToolChoice));
        // The earliest failure wins, whatever comes later.
        let format_first = t(vec![call(1, &["json_fence: bad"]), call(2, &[])], vec![tool(2, "nope", true)]);
        assert_eq!(first_chain_failure(Task::Red, &format_first), Some(ChainFailure::Format));
        assert!(tool_calling_hallucination(&t(vec![call(1, &["tool_call: bad"])], vec![])));
        assert!(!tool_calling_hallucination(&format_first));
        let silent = t(vec![call(1, &[])], vec![]);
        assert_eq!(first_chain_failure(Task::Red, &silent), Some(ChainFailure::NoToolCall));
        assert!(!tool_calling_hallucination(&silent));
    }
}
