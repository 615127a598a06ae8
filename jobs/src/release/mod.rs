//! The SoMe release layout (`database/` of the reference implementation):
//! reading it into lake rows, and writing lake rows back out in it.
//!
//! ```text
//! database/raw_data/{YYYY-MM-DD}_{location}_sensitive.jsonl   location streams
//! database/topic_data/{topic}.json                             {"media_info": {key: post}}
//! database/user_data/{uid}/{uid}.json                          {"user": {...}, "weibo": [...]}
//! database/post_data/all_posts.json                            {weibo_id: post as queries show it}
//! database/knowledge_data/knowledge_base.json                  [{"content", "link"}, ...]
//! database/emb_data/{YYYY-MM-DD}_{location}.npy                pickled {unique_id: vector}
//! database/emb_data/topic_data.npy                             pickled {topic: {post key: vector}}
//! database/emb_data/knowledge_base.npy                         [N, D] array, row i = report i
//! ```
//!
//! Each source's JSON keys map to `posts` columns as the reference's tools
//! read them ([`RAW_FIELDS`], [`TOPIC_FIELDS`], [`WEIBO_FIELDS`]); any other
//! key is kept in `extra`, so writing a release back reproduces it.

pub mod npy;
pub mod read;
mod write;

pub use read::{Release, ReleaseFile, ReleasePart};
pub use write::ReleaseWriter;

/// Which `posts` column a source key fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    PostId,
    PublishedAt,
    Nickname,
    Platform,
    Title,
    Content,
    Description,
    Ocr,
    Location,
    Client,
    Reposts,
    Comments,
    Likes,
    PicNum,
    /// Kept as JSON text.
    Pictures,
    Video,
    /// Kept as JSON text.
    RcaList,
}

/// `raw_data/*.jsonl` keys (the eight the reference's `post_search` reads).
pub const RAW_FIELDS: &[(&str, Column)] = &[
    ("unique_id", Column::PostId),
    ("content", Column::Content),
    ("platform_name", Column::Platform),
    ("title", Column::Title),
    ("post_publish_time", Column::PublishedAt),
    ("ocr", Column::Ocr),
    ("nickname", Column::Nickname),
    ("public_location", Column::Location),
];

/// `topic_data/*.json` post keys; the post id is the `media_info` key.
pub const TOPIC_FIELDS: &[(&str, Column)] = &[
    ("title", Column::Title),
    ("desc", Column::Description),
    ("content", Column::Content),
    ("nickname", Column::Nickname),
    ("platform", Column::Platform),
    ("post_create_time", Column::PublishedAt),
];

/// `user_data/*/*.json` `weibo` entry keys.
pub const WEIBO_FIELDS: &[(&str, Column)] = &[
    ("id", Column::PostId),
    ("text", Column::Content),
    ("created_time", Column::PublishedAt),
    ("source", Column::Client),
    ("region_name", Column::Location),
    ("reposts_count", Column::Reposts),
    ("comments_count", Column::Comments),
    ("attitudes_count", Column::Likes),
    ("pic_num", Column::PicNum),
    ("pictures", Column::Pictures),
    ("video", Column::Video),
    ("rca_list", Column::RcaList),
];

/// `user_data/*/*.json` `user` keys, in the order the reference prints them.
pub const USER_FIELDS: &[&str] =
    &["id", "name", "followers_count", "friends_count", "total_rcl_count", "verified_reason", "description", "location"];

/// The model name given to embeddings read from a release (the reference
/// embeds with Qwen3-Embedding-4B).
pub const RELEASE_EMBEDDING_MODEL: &str = "qwen3-embedding-4b";

#[cfg(test)]
mod tests;
