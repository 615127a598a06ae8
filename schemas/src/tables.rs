//! Every table of the lake, declared once.
//!
//! The lake is append-only Parquet. World tables (`posts`, `users`,
//! `ref_posts`, `knowledge`, `embeddings`) hold what the tools search;
//! `queries` holds the benchmark; `runs`, `episodes` and `scores` hold results,
//! partitioned by run so that reading one run's progress touches only it.

use arrow::datatypes::SchemaRef;

use crate::ids::{Attempt, EpisodeId, Epoch, QueryId, RunId};
use crate::row::{Row, Timestamp};
use crate::table;
use crate::task::Task;

/// Where a post was collected, which decides how the tools find it and how
/// the `posts` table is partitioned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PostSource {
    /// Location streams (`raw_data/{day}_{location}_sensitive.jsonl`), read by `post_search`.
    Raw,
    /// Topic collections (`topic_data/{topic}.json`), read by `topic_search`.
    Topic,
    /// User timelines (`user_data/{uid}/{uid}.json`), read by `user_search`.
    Weibo,
}

impl PostSource {
    pub const ALL: [PostSource; 3] = [PostSource::Raw, PostSource::Topic, PostSource::Weibo];

    pub fn as_str(self) -> &'static str {
        match self {
            PostSource::Raw => "raw",
            PostSource::Topic => "topic",
            PostSource::Weibo => "weibo",
        }
    }

    pub fn parse(s: &str) -> Option<PostSource> {
        PostSource::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// Partition values of the `posts` table.
///
/// Every value derived from a user- or model-supplied string is a digest, so
/// no tool argument ever becomes part of an object path.
pub mod buckets {
    use sha2::{Digest, Sha256};

    /// Number of hash buckets user timelines are spread over.
    pub const WEIBO_BUCKETS: u64 = 64;

    fn digest(text: &str) -> [u8; 32] {
        Sha256::digest(text.as_bytes()).into()
    }

    /// A location stream for one day. `day` must be a validated `YYYY-MM-DD`.
    pub fn raw(day: &str, location: &str) -> String {
        format!("{day}.l{}", hex::encode(&digest(location)[..5]))
    }

    pub fn topic(topic: &str) -> String {
        format!("t{}", hex::encode(&digest(topic)[..6]))
    }

    pub fn weibo(uid: &str) -> String {
        let d = digest(uid);
        let n = u64::from_le_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]);
        format!("u{:02}", n % WEIBO_BUCKETS)
    }
}

table! {
    /// A post of any source. Fields that a source lacks are null; fields of the
    /// source file that have no column here are kept, as JSON, in `extra`.
    pub struct PostRow in posts partitioned by [source, bucket] {
        post_id: String,
        published_at: Option<Timestamp>,
        /// The location stream a raw post was collected in (`post_search`'s location).
        area: Option<String>,
        /// The topic a topic post was collected under.
        topic: Option<String>,
        /// The author of a user-timeline post.
        uid: Option<String>,
        nickname: Option<String>,
        platform: Option<String>,
        title: Option<String>,
        content: String,
        description: Option<String>,
        ocr: Option<String>,
        /// Where the post says it was published from (`public_location`, `region_name`).
        location: Option<String>,
        /// The posting client (Weibo's `source`, e.g. "iPhone客户端").
        client: Option<String>,
        reposts: Option<i64>,
        comments: Option<i64>,
        likes: Option<i64>,
        pic_num: Option<i64>,
        /// JSON, as in the source.
        pictures: Option<String>,
        video: Option<String>,
        /// JSON, as in the source.
        rca_list: Option<String>,
        extra: Option<String>,
        /// The post's place in its source file (a location stream's line, a
        /// topic's `media_info` entry, a timeline's `weibo` entry), from 0:
        /// tools list posts in this order, as the reference shows them.
        ordinal: i64,
        source: String,
        bucket: String,
    }
}

impl PostRow {
    /// A post with only its id, text and partition: every optional field
    /// empty. Set the rest with struct update syntax.
    pub fn new(post_id: impl Into<String>, content: impl Into<String>, source: PostSource, bucket: impl Into<String>) -> PostRow {
        PostRow {
            post_id: post_id.into(),
            published_at: None,
            area: None,
            topic: None,
            uid: None,
            nickname: None,
            platform: None,
            title: None,
            content: content.into(),
            description: None,
            ocr: None,
            location: None,
            client: None,
            reposts: None,
            comments: None,
            likes: None,
            pic_num: None,
            pictures: None,
            video: None,
            rca_list: None,
            extra: None,
            ordinal: 0,
            source: source.as_str().to_string(),
            bucket: bucket.into(),
        }
    }
}

table! {
    /// A user profile (`user_data/{uid}/{uid}.json`, key `user`).
    pub struct UserRow in users partitioned by [] {
        uid: String,
        name: Option<String>,
        followers_count: Option<i64>,
        friends_count: Option<i64>,
        total_rcl_count: Option<i64>,
        verified_reason: Option<String>,
        description: Option<String>,
        location: Option<String>,
        extra: Option<String>,
    }
}

table! {
    /// A post as the user-task queries show it (`post_data/all_posts.json`),
    /// kept verbatim because its JSON is embedded in the query text.
    pub struct RefPostRow in ref_posts partitioned by [] {
        post_id: String,
        json: String,
    }
}

table! {
    /// A report of the misinformation knowledge base (`knowledge_base.json`).
    pub struct KnowledgeRow in knowledge partitioned by [] {
        /// Position in the knowledge base; embeddings are aligned by it.
        doc_index: i64,
        content: String,
        link: Option<String>,
        extra: Option<String>,
    }
}

table! {
    /// One embedding vector, stored as little-endian bytes so that models of
    /// any dimension share one table. Partitioned like the rows it embeds, so
    /// the vectors of one tool read (a stream hour, a topic, a user) are in
    /// one folder.
    pub struct EmbeddingRow in embeddings partitioned by [collection, model, bucket] {
        /// A `post_id`, or a knowledge `doc_index` in decimal.
        id: String,
        /// `f32` or `f16`.
        dtype: String,
        dim: i32,
        vector: Vec<u8>,
        /// `posts` or `knowledge`.
        collection: String,
        model: String,
        /// The `posts` bucket of the post; `all` for knowledge.
        bucket: String,
    }
}

table! {
    /// One benchmark query with its reference. Task-specific fields are null
    /// where a task has no such field; `entry` keeps the source entry verbatim.
    pub struct QueryRow in queries partitioned by [] {
        query_id: QueryId,
        task: Task,
        /// The top-level key of the source file (uid, claim file, question, RED window).
        source_key: String,
        /// Position of the entry under its key.
        position: i32,
        uid: Option<String>,
        post_id: Option<String>,
        /// UBP: like, comment or repost.
        action: Option<String>,
        /// UCS: the candidate comment. UBP: the comment or repost text.
        comment: Option<String>,
        location: Option<String>,
        window_start: Option<Timestamp>,
        window_end: Option<Timestamp>,
        topic: Option<String>,
        claim: Option<String>,
        question: Option<String>,
        /// The reference label (MID, UBP, UEA, UCS, MCR).
        label: Option<String>,
        /// The reference answer (RED: JSON list of events; SES: summary; SMQ: answer).
        reference: Option<String>,
        entry: String,
    }
}

impl QueryRow {
    /// A query of `task` with every task-specific field empty. Set the rest
    /// with struct update syntax.
    pub fn blank(query_id: QueryId, task: Task) -> QueryRow {
        QueryRow {
            query_id,
            task,
            source_key: String::new(),
            position: 0,
            uid: None,
            post_id: None,
            action: None,
            comment: None,
            location: None,
            window_start: None,
            window_end: None,
            topic: None,
            claim: None,
            question: None,
            label: None,
            reference: None,
            entry: String::new(),
        }
    }
}

table! {
    /// A run's lifecycle, as append-only [`RunEvent`]s.
    pub struct RunRow in runs partitioned by [] {
        run_id: RunId,
        /// A [`RunEvent`].
        event: RunEvent,
        at: Timestamp,
        /// As JSON: the run's spec (`submitted`, `cancelled`), a judging's
        /// spec (`judging`), or why the run stopped (`stopped`).
        spec: String,
    }
}

/// What a `runs` row records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunEvent {
    /// The run's spec, as submitted (again when a rerun moves its endpoints).
    Submitted,
    Cancelled,
    /// A judging of the run other than its primary one, or new endpoints
    /// for one.
    Judging,
    /// The run reached its budget: workers drop its remaining shards (the
    /// spec column holds the reason and the budget reached).
    Stopped,
}

impl RunEvent {
    pub const ALL: [RunEvent; 4] = [RunEvent::Submitted, RunEvent::Cancelled, RunEvent::Judging, RunEvent::Stopped];

    pub fn as_str(self) -> &'static str {
        match self {
            RunEvent::Submitted => "submitted",
            RunEvent::Cancelled => "cancelled",
            RunEvent::Judging => "judging",
            RunEvent::Stopped => "stopped",
        }
    }
}

impl std::str::FromStr for RunEvent {
    type Err = String;

    fn from_str(s: &str) -> Result<RunEvent, String> {
        RunEvent::ALL.into_iter().find(|e| e.as_str() == s).ok_or_else(|| format!("unknown run event {s:?}"))
    }
}

/// Stored by name (`submitted`).
impl crate::row::ColumnValue for RunEvent {
    fn data_type() -> arrow::datatypes::DataType {
        arrow::datatypes::DataType::Utf8
    }
    fn to_array<'a>(values: impl ExactSizeIterator<Item = &'a Self>) -> arrow::array::ArrayRef {
        let names: Vec<String> = values.map(|e| e.as_str().to_string()).collect();
        String::to_array(names.iter())
    }
    fn from_array(array: &dyn arrow::array::Array) -> Result<Vec<Option<Self>>, String> {
        String::from_array(array)?.into_iter().map(|v| v.map(|name| name.parse::<RunEvent>()).transpose()).collect()
    }
}

/// The judging of a run's own judge, which scores each episode as it
/// finishes; other judgings are named when they are asked for.
pub const PRIMARY_JUDGING: &str = "primary";

table! {
    /// One attempt of one agent episode.
    pub struct EpisodeRow in episodes partitioned by [run_id] {
        query_id: QueryId,
        task: Task,
        attempt: Attempt,
        /// Which repetition of the query (`some run --epochs`).
        epoch: Epoch,
        /// This row's own id, which its scores name.
        episode_id: EpisodeId,
        /// The attempt readers take as the query's result.
        is_final: bool,
        status: String,
        answer: Option<String>,
        model: String,
        protocol: String,
        llm_calls: i32,
        tool_calls: i32,
        tool_errors: i32,
        prompt_tokens: i64,
        completion_tokens: i64,
        /// Of the prompt tokens, those the endpoint took from its prompt
        /// cache; null in rows written before it was recorded.
        cached_prompt_tokens: Option<i64>,
        latency_ms: i64,
        started_at: Timestamp,
        finished_at: Timestamp,
        worker: String,
        /// The full conversation and per-call accounting, as JSON.
        transcript: String,
        error: Option<String>,
        run_id: RunId,
    }
}

table! {
    /// The evaluation of one episode under one judging.
    pub struct ScoreRow in scores partitioned by [run_id] {
        query_id: QueryId,
        task: Task,
        attempt: Attempt,
        epoch: Epoch,
        is_final: bool,
        /// The episode row scored.
        episode_id: EpisodeId,
        /// [`PRIMARY_JUDGING`] or the name of another judging of the run.
        judging: String,
        /// The extracted label (classification tasks).
        extracted: Option<String>,
        /// Judge dimensions as JSON, e.g. {"accuracy":4,"completeness":3}.
        dimensions: Option<String>,
        /// 0-100.
        score: f64,
        completed: bool,
        judge_model: Option<String>,
        judge_calls: i32,
        judge_seed: Option<i64>,
        judge_temperature: Option<f64>,
        /// The judge's (or extractor's) last reply as written; null where
        /// no model was asked and in rows written before it was recorded.
        judge_reply: Option<String>,
        /// Tokens the judge's calls took; null in rows written before they
        /// were recorded.
        judge_prompt_tokens: Option<i64>,
        judge_completion_tokens: Option<i64>,
        error: Option<String>,
        finished_at: Timestamp,
        run_id: RunId,
    }
}

table! {
    /// One shard of an annotation as the worker that made it wrote it: one
    /// file per shard, written once (put-if-absent), so a redelivered
    /// shard never adds a second answer; the annotation's coordinator reads
    /// every shard's file and writes the ground truth.
    pub struct AnnotationShardRow in annotation_shards partitioned by [annotation_id] {
        /// The shard's key (a RED location-day: `<location>_<day>`).
        shard: String,
        /// What the shard found, as JSON the annotation defines.
        body: String,
        written_at: Timestamp,
        annotation_id: String,
    }
}

/// A table as the lake and the SQL engine see it.
#[derive(Debug, Clone, Copy)]
pub struct TableDef {
    pub name: &'static str,
    pub schema: fn() -> SchemaRef,
    pub file_schema: fn() -> SchemaRef,
    pub partition_columns: &'static [&'static str],
}

impl TableDef {
    pub const fn of<R: Row>() -> TableDef {
        TableDef { name: R::TABLE, schema: R::schema, file_schema: R::file_schema, partition_columns: R::PARTITION_COLUMNS }
    }

    pub fn named(name: &str) -> Option<TableDef> {
        crate::ALL_TABLES.iter().copied().find(|t| t.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SchemaError;
    use arrow::record_batch::RecordBatch;
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    /// row -> RecordBatch -> Parquet bytes -> RecordBatch -> row.
    fn round_trip<R: Row + PartialEq + std::fmt::Debug>(rows: Vec<R>) {
        let batch = R::to_batch(&rows).unwrap();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new(&mut bytes, R::schema(), None).unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
        let metadata = reader.schema().metadata().clone();
        assert_eq!(metadata.get(crate::SCHEMA_VERSION_KEY), Some(&crate::SCHEMA_VERSION.to_string()));
        let batches: Vec<RecordBatch> = reader.build().unwrap().collect::<Result<_, _>>().unwrap();
        let back: Vec<R> = batches.iter().flat_map(|b| R::from_batch(b).unwrap()).collect();
        assert_eq!(back, rows);
    }

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse(s).unwrap()
    }

    pub(crate) fn post(id: &str) -> PostRow {
        PostRow {
            post_id: id.into(),
            published_at: Some(ts("2025-05-01 08:30:00")),
            area: Some("北京".into()),
            topic: None,
            uid: Some("7391946667".into()),
            nickname: Some("小王".into()),
            platform: Some("微博".into()),
            title: None,
            content: "今天天气不错 ☀️".into(),
            description: None,
            ocr: Some(String::new()),
            location: Some("发布于 北京".into()),
            client: None,
            reposts: Some(3),
            comments: None,
            likes: Some(0),
            pic_num: None,
            pictures: Some("[\"a.jpg\"]".into()),
            video: None,
            rca_list: None,
            extra: Some("{\"k\":1}".into()),
            ordinal: 7,
            source: "raw".into(),
            bucket: buckets::raw("2025-05-01", "北京"),
        }
    }

    #[test]
    fn every_table_round_trips_through_parquet() {
        round_trip(vec![post("p1"), PostRow { published_at: None, content: String::new(), ..post("p2") }]);
        round_trip(vec![UserRow {
            uid: "1".into(),
            name: Some("n".into()),
            followers_count: Some(10),
            friends_count: None,
            total_rcl_count: Some(7),
            verified_reason: None,
            description: Some("简介".into()),
            location: Some("北京".into()),
            extra: None,
        }]);
        round_trip(vec![RefPostRow { post_id: "5".into(), json: "{\"内容\":\"x\"}".into() }]);
        round_trip(vec![KnowledgeRow { doc_index: 0, content: "c".into(), link: None, extra: None }]);
        round_trip(vec![EmbeddingRow {
            id: "p1".into(),
            dtype: "f32".into(),
            dim: 2,
            vector: [1.0f32, -2.0].iter().flat_map(|v| v.to_le_bytes()).collect(),
            collection: "posts".into(),
            model: "minilm".into(),
            bucket: "u01".into(),
        }]);
        round_trip(vec![QueryRow {
            query_id: "red-0".into(),
            task: Task::Red,
            source_key: "k".into(),
            position: 0,
            uid: None,
            post_id: None,
            action: None,
            comment: None,
            location: Some("新疆".into()),
            window_start: Some(ts("2025-06-01 00:00:00")),
            window_end: Some(ts("2025-06-01 01:00:00")),
            topic: None,
            claim: None,
            question: None,
            label: None,
            reference: Some("[]".into()),
            entry: "[]".into(),
        }]);
        round_trip(vec![RunRow { run_id: "r".into(), event: RunEvent::Submitted, at: ts("2026-01-01 00:00:00"), spec: "{}".into() }]);
        round_trip(vec![EpisodeRow {
            query_id: "q".into(),
            task: Task::Mid,
            attempt: Attempt(2),
            epoch: Epoch(3),
            episode_id: "e1".into(),
            is_final: true,
            status: "completed".into(),
            answer: Some("true".into()),
            model: "m".into(),
            protocol: "text".into(),
            llm_calls: 3,
            tool_calls: 2,
            tool_errors: 0,
            prompt_tokens: 100,
            completion_tokens: 20,
            cached_prompt_tokens: Some(7),
            latency_ms: 1234,
            started_at: ts("2026-01-01 00:00:00"),
            finished_at: ts("2026-01-01 00:00:02"),
            worker: "w1".into(),
            transcript: "[]".into(),
            error: None,
            run_id: "r".into(),
        }]);
        round_trip(vec![ScoreRow {
            query_id: "q".into(),
            task: Task::Red,
            attempt: Attempt(1),
            epoch: Epoch(2),
            is_final: true,
            episode_id: "e1".into(),
            judging: PRIMARY_JUDGING.into(),
            extracted: None,
            dimensions: Some("{\"accuracy\":4}".into()),
            score: 80.0,
            completed: true,
            judge_model: Some("j".into()),
            judge_calls: 1,
            judge_seed: Some(7),
            judge_temperature: Some(0.0),
            judge_reply: Some("{\"accuracy\": 4}".into()),
            judge_prompt_tokens: Some(300),
            judge_completion_tokens: None,
            error: None,
            finished_at: ts("2026-01-01 00:00:02"),
            run_id: "r".into(),
        }]);
    }

    #[test]
    fn partition_columns_are_the_last_fields_of_every_table() {
        for table in crate::ALL_TABLES {
            let schema = (table.schema)();
            let n = schema.fields().len();
            let tail: Vec<&str> = schema.fields()[n - table.partition_columns.len()..].iter().map(|f| f.name().as_str()).collect();
            assert_eq!(tail, table.partition_columns, "{}", table.name);
            assert_eq!((table.file_schema)().fields().len(), n - table.partition_columns.len());
        }
    }

    #[test]
    fn a_missing_or_null_required_column_is_named_in_the_error() {
        let batch = PostRow::to_batch(&[post("p1")]).unwrap();
        let without = batch.project(&[1, 2]).unwrap();
        let err = PostRow::from_batch(&without).unwrap_err();
        assert!(matches!(err, SchemaError::MissingColumn { column: "post_id", .. }), "{err}");
        assert_eq!(err.to_string(), "table posts: column \"post_id\" is missing");
    }

    #[test]
    fn buckets_hide_their_inputs_and_are_stable() {
        assert_eq!(buckets::raw("2025-05-01", "北京"), buckets::raw("2025-05-01", "北京"));
        assert!(buckets::raw("2025-05-01", "../../etc").starts_with("2025-05-01.l"));
        assert!(!buckets::topic("a/b").contains('/'));
        assert_eq!(buckets::weibo("7391946667").len(), 3);
    }
}
