//! The eight SoMe tasks and the facts every crate needs about them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One of the eight SoMe tasks (the paper's Table 1, in its order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Task {
    Red,
    Ses,
    Mid,
    Ubp,
    Uea,
    Ucs,
    Mcr,
    Smq,
}

/// How a task's answers are scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scoring {
    /// An answer is reduced to a label (directly or by an extraction model)
    /// and compared with the reference label.
    Label,
    /// A judge model rates the answer against the reference on 0-5 dimensions.
    Judge,
}

/// The language the task's prompts and data are in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Language {
    Zh,
    En,
}

impl Task {
    pub const ALL: [Task; 8] = [Task::Red, Task::Ses, Task::Mid, Task::Ubp, Task::Uea, Task::Ucs, Task::Mcr, Task::Smq];

    /// The short code used in the paper and in the lake (`RED`).
    pub fn code(self) -> &'static str {
        match self {
            Task::Red => "RED",
            Task::Ses => "SES",
            Task::Mid => "MID",
            Task::Ubp => "UBP",
            Task::Uea => "UEA",
            Task::Ucs => "UCS",
            Task::Mcr => "MCR",
            Task::Smq => "SMQ",
        }
    }

    /// The dataset folder of the reference release, spelled as it is there
    /// (including `user_comment_silmulation`).
    pub fn folder(self) -> &'static str {
        match self {
            Task::Red => "realtime_event_detection",
            Task::Ses => "streaming_event_summary",
            Task::Mid => "misinformation_detection",
            Task::Ubp => "user_behavior_prediction",
            Task::Uea => "user_emotion_analysis",
            Task::Ucs => "user_comment_silmulation",
            Task::Mcr => "media_content_recommend",
            Task::Smq => "social_media_question_answering",
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Task::Red => "Real-time Event Detection",
            Task::Ses => "Streaming Event Summarization",
            Task::Mid => "Misinformation Detection",
            Task::Ubp => "User Behavior Prediction",
            Task::Uea => "User Emotion Analysis",
            Task::Ucs => "User Comment Simulation",
            Task::Mcr => "Media Content Recommendation",
            Task::Smq => "Social Media Question-answering",
        }
    }

    /// Number of queries in the published release (the paper's Table 1).
    pub fn published_queries(self) -> usize {
        match self {
            Task::Red => 568,
            Task::Ses => 154,
            Task::Mid => 1_451,
            Task::Ubp => 3_000,
            Task::Uea => 2_696,
            Task::Ucs => 4_000,
            Task::Mcr => 4_000,
            Task::Smq => 2_000,
        }
    }

    pub fn scoring(self) -> Scoring {
        match self {
            Task::Red | Task::Ses | Task::Smq => Scoring::Judge,
            Task::Mid | Task::Ubp | Task::Uea | Task::Ucs | Task::Mcr => Scoring::Label,
        }
    }

    pub fn language(self) -> Language {
        if self == Task::Mid { Language::En } else { Language::Zh }
    }

    /// Whether the task's queries refer to users and their posts by id.
    pub fn is_user_task(self) -> bool {
        matches!(self, Task::Ubp | Task::Uea | Task::Ucs | Task::Mcr)
    }
}

/// Total number of queries in the published release.
pub const PUBLISHED_QUERIES: usize = 17_869;

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

impl FromStr for Task {
    type Err = String;

    /// Accepts the code in any case (`red`, `RED`) or the release folder name.
    fn from_str(s: &str) -> Result<Task, String> {
        Task::ALL.into_iter().find(|t| t.code().eq_ignore_ascii_case(s) || t.folder() == s).ok_or_else(|| {
            format!(
                "unknown task {s:?}: expected one of {} or a release folder name such as {}",
                Task::ALL.map(Task::code).join(", "),
                Task::Ucs.folder()
            )
        })
    }
}

/// Stored by its code (`RED`).
impl crate::row::ColumnValue for Task {
    fn data_type() -> arrow::datatypes::DataType {
        arrow::datatypes::DataType::Utf8
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> arrow::array::ArrayRef {
        let codes: Vec<String> = values.map(|t| t.code().to_string()).collect();
        String::to_array(codes.iter())
    }
    fn from_array(array: &dyn arrow::array::Array) -> Result<Vec<Option<Self>>, String> {
        String::from_array(array)?.into_iter().map(|v| v.map(|code| code.parse::<Task>()).transpose()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_counts_add_up_to_the_paper_total() {
        assert_eq!(Task::ALL.iter().map(|t| t.published_queries()).sum::<usize>(), PUBLISHED_QUERIES);
    }

    #[test]
    fn tasks_parse_from_codes_and_folders() {
        assert_eq!("ucs".parse::<Task>().unwrap(), Task::Ucs);
        assert_eq!("user_comment_silmulation".parse::<Task>().unwrap(), Task::Ucs);
        let err = "user_comment_simulation".parse::<Task>().unwrap_err();
        assert!(err.contains("unknown task \"user_comment_simulation\""), "{err}");
    }
}
