//! Reading a release: first the layout (which files, what each is), then one
//! file at a time into rows, so ingestion can be sharded by file.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use some_schemas::{EmbeddingRow, KnowledgeRow, PostRow, PostSource, RefPostRow, Timestamp, UserRow, buckets};

use super::npy::{self, Npy, PyValue};
use super::{Column, RAW_FIELDS, RELEASE_EMBEDDING_MODEL, TOPIC_FIELDS, USER_FIELDS, WEIBO_FIELDS};
use crate::error::InputError;
use crate::json::{describe, read_json, type_name};

/// One file of a release and what it holds.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReleaseFile {
    Raw { path: PathBuf, day: String, location: String },
    Topic { path: PathBuf, topic: String },
    User { path: PathBuf, uid: String },
    AllPosts { path: PathBuf },
    Knowledge { path: PathBuf },
    RawEmbeddings { path: PathBuf, day: String, location: String },
    TopicEmbeddings { path: PathBuf },
    KnowledgeEmbeddings { path: PathBuf, knowledge: PathBuf },
}

impl ReleaseFile {
    pub fn path(&self) -> &Path {
        match self {
            ReleaseFile::Raw { path, .. }
            | ReleaseFile::Topic { path, .. }
            | ReleaseFile::User { path, .. }
            | ReleaseFile::AllPosts { path }
            | ReleaseFile::Knowledge { path }
            | ReleaseFile::RawEmbeddings { path, .. }
            | ReleaseFile::TopicEmbeddings { path }
            | ReleaseFile::KnowledgeEmbeddings { path, .. } => path,
        }
    }
}

/// The rows one release file yields.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ReleasePart {
    pub posts: Vec<PostRow>,
    pub users: Vec<UserRow>,
    pub ref_posts: Vec<RefPostRow>,
    pub knowledge: Vec<KnowledgeRow>,
    pub embeddings: Vec<EmbeddingRow>,
}

impl ReleasePart {
    /// Adds the rows of another part.
    pub fn extend(&mut self, other: ReleasePart) {
        self.posts.extend(other.posts);
        self.users.extend(other.users);
        self.ref_posts.extend(other.ref_posts);
        self.knowledge.extend(other.knowledge);
        self.embeddings.extend(other.embeddings);
    }
}

/// A release tree, checked for completeness.
#[derive(Debug, Clone)]
pub struct Release {
    pub root: PathBuf,
    pub files: Vec<ReleaseFile>,
}

fn list(dir: &Path) -> Result<Vec<PathBuf>, InputError> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| InputError::new(dir, "", format!("cannot list: {e}")))?
        .map(|e| e.map(|e| e.path()).map_err(|e| InputError::new(dir, "", format!("cannot list: {e}"))))
        .collect::<Result<_, _>>()?;
    out.sort();
    Ok(out)
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// `{YYYY-MM-DD}_{location}` with a valid date.
fn day_location(stem: &str) -> Option<(String, String)> {
    let (day, location) = stem.split_once('_')?;
    chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d").ok()?;
    (!location.is_empty()).then(|| (day.to_string(), location.to_string()))
}

impl Release {
    /// Finds every file of the release under `root` (the `database` folder or
    /// its parent). A part that refers to another part that is not there is
    /// an error.
    pub fn open(root: &Path) -> Result<Release, InputError> {
        let root = if root.join("database").is_dir() { root.join("database") } else { root.to_path_buf() };
        let mut files = Vec::new();
        for path in list(&root.join("raw_data"))? {
            let name = file_name(&path);
            let Some((day, location)) = name.strip_suffix("_sensitive.jsonl").and_then(day_location) else {
                return Err(InputError::new(&path, "", "expected a file named {YYYY-MM-DD}_{location}_sensitive.jsonl"));
            };
            files.push(ReleaseFile::Raw { path, day, location });
        }
        for path in list(&root.join("topic_data"))? {
            let Some(topic) = file_name(&path).strip_suffix(".json").map(str::to_string) else {
                return Err(InputError::new(&path, "", "expected a {topic}.json file"));
            };
            files.push(ReleaseFile::Topic { path, topic });
        }
        for dir in list(&root.join("user_data"))? {
            let uid = file_name(&dir);
            let path = dir.join(format!("{uid}.json"));
            if !dir.is_dir() || !path.is_file() {
                return Err(InputError::new(&dir, "", format!("missing part: a user folder must hold {uid}.json")));
            }
            files.push(ReleaseFile::User { path, uid });
        }
        let all_posts = root.join("post_data/all_posts.json");
        if all_posts.is_file() {
            files.push(ReleaseFile::AllPosts { path: all_posts });
        }
        let knowledge = root.join("knowledge_data/knowledge_base.json");
        if knowledge.is_file() {
            files.push(ReleaseFile::Knowledge { path: knowledge.clone() });
        }
        for path in list(&root.join("emb_data"))? {
            let name = file_name(&path);
            match name.as_str() {
                "topic_data.npy" => files.push(ReleaseFile::TopicEmbeddings { path }),
                "knowledge_base.npy" => {
                    if !knowledge.is_file() {
                        return Err(InputError::new(
                            &path,
                            "",
                            "missing part: knowledge embeddings without knowledge_data/knowledge_base.json",
                        ));
                    }
                    files.push(ReleaseFile::KnowledgeEmbeddings { path, knowledge: knowledge.clone() });
                }
                _ => {
                    let Some((day, location)) = name.strip_suffix(".npy").and_then(day_location) else {
                        return Err(InputError::new(
                            &path,
                            "",
                            "expected {YYYY-MM-DD}_{location}.npy, topic_data.npy or knowledge_base.npy",
                        ));
                    };
                    let raw = root.join(format!("raw_data/{day}_{location}_sensitive.jsonl"));
                    if !raw.is_file() {
                        return Err(InputError::new(
                            &path,
                            "",
                            format!("missing part: embeddings for a location stream with no {}", raw.display()),
                        ));
                    }
                    files.push(ReleaseFile::RawEmbeddings { path, day, location });
                }
            }
        }
        if !files.iter().any(|f| {
            matches!(f, ReleaseFile::Raw { .. } | ReleaseFile::Topic { .. } | ReleaseFile::User { .. } | ReleaseFile::Knowledge { .. })
        }) {
            return Err(InputError::new(&root, "", "not a SoMe release: no raw_data, topic_data, user_data or knowledge_data"));
        }
        Ok(Release { root, files })
    }

    /// Reads one file of the release into rows.
    pub fn read(file: &ReleaseFile) -> Result<ReleasePart, InputError> {
        let mut part = ReleasePart::default();
        match file {
            ReleaseFile::Raw { path, day, location } => read_raw(path, day, location, &mut part)?,
            ReleaseFile::Topic { path, topic } => read_topic(path, topic, &mut part)?,
            ReleaseFile::User { path, uid } => read_user(path, uid, &mut part)?,
            ReleaseFile::AllPosts { path } => {
                let root = read_json(path)?;
                for (id, post) in object(path, "the top level", &root)? {
                    object(path, &format!("{id:?}"), post)?;
                    part.ref_posts.push(RefPostRow { post_id: id.clone(), json: post.to_string() });
                }
            }
            ReleaseFile::Knowledge { path } => part.knowledge = read_knowledge(path)?,
            ReleaseFile::RawEmbeddings { path, day, location } => {
                let bucket = buckets::raw(day, location);
                for (id, vector) in vector_dict(path, &load_object(path)?, "")? {
                    part.embeddings.push(embedding(id, &vector, bucket.clone()));
                }
            }
            ReleaseFile::TopicEmbeddings { path } => {
                let PyValue::Dict(topics) = load_object(path)? else {
                    return Err(InputError::new(path, "", "expected a pickled dict {topic: {post key: vector}}"));
                };
                for (topic, posts) in topics {
                    let name = topic.as_str().unwrap_or_default();
                    let bucket = buckets::topic(name);
                    for (id, vector) in vector_dict(path, &posts, &format!("{name:?}"))? {
                        part.embeddings.push(embedding(id, &vector, bucket.clone()));
                    }
                }
            }
            ReleaseFile::KnowledgeEmbeddings { path, knowledge } => {
                let bytes = std::fs::read(path).map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))?;
                let Npy::Matrix { shape, data } = npy::parse(&bytes).map_err(|e| InputError::new(path, "", e))? else {
                    return Err(InputError::new(path, "", "expected a [N, D] float array"));
                };
                let reports = read_knowledge(knowledge)?.len();
                if shape.len() != 2 || shape[0] != reports {
                    return Err(InputError::new(
                        path,
                        "",
                        format!("shape {shape:?} does not match the {reports} reports of the knowledge base"),
                    ));
                }
                for (i, row) in data.chunks(shape[1].max(1)).enumerate() {
                    part.embeddings.push(EmbeddingRow { collection: "knowledge".into(), ..embedding(i.to_string(), row, "all".into()) });
                }
            }
        }
        Ok(part)
    }
}

fn embedding(id: String, vector: &[f32], bucket: String) -> EmbeddingRow {
    EmbeddingRow {
        id,
        dtype: "f32".into(),
        dim: vector.len() as i32,
        vector: vector.iter().flat_map(|v| v.to_le_bytes()).collect(),
        collection: "posts".into(),
        model: RELEASE_EMBEDDING_MODEL.into(),
        bucket,
    }
}

fn load_object(path: &Path) -> Result<PyValue, InputError> {
    let bytes = std::fs::read(path).map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))?;
    match npy::parse(&bytes).map_err(|e| InputError::new(path, "", e))? {
        Npy::Object(v) => Ok(v),
        Npy::Matrix { .. } => Err(InputError::new(path, "", "expected a pickled dict, found a plain array")),
    }
}

fn vector_dict(path: &Path, value: &PyValue, at: &str) -> Result<Vec<(String, Vec<f32>)>, InputError> {
    let PyValue::Dict(entries) = value else {
        return Err(InputError::new(path, at, "expected a dict {id: vector}"));
    };
    entries
        .iter()
        .map(|(k, v)| {
            let id = match k {
                PyValue::Str(s) => s.clone(),
                PyValue::Int(i) => i.to_string(),
                _ => return Err(InputError::new(path, at, "a key of the embedding dict is not a string")),
            };
            let vector =
                v.as_vector().ok_or_else(|| InputError::new(path, format!("{at}[{id:?}]"), "the value is not a vector of numbers"))?;
            Ok((id, vector))
        })
        .collect()
}

fn object<'v>(path: &Path, at: &str, v: &'v Value) -> Result<&'v Map<String, Value>, InputError> {
    v.as_object().ok_or_else(|| InputError::new(path, at, format!("expected an object, found {}", type_name(v))))
}

/// Parses a post time in any format the release is known to use.
pub fn parse_time(v: &Value) -> Option<Timestamp> {
    match v {
        Value::String(s) => Timestamp::parse(s)
            .or_else(|| chrono::DateTime::parse_from_str(s, "%a %b %d %H:%M:%S %z %Y").ok().map(|t| Timestamp::from_naive(t.naive_local())))
            .or_else(|| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S").ok().map(Timestamp::from_naive)),
        Value::Number(n) => n.as_i64().map(Timestamp),
        _ => None,
    }
}

/// Fills a post from a source object with the given key map; keys the map
/// does not name go to `extra`.
fn fill_post(path: &Path, at: &str, fields: &[(&str, Column)], obj: &Map<String, Value>, post: &mut PostRow) -> Result<(), InputError> {
    let mut extra = Map::new();
    for (key, value) in obj {
        let Some((_, column)) = fields.iter().find(|(k, _)| k == key) else {
            extra.insert(key.clone(), value.clone());
            continue;
        };
        if value.is_null() {
            continue;
        }
        let at = format!("{at}.{key}");
        let text = || -> Result<String, InputError> {
            match value {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                other => Err(InputError::new(path, &at, format!("expected a string, found {}", type_name(other)))),
            }
        };
        let count = || -> Result<i64, InputError> {
            match value {
                Value::Number(n) if n.is_i64() => Ok(n.as_i64().unwrap_or_default()),
                Value::String(s) if s.parse::<i64>().is_ok() => Ok(s.parse().unwrap_or_default()),
                other => Err(InputError::new(path, &at, format!("expected an integer count, found {}", type_name(other)))),
            }
        };
        match column {
            Column::PostId => post.post_id = text()?,
            Column::PublishedAt => {
                post.published_at =
                    Some(parse_time(value).ok_or_else(|| {
                        InputError::new(path, &at, format!("unreadable time {value}; expected e.g. \"2025-05-06 07:00:00\""))
                    })?)
            }
            Column::Nickname => post.nickname = Some(text()?),
            Column::Platform => post.platform = Some(text()?),
            Column::Title => post.title = Some(text()?),
            Column::Content => post.content = text()?,
            Column::Description => post.description = Some(text()?),
            Column::Ocr => post.ocr = Some(text()?),
            Column::Location => post.location = Some(text()?),
            Column::Client => post.client = Some(text()?),
            Column::Reposts => post.reposts = Some(count()?),
            Column::Comments => post.comments = Some(count()?),
            Column::Likes => post.likes = Some(count()?),
            Column::PicNum => post.pic_num = Some(count()?),
            Column::Pictures => post.pictures = Some(value.to_string()),
            Column::Video => post.video = Some(text()?),
            Column::RcaList => post.rca_list = Some(value.to_string()),
        }
    }
    if !extra.is_empty() {
        post.extra = Some(Value::Object(extra).to_string());
    }
    Ok(())
}

fn read_raw(path: &Path, day: &str, location: &str, part: &mut ReleasePart) -> Result<(), InputError> {
    let file = std::fs::File::open(path).map_err(|e| InputError::new(path, "", format!("cannot read: {e}")))?;
    let bucket = buckets::raw(day, location);
    for (n, line) in std::io::BufReader::new(file).lines().enumerate() {
        let at = format!("line {}", n + 1);
        let line = line.map_err(|e| InputError::new(path, &at, format!("cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let value = crate::json::parse_strict(line.as_bytes()).map_err(|e| {
            let mut err = describe(path, &e);
            err.at = format!("{at} column {}", e.column());
            err
        })?;
        let obj = object(path, &at, &value)?;
        let mut post = PostRow::new(String::new(), String::new(), PostSource::Raw, bucket.clone());
        post.area = Some(location.to_string());
        post.ordinal = part.posts.len() as i64;
        fill_post(path, &at, RAW_FIELDS, obj, &mut post)?;
        if post.post_id.is_empty() {
            return Err(InputError::new(path, &at, "the post has no unique_id"));
        }
        part.posts.push(post);
    }
    if part.posts.is_empty() {
        return Err(InputError::new(path, "", "the file is empty"));
    }
    Ok(())
}

fn read_topic(path: &Path, topic: &str, part: &mut ReleasePart) -> Result<(), InputError> {
    let root = read_json(path)?;
    let media = object(path, "the top level", &root)?
        .get("media_info")
        .ok_or_else(|| InputError::new(path, "the top level", "required key \"media_info\" is missing"))?;
    let bucket = buckets::topic(topic);
    for (i, (key, post_value)) in object(path, "media_info", media)?.iter().enumerate() {
        let at = format!("media_info.{key:?}");
        let mut post = PostRow::new(String::new(), String::new(), PostSource::Topic, bucket.clone());
        post.post_id = key.clone();
        post.ordinal = i as i64;
        post.topic = Some(topic.to_string());
        fill_post(path, &at, TOPIC_FIELDS, object(path, &at, post_value)?, &mut post)?;
        part.posts.push(post);
    }
    Ok(())
}

fn read_user(path: &Path, uid: &str, part: &mut ReleasePart) -> Result<(), InputError> {
    let root = read_json(path)?;
    let top = object(path, "the top level", &root)?;
    let user =
        object(path, "user", top.get("user").ok_or_else(|| InputError::new(path, "the top level", "required key \"user\" is missing"))?)?;
    let text = |k: &str| -> Result<Option<String>, InputError> {
        match user.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(InputError::new(path, format!("user.{k}"), format!("expected a string, found {}", type_name(other)))),
        }
    };
    let count = |k: &str| -> Result<Option<i64>, InputError> {
        match user.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) if n.is_i64() => Ok(n.as_i64()),
            Some(Value::String(s)) if s.parse::<i64>().is_ok() => Ok(s.parse().ok()),
            Some(other) => Err(InputError::new(path, format!("user.{k}"), format!("expected an integer, found {}", type_name(other)))),
        }
    };
    let id = text("id")?.unwrap_or_else(|| uid.to_string());
    if id != uid {
        return Err(InputError::new(path, "user.id", format!("the profile's id {id:?} differs from its folder {uid:?}")));
    }
    let extra: Map<String, Value> =
        user.iter().filter(|(k, _)| !USER_FIELDS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect();
    part.users.push(UserRow {
        uid: uid.to_string(),
        name: text("name")?,
        followers_count: count("followers_count")?,
        friends_count: count("friends_count")?,
        total_rcl_count: count("total_rcl_count")?,
        verified_reason: text("verified_reason")?,
        description: text("description")?,
        location: text("location")?,
        extra: (!extra.is_empty()).then(|| Value::Object(extra).to_string()),
    });
    let weibo = match top.get("weibo") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(InputError::new(path, "weibo", format!("expected a list of posts, found {}", type_name(other)))),
    };
    let bucket = buckets::weibo(uid);
    for (i, post_value) in weibo.iter().enumerate() {
        let at = format!("weibo[{i}]");
        let mut post = PostRow::new(String::new(), String::new(), PostSource::Weibo, bucket.clone());
        post.uid = Some(uid.to_string());
        post.ordinal = i as i64;
        fill_post(path, &at, WEIBO_FIELDS, object(path, &at, post_value)?, &mut post)?;
        if post.post_id.is_empty() {
            return Err(InputError::new(path, &at, "the post has no id"));
        }
        part.posts.push(post);
    }
    Ok(())
}

fn read_knowledge(path: &Path) -> Result<Vec<KnowledgeRow>, InputError> {
    let root = read_json(path)?;
    let docs = root
        .as_array()
        .ok_or_else(|| InputError::new(path, "the top level", format!("expected a list of reports, found {}", type_name(&root))))?;
    docs.iter()
        .enumerate()
        .map(|(i, doc)| {
            let at = format!("[{i}]");
            let obj = object(path, &at, doc)?;
            let content = obj
                .get("content")
                .and_then(Value::as_str)
                .ok_or_else(|| InputError::new(path, format!("{at}.content"), "required string field is missing"))?;
            let link = match obj.get("link") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(other) => {
                    return Err(InputError::new(path, format!("{at}.link"), format!("expected a string, found {}", type_name(other))));
                }
            };
            let extra: Map<String, Value> =
                obj.iter().filter(|(k, _)| *k != "content" && *k != "link").map(|(k, v)| (k.clone(), v.clone())).collect();
            Ok(KnowledgeRow {
                doc_index: i as i64,
                content: content.to_string(),
                link,
                extra: (!extra.is_empty()).then(|| Value::Object(extra).to_string()),
            })
        })
        .collect()
}
