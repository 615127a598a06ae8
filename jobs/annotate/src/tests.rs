//! The interaction pipelines on the synthetic world's interactions: the
//! release's counts, every query true to its rule, the written files read
//! back as queries.

use std::collections::BTreeMap;

use some_jobs::queries::{read_bundled, read_dataset_dir};
use some_jobs::synth::{Scale, SynthConfig, World};
use some_schemas::{QueryRow, Task};

use crate::interactions::{Index, catalog, from_queries};
use crate::sampling::{Annotated, Counts, check_rules, mcr, ubp, ucs};
use crate::{DATASETS, ground_truth_path, write_json};

/// The interactions the bundled queries record, on the posts of the small
/// world made from them.
fn world_index() -> Index {
    let queries = read_bundled().unwrap();
    let world = World::plan(&queries, SynthConfig { scale: Scale::Small, seed: 0 }).unwrap();
    Index::new(&from_queries(&queries), catalog(&world.ref_posts()))
}

fn annotate(index: &Index, counts: Counts, seed: u64) -> Vec<Annotated> {
    vec![ubp(index, counts.ubp_per_type, seed), ucs(index, counts.ucs, seed), mcr(index, counts.mcr, seed)]
}

/// Writes the annotations and reads them back as `some ingest queries` does.
fn written(annotated: &[Annotated]) -> Vec<QueryRow> {
    let dir = tempfile::tempdir().unwrap();
    for a in annotated {
        write_json(dir.path(), &ground_truth_path(a.task), &a.ground_truth, false).unwrap();
    }
    read_dataset_dir(&dir.path().join(DATASETS)).unwrap()
}

#[test]
fn the_world_s_interactions_give_the_release_s_counts_and_every_query_keeps_its_rule() {
    let index = world_index();
    assert_eq!(index.dropped, 0, "every query's post is in the world");
    let annotated = annotate(&index, Counts::default(), 7);
    for a in &annotated {
        for (part, drawn, wanted) in &a.drawn {
            assert_eq!(drawn, wanted, "{} {part}", a.task);
        }
    }
    let rows = written(&annotated);
    let mut per_label: BTreeMap<(Task, Option<String>, String), usize> = BTreeMap::new();
    for r in &rows {
        *per_label.entry((r.task, r.action.clone(), r.label.clone().unwrap())).or_default() += 1;
    }
    for action in ["like", "comment", "repost"] {
        for label in ["是", "否"] {
            assert_eq!(per_label[&(Task::Ubp, Some(action.into()), label.into())], 500, "UBP {action} {label}");
        }
    }
    for task in [Task::Ucs, Task::Mcr] {
        for label in ["是", "否"] {
            assert_eq!(per_label[&(task, None, label.into())], 2000, "{task} {label}");
        }
    }
    for task in [Task::Ubp, Task::Ucs, Task::Mcr] {
        let of_task: Vec<QueryRow> = rows.iter().filter(|r| r.task == task).cloned().collect();
        let breaches = check_rules(&index, &of_task);
        assert!(breaches.is_empty(), "{task}: {} breaches, first: {:?}", breaches.len(), breaches.first());
    }
}

#[test]
fn a_seed_gives_the_same_queries_and_another_seed_others() {
    let index = world_index();
    let counts = Counts { ubp_per_type: 50, ucs: 100, mcr: 100 };
    let first = annotate(&index, counts, 1);
    let again = annotate(&index, counts, 1);
    let other = annotate(&index, counts, 2);
    for ((a, b), c) in first.iter().zip(&again).zip(&other) {
        assert_eq!(a.ground_truth, b.ground_truth, "{}", a.task);
        assert_ne!(a.ground_truth, c.ground_truth, "{}", a.task);
        assert_eq!(a.positives(), if a.task == Task::Ubp { 150 } else { 100 });
    }
}

/// The rule checker is what the counts rest on: a query that breaks a rule
/// must be caught.
#[test]
fn the_rules_catch_a_negative_that_breaks_them() {
    let index = world_index();
    let counts = Counts { ubp_per_type: 20, ucs: 20, mcr: 20 };
    let rows = written(&annotate(&index, counts, 3));
    for task in [Task::Ubp, Task::Ucs, Task::Mcr] {
        let mut of_task: Vec<QueryRow> = rows.iter().filter(|r| r.task == task).cloned().collect();
        // The negative shows its positive's post and text.
        let positive = of_task[0].clone();
        of_task[1].post_id = positive.post_id.clone();
        of_task[1].comment = positive.comment.clone();
        let broken = of_task[1].query_id.to_string();
        let breaches = check_rules(&index, &of_task);
        assert!(!breaches.is_empty() && breaches.iter().all(|b| b.starts_with(&broken)), "{task}: {breaches:?}");
    }
}
