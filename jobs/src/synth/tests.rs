//! The world generator against the real queries: counts, determinism, and
//! that every history agrees with the labels of the queries about it.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use some_schemas::{PostRow, QueryRow, Task};

use super::*;
use crate::queries::read_dataset_dir;

fn real_queries() -> &'static [QueryRow] {
    static Q: OnceLock<Vec<QueryRow>> = OnceLock::new();
    Q.get_or_init(|| read_dataset_dir(&crate::bundled_datasets_dir()).unwrap())
}

struct Generated {
    world: World,
    posts: Vec<PostRow>,
}

fn small_world() -> &'static Generated {
    static W: OnceLock<Generated> = OnceLock::new();
    W.get_or_init(|| {
        let world = World::plan(real_queries(), SynthConfig { scale: Scale::Small, seed: 7 }).unwrap();
        let posts = world.units().iter().flat_map(|u| world.generate(u)).collect();
        Generated { world, posts }
    })
}

#[test]
fn the_small_world_has_what_it_planned() {
    let g = small_world();
    assert_eq!(g.posts.len() as u64, g.world.post_count());
    for unit in g.world.units() {
        let n = g.posts.iter().filter(|p| p.bucket == unit.bucket && p.source == unit.source.as_str()).count();
        assert_eq!(n as u64, unit.posts, "{}", unit.bucket);
    }
    let ids: HashSet<&str> = g.posts.iter().map(|p| p.post_id.as_str()).collect();
    assert_eq!(ids.len(), g.posts.len(), "post ids are unique");
    // Small means small: what the queries need, well under the paper's size.
    assert!(g.posts.len() < 120_000, "{}", g.posts.len());
    assert_eq!(g.world.users().len(), g.world.user_count());
    assert_eq!(g.world.knowledge().len() as u64, g.world.knowledge_count());
}

#[test]
fn generation_is_deterministic_for_a_seed() {
    let g = small_world();
    let unit = &g.world.units()[3];
    let again = World::plan(real_queries(), SynthConfig { scale: Scale::Small, seed: 7 }).unwrap();
    assert_eq!(again.generate(&again.units()[3]), g.world.generate(unit));
    let other = World::plan(real_queries(), SynthConfig { scale: Scale::Small, seed: 8 }).unwrap();
    assert_ne!(other.generate(&other.units()[3]), g.world.generate(unit));
}

#[test]
fn paper_scale_plans_the_paper_volumes() {
    let world = World::plan(real_queries(), SynthConfig { scale: Scale::Paper, seed: 1 }).unwrap();
    assert_eq!(world.post_count(), 9_164_284);
    assert_eq!(world.user_count(), 6_591);
    assert_eq!(world.knowledge_count(), 25_686);
    let by_source = |s: some_schemas::PostSource| world.units().iter().filter(|u| u.source == s).map(|u| u.posts).sum::<u64>();
    assert_eq!(by_source(some_schemas::PostSource::Raw), 476_611);
    assert_eq!(by_source(some_schemas::PostSource::Weibo), 840_200);
}

fn timelines(posts: &[PostRow]) -> HashMap<&str, Vec<&str>> {
    let mut map: HashMap<&str, Vec<&str>> = HashMap::new();
    for p in posts.iter().filter(|p| p.source == "weibo") {
        map.entry(p.uid.as_deref().unwrap()).or_default().push(&p.content);
    }
    map
}

/// The subject a referenced post is about, read back from its text (`【subject】...`).
fn subject_of(json: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let content = v["内容"].as_str().unwrap();
    content.trim_start_matches('【').split('】').next().unwrap().to_string()
}

#[test]
fn histories_agree_with_interest_labels() {
    let g = small_world();
    let timelines = timelines(&g.posts);
    let subjects: HashMap<String, String> = g.world.ref_posts().into_iter().map(|r| (r.post_id.clone(), subject_of(&r.json))).collect();
    let (mut checked, mut wrong) = (0, Vec::new());
    for q in real_queries().iter().filter(|q| q.task == Task::Mcr || q.task == Task::Ubp) {
        let history = &timelines[q.uid.as_deref().unwrap()];
        let subject = &subjects[q.post_id.as_deref().unwrap()];
        let mentioned = history.iter().any(|c| c.contains(subject.as_str()));
        checked += 1;
        if mentioned != (q.label.as_deref() == Some("是")) {
            wrong.push((q.query_id.clone(), subject.clone()));
        }
    }
    assert_eq!(checked, 7_000);
    // A user who engaged with one post about a subject and turned down
    // another about the same subject cannot be consistent; those are rare.
    eprintln!("{} of {checked} interest queries inconsistent", wrong.len());
    assert!(wrong.len() * 1000 <= checked, "{} of {checked} inconsistent: {:?}", wrong.len(), &wrong[..wrong.len().min(5)]);
}

#[test]
fn histories_carry_the_true_commenters_style_and_the_labelled_emotion() {
    let g = small_world();
    let timelines = timelines(&g.posts);
    for q in real_queries().iter().filter(|q| q.task == Task::Ucs) {
        let history = &timelines[q.uid.as_deref().unwrap()];
        let comment = q.comment.as_deref().unwrap();
        let own = text::emoticons_in(comment);
        if q.label.as_deref() == Some("是") {
            let head: String = comment.chars().take(6).collect();
            assert!(history.iter().any(|c| c.contains(&head)), "{}: history lacks {head:?}", q.query_id);
        }
        if q.label.as_deref() == Some("否") {
            // The distractor's own emoticons never appear in the history.
            let true_comments: Vec<&str> = real_queries()
                .iter()
                .filter(|t| t.task == q.task && t.uid == q.uid && t.label.as_deref() == Some("是"))
                .filter_map(|t| t.comment.as_deref())
                .collect();
            for e in own.iter().filter(|e| !true_comments.iter().any(|t| t.contains(e.as_str()))) {
                assert!(!history.iter().any(|c| c.contains(e.as_str())), "{}: history uses the distractor's {e}", q.query_id);
            }
        }
    }
    for q in real_queries().iter().filter(|q| q.task == Task::Uea) {
        let history = &timelines[q.uid.as_deref().unwrap()];
        let words = lexicon::EMOTION_WORDS.iter().find(|(e, _)| Some(*e) == q.label.as_deref()).unwrap().1;
        assert!(history.iter().any(|c| words.iter().any(|w| c.contains(w))), "{}", q.query_id);
    }
}

#[test]
fn answers_and_events_are_in_the_posts() {
    let g = small_world();
    let timelines = timelines(&g.posts);
    for q in real_queries().iter().filter(|q| q.task == Task::Smq) {
        let answer = q.reference.as_deref().unwrap();
        let found = match (&q.uid, &q.topic) {
            (Some(uid), _) => timelines[uid.as_str()].iter().any(|c| c.contains(answer)),
            (_, Some(topic)) => g.posts.iter().any(|p| p.topic.as_deref() == Some(topic) && p.content.contains(answer)),
            _ => continue,
        };
        assert!(found, "{}: answer not stated", q.query_id);
    }
    for q in real_queries().iter().filter(|q| q.task == Task::Red).take(50) {
        let events: Vec<serde_json::Value> = serde_json::from_str(q.reference.as_deref().unwrap()).unwrap();
        let (start, end) = (q.window_start.unwrap(), q.window_end.unwrap());
        for e in events {
            let summary = e["摘要"].as_str().unwrap();
            assert!(
                g.posts.iter().any(|p| p.area.as_deref() == q.location.as_deref()
                    && p.content == summary
                    && p.published_at.is_some_and(|t| t >= start && t < end)),
                "{}: event not posted in its window",
                q.query_id
            );
        }
    }
}
