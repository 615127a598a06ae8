//! The data model of `some`: every table of the lake, the job messages on the
//! queues, and the ids that tie them together.
//!
//! Nothing else in the workspace spells a table or column name: tables are
//! declared once with [`table!`], which yields the row type, its Arrow schema
//! and the conversions. Every Parquet file and every job message carries
//! [`SCHEMA_VERSION`], so a reader can refuse data it would misread.
//!
//! ```
//! use some_schemas::{PostRow, PostSource, Row, Timestamp};
//! let post = PostRow {
//!     published_at: Timestamp::parse("2025-05-01 08:00:00"),
//!     area: Some("北京".into()),
//!     ..PostRow::new("p1", "早高峰", PostSource::Raw, "b")
//! };
//! let batch = PostRow::to_batch(&[post.clone()]).unwrap();
//! assert_eq!(PostRow::from_batch(&batch).unwrap(), vec![post]);
//! assert_eq!(PostRow::PARTITION_COLUMNS, &["source", "bucket"]);
//! ```

pub mod error;
pub mod ids;
pub mod messages;
pub mod row;
pub mod sim;
pub mod tables;
pub mod task;

pub use error::SchemaError;
pub use ids::{Attempt, EpisodeId, Epoch, QueryId, RunId, ShardId};
pub use messages::{Job, JobKind, JobMessage, QueryAttempt, QueueLocation};
pub use row::{Row, Timestamp};
pub use tables::*;
pub use task::{Language, Scoring, Task};

/// The version of the lake layout and message format. Bump it on any change a
/// reader of older data would misread.
pub const SCHEMA_VERSION: u32 = 3;

/// The Arrow schema / Parquet key-value metadata key that carries [`SCHEMA_VERSION`].
pub const SCHEMA_VERSION_KEY: &str = "some.schema_version";

/// Every table of the lake, in the order `some sql` lists them: the
/// benchmark's, then the simulation's. One list, so the SQL catalog,
/// `some vacuum` and the lake's checks never disagree about what exists.
pub const ALL_TABLES: &[TableDef] = &[
    TableDef::of::<PostRow>(),
    TableDef::of::<UserRow>(),
    TableDef::of::<RefPostRow>(),
    TableDef::of::<KnowledgeRow>(),
    TableDef::of::<EmbeddingRow>(),
    TableDef::of::<QueryRow>(),
    TableDef::of::<RunRow>(),
    TableDef::of::<EpisodeRow>(),
    TableDef::of::<ScoreRow>(),
    TableDef::of::<sim::SimRunRow>(),
    TableDef::of::<sim::SimAgentRow>(),
    TableDef::of::<sim::SimPostRow>(),
    TableDef::of::<sim::SimActionRow>(),
    TableDef::of::<sim::SimFollowRow>(),
    TableDef::of::<sim::SimFeedRow>(),
    TableDef::of::<sim::SimTurnRow>(),
    TableDef::of::<sim::SimStepRow>(),
    TableDef::of::<sim::SimReviewRow>(),
    TableDef::of::<sim::SimInterviewRow>(),
    TableDef::of::<sim::SimInterventionRow>(),
    TableDef::of::<AnnotationShardRow>(),
];
