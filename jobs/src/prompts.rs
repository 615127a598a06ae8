//! Prompt sets as files, so a run can use another set (the reference's own
//! prompt files, a team's revision) without a new build. The layout is that
//! of `jobs/prompts/`, the set built into the binary:
//!
//! ```text
//! tasks/<task>.txt           the agent's system prompt (`red.txt`, …, `smq.txt`)
//! eval/extract_<task>.txt    answer extraction of a label task (MID, UBP, UEA, UCS, MCR)
//! eval/judge_<task>.txt      the judge's rubric of a judged task (RED, SES, SMQ)
//! eval/attempt.txt           the completion check of judged answers that scored 0
//! ```
//!
//! A folder holds any subset: the files it has replace the built-in ones,
//! the rest stay. A file whose name is not one of these is an error, so a
//! misspelt name never silently leaves the built-in prompt in use. The
//! prompts a run uses travel in its spec (agent and judge settings), so
//! every worker uses the same ones and the run records them.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use some_schemas::Task;

use crate::error::InputError;
use crate::tasks::{Evaluation, task_def};

/// The completion check's file.
pub const ATTEMPT_FILE: &str = "eval/attempt.txt";
const ATTEMPT_PROMPT: &str = include_str!("../prompts/eval/attempt.txt");

/// Prompts that replace built-in ones, by file name in the layout above.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Prompts(BTreeMap<String, String>);

/// The system prompt file of `task`.
pub fn system_file(task: Task) -> String {
    format!("tasks/{}.txt", task.code().to_lowercase())
}

/// The evaluation prompt file of `task`.
pub fn evaluation_file(task: Task) -> String {
    match task_def(task).evaluation {
        Evaluation::Label { .. } => format!("eval/extract_{}.txt", task.code().to_lowercase()),
        Evaluation::Judged { .. } => format!("eval/judge_{}.txt", task.code().to_lowercase()),
    }
}

/// Every file of the built-in set with its text.
pub fn builtin() -> Vec<(String, &'static str)> {
    let mut files = Vec::new();
    for task in Task::ALL {
        let def = task_def(task);
        files.push((system_file(task), def.system_prompt_template()));
        let evaluation = match def.evaluation {
            Evaluation::Label { extraction_prompt, .. } => extraction_prompt,
            Evaluation::Judged { judge_prompt, .. } => judge_prompt,
        };
        files.push((evaluation_file(task), evaluation));
    }
    files.push((ATTEMPT_FILE.to_string(), ATTEMPT_PROMPT));
    files
}

impl Prompts {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The prompt `file`: this set's, else the built-in one.
    pub fn get<'a>(&'a self, file: &str, builtin: &'a str) -> &'a str {
        self.0.get(file).map_or(builtin, String::as_str)
    }

    /// The completion check's prompt.
    pub fn attempt(&self) -> &str {
        self.get(ATTEMPT_FILE, ATTEMPT_PROMPT)
    }

    /// Reads the prompt files under `dir`.
    pub fn load(dir: &Path) -> Result<Prompts, InputError> {
        let known: Vec<String> = builtin().into_iter().map(|(name, _)| name).collect();
        let mut found = BTreeMap::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(folder) = stack.pop() {
            let entries =
                std::fs::read_dir(&folder).map_err(|e| InputError::new(&folder, "", format!("cannot read the prompt folder: {e}")))?;
            for entry in entries {
                let path = entry.map_err(|e| InputError::new(&folder, "", e.to_string()))?.path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let name = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                let file = name.rsplit('/').next().unwrap_or_default();
                // Notes, hidden files and editor backups are not prompts.
                if name.ends_with(".md") || file.starts_with('.') || file.ends_with('~') {
                    continue;
                }
                if !known.contains(&name) {
                    return Err(InputError::new(
                        &path,
                        "",
                        format!("not a prompt file of the layout; expected one of: {}", known.join(", ")),
                    ));
                }
                let text = std::fs::read_to_string(&path).map_err(|e| InputError::new(&path, "", format!("cannot read: {e}")))?;
                if text.trim().is_empty() {
                    return Err(InputError::new(&path, "", "the prompt is empty"));
                }
                check_placeholders(&path, &name, &text)?;
                found.insert(name, text);
            }
        }
        if found.is_empty() {
            return Err(InputError::new(dir, "", format!("no prompt file here; expected some of: {}", known.join(", "))));
        }
        Ok(Prompts(found))
    }

    /// The agent's part (system prompts) and the judge's part (evaluation).
    pub fn split(self) -> (Prompts, Prompts) {
        let (system, evaluation) = self.0.into_iter().partition(|(name, _)| name.starts_with("tasks/"));
        (Prompts(system), Prompts(evaluation))
    }

    /// The file names this set replaces.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

/// The placeholders a prompt file must hold, where the code fills them:
/// the answer on an evaluation prompt's last line (it is the user message),
/// the reference answer in a judge rubric, the query in the completion check.
fn check_placeholders(path: &Path, name: &str, text: &str) -> Result<(), InputError> {
    let last = text.trim_end().rsplit('\n').next().unwrap_or_default();
    let missing = if name == ATTEMPT_FILE {
        (!text.contains("{question}")).then_some("{question}")
    } else if name.starts_with("eval/") && !last.contains("{raw answer}") {
        Some("{raw answer} on its last line (the line sent as the user message)")
    } else if name.starts_with("eval/judge_") && !text.contains("{ground truth}") {
        Some("{ground truth}")
    } else {
        None
    };
    match missing {
        Some(what) => Err(InputError::new(path, "", format!("the prompt lacks {what}"))),
        None => Ok(()),
    }
}

/// Writes the built-in set under `dir` in the layout above; returns how
/// many files.
pub fn export(dir: &Path) -> Result<usize, InputError> {
    let files = builtin();
    for (name, text) in &files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| InputError::new(parent, "", format!("cannot create: {e}")))?;
        }
        std::fs::write(&path, text).map_err(|e| InputError::new(&path, "", format!("cannot write: {e}")))?;
    }
    Ok(files.len())
}

/// `template` with each placeholder (a key with its braces, `"{persona}"`)
/// replaced by its value, in one pass, as Python's `str.format` does: a
/// value is never searched for placeholders, so a post that says
/// "{persona}" stays as written, where chained `replace` calls would write
/// the persona into it. A brace that starts no given key is kept.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match values.iter().find(|(key, _)| rest.starts_with(key)) {
            Some((key, value)) => {
                out.push_str(value);
                rest = &rest[key.len()..];
            }
            None => {
                out.push('{');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_reads_the_template_once_and_never_a_value() {
        let values = [("{post}", "says {posts} and {persona}"), ("{posts}", "P"), ("{persona}", "a baker")];
        assert_eq!(
            fill("{persona}: {post} / {posts} / {post} / {unknown} {", &values),
            "a baker: says {posts} and {persona} / P / says {posts} and {persona} / {unknown} {"
        );
        assert_eq!(fill("no placeholders", &values), "no placeholders");
        assert_eq!(fill("{persona}", &[]), "{persona}");
    }

    #[test]
    fn an_exported_set_loads_back_and_a_partial_set_replaces_only_its_files() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(export(dir.path()).unwrap(), 17);
        let all = Prompts::load(dir.path()).unwrap();
        assert_eq!(all.files().count(), 17);
        assert_eq!(all.get("tasks/red.txt", "x"), task_def(Task::Red).system_prompt_template());

        let partial = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(partial.path().join("eval")).unwrap();
        std::fs::write(partial.path().join("eval/judge_smq.txt"), "rubric for “{ground truth}”\nThe answer is “{raw answer}”").unwrap();
        let set = Prompts::load(partial.path()).unwrap();
        let (agent, judge) = set.split();
        assert!(agent.is_empty());
        assert_eq!(judge.get("eval/judge_smq.txt", "built-in"), "rubric for “{ground truth}”\nThe answer is “{raw answer}”");
        assert_eq!(judge.get("eval/judge_red.txt", "built-in"), "built-in");
    }

    #[test]
    fn a_misspelt_or_empty_file_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tasks")).unwrap();
        std::fs::write(dir.path().join("tasks/rde.txt"), "x").unwrap();
        let err = Prompts::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("rde.txt") && err.contains("tasks/red.txt"), "{err}");
        std::fs::remove_file(dir.path().join("tasks/rde.txt")).unwrap();
        std::fs::write(dir.path().join("tasks/red.txt"), " \n").unwrap();
        assert!(Prompts::load(dir.path()).unwrap_err().to_string().contains("empty"));
        std::fs::write(dir.path().join("tasks/red.txt"), "x").unwrap();
        std::fs::create_dir_all(dir.path().join("eval")).unwrap();
        std::fs::write(dir.path().join("eval/judge_smq.txt"), "rubric {ground truth}\nThe answer is {raw answer}\nThanks").unwrap();
        let err = Prompts::load(dir.path()).unwrap_err().to_string();
        assert!(err.contains("{raw answer} on its last line"), "{err}");
        std::fs::write(dir.path().join("eval/judge_smq.txt"), "rubric\nThe answer is {raw answer}").unwrap();
        assert!(Prompts::load(dir.path()).unwrap_err().to_string().contains("{ground truth}"));
        std::fs::write(dir.path().join("eval/judge_smq.txt"), "rubric {ground truth}\nThe answer is {raw answer}").unwrap();
        std::fs::write(dir.path().join("eval/.judge_smq.txt.swp"), "x").unwrap();
        assert_eq!(Prompts::load(dir.path()).unwrap().files().count(), 2);
    }
}
