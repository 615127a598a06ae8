//! The lake: Parquet tables in one object store (a local folder or any S3
//! endpoint), made of the files its transaction log names, read with
//! DataFusion through that same store.
//!
//! Layout under the lake root:
//!
//! ```text
//! _log/…                                     the transaction log (crate::lake::log)
//! posts/source=raw/bucket=2025-05-01.l…/part-<txn>-00000.parquet
//! posts/source=topic/bucket=t…/…             one partition per topic
//! posts/source=weibo/bucket=u17/…            user timelines, 64 hash buckets
//! users/…  ref_posts/…  knowledge/…  queries/…
//! episodes/run_id=<run>/…  scores/run_id=<run>/…
//! _staging/<txn>/<tag>.json                  files staged by the jobs of a shared transaction
//! _ingest/<id>/…                             an ingestion's plan and progress (crate::ingestion)
//! ```
//!
//! Writes go through a [`Txn`]: its files are written whole, under names of
//! their own, and become visible together when one commit naming them lands
//! in the log; a reader sees a version of the lake, never part of a
//! transaction. A file no commit names is never read (`some vacuum`
//! deletes it after the retention period).

mod delta;
mod log;
mod once;
mod sql;
#[cfg(test)]
mod tests;
mod vacuum;
mod view;
mod write;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;

pub use delta::{DeltaExport, TableVersion};
pub use log::{AsOf, CommitInfo, FileEntry, Removal, Snapshot};
pub use sql::{OutputFormat, format_batches};
pub use vacuum::Vacuumed;
pub use write::{Committed, EncodedParts, Staged, Txn, encode_parquet, encode_rows};

use crate::error::{Error, Result};

/// The environment variable that names the lake when `--lake` is not given.
pub const LAKE_ENV: &str = "SOME_LAKE";
/// The lake used when neither `--lake` nor `SOME_LAKE` is set.
pub const DEFAULT_LAKE: &str = "some-lake";

/// Where the lake lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LakeLocation {
    /// A folder on this machine.
    Local(PathBuf),
    /// `s3://bucket/prefix`; endpoint and credentials come from the standard
    /// AWS environment variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`).
    S3 { bucket: String, prefix: String },
}

impl FromStr for LakeLocation {
    type Err = Error;

    fn from_str(s: &str) -> Result<LakeLocation> {
        let bad = |message: &str| Error::Location { location: s.to_string(), message: message.to_string() };
        if let Some(rest) = s.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(bad("an S3 lake needs a bucket: s3://bucket/prefix"));
            }
            return Ok(LakeLocation::S3 { bucket: bucket.to_string(), prefix: prefix.trim_matches('/').to_string() });
        }
        if s.contains("://") && !s.starts_with("file://") {
            return Err(bad("expected a folder path, file://path or s3://bucket/prefix"));
        }
        let path = PathBuf::from(s.strip_prefix("file://").unwrap_or(s));
        if path.as_os_str().is_empty() {
            return Err(bad("the lake path is empty"));
        }
        Ok(LakeLocation::Local(path))
    }
}

impl std::fmt::Display for LakeLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LakeLocation::Local(p) => write!(f, "{}", p.display()),
            LakeLocation::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
        }
    }
}

impl LakeLocation {
    /// `--lake` if given, else `SOME_LAKE`, else `./some-lake`.
    pub fn resolve(flag: Option<&str>) -> Result<LakeLocation> {
        match flag {
            Some(s) => s.parse(),
            None => std::env::var(LAKE_ENV).as_deref().unwrap_or(DEFAULT_LAKE).parse(),
        }
    }
}

/// An open lake: the object store, the root inside it, and the URL DataFusion
/// knows the store by.
#[derive(Debug, Clone)]
pub struct Lake {
    location: LakeLocation,
    store: Arc<dyn ObjectStore>,
    store_url: Url,
    root: Path,
    /// The latest state of the log this process knows, shared by clones.
    latest: Arc<tokio::sync::Mutex<Arc<Snapshot>>>,
    /// Set on a lake opened as of an earlier version: it reads that one.
    pinned: Option<Arc<Snapshot>>,
    /// Per table, the latest Delta version this process knows is written
    /// (crate::lake::delta), shared by clones.
    delta_written: Arc<std::sync::Mutex<std::collections::HashMap<String, u64>>>,
}

/// What the folder layout of earlier builds left at the root.
const FOLDER_LAYOUT_MARKER: &str = "_lake.json";

/// The standard AWS variables an S3 lake reads.
const S3_ENV: [&str; 9] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT",
    "AWS_ALLOW_HTTP",
    "AWS_VIRTUAL_HOSTED_STYLE_REQUEST",
];

impl Lake {
    /// Opens (and for a local lake, creates) the lake. Checks the layout
    /// version if the lake has one. S3 settings come from the environment.
    pub async fn open(location: &LakeLocation) -> Result<Lake> {
        Lake::open_with_env(location, |key| std::env::var(key).ok()).await
    }

    /// [`Lake::open`] with the `AWS_*` settings read from `env` instead of
    /// the process environment (several lakes in one process, tests).
    pub async fn open_with_env(location: &LakeLocation, env: impl Fn(&str) -> Option<String>) -> Result<Lake> {
        let lake = Lake::open_store(location, env)?;
        lake.open_log().await?;
        Ok(lake)
    }

    /// The store and root of `location`, the log not read yet.
    fn open_store(location: &LakeLocation, env: impl Fn(&str) -> Option<String>) -> Result<Lake> {
        Ok(match location {
            LakeLocation::Local(dir) => {
                std::fs::create_dir_all(dir)
                    .map_err(|e| Error::Location { location: location.to_string(), message: format!("cannot create the folder: {e}") })?;
                let abs =
                    std::fs::canonicalize(dir).map_err(|e| Error::Location { location: location.to_string(), message: e.to_string() })?;
                let root = Path::from_filesystem_path(&abs)
                    .map_err(|e| Error::Location { location: location.to_string(), message: e.to_string() })?;
                Lake::new(location, Arc::new(LocalFileSystem::new()), Url::parse("file:///").expect("static url"), root)
            }
            LakeLocation::S3 { bucket, prefix } => {
                let mut builder = AmazonS3Builder::new().with_bucket_name(bucket);
                for key in S3_ENV {
                    if let (Some(value), Ok(config)) = (env(key), key.to_ascii_lowercase().parse()) {
                        builder = builder.with_config(config, value);
                    }
                }
                if let Some(endpoint) = env("AWS_ENDPOINT_URL").or_else(|| env("AWS_ENDPOINT")) {
                    // A custom endpoint is an S3-compatible server: path-style
                    // requests, and plain HTTP if that is what it speaks.
                    builder = builder.with_allow_http(endpoint.starts_with("http://"));
                    if env("AWS_VIRTUAL_HOSTED_STYLE_REQUEST").is_none() {
                        builder = builder.with_virtual_hosted_style_request(false);
                    }
                    if env("AWS_REGION").is_none() && env("AWS_DEFAULT_REGION").is_none() {
                        builder = builder.with_region("us-east-1");
                    }
                }
                // How long one request keeps retrying before its operation
                // fails (3 minutes unless `SOME_STORE_RETRY_TIMEOUT` says
                // otherwise, in seconds).
                if let Some(secs) = env("SOME_STORE_RETRY_TIMEOUT").and_then(|v| v.parse::<u64>().ok()) {
                    let retry = object_store::RetryConfig { retry_timeout: std::time::Duration::from_secs(secs), ..Default::default() };
                    builder = builder.with_retry(retry);
                }
                let store = builder.build().map_err(|e| Error::Location { location: location.to_string(), message: e.to_string() })?;
                let store_url = Url::parse(&format!("s3://{bucket}/"))
                    .map_err(|e| Error::Location { location: location.to_string(), message: e.to_string() })?;
                Lake::new(location, Arc::new(store), store_url, Path::from(prefix.as_str()))
            }
        })
    }

    fn new(location: &LakeLocation, store: Arc<dyn ObjectStore>, store_url: Url, root: Path) -> Lake {
        Lake {
            location: location.clone(),
            store,
            store_url,
            root,
            latest: Default::default(),
            pinned: None,
            delta_written: Default::default(),
        }
    }

    pub fn location(&self) -> &LakeLocation {
        &self.location
    }

    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    /// The object path of a path relative to the lake root.
    pub fn path(&self, relative: &str) -> Path {
        relative.split('/').filter(|s| !s.is_empty()).fold(self.root.clone(), |p, s| p.join(s))
    }

    /// The URL of a table's folder, as DataFusion lists it.
    fn table_url(&self, table: &str) -> String {
        format!("{}{}/", self.store_url, self.path(table))
    }

    /// Starts a write transaction with a name of its own.
    pub fn txn(&self) -> Txn {
        Txn::new(self.clone())
    }

    /// Starts the transaction `name`: committing it again, by this process
    /// or another (a job redelivered after its commit landed), commits
    /// nothing.
    pub fn txn_named(&self, name: &str) -> Txn {
        Txn::named(self.clone(), name.to_string(), None)
    }

    /// Stages files tagged `tag` into the shared transaction `id`, which
    /// [`Lake::commit_staged`] commits once every job has staged its part.
    /// Staging a tag again replaces what it staged before.
    pub fn txn_in(&self, id: &str, tag: &str) -> Txn {
        Txn::named(self.clone(), id.to_string(), Some(tag))
    }

    /// Reads the log (creating the lake if there is none) and refuses a
    /// lake of another schema version or of the folder layout.
    async fn open_log(&self) -> Result<()> {
        let marker = self.path(FOLDER_LAYOUT_MARKER);
        match self.store.head(&marker).await {
            Ok(_) => {
                return Err(Error::Invalid(format!(
                    "the lake at {} was written by an earlier build (folder layout: {marker}, no complete transaction log); \
                     this build reads only lakes with a log: convert it in place with `some lake convert`, or rebuild it \
                     into a new --lake with `some synth` or `some ingest release`",
                    self.location
                )));
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(Error::store("read", &marker)(e)),
        }
        let created = match self.read_commit(0).await? {
            Some(commit) => commit,
            None => self.create_log(some_schemas::SCHEMA_VERSION).await?,
        };
        let version = created.schema_version;
        if version != Some(some_schemas::SCHEMA_VERSION) {
            let found = version.map_or_else(|| "no schema version".to_string(), |v| format!("schema version {v}"));
            return Err(Error::Invalid(format!(
                "the lake at {} has {found}; this build reads version {}: use another --lake, or the build that wrote it",
                self.location,
                some_schemas::SCHEMA_VERSION
            )));
        }
        let latest = Arc::new(self.load_latest().await?);
        *self.latest.lock().await = latest.clone();
        if let Err(e) = self.catch_up_delta(&latest).await {
            tracing::warn!(error = %e, "lake: the tables' Delta logs lag the lake (they catch up at the next commit or open)");
        }
        Ok(())
    }
}
