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

#[test]
fn profile_answers_read_back_through_user_search() {
    use crate::kernels::CpuKernels;
    use crate::tools::{ALL_TOOLS, Folders, MemoryBackend, ToolContext, ToolSettings, call_tool};
    let g = small_world();
    let backend = MemoryBackend {
        posts: g.posts.iter().filter(|p| p.source == "weibo").cloned().collect(),
        users: g.world.users(),
        ..Default::default()
    };
    let kernels = std::sync::Arc::new(CpuKernels::new(1));
    let settings = ToolSettings::default();
    let ctx = ToolContext { backend: &backend, kernels: &kernels, embedder: None, chat: None, settings: &settings };
    let mut checked = 0;
    for q in real_queries().iter().filter(|q| q.task == Task::Smq && q.uid.is_some()) {
        let facts = profile_facts::read(q.question.as_deref().unwrap(), q.reference.as_deref().unwrap());
        if facts == profile_facts::ProfileFacts::default() {
            continue;
        }
        checked += 1;
        let uid = q.uid.clone().unwrap();
        let mut folders = Folders::default();
        let call = |_: &str, args: serde_json::Value| args.as_object().cloned().unwrap_or_default();
        let (profile, page) = futures::executor::block_on(async {
            let profile =
                call_tool(&ctx, &mut folders, &ALL_TOOLS, "user_search", &call("", serde_json::json!({ "uid": uid }))).await.unwrap();
            let folder = format!("{uid}_weibo");
            let n: usize = profile.text.split("用户发表的 ").nth(1).and_then(|t| t.split(' ').next()).unwrap().parse().unwrap();
            let page = call_tool(
                &ctx,
                &mut folders,
                &ALL_TOOLS,
                "data_folder",
                &call("", serde_json::json!({ "folder_name": folder, "start_idx": 0, "end_idx": n })),
            )
            .await
            .unwrap();
            (profile.text, page.text)
        });
        let line = |label: &str| profile.lines().find_map(|l| l.strip_prefix(label)).unwrap_or_default().to_string();
        let answer = q.reference.as_deref().unwrap();
        if let Some(v) = &facts.verified {
            assert_eq!(&line("认证信息："), v, "{}", q.query_id);
        }
        if let Some(n) = facts.followers {
            assert_eq!(line("粉丝数："), n.to_string(), "{}", q.query_id);
            assert!(answer.contains(&n.to_string()));
        }
        if let Some(n) = facts.friends {
            assert_eq!(line("关注数："), n.to_string(), "{}", q.query_id);
        }
        if let Some(d) = &facts.device {
            assert!(page.contains(&format!("***来自***: {d}\n")), "{}: {d} on none of the posts", q.query_id);
        }
        for r in &facts.regions {
            assert!(page.contains(&format!("发布于 {r}")), "{} ({:?}): region {r} on none of the posts", q.query_id, q.question);
        }
    }
    assert!(checked >= 200, "only {checked} profile-field answers");
}

#[test]
fn topic_facts_open_the_stream_in_other_words() {
    for scale in [Scale::Small, Scale::Paper] {
        let world = World::plan(real_queries(), SynthConfig { scale, seed: 5 }).unwrap();
        let topics: Vec<&Unit> = world.units().iter().filter(|u| u.source == some_schemas::PostSource::Topic).collect();
        // Every topic at small scale; at paper scale every 40th (the others are alike and large).
        let step = if scale == Scale::Small { 1 } else { 40 };
        let (mut share, mut n) = (0.0, 0);
        for unit in topics.iter().step_by(step) {
            let mut posts = world.generate(unit);
            posts.sort_by_key(|p| p.ordinal);
            let name = posts[0].topic.clone().unwrap();
            let q = real_queries().iter().find(|q| q.task == Task::Ses && q.topic.as_deref() == Some(name.as_str()));
            let Some(summary) = q.and_then(|q| q.reference.as_deref()) else { continue };
            let facts = text::fact_sentences(summary);
            // A fact that is part of another fact's sentence shows in that one's paraphrase.
            let whole: Vec<&String> = facts
                .iter()
                .filter(|f| !facts.iter().any(|g| g != *f && g.contains(f.trim_end_matches(['。', '！', '？', '；']))))
                .collect();
            if facts.is_empty() {
                continue;
            }
            let first: Vec<&str> = posts.iter().take(100).map(|p| p.content.as_str()).collect();
            // SMQ's answers about the topic are stated as they are; one may be a fact's sentence.
            let answers: Vec<&str> = real_queries()
                .iter()
                .filter(|q| q.task == Task::Smq && q.topic.as_deref() == Some(name.as_str()))
                .filter_map(|q| q.reference.as_deref())
                .collect();
            for p in posts.iter().filter(|p| !answers.iter().any(|a| p.content.contains(a))) {
                for f in &whole {
                    assert!(!p.content.contains(f.trim_end_matches(['。', '！', '？', '；'])), "{name}: a post repeats {f:?} verbatim");
                }
            }
            let carried = facts.iter().filter(|f| first.iter().any(|p| carries(p, f))).count();
            share += carried as f64 / facts.len() as f64;
            n += 1;
        }
        let mean = share / n as f64;
        eprintln!("{scale:?}: the first 100 posts of {n} topics carry {:.1}% of their facts", 100.0 * mean);
        assert!(mean >= 0.6, "{scale:?}: {mean:.2}");
    }
}

/// A post carries a fact when it holds most of the fact's character bigrams.
fn carries(post: &str, fact: &str) -> bool {
    let grams = |t: &str| -> HashSet<(char, char)> {
        let c: Vec<char> = t.chars().collect();
        c.windows(2).map(|w| (w[0], w[1])).collect()
    };
    let (f, p) = (grams(fact), grams(post));
    f.iter().filter(|g| p.contains(g)).count() * 10 >= f.len() * 6
}

#[test]
fn answers_and_events_are_in_the_posts() {
    let g = small_world();
    let timelines = timelines(&g.posts);
    for q in real_queries().iter().filter(|q| q.task == Task::Smq) {
        let answer = q.reference.as_deref().unwrap();
        let found = match (&q.uid, &q.topic) {
            // Profile-field answers are in the profile (checked through user_search above).
            (Some(_), _) if profile_facts::read(q.question.as_deref().unwrap(), answer) != Default::default() => continue,
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
