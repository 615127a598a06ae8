//! Release files: written, read back, and refused when broken.

use std::path::Path;

use some_schemas::{PostSource, Task, Timestamp};

use super::*;

fn read_all(root: &Path) -> ReleasePart {
    let release = Release::open(root).unwrap();
    let mut all = ReleasePart::default();
    for f in &release.files {
        let part = Release::read(f).unwrap();
        all.posts.extend(part.posts);
        all.users.extend(part.users);
        all.ref_posts.extend(part.ref_posts);
        all.knowledge.extend(part.knowledge);
        all.embeddings.extend(part.embeddings);
    }
    all
}

#[test]
fn a_written_release_reads_back_to_the_same_rows() {
    let dir = tempfile::tempdir().unwrap();
    let w = ReleaseWriter::new(dir.path());
    let queries = crate::queries::read_dataset_dir(&crate::bundled_datasets_dir()).unwrap();
    let sample: Vec<_> = queries
        .iter()
        .filter(|q| q.task == Task::Red)
        .take(2)
        .chain(queries.iter().filter(|q| q.task == Task::Ses).take(1))
        .chain(queries.iter().filter(|q| q.task == Task::Mcr).take(4))
        .chain(queries.iter().filter(|q| q.task == Task::Mid).take(2))
        .cloned()
        .collect();
    let world = crate::synth::World::plan(&sample, crate::synth::SynthConfig { scale: crate::synth::Scale::Small, seed: 3 }).unwrap();
    let mut posts: Vec<_> = world.units().iter().flat_map(|u| world.generate(u)).collect();
    let users = world.users();
    for unit in world.units() {
        let in_unit: Vec<_> = posts.iter().filter(|p| p.bucket == unit.bucket).cloned().collect();
        match unit.source {
            PostSource::Raw => {
                let day = in_unit[0].bucket.split('.').next().unwrap().to_string();
                w.raw(&day, in_unit[0].area.as_deref().unwrap(), &in_unit).unwrap()
            }
            PostSource::Topic => w.topic(in_unit[0].topic.as_deref().unwrap(), &in_unit).unwrap(),
            PostSource::Weibo => {}
        }
    }
    for u in &users {
        let mine: Vec<_> = posts.iter().filter(|p| p.uid.as_deref() == Some(&u.uid)).cloned().collect();
        w.user(u, &mine).unwrap();
    }
    w.all_posts(&world.ref_posts()).unwrap();
    w.knowledge(&world.knowledge()).unwrap();
    let vectors = vec![("a".to_string(), vec![1.0f32, 0.0]), ("b".to_string(), vec![0.0, 1.0])];
    let raw_file = std::fs::read_dir(w.root().join("raw_data")).unwrap().next().unwrap().unwrap().file_name();
    let (day, location) = raw_file.to_str().unwrap().strip_suffix("_sensitive.jsonl").unwrap().split_once('_').unwrap();
    w.raw_embeddings(day, location, &vectors).unwrap();
    w.knowledge_embeddings(&vec![vec![0.5f32; 4]; world.knowledge().len()]).unwrap();

    let mut back = read_all(dir.path());
    let key = |p: &some_schemas::PostRow| (p.source.clone(), p.post_id.clone());
    posts.sort_by_key(key);
    back.posts.sort_by_key(key);
    assert_eq!(back.posts.len(), posts.len());
    assert_eq!(back.posts, posts);
    let mut users = users;
    users.sort_by(|a, b| a.uid.cmp(&b.uid));
    back.users.sort_by(|a, b| a.uid.cmp(&b.uid));
    assert_eq!(back.users, users);
    assert_eq!(back.knowledge, world.knowledge());
    let mut refs = world.ref_posts();
    refs.sort_by(|a, b| a.post_id.cmp(&b.post_id));
    back.ref_posts.sort_by(|a, b| a.post_id.cmp(&b.post_id));
    assert_eq!(back.ref_posts, refs);
    assert_eq!(back.embeddings.iter().filter(|e| e.collection == "posts").count(), 2);
    assert_eq!(back.embeddings.iter().filter(|e| e.collection == "knowledge").count(), world.knowledge().len());
}

fn write(root: &Path, relative: &str, text: &str) -> std::path::PathBuf {
    let path = root.join("database").join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

fn read_error(root: &Path) -> crate::InputError {
    match Release::open(root) {
        Err(e) => e,
        Ok(release) => release.files.iter().find_map(|f| Release::read(f).err()).expect("an error"),
    }
}

#[test]
fn broken_releases_are_refused_with_file_position_and_reason() {
    let good_raw = r#"{"unique_id": "a1", "content": "x", "post_publish_time": "2025-05-01 08:00:00"}"#;
    let cases: Vec<(&str, &str, &str, &str)> = vec![
        (
            "raw_data/2025-05-01_北京_sensitive.jsonl",
            "{\"unique_id\": \"a1\", \"content\": \"x\"}\n{\"unique_id\": \"a2\", \"con",
            "line 2 column 24",
            "invalid JSON: the JSON ends early (truncated file?)",
        ),
        (
            "raw_data/2025-05-01_北京_sensitive.jsonl",
            r#"{"unique_id": "a1", "content": ["x"]}"#,
            "line 1.content",
            "expected a string, found an array",
        ),
        (
            "raw_data/2025-05-01_北京_sensitive.jsonl",
            r#"{"unique_id": "a1", "content": "x", "post_publish_time": "yesterday"}"#,
            "line 1.post_publish_time",
            "unreadable time \"yesterday\"; expected e.g. \"2025-05-06 07:00:00\"",
        ),
        (
            "raw_data/2025-05-01_北京_sensitive.jsonl",
            r#"{"unique_id": "a1", "content": "x", "content": "y"}"#,
            "line 1 column 45",
            "invalid JSON: duplicate key \"content\"",
        ),
        ("raw_data/2025-05-01_北京_sensitive.jsonl", "", "", "the file is empty"),
        ("raw_data/May-first_北京_sensitive.jsonl", good_raw, "", "expected a file named {YYYY-MM-DD}_{location}_sensitive.jsonl"),
        ("topic_data/话题.json", r#"{"posts": {}}"#, "the top level", "required key \"media_info\" is missing"),
        ("user_data/42/42.json", r#"{"user": {"id": "43"}}"#, "user.id", "the profile's id \"43\" differs from its folder \"42\""),
        (
            "user_data/42/42.json",
            r#"{"user": {"id": "42"}, "weibo": [{"id": "1", "text": "t", "reposts_count": "many"}]}"#,
            "weibo[0].reposts_count",
            "expected an integer count, found a string",
        ),
        ("user_data/42/profile.json", "{}", "", "missing part: a user folder must hold 42.json"),
        ("emb_data/2025-05-02_北京.npy", "", "", "missing part: embeddings for a location stream with no"),
    ];
    for (relative, text, at, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "raw_data/2025-05-02_江西_sensitive.jsonl", good_raw);
        let path = write(dir.path(), relative, text);
        let err = read_error(dir.path());
        assert_eq!(err.at, at, "{relative}: {err}");
        assert!(err.message.starts_with(message), "{relative}: {err}");
        if !message.starts_with("missing part: a user") {
            assert_eq!(err.path, path, "{relative}");
        }
    }
}

#[test]
fn an_empty_tree_is_not_a_release() {
    let dir = tempfile::tempdir().unwrap();
    let err = Release::open(dir.path()).unwrap_err();
    assert_eq!(err.message, "not a SoMe release: no raw_data, topic_data, user_data or knowledge_data");
}

#[test]
fn release_times_in_weibo_api_form_are_read() {
    let t = read::parse_time(&serde_json::json!("Sat Nov 16 20:04:04 +0800 2024")).unwrap();
    assert_eq!(t, Timestamp::parse("2024-11-16 20:04:04").unwrap());
}
