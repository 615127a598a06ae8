//! `some embed`: stores vectors for posts and knowledge reports so the tools
//! need not embed them on every call.
//!
//! Work is done one `posts` bucket at a time, each committed on its own, and
//! only for ids that have no vector of that model yet: an interrupted run
//! resumes where it stopped, and a second run does nothing.

use std::collections::HashSet;
use std::time::Instant;

use datafusion::prelude::{col, lit};
use some_jobs::embed::{Embedder, Purpose};
use some_jobs::progress::Progress;
use some_schemas::row::ColumnValue;
use some_schemas::{EmbeddingRow, KnowledgeRow, PostRow, PostSource, Row, embeddings, knowledge, posts};

use super::BuiltinEmbedder;
use crate::error::{Error, Result};
use crate::lake::Lake;

/// The `embeddings.bucket` of knowledge vectors, which have one partition.
pub const ALL_BUCKET: &str = "all";

/// Texts embedded per call (and per progress step).
const BATCH: usize = 256;

/// What `some embed` covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedTarget {
    Knowledge,
    /// Posts of one source, or of every source.
    Posts(Option<PostSource>),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct EmbedReport {
    pub embedded: u64,
    pub already: u64,
    pub seconds: f64,
}

fn vector_row(id: String, v: Vec<f32>, collection: &str, model: &str, bucket: &str) -> EmbeddingRow {
    EmbeddingRow {
        id,
        dtype: "f32".into(),
        dim: v.len() as i32,
        vector: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        collection: collection.into(),
        model: model.into(),
        bucket: bucket.into(),
    }
}

async fn existing_ids(ctx: &datafusion::prelude::SessionContext, collection: &str, model: &str, bucket: &str) -> Result<HashSet<String>> {
    let filter = col(embeddings::collection)
        .eq(lit(collection.to_string()))
        .and(col(embeddings::model).eq(lit(model.to_string())))
        .and(col(embeddings::bucket).eq(lit(bucket.to_string())));
    let df = ctx.table(EmbeddingRow::TABLE).await?.filter(filter)?.select_columns(&[embeddings::id])?;
    let mut ids = HashSet::new();
    for batch in df.collect().await? {
        ids.extend(<String as ColumnValue>::from_array(batch.column(0).as_ref()).map_err(Error::Invalid)?.into_iter().flatten());
    }
    Ok(ids)
}

/// Embeds `texts` (id, text) and commits them as one part file.
async fn embed_and_write(
    lake: &Lake,
    embedder: &dyn Embedder,
    items: Vec<(String, String)>,
    collection: &str,
    bucket: &str,
    progress: &dyn Progress,
) -> Result<u64> {
    if items.is_empty() {
        return Ok(0);
    }
    let mut rows = Vec::with_capacity(items.len());
    for chunk in items.chunks(BATCH) {
        let texts: Vec<String> = chunk.iter().map(|(_, t)| t.clone()).collect();
        let vectors = embedder.embed(&texts, Purpose::Document).await?;
        if vectors.len() != chunk.len() {
            return Err(Error::Invalid(format!("{} returned {} vectors for {} texts", embedder.model(), vectors.len(), chunk.len())));
        }
        for ((id, _), v) in chunk.iter().zip(vectors) {
            rows.push(vector_row(id.clone(), v, collection, embedder.model(), bucket));
        }
        progress.advance(chunk.len() as u64);
    }
    let n = rows.len() as u64;
    let mut txn = lake.txn();
    txn.write_rows(rows).await?;
    txn.commit().await?;
    Ok(n)
}

/// The post partitions (source, bucket, posts) to embed, one job each.
pub async fn post_partitions(lake: &Lake, source: Option<PostSource>) -> Result<Vec<(String, String, u64)>> {
    let ctx = lake.session().await?;
    let mut df = ctx.table(PostRow::TABLE).await?;
    if let Some(s) = source {
        df = df.filter(col(posts::source).eq(lit(s.as_str())))?;
    }
    let counted =
        df.aggregate(vec![col(posts::source), col(posts::bucket)], vec![datafusion::functions_aggregate::count::count(lit(1))])?;
    let mut partitions: Vec<(String, String, u64)> = Vec::new();
    for b in counted.collect().await? {
        let s = <String as ColumnValue>::from_array(b.column(0).as_ref()).map_err(Error::Invalid)?;
        let k = <String as ColumnValue>::from_array(b.column(1).as_ref()).map_err(Error::Invalid)?;
        let n = <i64 as ColumnValue>::from_array(b.column(2).as_ref()).map_err(Error::Invalid)?;
        for ((s, k), n) in s.into_iter().zip(k).zip(n) {
            partitions.push((s.unwrap_or_default(), k.unwrap_or_default(), n.unwrap_or_default() as u64));
        }
    }
    partitions.sort();
    Ok(partitions)
}

/// Embeds what one partition still lacks (`posts` by source and bucket, or
/// all of `knowledge`); safe to run again, which adds nothing.
pub async fn embed_partition(
    lake: &Lake,
    embedder: &dyn Embedder,
    target: &EmbedPartition,
    progress: &dyn Progress,
) -> Result<EmbedReport> {
    let started = Instant::now();
    let ctx = lake.session().await?;
    let (todo, already, collection, bucket) = match target {
        EmbedPartition::Knowledge => {
            let docs: Vec<KnowledgeRow> = lake.read(&ctx, None).await?;
            let have = existing_ids(&ctx, knowledge::TABLE, embedder.model(), ALL_BUCKET).await?;
            let todo: Vec<(String, String)> =
                docs.into_iter().map(|d| (d.doc_index.to_string(), d.content)).filter(|(id, _)| !have.contains(id)).collect();
            (todo, have.len() as u64, knowledge::TABLE, ALL_BUCKET.to_string())
        }
        EmbedPartition::Posts { source, bucket } => {
            let have = existing_ids(&ctx, posts::TABLE, embedder.model(), bucket).await?;
            let filter = col(posts::source).eq(lit(source.clone())).and(col(posts::bucket).eq(lit(bucket.clone())));
            let posts: Vec<PostRow> = lake.read(&ctx, Some(filter)).await?;
            let total = posts.len() as u64;
            let todo: Vec<(String, String)> =
                posts.into_iter().filter(|p| !have.contains(&p.post_id)).map(|p| (p.post_id, p.content)).collect();
            let already = total - todo.len() as u64;
            progress.advance(already);
            (todo, already, posts::TABLE, bucket.clone())
        }
    };
    let embedded = embed_and_write(lake, embedder, todo, collection, &bucket, progress).await?;
    Ok(EmbedReport { embedded, already, seconds: started.elapsed().as_secs_f64() })
}

/// One unit of embedding work (one queue job).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EmbedPartition {
    Knowledge,
    Posts { source: String, bucket: String },
}

impl EmbedPartition {
    /// As a job message names it: `knowledge` or `posts/<source>/<bucket>`.
    pub fn name(&self) -> String {
        match self {
            EmbedPartition::Knowledge => knowledge::TABLE.into(),
            EmbedPartition::Posts { source, bucket } => format!("posts/{source}/{bucket}"),
        }
    }

    pub fn parse(name: &str) -> std::result::Result<EmbedPartition, String> {
        match name.split('/').collect::<Vec<_>>().as_slice() {
            [knowledge::TABLE] => Ok(EmbedPartition::Knowledge),
            [posts::TABLE, source, bucket] if PostSource::parse(source).is_some() => {
                Ok(EmbedPartition::Posts { source: source.to_string(), bucket: bucket.to_string() })
            }
            _ => Err(format!("unknown embedding partition {name:?}: expected knowledge or posts/<source>/<bucket>")),
        }
    }
}

/// The partitions a target covers.
pub async fn partitions(lake: &Lake, target: &EmbedTarget) -> Result<Vec<(EmbedPartition, u64)>> {
    match target {
        EmbedTarget::Knowledge => Ok(vec![(EmbedPartition::Knowledge, 0)]),
        EmbedTarget::Posts(source) => Ok(post_partitions(lake, *source)
            .await?
            .into_iter()
            .map(|(source, bucket, n)| (EmbedPartition::Posts { source, bucket }, n))
            .collect()),
    }
}

pub async fn embed(lake: &Lake, embedder: &dyn Embedder, target: EmbedTarget, progress: &dyn Progress) -> Result<EmbedReport> {
    let started = Instant::now();
    let parts = partitions(lake, &target).await?;
    progress.phase(if target == EmbedTarget::Knowledge { knowledge::TABLE } else { posts::TABLE }, Some(parts.iter().map(|p| p.1).sum()));
    let mut report = EmbedReport::default();
    for (part, _) in parts {
        let done = embed_partition(lake, embedder, &part, progress).await?;
        report.embedded += done.embedded;
        report.already += done.already;
    }
    progress.finish();
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
/// The handler of embedding jobs: the built-in embedders, each loaded by
/// the first job that names it.
#[derive(Default)]
pub struct EmbedJobs {
    embedders: tokio::sync::Mutex<std::collections::HashMap<String, BuiltinEmbedder>>,
}

impl EmbedJobs {
    /// Embeds one partition of `collection` with the built-in `model`.
    pub async fn run(&self, lake: &Lake, progress: &dyn Progress, collection: &str, model: &str, partition: &str) -> Result<()> {
        let part = EmbedPartition::parse(partition).map_err(Error::Invalid)?;
        if part.name().split('/').next() != Some(collection) {
            return Err(Error::Invalid(format!("partition {partition} is not of collection {collection}")));
        }
        let embedder = {
            let mut loaded = self.embedders.lock().await;
            match loaded.get(model) {
                Some(e) => e.clone(),
                None => {
                    let e = BuiltinEmbedder::load(model)?;
                    loaded.insert(model.to_string(), e.clone());
                    e
                }
            }
        };
        embed_partition(lake, &embedder, &part, progress).await.map(drop)
    }
}
