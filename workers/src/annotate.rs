//! Annotations on the queue, and what the annotation pipelines read from
//! the lake (streams, timelines, topics).
//!
//! A RED annotation is one job per location-day (reading the day's stream,
//! embedding, clustering through the worker's kernels, asking the model
//! about each cluster), each writing what it found once to
//! `annotation_shards`; the coordinator publishes the days not yet
//! written, waits, and makes the ground truth from every day's file.
//!
//! The annotation's id is a digest of its settings, so running the same
//! command again resumes it: days already written are not published
//! again. A worker killed mid-day leaves nothing; the redelivered job does
//! the day again, and a second answer for a day is never written.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use some_annotate::events::{self, DayEvents, Post, Settings};
use some_annotate::questions::{self, Source, Subject};
use some_jobs::chat::ChatModel;
use some_jobs::embed::{Embedder, Purpose};
use some_jobs::progress::NoProgress;
use some_jobs::tools::KernelService;
use some_schemas::row::ColumnValue;
use some_schemas::{AnnotationShardRow, Job, JobKind, JobMessage, PostSource, ShardId, Timestamp, buckets, posts};

use crate::error::{Error, Result};
use crate::handler::{Cache, JobContext};
use crate::lake::Lake;
use crate::llm::{chat_model, installed_embedder};
use crate::queue::Queue;

/// A RED annotation of one location over some days.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventsSpec {
    pub location: String,
    pub days: Vec<String>,
    pub model: String,
    pub endpoints: Vec<String>,
    pub embedding_model: String,
    pub theta: f32,
    pub min_posts: usize,
    pub seed: u64,
}

/// One day of a RED annotation: what a job carries.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct DayShard {
    spec: EventsSpec,
    day: String,
}

impl EventsSpec {
    /// The annotation's id: a digest of its settings (not of its days, so
    /// adding a day to the command adds a shard to the same annotation, nor
    /// of the endpoints, which may move while the model stays the same).
    pub fn id(&self) -> String {
        let settings = EventsSpec { days: Vec::new(), endpoints: Vec::new(), ..self.clone() };
        let digest = Sha256::digest(serde_json::to_vec(&settings).expect("specs serialise"));
        format!("red-{}", hex::encode(&digest[..6]))
    }

    pub fn settings(&self) -> Settings {
        Settings { theta: self.theta, min_posts: self.min_posts, seed: self.seed, ..Settings::default() }
    }

    /// Where a day's file goes (the location hashed: paths stay ASCII).
    fn part(&self, day: &str) -> String {
        let name = format!("{day}.{}", buckets::raw(day, &self.location).rsplit('.').next().unwrap_or_default());
        Lake::part_path::<AnnotationShardRow>(&[&self.id()], &name)
    }
}

/// Publishes a job for each day of `spec` not written yet; returns their shard ids.
pub async fn publish(lake: &Lake, queue: &dyn Queue, spec: &EventsSpec) -> Result<Vec<ShardId>> {
    let id = spec.id();
    let mut shards = Vec::new();
    for day in &spec.days {
        if lake.exists(&spec.part(day)).await? {
            continue;
        }
        let shard_id = ShardId(format!("{id}/{day}"));
        let payload = serde_json::to_string(&DayShard { spec: spec.clone(), day: day.clone() }).expect("shards serialise");
        let job = Job::Annotate { annotation: id.clone(), shard_id: shard_id.clone(), payload };
        queue.publish(JobKind::Annotate, JobMessage::new(job).to_bytes()).await?;
        shards.push(shard_id);
    }
    Ok(shards)
}

/// How many days of `spec` are written.
pub async fn days_done(lake: &Lake, spec: &EventsSpec) -> Result<usize> {
    let mut n = 0;
    for day in &spec.days {
        n += usize::from(lake.exists(&spec.part(day)).await?);
    }
    Ok(n)
}

/// Every day's findings, in the order of `spec.days`; a day not written is an error.
pub async fn collect(lake: &Lake, spec: &EventsSpec) -> Result<Vec<DayEvents>> {
    let id = spec.id();
    let mut out = Vec::new();
    for day in &spec.days {
        let rows = lake
            .read_once::<AnnotationShardRow>(&spec.part(day), &[&id])
            .await?
            .ok_or_else(|| Error::Invalid(format!("annotation {id}: {} {day} is not written yet", spec.location)))?;
        let row = rows.into_iter().next().ok_or_else(|| Error::Invalid(format!("annotation {id}: the file of {day} is empty")))?;
        out.push(
            serde_json::from_str(&row.body)
                .map_err(|e| Error::Invalid(format!("annotation {id}: the file of {day} cannot be read: {e}")))?,
        );
    }
    Ok(out)
}

/// Makes every day's file of `spec` part of the `annotation_shards` table
/// (one commit; a file already committed is left as it is), so SQL sees
/// what each day found; returns how many files this commit added.
pub async fn commit(lake: &Lake, spec: &EventsSpec) -> Result<usize> {
    let snapshot = lake.snapshot().await?;
    let mut txn = lake.txn();
    let mut added = 0;
    for day in &spec.days {
        let part = spec.part(day);
        if snapshot.file(&part).is_none() {
            txn.adopt(&part, 1).await?;
            added += 1;
        }
    }
    if added > 0 {
        txn.commit().await?;
    }
    Ok(added)
}

/// The posts of `location`'s stream on `day`, in time order, each its title and content.
pub async fn day_posts(lake: &Lake, location: &str, day: &str) -> Result<Vec<Post>> {
    let sql = format!(
        "SELECT {id}, {at}, {title}, {content} FROM {table} WHERE {source} = 'raw' AND {bucket} = '{b}' ORDER BY {at}, {id}",
        id = posts::post_id,
        at = posts::published_at,
        title = posts::title,
        content = posts::content,
        table = posts::TABLE,
        source = posts::source,
        bucket = posts::bucket,
        b = buckets::raw(day, location).replace('\'', "''"),
    );
    let mut out = Vec::new();
    for batch in lake.sql(&sql).await? {
        let text = |i: usize| <String as ColumnValue>::from_array(batch.column(i).as_ref()).map_err(Error::Invalid);
        let at = <Timestamp as ColumnValue>::from_array(batch.column(1).as_ref()).map_err(Error::Invalid)?;
        for (((id, at), title), content) in text(0)?.into_iter().zip(at).zip(text(2)?).zip(text(3)?) {
            let (Some(id), Some(at)) = (id, at) else { continue };
            let text = [title.unwrap_or_default(), content.unwrap_or_default()].join(" ").trim().to_string();
            out.push(Post { id, at, text });
        }
    }
    Ok(out)
}

/// Every timeline post of the lake's world: (post id, author, text).
pub async fn timeline_posts(lake: &Lake) -> Result<Vec<(String, String, String)>> {
    let sql =
        format!("SELECT {}, {}, {} FROM {} WHERE {} = 'weibo'", posts::post_id, posts::uid, posts::content, posts::TABLE, posts::source);
    let mut out = Vec::new();
    for batch in lake.sql(&sql).await? {
        let text = |i: usize| <String as ColumnValue>::from_array(batch.column(i).as_ref()).map_err(Error::Invalid);
        for ((id, uid), content) in text(0)?.into_iter().zip(text(1)?).zip(text(2)?) {
            if let (Some(id), Some(uid), Some(content)) = (id, uid, content) {
                out.push((id, uid, content));
            }
        }
    }
    Ok(out)
}

/// `users` users and `topics` topics of the lake, sampled for `seed` among
/// those with enough posts (see [`questions::sample_subjects`]), each with
/// its posts (title and content) in time order.
pub async fn subjects(lake: &Lake, users: usize, topics: usize, seed: u64) -> Result<Vec<Source>> {
    let mut out = Vec::new();
    for (source, key, n, subject) in [
        (PostSource::Weibo, posts::uid, users, Subject::User as fn(String) -> Subject),
        (PostSource::Topic, posts::topic, topics, Subject::Topic),
    ] {
        if n == 0 {
            continue;
        }
        let sql = format!(
            "SELECT {key}, {title}, {content} FROM {table} WHERE {src} = '{source}' AND {key} IS NOT NULL ORDER BY {key}, {at}, {id}",
            source = source.as_str(),
            title = posts::title,
            content = posts::content,
            table = posts::TABLE,
            src = posts::source,
            at = posts::published_at,
            id = posts::post_id,
        );
        let mut by_key: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for batch in lake.sql(&sql).await? {
            let text = |i: usize| <String as ColumnValue>::from_array(batch.column(i).as_ref()).map_err(Error::Invalid);
            for ((k, title), content) in text(0)?.into_iter().zip(text(1)?).zip(text(2)?) {
                let post = [title.unwrap_or_default(), content.unwrap_or_default()].join(" ").trim().to_string();
                if let Some(k) = k.filter(|k| !k.is_empty() && !post.is_empty()) {
                    by_key.entry(k).or_default().push(post);
                }
            }
        }
        out.extend(questions::sample_subjects(by_key, n, seed, subject));
    }
    Ok(out)
}

/// The handler of annotation jobs: models and embedders load once per process.
pub struct AnnotateJobs {
    kernels: Arc<dyn KernelService>,
    chats: Cache<Arc<dyn ChatModel>>,
    embedders: Cache<Arc<dyn Embedder>>,
}

impl AnnotateJobs {
    pub fn new(kernels: Arc<dyn KernelService>) -> AnnotateJobs {
        AnnotateJobs { kernels, chats: Cache::default(), embedders: Cache::default() }
    }

    pub async fn run(&self, ctx: &JobContext<'_>, annotation: &str, payload: &str) -> Result<()> {
        let shard: DayShard =
            serde_json::from_str(payload).map_err(|e| Error::Invalid(format!("annotation {annotation}: unreadable shard: {e}")))?;
        let (spec, day) = (&shard.spec, shard.day.as_str());
        let path = spec.part(day);
        if ctx.lake.exists(&path).await? {
            return Ok(());
        }
        let key = format!("{}|{}", spec.model, spec.endpoints.join(","));
        let chat = self.chats.get_or_build(key, async { chat_model(&spec.model, &spec.endpoints, ctx.client, ctx.threads) }).await?;
        let embedder = self
            .embedders
            .get_or_build(spec.embedding_model.clone(), async {
                installed_embedder(&spec.embedding_model)?.ok_or_else(|| {
                    Error::Invalid(format!("{0} is not installed on this worker: run `some models fetch {0}`", spec.embedding_model))
                })
            })
            .await?;
        let posts = day_posts(ctx.lake, &spec.location, day).await?;
        let mut vectors = Vec::with_capacity(posts.len() * embedder.dim());
        for batch in posts.chunks(64) {
            let texts: Vec<String> = batch.iter().map(|p| p.text.clone()).collect();
            vectors.extend(embedder.embed(&texts, Purpose::Document).await?.into_iter().flatten());
        }
        let found = events::detect(
            &spec.location,
            day,
            &posts,
            &vectors,
            embedder.dim(),
            self.kernels.as_ref(),
            chat.as_ref().as_ref(),
            spec.settings(),
            &NoProgress,
        )
        .await
        .map_err(|e| match e {
            events::EventsError::Model(m) => Error::Model(m),
            events::EventsError::Kernels(why) => Error::World(some_jobs::tools::BackendError(why)),
            other => Error::Invalid(format!("annotation {annotation}, {} {day}: {other}", spec.location)),
        })?;
        let row = AnnotationShardRow {
            shard: format!("{}_{day}", spec.location),
            body: serde_json::to_string(&found).expect("findings serialise"),
            written_at: Timestamp::now(),
            annotation_id: annotation.to_string(),
        };
        ctx.lake.put_once(&path, vec![row]).await?;
        ctx.progress.advance(1);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_annotation_is_named_by_its_settings_not_its_days_or_endpoints() {
        let spec = EventsSpec {
            location: "北京".into(),
            days: vec!["2025-05-01".into()],
            model: "m".into(),
            endpoints: vec!["http://a/v1".into()],
            embedding_model: "e".into(),
            theta: 0.9,
            min_posts: 3,
            seed: 0,
        };
        let more_days =
            EventsSpec { days: vec!["2025-05-01".into(), "2025-05-02".into()], endpoints: vec!["http://b/v1".into()], ..spec.clone() };
        assert_eq!(spec.id(), more_days.id(), "the same command with another day or endpoint resumes it");
        assert_ne!(spec.id(), EventsSpec { model: "other".into(), ..spec.clone() }.id());
        assert_ne!(spec.id(), EventsSpec { min_posts: 4, ..spec.clone() }.id());
        assert!(spec.part("2025-05-01").is_ascii(), "{}", spec.part("2025-05-01"));
        assert_ne!(spec.part("2025-05-01"), EventsSpec { location: "上海".into(), ..spec.clone() }.part("2025-05-01"));
    }
}
