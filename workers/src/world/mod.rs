//! The world the tools read, and the queries: filling the lake with them
//! (queries and synthetic worlds here; real releases through [`ingest`],
//! one job per unit), checking it ([`check`]), and reading it for the tools
//! ([`LakeBackend`]).
//!
//! Every write here goes through one [`Txn`](crate::lake::Txn): the lake
//! shows all of an import or none of it.

pub mod check;
pub mod ingest;
mod lake_backend;

pub use lake_backend::{LakeBackend, LakeWorld};

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use some_jobs::progress::Progress;
use some_jobs::release::ReleaseWriter;
use some_jobs::solvers::Sources;
use some_jobs::synth::World;
use some_schemas::row::ColumnValue;
use some_schemas::{
    EmbeddingRow, KnowledgeRow, PostRow, PostSource, QueryId, QueryRow, RefPostRow, Row, TableDef, UserRow, posts, queries,
};

use crate::error::{Error, Result};
use crate::lake::{Lake, Txn, encode_parquet};

/// The tables that make up a world (as opposed to queries and results).
pub const WORLD_TABLES: [&str; 5] = [PostRow::TABLE, UserRow::TABLE, RefPostRow::TABLE, KnowledgeRow::TABLE, EmbeddingRow::TABLE];

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportReport {
    pub added: u64,
    pub skipped: u64,
    pub files: usize,
    pub bytes: u64,
    pub seconds: f64,
}

/// Adds the queries the lake does not have yet; a query already there (same
/// id, so same content) is skipped, so importing twice adds nothing.
pub async fn ingest_queries(lake: &Lake, rows: Vec<QueryRow>) -> Result<ImportReport> {
    let started = Instant::now();
    let ctx = lake.session().await?;
    let existing: HashSet<QueryId> = ctx
        .table(queries::TABLE)
        .await?
        .select_columns(&[queries::query_id])?
        .collect()
        .await?
        .iter()
        .flat_map(|b| <QueryId as ColumnValue>::from_array(b.column(0).as_ref()).unwrap_or_default())
        .flatten()
        .collect();
    let total = rows.len() as u64;
    let new: Vec<QueryRow> = rows.into_iter().filter(|r| !existing.contains(&r.query_id)).collect();
    let added = new.len() as u64;
    let mut report = ImportReport { added, skipped: total - added, ..Default::default() };
    if !new.is_empty() {
        let mut txn = lake.txn();
        txn.write_rows(new).await?;
        let committed = txn.commit().await?;
        report.files = committed.files.len();
        report.bytes = committed.bytes;
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Reads every query of the lake.
pub async fn read_queries(lake: &Lake) -> Result<Vec<QueryRow>> {
    let ctx = lake.session().await?;
    lake.read::<QueryRow>(&ctx, None).await
}

/// Every query of the lake by id; a lake without queries is an error that
/// says how to import them.
pub async fn query_map(lake: &Lake) -> Result<HashMap<QueryId, QueryRow>> {
    let queries = read_queries(lake).await?;
    if queries.is_empty() {
        return Err(Error::Invalid("the lake has no queries: run `some ingest queries` first".into()));
    }
    Ok(queries.into_iter().map(|q| (q.query_id.clone(), q)).collect())
}

/// What the tools show, for the solvers that use no LLM: the posts the
/// user-task queries embed, every timeline, the knowledge base.
pub async fn solver_sources(lake: &Lake) -> Result<Sources> {
    let ctx = lake.session().await?;
    let posts = lake.read::<RefPostRow>(&ctx, None).await?.into_iter().map(|r| (r.post_id, Sources::post_text(&r.json))).collect();
    let mut histories: HashMap<String, Vec<String>> = HashMap::new();
    let timeline = format!(
        "SELECT {}, {} FROM {} WHERE {} = '{}'",
        posts::uid,
        posts::content,
        posts::TABLE,
        posts::source,
        PostSource::Weibo.as_str()
    );
    for batch in ctx.sql(&timeline).await?.collect().await? {
        let column = |i: usize| <String as ColumnValue>::from_array(batch.column(i).as_ref()).map_err(Error::Invalid);
        for (uid, content) in column(0)?.into_iter().zip(column(1)?) {
            if let (Some(uid), Some(content)) = (uid, content) {
                histories.entry(uid).or_default().push(content);
            }
        }
    }
    let mut knowledge = lake.read::<KnowledgeRow>(&ctx, None).await?;
    knowledge.sort_by_key(|k| k.doc_index);
    Ok(Sources::new(posts, histories, knowledge.into_iter().map(|k| k.content).collect()))
}

/// Whether the lake holds any world data, and if so how many posts.
pub async fn world_posts(lake: &Lake) -> Result<u64> {
    let batches = lake.sql(&format!("SELECT count(*) FROM {}", posts::TABLE)).await?;
    Ok(batches
        .first()
        .and_then(|b| <i64 as ColumnValue>::from_array(b.column(0).as_ref()).ok())
        .and_then(|v| v.first().copied().flatten())
        .unwrap_or(0) as u64)
}

/// Refuses to add a second world to a lake unless asked to replace it.
/// Checked before a world is written, so that a lake with a world refuses
/// at once; the world's commit checks again (its `posts` must still be
/// empty when it lands: [`crate::lake::Txn::require_empty`]), as another
/// world may land while this one is written.
pub(crate) async fn guard_world(lake: &Lake, replace: bool) -> Result<()> {
    let posts = world_posts(lake).await?;
    if posts > 0 && !replace {
        return Err(Error::Invalid(format!(
            "the lake at {} already holds a world ({posts} posts); pass --replace to replace it, or use another --lake",
            lake.location()
        )));
    }
    Ok(())
}

/// A world's commit refused because another world landed first, said as
/// such; any other error as it is.
pub(crate) fn second_world(lake: &Lake, e: Error) -> Error {
    match e {
        Error::Filled { by, version, .. } => Error::Invalid(format!(
            "the lake at {} got a world while this one was being written ({}, lake version {version}): nothing of this one was committed; \
             pass --replace to replace that world, or use another --lake",
            lake.location(),
            by.map_or_else(|| "by an earlier transaction".to_string(), |t| format!("transaction {t}")),
        )),
        e => e,
    }
}

/// Commits the world; replacing one swaps the tables in the same commit.
async fn finish(lake: &Lake, mut txn: Txn, replace: bool, started: Instant) -> Result<ImportReport> {
    if replace {
        txn.replace_tables(&WORLD_TABLES);
    } else {
        // Another world may have landed since `guard_world` looked.
        txn.require_empty(&[PostRow::TABLE]);
    }
    let committed = txn.commit().await.map_err(|e| second_world(lake, e))?;
    Ok(ImportReport {
        added: committed.rows,
        skipped: 0,
        files: committed.files.len(),
        bytes: committed.bytes,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Generates a planned world into the lake (and, if asked, as a release
/// tree too). Units are generated and encoded on every core; one task
/// uploads them.
pub async fn write_world(
    lake: &Lake,
    world: Arc<World>,
    release_out: Option<&Path>,
    replace: bool,
    progress: &dyn Progress,
) -> Result<ImportReport> {
    guard_world(lake, replace).await?;
    let started = Instant::now();
    let mut txn = lake.txn();
    let release = release_out.map(ReleaseWriter::new).map(Arc::new);
    let posts_table = TableDef::of::<PostRow>();
    progress.phase("posts", Some(world.post_count()));

    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<(Vec<String>, Bytes, u64)>>(threads * 2);
    let next = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for _ in 0..threads {
        let (world, tx, next, release) = (world.clone(), tx.clone(), next.clone(), release.clone());
        handles.push(std::thread::spawn(move || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(unit) = world.units().get(i) else { break };
                let result = (|| {
                    let posts = world.generate(unit);
                    if let Some(release) = &release {
                        write_release_unit(release, &world, unit.source, &posts)?;
                    }
                    let n = posts.len() as u64;
                    let batch = PostRow::to_batch(&posts)?;
                    drop(posts);
                    let bytes = encode_parquet(&posts_table, &batch)?;
                    Ok((vec![unit.source.as_str().to_string(), unit.bucket.clone()], bytes, n))
                })();
                let failed = result.is_err();
                if tx.blocking_send(result).is_err() || failed {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut failure = None;
    while let Some(item) = rx.recv().await {
        match item {
            Ok((partition, bytes, n)) => {
                if let Err(e) = txn.put_part(&posts_table, &partition, bytes, n).await {
                    failure = Some(e);
                    break;
                }
                progress.advance(n);
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    drop(rx);
    for h in handles {
        let _ = h.join();
    }
    if let Some(e) = failure {
        txn.abort().await?;
        return Err(e);
    }
    progress.finish();

    progress.phase("users, referenced posts, knowledge", None);
    let users = world.users();
    let ref_posts = world.ref_posts();
    let knowledge = world.knowledge();
    if let Some(release) = &release {
        release.all_posts(&ref_posts)?;
        release.knowledge(&knowledge)?;
    }
    let result = async {
        txn.write_rows(users).await?;
        txn.write_rows(ref_posts).await?;
        txn.write_rows(knowledge).await
    }
    .await;
    if let Err(e) = result {
        txn.abort().await?;
        return Err(e);
    }
    progress.finish();
    finish(lake, txn, replace, started).await
}

/// The release files of one generated unit: its location stream or topic
/// file, or the user files of its users.
fn write_release_unit(release: &ReleaseWriter, world: &World, source: PostSource, posts: &[PostRow]) -> Result<()> {
    let Some(first) = posts.first() else { return Ok(()) };
    match source {
        PostSource::Raw => {
            let day = first.bucket.split('.').next().unwrap_or_default();
            release.raw(day, first.area.as_deref().unwrap_or_default(), posts)?;
        }
        PostSource::Topic => release.topic(first.topic.as_deref().unwrap_or_default(), posts)?,
        PostSource::Weibo => {
            let mut by_user: BTreeMap<&str, Vec<PostRow>> = BTreeMap::new();
            for p in posts {
                by_user.entry(p.uid.as_deref().unwrap_or_default()).or_default().push(p.clone());
            }
            for profile in world.users().into_iter().filter(|u| by_user.contains_key(u.uid.as_str())) {
                release.user(&profile, &by_user[profile.uid.as_str()])?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LakeLocation;

    async fn world_of(lake: &Lake, post: &str) -> Txn {
        let mut txn = lake.txn();
        txn.write_rows(vec![PostRow::new(post, "x", PostSource::Topic, some_schemas::buckets::topic("t"))]).await.unwrap();
        txn.write_rows(vec![KnowledgeRow { doc_index: 0, content: post.into(), link: None, extra: None }]).await.unwrap();
        txn
    }

    /// Two worlds written at once (a synth and an ingestion started
    /// together) both pass the guard on an empty lake; the first to commit
    /// lands and the second is refused at its commit, naming the first:
    /// the lake never holds two worlds. A replacement lands whatever is
    /// there.
    #[tokio::test]
    async fn of_two_worlds_written_at_once_the_second_is_refused_at_its_commit() {
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&LakeLocation::Local(dir.path().join("lake"))).await.unwrap();
        guard_world(&lake, false).await.unwrap();
        let first = world_of(&lake, "a").await;
        guard_world(&lake, false).await.unwrap();
        let second = world_of(&lake, "b").await;
        let first_id = first.id().to_string();
        finish(&lake, first, false, Instant::now()).await.unwrap();

        let err = finish(&lake, second, false, Instant::now()).await.unwrap_err().to_string();
        assert!(err.contains(&format!("transaction {first_id}")) && err.contains("nothing of this one was committed"), "{err}");
        assert!(err.contains("--replace"), "{err}");
        assert_eq!(world_posts(&lake).await.unwrap(), 1);
        let knowledge = lake.read::<KnowledgeRow>(&lake.session().await.unwrap(), None).await.unwrap();
        assert_eq!(knowledge.len(), 1, "the refused world's knowledge landed");

        let replacement = world_of(&lake, "c").await;
        finish(&lake, replacement, true, Instant::now()).await.unwrap();
        assert_eq!(world_posts(&lake).await.unwrap(), 1);
    }
}
