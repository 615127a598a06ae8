//! The synthetic world against the solvers, on both scales: no cheat beats
//! the better of random and majority by more than 10 points on a label
//! task, and the oracle reader reaches 85.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use some_schemas::{PostRow, PostSource, QueryRow, Task};

use super::oracle::Oracle;
use super::{Solver, Sources, cheats, evaluate};
use crate::queries::read_dataset_dir;
use crate::synth::{Scale, SynthConfig, World};

fn real_queries() -> &'static [QueryRow] {
    static Q: OnceLock<Vec<QueryRow>> = OnceLock::new();
    Q.get_or_init(|| read_dataset_dir(&crate::bundled_datasets_dir()).unwrap())
}

fn timelines(world: &World) -> Vec<PostRow> {
    world.units().iter().filter(|u| u.source == PostSource::Weibo).flat_map(|u| world.generate(u)).collect()
}

/// What the tools show of a world: the embedded posts, the timelines, the
/// knowledge base.
fn sources(world: &World, weibo: &[PostRow]) -> Sources {
    let posts = world.ref_posts().into_iter().map(|r| (r.post_id, Sources::post_text(&r.json))).collect();
    let mut histories: HashMap<String, Vec<String>> = HashMap::new();
    for p in weibo.iter().filter(|p| p.source == "weibo") {
        histories.entry(p.uid.clone().unwrap()).or_default().push(p.content.clone());
    }
    Sources::new(posts, histories, world.knowledge().into_iter().map(|k| k.content).collect())
}

/// No cheat beats the better of random and majority by more than 10
/// points on a label task; the oracle reader scores at least 85.
fn assert_evidence_must_be_read(world: &World, weibo: &[PostRow]) {
    let scale = world.config().scale;
    let sources = sources(world, weibo);
    let queries = real_queries();
    let mut solvers: Vec<&dyn Solver> = cheats::all().to_vec();
    solvers.push(&Oracle);
    let scores = evaluate(&solvers, queries, &sources);
    for s in &scores {
        let labels = queries.iter().filter(|q| q.task == s.task).filter_map(|q| q.label.as_deref());
        let b = crate::scorers::baselines::baselines(s.task, labels).unwrap();
        let floor = b.random.max(b.majority);
        eprintln!("{scale:?} {:?} {:<40} {:6.2} (random {:.2}, majority {:.2})", s.task, s.solver, s.score, b.random, b.majority);
        if s.solver.starts_with("oracle") {
            assert!(s.score >= 85.0, "{s:?}: the oracle reader should reach 85");
        } else {
            assert!(s.score <= floor + 10.0, "{s:?}: a cheat beats {floor:.2} by more than 10 points");
        }
    }
    let covered: HashSet<Task> = scores.iter().filter(|s| s.solver.starts_with("oracle")).map(|s| s.task).collect();
    assert_eq!(covered.len(), 5, "the oracle answers every label task");
}

#[test]
fn small_world_evidence_must_be_read() {
    let world = World::plan(real_queries(), SynthConfig { scale: Scale::Small, seed: 7 }).unwrap();
    assert_evidence_must_be_read(&world, &timelines(&world));
}

#[test]
fn paper_world_evidence_must_be_read() {
    // The label tasks read timelines, embedded posts and the knowledge base:
    // the paper world's location streams and topics play no part.
    let world = World::plan(real_queries(), SynthConfig { scale: Scale::Paper, seed: 3 }).unwrap();
    let weibo = timelines(&world);
    assert_eq!(weibo.len(), 840_200);
    assert_evidence_must_be_read(&world, &weibo);
}
