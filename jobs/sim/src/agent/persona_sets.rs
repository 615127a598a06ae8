//! Loaders for the persona sets in `shared/personas`.
//!
//! The paper enriched PersonaChat personas, which it did not release; these
//! sets stand in for them (see the reference doc, §7):
//! - OASIS Reddit (`reddit_user_data_36.json`): 36 profiles.
//! - OASIS Twitter (`twitter_user_all_id_time.csv`): 111 users with their
//!   follow graph (`following_agentid_list`) and posts per hour of day.
//! - RecAgent (`user_1000.csv`, or the 20-user `user.csv`), with its
//!   relationship file as the follow graph.
//!
//! Loading is strict: an unknown or missing field or column, a wrong type,
//! a malformed list, a follow edge to an unknown user fails the whole load
//! with the file and the position (`[3].age`, `line 7, column age`).
//! Agent ids are the source's own ids (the JSON position for Reddit).

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;

use crate::agent::persona::{Persona, PersonaSource};
use crate::platform::ids::AgentId;
use some_jobs::error::InputError;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RedditProfile {
    realname: String,
    username: String,
    bio: String,
    persona: String,
    age: u32,
    gender: String,
    mbti: String,
    country: String,
    profession: String,
    interested_topics: Vec<String>,
}

/// Reads OASIS's Reddit profile JSON (a list of profiles).
pub fn load_oasis_reddit(path: &Path) -> Result<Vec<Persona>, InputError> {
    let value = some_jobs::json::read_json(path)?;
    let serde_json::Value::Array(items) = value else {
        return Err(InputError::new(path, "", format!("expected a list of profiles, found {}", some_jobs::json::type_name(&value))));
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let p: RedditProfile = serde_json::from_value(item).map_err(|e| InputError::new(path, format!("[{i}]"), e.to_string()))?;
        let description = format!(
            "{} ({}), {} years old, {}, from {}, MBTI {}. Profession: {}. Interested in: {}. Bio: {} {}",
            p.realname,
            p.username,
            p.age,
            p.gender,
            p.country,
            p.mbti,
            p.profession,
            p.interested_topics.join(", "),
            p.bio,
            p.persona
        );
        let id = u32::try_from(i).map_err(|_| InputError::new(path, format!("[{i}]"), "too many profiles"))?;
        out.push(Persona {
            id: AgentId(id),
            username: p.username,
            source: PersonaSource::OasisReddit,
            description,
            following: Vec::new(),
            hourly_activity: None,
            profile: None,
        });
    }
    Ok(out)
}

/// A CSV file read whole, with its columns checked against what we know.
struct Table {
    columns: HashMap<String, usize>,
    rows: Vec<(u64, csv::StringRecord)>,
}

fn read_csv(path: &Path, required: &[&str], optional: &[&str]) -> Result<Table, InputError> {
    parse_csv(path, &some_jobs::json::read_file(path)?, required, optional)
}

/// [`read_csv`] of text already read; `path` names it in errors.
fn parse_csv(path: &Path, bytes: &[u8], required: &[&str], optional: &[&str]) -> Result<Table, InputError> {
    let mut reader = csv::ReaderBuilder::new().from_reader(bytes);
    let headers = reader.headers().map_err(|e| InputError::new(path, "line 1", format!("invalid CSV header: {e}")))?.clone();
    let mut columns = HashMap::new();
    for (i, h) in headers.iter().enumerate() {
        if !required.contains(&h) && !optional.contains(&h) {
            return Err(InputError::new(path, "line 1", format!("unknown column {h:?}")));
        }
        if columns.insert(h.to_string(), i).is_some() {
            return Err(InputError::new(path, "line 1", format!("duplicate column {h:?}")));
        }
    }
    if let Some(missing) = required.iter().find(|c| !columns.contains_key(**c)) {
        return Err(InputError::new(path, "line 1", format!("missing column {missing:?}")));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            InputError::new(path, format!("line {line}"), format!("invalid CSV: {e}"))
        })?;
        let line = record.position().map_or(0, |p| p.line());
        rows.push((line, record));
    }
    if rows.is_empty() {
        return Err(InputError::new(path, "", "the file has no rows"));
    }
    Ok(Table { columns, rows })
}

impl Table {
    fn get<'r>(&self, record: &'r csv::StringRecord, column: &str) -> Option<&'r str> {
        self.columns.get(column).and_then(|i| record.get(*i))
    }
    fn text(&self, path: &Path, line: u64, record: &csv::StringRecord, column: &str) -> Result<String, InputError> {
        self.get(record, column).map(str::to_string).ok_or_else(|| at(path, line, column, "is missing in this row"))
    }
    fn number<T: std::str::FromStr>(&self, path: &Path, line: u64, record: &csv::StringRecord, column: &str) -> Result<T, InputError> {
        let text = self.text(path, line, record, column)?;
        text.trim().parse().map_err(|_| at(path, line, column, &format!("is not a whole number: {text:?}")))
    }
}

fn at(path: &Path, line: u64, column: &str, message: &str) -> InputError {
    InputError::new(path, format!("line {line}, column {column}"), message.to_string())
}

/// Reads a Python list of integers as OASIS writes them (`[32, 5]`, `[]`).
pub fn python_int_list(text: &str) -> Option<Vec<u64>> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    if inner.trim().is_empty() {
        return Some(Vec::new());
    }
    inner.split(',').map(|s| s.trim().trim_matches('\'').parse().ok()).collect()
}

const TWITTER_COLUMNS: [&str; 15] = [
    "",
    "user_id",
    "name",
    "username",
    "description",
    "created_at",
    "followers_count",
    "following_count",
    "following_list",
    "following_agentid_list",
    "previous_tweets",
    "tweets_id",
    "activity_level_frequency",
    "activity_level",
    "user_char",
];

/// Reads OASIS's Twitter user CSV: profiles, follow graph, hourly activity.
pub fn load_oasis_twitter(path: &Path) -> Result<Vec<Persona>, InputError> {
    let t = read_csv(path, &TWITTER_COLUMNS, &[])?;
    let mut out = Vec::with_capacity(t.rows.len());
    for (line, r) in &t.rows {
        let id: u32 = t.number(path, *line, r, "")?;
        let list = |column: &str| -> Result<Vec<u64>, InputError> {
            let text = t.text(path, *line, r, column)?;
            python_int_list(&text).ok_or_else(|| at(path, *line, column, &format!("is not a list of whole numbers: {text:?}")))
        };
        let following = list("following_agentid_list")?.into_iter().map(|v| AgentId(v as u32)).collect();
        let freq = list("activity_level_frequency")?;
        let hourly: [u32; 24] = freq
            .iter()
            .map(|v| *v as u32)
            .collect::<Vec<_>>()
            .try_into()
            .map_err(|_| at(path, *line, "activity_level_frequency", &format!("has {} values, not 24", freq.len())))?;
        let description = t.text(path, *line, r, "description")?;
        let character = t.text(path, *line, r, "user_char")?;
        let description =
            if character.trim().is_empty() || character == description { description } else { format!("{description} {character}") };
        out.push(Persona {
            id: AgentId(id),
            username: t.text(path, *line, r, "username")?,
            source: PersonaSource::OasisTwitter,
            description,
            following,
            hourly_activity: Some(Box::new(hourly)),
            profile: None,
        });
    }
    check_graph(path, &out)?;
    Ok(out)
}

/// Reads a RecAgent user file and, if given, its relationship file as the
/// follow graph (each row `user_1,user_2,...` makes user_1 follow user_2;
/// users are named by id, or by name in the 20-user demo file).
pub fn load_recagent(users: &Path, relationships: Option<&Path>) -> Result<Vec<Persona>, InputError> {
    recagent(users, &some_jobs::json::read_file(users)?, relationships)
}

/// RecAgent's 1,000 users (MIT licence, `data/personas/recagent/LICENSE`),
/// built into the binary so a simulation runs without any file: what
/// `some sim run` and the demo use unless given a persona set.
pub fn builtin_recagent() -> Vec<Persona> {
    const USERS: &str = include_str!("../../data/personas/recagent/user_1000.csv");
    recagent(Path::new("<built-in recagent/user_1000.csv>"), USERS.as_bytes(), None).expect("the built-in persona set reads")
}

fn recagent(users: &Path, bytes: &[u8], relationships: Option<&Path>) -> Result<Vec<Persona>, InputError> {
    let t = parse_csv(users, bytes, &["id", "name", "age", "traits", "status"], &["gender", "interest", "feature", "observations"])?;
    let mut out = Vec::with_capacity(t.rows.len());
    for (line, r) in &t.rows {
        let id: u32 = t.number(users, *line, r, "id")?;
        let age: u32 = t.number(users, *line, r, "age")?;
        let name = t.text(users, *line, r, "name")?;
        let mut description = format!("{name}, {age} years old");
        if let Some(g) = t.get(r, "gender") {
            description.push_str(&format!(", {g}"));
        }
        description.push_str(&format!(
            ". Traits: {}. Occupation: {}.",
            t.text(users, *line, r, "traits")?,
            t.text(users, *line, r, "status")?.trim()
        ));
        if let Some(i) = t.get(r, "interest") {
            let interests: Vec<&str> = i.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
            description.push_str(&format!(" Interests: {}.", interests.join(", ")));
        }
        if let Some(o) = t.get(r, "observations") {
            description.push_str(&format!(" {o}"));
        }
        let username = name.to_lowercase().replace(' ', "_") + &format!("_{id}");
        out.push(Persona {
            id: AgentId(id),
            username,
            source: PersonaSource::Recagent,
            description,
            following: Vec::new(),
            hourly_activity: None,
            profile: None,
        });
    }
    if let Some(rel) = relationships {
        let names: HashMap<String, AgentId> =
            t.rows.iter().zip(&out).filter_map(|((_, r), p)| Some((t.get(r, "name")?.to_string(), p.id))).collect();
        let ids: HashMap<AgentId, usize> = out.iter().enumerate().map(|(i, p)| (p.id, i)).collect();
        let e = read_csv(rel, &["user_1", "user_2", "relationship"], &["closeness"])?;
        for (line, r) in &e.rows {
            let resolve = |column: &str| -> Result<AgentId, InputError> {
                let v = e.text(rel, *line, r, column)?;
                let found = match v.trim().parse::<u32>() {
                    Ok(n) => Some(AgentId(n)).filter(|a| ids.contains_key(a)),
                    Err(_) => names.get(v.trim()).copied(),
                };
                found.ok_or_else(|| at(rel, *line, column, &format!("names no user of {}: {v:?}", users.display())))
            };
            let (a, b) = (resolve("user_1")?, resolve("user_2")?);
            let p = &mut out[ids[&a]];
            if !p.following.contains(&b) {
                p.following.push(b);
            }
        }
    }
    check_graph(users, &out)?;
    Ok(out)
}

/// Ids are unique and every followed account exists.
fn check_graph(path: &Path, personas: &[Persona]) -> Result<(), InputError> {
    let mut seen = HashMap::new();
    for (i, p) in personas.iter().enumerate() {
        if let Some(j) = seen.insert(p.id, i) {
            return Err(InputError::new(path, format!("row {}", i + 1), format!("agent id {} repeats row {}", p.id, j + 1)));
        }
    }
    for p in personas {
        if let Some(f) = p.following.iter().find(|f| !seen.contains_key(f)) {
            return Err(InputError::new(path, format!("agent {}", p.id), format!("follows agent {f}, which is not in the file")));
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "persona_sets_tests.rs"]
mod tests;
