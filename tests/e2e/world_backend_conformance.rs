//! The `WorldBackend` contract, run against every implementation: the world
//! held in memory and the world read from a lake. Both are given the same
//! generated world (the small synthetic one); every case checks a
//! backend's answer against what the world's rows say directly, so a
//! backend cannot pass by agreeing with the other one's mistake.

use std::collections::HashMap;
use std::sync::Arc;

use some_jobs::progress::NoProgress;
use some_jobs::synth::{Scale, SynthConfig, World};
use some_jobs::tools::{KnowledgeIndex, MemoryBackend, StreamWindow, WorldBackend};
use some_schemas::{PostRow, PostSource, Timestamp};
use some_workers::world::{LakeBackend, write_world};
use some_workers::{Lake, LakeLocation};

/// The world and its rows, as generated.
struct Truth {
    world: Arc<World>,
    posts: Vec<PostRow>,
}

impl Truth {
    fn new() -> Truth {
        let queries = some_jobs::queries::read_bundled().unwrap();
        let world = Arc::new(World::plan(&queries, SynthConfig { scale: Scale::Small, seed: 5 }).unwrap());
        let posts = world.units().iter().flat_map(|u| world.generate(u)).collect();
        Truth { world, posts }
    }

    /// Posts of `source` passing `keep`, in file order.
    fn posts(&self, source: PostSource, keep: impl Fn(&PostRow) -> bool) -> Vec<PostRow> {
        let mut out: Vec<PostRow> = self.posts.iter().filter(|p| p.source == source.as_str() && keep(p)).cloned().collect();
        out.sort_by(|a, b| (a.ordinal, &a.post_id).cmp(&(b.ordinal, &b.post_id)));
        out
    }

    fn memory_backend(&self) -> MemoryBackend {
        MemoryBackend {
            posts: self.posts.clone(),
            users: self.world.users(),
            knowledge: Arc::new(KnowledgeIndex { docs: self.world.knowledge(), dim: 0, vectors: Vec::new(), world: None }),
            vectors: HashMap::new(),
            ref_posts: self.world.ref_posts().into_iter().map(|r| (r.post_id, r.json)).collect(),
        }
    }
}

/// A location's stream on a day: the posts in a one-hour window, none for
/// an empty window, and no stream at all for a place with no posts.
async fn streams_are_cut_by_location_day_and_window(b: &dyn WorldBackend, t: &Truth) {
    let first = t.posts(PostSource::Raw, |_| true).into_iter().find(|p| p.area.is_some() && p.published_at.is_some()).unwrap();
    let (area, at) = (first.area.clone().unwrap(), first.published_at.unwrap());
    let day = at.naive().date();
    let (start, end) = (Timestamp(at.0 - 1800), Timestamp(at.0 + 1800));
    let want = t.posts(PostSource::Raw, |p| {
        p.area.as_deref() == Some(area.as_str())
            && p.published_at.is_some_and(|x| x.naive().date() == day && x >= start && x < end)
            && p.bucket == first.bucket
    });
    assert!(!want.is_empty());
    assert_eq!(b.stream_posts(StreamWindow { location: &area, day, start, end }).await.unwrap(), Some(want), "{area} {day}");
    let before = Timestamp(start.0 - 86_400 * 400);
    assert_eq!(
        b.stream_posts(StreamWindow { location: &area, day, start: before, end: Timestamp(before.0 + 1) }).await.unwrap(),
        Some(Vec::new()),
        "an empty window"
    );
    assert_eq!(b.stream_posts(StreamWindow { location: "无此地", day, start, end }).await.unwrap(), None, "no stream");
}

/// A topic's posts in file order; an unknown topic has none.
async fn topics_hold_their_posts_in_file_order(b: &dyn WorldBackend, t: &Truth) {
    let topic = t.posts(PostSource::Topic, |p| p.topic.is_some())[0].topic.clone().unwrap();
    let want = t.posts(PostSource::Topic, |p| p.topic.as_deref() == Some(topic.as_str()));
    assert_eq!(b.topic_posts(&topic).await.unwrap(), want, "{topic}");
    assert!(b.topic_posts("no such topic").await.unwrap().is_empty());
}

/// A user's profile and timeline; an unknown user has neither.
async fn users_have_a_profile_and_a_timeline(b: &dyn WorldBackend, t: &Truth) {
    let user = t
        .world
        .users()
        .into_iter()
        .find(|u| t.posts.iter().any(|p| p.uid.as_deref() == Some(u.uid.as_str()) && p.source == "weibo"))
        .unwrap();
    assert_eq!(b.user(&user.uid).await.unwrap(), Some(user.clone()));
    let want = t.posts(PostSource::Weibo, |p| p.uid.as_deref() == Some(user.uid.as_str()));
    assert!(!want.is_empty());
    assert_eq!(b.user_posts(&user.uid).await.unwrap(), want);
    assert_eq!(b.user("0").await.unwrap(), None);
    assert!(b.user_posts("0").await.unwrap().is_empty());
}

/// Referenced posts by id, the knowledge base in order, and no vectors
/// where none were stored.
async fn ref_posts_knowledge_and_missing_vectors(b: &dyn WorldBackend, t: &Truth) {
    let refs = t.world.ref_posts();
    assert_eq!(b.ref_post(&refs[0].post_id).await.unwrap(), Some(refs[0].json.clone()));
    assert_eq!(b.ref_post("no such post").await.unwrap(), None);
    let mut docs = t.world.knowledge();
    docs.sort_by_key(|d| d.doc_index);
    let index = b.knowledge("multilingual-e5-small").await.unwrap();
    assert_eq!((index.docs.len(), index.dim, index.vectors.len()), (docs.len(), 0, 0));
    let order = |d: &[some_schemas::KnowledgeRow]| d.iter().map(|r| r.doc_index).collect::<Vec<_>>();
    assert_eq!(order(&index.docs), order(&docs), "in doc_index order");
    assert_eq!(index.docs, docs);
    let key = (t.posts[0].bucket.clone(), t.posts[0].post_id.clone());
    assert_eq!(b.post_vectors("multilingual-e5-small", &[key]).await.unwrap(), [None]);
}

async fn conforms(b: &dyn WorldBackend, t: &Truth) {
    streams_are_cut_by_location_day_and_window(b, t).await;
    topics_hold_their_posts_in_file_order(b, t).await;
    users_have_a_profile_and_a_timeline(b, t).await;
    ref_posts_knowledge_and_missing_vectors(b, t).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_memory_and_the_lake_backends_keep_the_world_backend_contract() {
    let truth = Truth::new();
    conforms(&truth.memory_backend(), &truth).await;

    let dir = tempfile::tempdir().unwrap();
    let lake = Lake::open(&dir.path().join("lake").to_str().unwrap().parse::<LakeLocation>().unwrap()).await.unwrap();
    write_world(&lake, truth.world.clone(), None, false, &NoProgress).await.unwrap();
    conforms(&LakeBackend::new(lake).unwrap(), &truth).await;
}
