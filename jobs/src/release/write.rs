//! Writing lake rows out in the release layout.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use some_schemas::{KnowledgeRow, PostRow, RefPostRow, UserRow};

use super::npy;
use super::{Column, RAW_FIELDS, TOPIC_FIELDS, WEIBO_FIELDS};
use crate::error::InputError;

/// Writes a release under `root/database`.
pub struct ReleaseWriter {
    root: PathBuf,
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> InputError + '_ {
    move |e| InputError::new(path, "", format!("cannot write: {e}"))
}

/// File names are made from locations, topics and uids: refuse anything
/// that would escape its folder.
fn safe_name(path_part: &str) -> Result<&str, InputError> {
    if path_part.is_empty() || path_part.contains(['/', '\\', '\0']) || path_part == "." || path_part == ".." {
        return Err(InputError::new(path_part, "", "cannot be used as a file name in the release layout"));
    }
    Ok(path_part)
}

/// Posts in the order their file lists them (`ordinal`), so a release
/// read back numbers them the same.
fn in_file_order(posts: &[PostRow]) -> Vec<&PostRow> {
    let mut ordered: Vec<&PostRow> = posts.iter().collect();
    ordered.sort_by(|a, b| (a.ordinal, &a.post_id).cmp(&(b.ordinal, &b.post_id)));
    ordered
}

/// The source object of a post: mapped columns under their source keys,
/// then the keys kept in `extra`.
fn post_object(post: &PostRow, fields: &[(&str, Column)]) -> Map<String, Value> {
    let mut obj = Map::new();
    let s = |v: &Option<String>| v.clone().map(Value::String);
    let json_text = |v: &Option<String>| v.as_deref().map(|t| serde_json::from_str(t).unwrap_or_else(|_| Value::String(t.to_string())));
    for (key, column) in fields {
        let value = match column {
            Column::PostId => Some(Value::String(post.post_id.clone())),
            Column::PublishedAt => post.published_at.map(|t| Value::String(t.to_string())),
            Column::Nickname => s(&post.nickname),
            Column::Platform => s(&post.platform),
            Column::Title => s(&post.title),
            Column::Content => Some(Value::String(post.content.clone())),
            Column::Description => s(&post.description),
            Column::Ocr => s(&post.ocr),
            Column::Location => s(&post.location),
            Column::Client => s(&post.client),
            Column::Reposts => post.reposts.map(Value::from),
            Column::Comments => post.comments.map(Value::from),
            Column::Likes => post.likes.map(Value::from),
            Column::PicNum => post.pic_num.map(Value::from),
            Column::Pictures => json_text(&post.pictures),
            Column::Video => s(&post.video),
            Column::RcaList => json_text(&post.rca_list),
        };
        // Every key the reference reads, null where there is no value: its
        // tools index each key, and print a null as `None`, as ours do.
        obj.insert(key.to_string(), value.unwrap_or(Value::Null));
    }
    if let Some(Ok(Value::Object(extra))) = post.extra.as_deref().map(serde_json::from_str::<Value>) {
        obj.extend(extra);
    }
    obj
}

impl ReleaseWriter {
    pub fn new(root: &Path) -> ReleaseWriter {
        ReleaseWriter { root: root.join("database") }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn file(&self, relative: &str) -> Result<PathBuf, InputError> {
        let path = self.root.join(relative);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        Ok(path)
    }

    fn write_json(&self, relative: &str, value: &Value) -> Result<(), InputError> {
        let path = self.file(relative)?;
        let text = serde_json::to_vec(value).map_err(|e| InputError::new(&path, "", e.to_string()))?;
        std::fs::write(&path, text).map_err(io_err(&path))
    }

    /// `raw_data/{day}_{location}_sensitive.jsonl`.
    pub fn raw(&self, day: &str, location: &str, posts: &[PostRow]) -> Result<(), InputError> {
        let path = self.file(&format!("raw_data/{day}_{}_sensitive.jsonl", safe_name(location)?))?;
        let mut out = std::io::BufWriter::new(std::fs::File::create(&path).map_err(io_err(&path))?);
        for post in in_file_order(posts) {
            serde_json::to_writer(&mut out, &post_object(post, RAW_FIELDS)).map_err(|e| InputError::new(&path, "", e.to_string()))?;
            out.write_all(b"\n").map_err(io_err(&path))?;
        }
        out.flush().map_err(io_err(&path))
    }

    /// `topic_data/{topic}.json`.
    pub fn topic(&self, topic: &str, posts: &[PostRow]) -> Result<(), InputError> {
        let media: Map<String, Value> =
            in_file_order(posts).into_iter().map(|p| (p.post_id.clone(), Value::Object(post_object(p, TOPIC_FIELDS)))).collect();
        self.write_json(&format!("topic_data/{}.json", safe_name(topic)?), &json!({ "media_info": media }))
    }

    /// `user_data/{uid}/{uid}.json`.
    pub fn user(&self, user: &UserRow, posts: &[PostRow]) -> Result<(), InputError> {
        let mut profile = Map::new();
        profile.insert("id".into(), Value::String(user.uid.clone()));
        let mut put = |k: &str, v: Option<Value>| {
            profile.insert(k.to_string(), v.unwrap_or(Value::Null));
        };
        put("name", user.name.clone().map(Value::String));
        put("followers_count", user.followers_count.map(Value::from));
        put("friends_count", user.friends_count.map(Value::from));
        put("total_rcl_count", user.total_rcl_count.map(Value::from));
        put("verified_reason", user.verified_reason.clone().map(Value::String));
        put("description", user.description.clone().map(Value::String));
        put("location", user.location.clone().map(Value::String));
        if let Some(Ok(Value::Object(extra))) = user.extra.as_deref().map(serde_json::from_str::<Value>) {
            profile.extend(extra);
        }
        let weibo: Vec<Value> = in_file_order(posts).into_iter().map(|p| Value::Object(post_object(p, WEIBO_FIELDS))).collect();
        let uid = safe_name(&user.uid)?;
        self.write_json(&format!("user_data/{uid}/{uid}.json"), &json!({ "user": profile, "weibo": weibo }))
    }

    /// `post_data/all_posts.json`.
    pub fn all_posts(&self, posts: &[RefPostRow]) -> Result<(), InputError> {
        let map: Map<String, Value> =
            posts.iter().map(|p| (p.post_id.clone(), serde_json::from_str(&p.json).unwrap_or(Value::String(p.json.clone())))).collect();
        self.write_json("post_data/all_posts.json", &Value::Object(map))
    }

    /// `knowledge_data/knowledge_base.json`, in `doc_index` order.
    pub fn knowledge(&self, docs: &[KnowledgeRow]) -> Result<(), InputError> {
        let mut docs: Vec<&KnowledgeRow> = docs.iter().collect();
        docs.sort_by_key(|d| d.doc_index);
        let list: Vec<Value> = docs
            .iter()
            .map(|d| {
                let mut obj = Map::new();
                obj.insert("content".into(), Value::String(d.content.clone()));
                if let Some(link) = &d.link {
                    obj.insert("link".into(), Value::String(link.clone()));
                }
                if let Some(Ok(Value::Object(extra))) = d.extra.as_deref().map(serde_json::from_str::<Value>) {
                    obj.extend(extra);
                }
                Value::Object(obj)
            })
            .collect();
        self.write_json("knowledge_data/knowledge_base.json", &Value::Array(list))
    }

    /// `emb_data/{day}_{location}.npy`: a pickled dict of post vectors.
    pub fn raw_embeddings(&self, day: &str, location: &str, vectors: &[(String, Vec<f32>)]) -> Result<(), InputError> {
        let path = self.file(&format!("emb_data/{day}_{}.npy", safe_name(location)?))?;
        let bytes = npy::write_vector_dict(vectors.iter().map(|(id, v)| (id.as_str(), v.as_slice())));
        std::fs::write(&path, bytes).map_err(io_err(&path))
    }

    /// `emb_data/knowledge_base.npy`: the `[N, D]` matrix.
    pub fn knowledge_embeddings(&self, rows: &[Vec<f32>]) -> Result<(), InputError> {
        let path = self.file("emb_data/knowledge_base.npy")?;
        std::fs::write(&path, npy::write_matrix(rows)).map_err(io_err(&path))
    }
}
