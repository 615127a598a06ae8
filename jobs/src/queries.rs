//! Reads the SoMe query files (`datasets/<task folder>/ground_truth.json`)
//! into [`QueryRow`]s.
//!
//! Each task's definition names its file shape ([`QueryFormat`]); every
//! shape is checked field by field, so a wrong type or an unknown label is an error
//! that names the file and the key path rather than a silently odd query.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use some_schemas::{QueryId, QueryRow, Task, Timestamp};

use crate::error::InputError;
use crate::json::{read_json, type_name};
use crate::tasks::{QueryFormat, task_def};

/// The query file of one task folder: `ground_truth.json` or its zstd form.
pub fn query_file(folder: &Path) -> Option<PathBuf> {
    ["ground_truth.json", "ground_truth.json.zst"].into_iter().map(|n| folder.join(n)).find(|p| p.is_file())
}

/// Reads every task folder under `dir`. Any other sub-folder is an error (a
/// misspelt folder would otherwise silently drop a task); plain files are
/// ignored.
pub fn read_dataset_dir(dir: &Path) -> Result<Vec<QueryRow>, InputError> {
    let entries = std::fs::read_dir(dir).map_err(|e| InputError::new(dir, "", format!("cannot list: {e}")))?;
    let mut folders = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| InputError::new(dir, "", format!("cannot list: {e}")))?;
        if !entry.path().is_dir() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let task: Task = name.parse().map_err(|e: String| InputError::new(entry.path(), "", e))?;
        folders.push((task, entry.path()));
    }
    if folders.is_empty() {
        return Err(InputError::new(dir, "", "no task folders found (expected e.g. realtime_event_detection/)"));
    }
    folders.sort();
    let mut rows = Vec::new();
    for (task, folder) in folders {
        let file = query_file(&folder)
            .ok_or_else(|| InputError::new(&folder, "", "no ground_truth.json (or ground_truth.json.zst) in the task folder"))?;
        rows.extend(read_task_file(task, &file)?);
    }
    Ok(rows)
}

/// Reads one task's query file.
pub fn read_task_file(task: Task, path: &Path) -> Result<Vec<QueryRow>, InputError> {
    read_task_json(task, path, &read_json(path)?)
}

/// Reads the bundled copy of the release's query files.
pub fn read_bundled() -> Result<Vec<QueryRow>, InputError> {
    let mut rows = Vec::new();
    for task in Task::ALL {
        let compressed = task_def(task).bundled;
        let label = PathBuf::from(format!("<bundled>/{}/ground_truth.json", task.folder()));
        let bytes = zstd::decode_all(compressed).map_err(|e| InputError::new(&label, "", format!("corrupt bundled file: {e}")))?;
        let root = crate::json::parse_strict(&bytes).map_err(|e| crate::json::describe(&label, &e))?;
        rows.extend(read_task_json(task, &label, &root)?);
    }
    Ok(rows)
}

fn read_task_json(task: Task, path: &Path, root: &Value) -> Result<Vec<QueryRow>, InputError> {
    let top = object(path, "the top level", root)?;
    if top.is_empty() {
        return Err(InputError::new(path, "the top level", "the file has no queries"));
    }
    let mut out = Rows { task, path, rows: Vec::new() };
    match task_def(task).format {
        QueryFormat::EventWindows => top.iter().try_for_each(|(k, v)| out.red(k, v))?,
        QueryFormat::TopicSummaries => top.iter().try_for_each(|(k, v)| out.ses(k, v))?,
        QueryFormat::Claims => top.iter().try_for_each(|(k, v)| out.mid(k, v))?,
        QueryFormat::Questions => top.iter().try_for_each(|(k, v)| out.smq(k, v))?,
        QueryFormat::UserActions { actions } => {
            for (action, users) in top {
                if !actions.contains(&action.as_str()) {
                    return Err(InputError::new(path, key(action), format!("unknown action; expected one of {actions:?}")));
                }
                for (uid, entries) in object(path, &key(action), users)? {
                    // Comments and reposts carry their text under the action's name.
                    let text = (action != "like").then_some(action.as_str());
                    out.user_entries(&format!("{action}/{uid}"), uid, entries, Some(action), "label", text)?;
                }
            }
        }
        QueryFormat::UserEntries { label, text } => {
            top.iter().try_for_each(|(uid, entries)| out.user_entries(uid, uid, entries, None, label, text))?
        }
    }
    Ok(out.rows)
}

fn key(k: &str) -> String {
    format!("{k:?}")
}

fn object<'v>(path: &Path, at: &str, v: &'v Value) -> Result<&'v Map<String, Value>, InputError> {
    v.as_object().ok_or_else(|| InputError::new(path, at, format!("expected an object, found {}", type_name(v))))
}

fn string<'v>(path: &Path, at: &str, v: &'v Value) -> Result<&'v str, InputError> {
    v.as_str().ok_or_else(|| InputError::new(path, at, format!("expected a string, found {}", type_name(v))))
}

fn field<'v>(path: &Path, at: &str, entry: &'v Map<String, Value>, name: &str) -> Result<&'v str, InputError> {
    let at = format!("{at}.{name}");
    let v = entry.get(name).ok_or_else(|| InputError::new(path, &at, "required field is missing"))?;
    string(path, &at, v)
}

fn one_of(path: &Path, at: &str, value: &str, allowed: &[&str]) -> Result<(), InputError> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(InputError::new(path, at, format!("unknown label {value:?}; expected one of {allowed:?}")))
}

struct Rows<'p> {
    task: Task,
    path: &'p Path,
    rows: Vec<QueryRow>,
}

impl Rows<'_> {
    fn push(&mut self, source_key: &str, position: i32, entry: &Value, fill: impl FnOnce(&mut QueryRow)) {
        let entry_json = entry.to_string();
        let occurrence = self.rows.iter().rev().take_while(|r| r.source_key == source_key).filter(|r| r.entry == entry_json).count() as u32;
        let mut row = QueryRow {
            source_key: source_key.to_string(),
            position,
            entry: entry_json.clone(),
            ..QueryRow::blank(QueryId::derive(self.task, source_key, &entry_json, occurrence), self.task)
        };
        fill(&mut row);
        self.rows.push(row);
    }

    /// `"<start>_<end>_<location>": [ {标题, 摘要, 时间, 地点}, ... ]`
    fn red(&mut self, k: &str, v: &Value) -> Result<(), InputError> {
        let at = key(k);
        let bad_key =
            || InputError::new(self.path, &at, "expected a key of the form \"YYYY-MM-DD HH:MM:SS_YYYY-MM-DD HH:MM:SS_<location>\"");
        let mut parts = k.splitn(3, '_');
        let (Some(start), Some(end), Some(location)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad_key());
        };
        let (Some(start), Some(end)) = (Timestamp::parse(start), Timestamp::parse(end)) else {
            return Err(bad_key());
        };
        if location.is_empty() || start >= end {
            return Err(bad_key());
        }
        let events =
            v.as_array().ok_or_else(|| InputError::new(self.path, &at, format!("expected a list of events, found {}", type_name(v))))?;
        if events.is_empty() {
            return Err(InputError::new(self.path, &at, "the query has no reference events"));
        }
        for (i, event) in events.iter().enumerate() {
            let at = format!("{at}[{i}]");
            let event = object(self.path, &at, event)?;
            for name in ["标题", "摘要", "时间", "地点"] {
                field(self.path, &at, event, name)?;
            }
        }
        self.push(k, 0, v, |r| {
            r.location = Some(location.to_string());
            r.window_start = Some(start);
            r.window_end = Some(end);
            r.reference = Some(v.to_string());
        });
        Ok(())
    }

    /// `"<topic keywords>": "<reference summary>"`
    fn ses(&mut self, k: &str, v: &Value) -> Result<(), InputError> {
        let summary = string(self.path, &key(k), v)?;
        self.push(k, 0, v, |r| {
            r.topic = Some(k.to_string());
            r.reference = Some(summary.to_string());
        });
        Ok(())
    }

    /// `"<id>.json": {"claim": ..., "label": true|half|false}`
    fn mid(&mut self, k: &str, v: &Value) -> Result<(), InputError> {
        let at = key(k);
        let entry = object(self.path, &at, v)?;
        let claim = field(self.path, &at, entry, "claim")?;
        let label = field(self.path, &at, entry, "label")?;
        one_of(self.path, &format!("{at}.label"), label, task_def(self.task).labels().unwrap_or_default())?;
        self.push(k, 0, v, |r| {
            r.claim = Some(claim.to_string());
            r.label = Some(label.to_string());
        });
        Ok(())
    }

    /// `"<question>": "<answer>"`; the question names a user (`用户ID为…`) or a
    /// topic (`在话题“…”中`), or, in two release entries, neither.
    fn smq(&mut self, k: &str, v: &Value) -> Result<(), InputError> {
        let answer = string(self.path, &key(k), v)?;
        let (uid, topic) = smq_subject(k);
        self.push(k, 0, v, |r| {
            r.question = Some(k.to_string());
            r.uid = uid;
            r.topic = topic;
            r.reference = Some(answer.to_string());
        });
        Ok(())
    }

    /// A per-user list of entries: the post, its label under `label_field`
    /// and, for some tasks, a text under `text_field`.
    fn user_entries(
        &mut self,
        source_key: &str,
        uid: &str,
        entries: &Value,
        action: Option<&str>,
        label_field: &str,
        text_field: Option<&str>,
    ) -> Result<(), InputError> {
        let at = key(source_key);
        let list = entries
            .as_array()
            .ok_or_else(|| InputError::new(self.path, &at, format!("expected a list of entries, found {}", type_name(entries))))?;
        if uid.is_empty() || !uid.bytes().all(|b| b.is_ascii_digit()) {
            return Err(InputError::new(self.path, &at, "expected a numeric user id as the key"));
        }
        let allowed = task_def(self.task).labels().unwrap_or_default();
        for (i, entry_value) in list.iter().enumerate() {
            let at = format!("{at}[{i}]");
            let entry = object(self.path, &at, entry_value)?;
            let post_id = field(self.path, &at, entry, "weibo_id")?;
            let label = field(self.path, &at, entry, label_field)?;
            let comment = text_field.map(|name| field(self.path, &at, entry, name)).transpose()?;
            one_of(self.path, &format!("{at}.{label_field}"), label, allowed)?;
            self.push(source_key, i as i32, entry_value, |r| {
                r.uid = Some(uid.to_string());
                r.post_id = Some(post_id.to_string());
                r.action = action.map(str::to_string);
                r.comment = comment.map(str::to_string);
                r.label = Some(label.to_string());
            });
        }
        Ok(())
    }
}

/// The user id or topic an SMQ question is about.
pub fn smq_subject(question: &str) -> (Option<String>, Option<String>) {
    if let Some(rest) = question.strip_prefix("用户ID为") {
        let uid: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !uid.is_empty() {
            return (Some(uid), None);
        }
    }
    if let Some((topic, _)) = question.strip_prefix("在话题“").and_then(|rest| rest.split_once('”')) {
        return (None, Some(topic.to_string()));
    }
    (None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a task is made of, read off the registry: a new task shows up
    /// here with its definition, prompt, tools and bundled queries
    /// in its query format, or this fails naming what it lacks.
    #[test]
    fn every_task_of_the_registry_has_its_definition_prompt_tools_and_queries() {
        let queries = read_bundled().unwrap();
        for task in Task::ALL {
            let def = task_def(task);
            assert_eq!(def.task, task, "task_def({task}) is another task's definition");
            assert!(!def.system_prompt_template().trim().is_empty(), "{task}: empty system prompt");
            assert!(!def.tools.is_empty(), "{task}: no tools");
            let n = queries.iter().filter(|q| q.task == task).count();
            assert!(n > 0, "{task}: no bundled query");
            eprintln!("{task}: version {}, {} tools, {n} queries, {}", def.version, def.tools.len(), task.folder());
        }
    }

    #[test]
    fn every_real_query_renders() {
        let queries = read_bundled().unwrap();
        let post = r#"{"内容": "周末见🔥", "发布时间": "2024-11-19 23:24", "转发量": 405411}"#;
        for q in &queries {
            let def = task_def(q.task);
            let message = def.user_message(q, Some(post)).unwrap();
            assert!(!message.is_empty());
        }
        let ubp = queries.iter().find(|q| q.task == Task::Ubp && q.action.as_deref() == Some("repost")).unwrap();
        let def = task_def(Task::Ubp);
        assert!(def.system_prompt(ubp).contains("进行转发"));
        assert_eq!(
            def.user_message(ubp, Some(post)).unwrap(),
            format!(
                "请判断ID为{}的用户是否对帖子```{{\"内容\": \"周末见🔥\", \"发布时间\": \"2024-11-19 23:24\", \"转发量\": 405411}}```进行转发。",
                ubp.uid.as_deref().unwrap()
            )
        );
        let red = queries.iter().find(|q| q.source_key == "2025-06-01 00:00:00_2025-06-01 01:00:00_新疆").unwrap();
        assert_eq!(
            task_def(Task::Red).user_message(red, None).unwrap(),
            "请给出从2025-06-01 00:00:00到2025-06-01 01:00:00，在社交媒体上讨论的发生在新疆的事件。"
        );
        assert_eq!(crate::tasks::tools_in_use().len(), 8);
        let err = task_def(Task::Mcr).user_message(queries.iter().find(|q| q.task == Task::Mcr).unwrap(), None).unwrap_err();
        assert!(err.contains("is not in ref_posts"), "{err}");
    }

    fn write(dir: &Path, task: Task, text: &str) -> PathBuf {
        let folder = dir.join(task.folder());
        std::fs::create_dir_all(&folder).unwrap();
        let file = folder.join("ground_truth.json");
        std::fs::write(&file, text).unwrap();
        file
    }

    #[test]
    fn each_task_shape_becomes_rows_with_its_fields() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            Task::Red,
            r#"{"2025-06-01 00:00:00_2025-06-01 01:00:00_新疆": [{"标题": "t", "摘要": "s", "时间": "2025.05.31", "地点": "新疆"}]}"#,
        );
        write(dir.path(), Task::Ubp, r#"{"repost": {"7454267598": [{"weibo_id": "5188", "repost": "赞", "label": "否"}]}}"#);
        write(
            dir.path(),
            Task::Smq,
            r#"{"在话题“拜登 告别演讲”中，拜登说了什么？": "a", "用户ID为3733054590的用户最常提到谁？": "成毅", "该用户的个人简介是什么？": "x"}"#,
        );
        let rows = read_dataset_dir(dir.path()).unwrap();
        assert_eq!(rows.len(), 5);
        let red = &rows[0];
        assert_eq!(red.task, Task::Red);
        assert_eq!(red.location.as_deref(), Some("新疆"));
        assert_eq!(red.window_end.unwrap().to_string(), "2025-06-01 01:00:00");
        let ubp = &rows[1];
        assert_eq!((ubp.action.as_deref(), ubp.comment.as_deref(), ubp.label.as_deref()), (Some("repost"), Some("赞"), Some("否")));
        assert_eq!(ubp.source_key, "repost/7454267598");
        assert_eq!(rows[2].topic.as_deref(), Some("拜登 告别演讲"));
        assert_eq!(rows[3].uid.as_deref(), Some("3733054590"));
        assert_eq!((rows[4].uid.clone(), rows[4].topic.clone()), (None, None));
    }

    #[test]
    fn identical_entries_get_distinct_ids() {
        let dir = tempfile::tempdir().unwrap();
        let e = r#"{"weibo_id": "1", "comment": "我要", "label": "否"}"#;
        let f = write(dir.path(), Task::Ucs, &format!(r#"{{"7": [{e}, {e}]}}"#));
        let rows = read_task_file(Task::Ucs, &f).unwrap();
        assert_ne!(rows[0].query_id, rows[1].query_id);
        assert_eq!(rows, read_task_file(Task::Ucs, &f).unwrap());
    }

    #[test]
    fn bad_entries_name_file_key_and_problem() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                Task::Mcr,
                r#"{"7": [{"weibo_id": "1", "label": "maybe"}]}"#,
                r#""7"[0].label"#,
                "unknown label \"maybe\"; expected one of [\"是\", \"否\"]",
            ),
            (Task::Mcr, r#"{"7": [{"weibo_id": 5, "label": "是"}]}"#, r#""7"[0].weibo_id"#, "expected a string, found a number"),
            (Task::Uea, r#"{"7": [{"weibo_id": "1"}]}"#, r#""7"[0].emotion"#, "required field is missing"),
            (Task::Ubp, r#"{"share": {}}"#, r#""share""#, "unknown action; expected one of [\"like\", \"comment\", \"repost\"]"),
            (
                Task::Red,
                r#"{"2025-06-01_新疆": []}"#,
                r#""2025-06-01_新疆""#,
                "expected a key of the form \"YYYY-MM-DD HH:MM:SS_YYYY-MM-DD HH:MM:SS_<location>\"",
            ),
            (
                Task::Mid,
                r#"{"1.json": {"claim": "c", "label": "true", "label": "false"}}"#,
                "line 1 column 50",
                "invalid JSON: duplicate key \"label\"",
            ),
            (Task::Ses, r#"[]"#, "the top level", "expected an object, found an array"),
            (Task::Ses, r#"{}"#, "the top level", "the file has no queries"),
        ];
        for (task, text, at, message) in cases {
            let file = write(dir.path(), task, text);
            let err = read_task_file(task, &file).unwrap_err();
            assert_eq!((err.at.as_str(), err.message.as_str()), (at, message), "{text}");
            assert_eq!(err.path, file);
        }
    }

    #[test]
    fn unknown_task_folders_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("user_comment_simulation")).unwrap();
        let err = read_dataset_dir(dir.path()).unwrap_err();
        assert!(err.message.starts_with("unknown task \"user_comment_simulation\""), "{err}");
    }
}
