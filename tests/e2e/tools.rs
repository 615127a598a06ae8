//! Golden tests of the eight tools: for a fixed small world in a real lake,
//! read through the DataFusion backend, every call's text (errors
//! included) must equal `tests/golden/tools*.txt`. Run with
//! `SOME_BLESS=1` to rewrite the files after an intended change, and
//! review the diff.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use some_jobs::chat::{ChatResponse, Usage};
use some_jobs::embed::{EmbedError, Embedder, Purpose};
use some_jobs::kernels::CpuKernels;
use some_jobs::testing::ScriptedModel;
use some_jobs::tools::{ALL_TOOLS, Folders, KernelService, SearchCorpus, ToolContext, ToolSettings, WorldBackend, call_tool};
use some_schemas::{EmbeddingRow, KnowledgeRow, PostRow, PostSource, Timestamp, UserRow, buckets};
use some_tests::{BROKER, Vhost};
use some_workers::compute::{KernelServer, RemoteKernels};
use some_workers::world::LakeBackend;
use some_workers::{Lake, LakeLocation};

const MODEL: &str = "test-4d";

fn post(source: PostSource, id: &str, at: &str, content: &str) -> PostRow {
    PostRow {
        published_at: Timestamp::parse(at),
        nickname: Some("小兔子".into()),
        platform: Some("微博".into()),
        ocr: Some(String::new()),
        location: Some("北京".into()),
        ..PostRow::new(id, content, source, "")
    }
}

fn raw(id: &str, at: &str, content: &str) -> PostRow {
    let t = Timestamp::parse(at).unwrap();
    PostRow { area: Some("北京".into()), bucket: buckets::raw(&t.day(), "北京"), ..post(PostSource::Raw, id, at, content) }
}

/// Vectors in 4-d: axis 0 traffic, 1 weather, 2 food, 3 anything else.
fn vector(text: &str) -> Vec<f32> {
    let mut v = [0.05f32; 4];
    for (axis, words) in [(0, &["地铁", "交通", "堵", "raffic"][..]), (1, &["雨", "天气", "ildfire"][..]), (2, &["火锅", "美食", "吃"][..])]
    {
        if words.iter().any(|w| text.contains(w)) {
            v[axis] = 1.0;
        }
    }
    if v.iter().all(|x| *x < 0.5) {
        v[3] = 1.0;
    }
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / n).collect()
}

fn world() -> (Vec<PostRow>, Vec<UserRow>, Vec<KnowledgeRow>) {
    let mut posts = vec![
        raw("r1", "2025-05-01 08:05:00", "北京地铁10号线早高峰故障，交通拥堵"),
        raw("r2", "2025-05-01 08:10:00", "地铁故障导致国贸站大量乘客滞留"),
        raw("r3", "2025-05-01 08:20:00", "北京今天下雨了，天气转凉"),
        raw("r4", "2025-05-01 08:40:00", "午饭去吃了火锅，美食打卡"),
        raw("r5", "2025-05-01 09:00:00", "九点整的帖子不在窗口内"),
        raw("r6", "2025-05-01 23:30:00", "深夜的北京三环依然很堵"),
        raw("r7", "2025-05-02 00:30:00", "凌晨北京下起了雨"),
    ];
    // Each stream is listed in time order: its file order.
    for (i, p) in posts.iter_mut().enumerate() {
        p.ordinal = i as i64;
    }
    posts[0].title = Some("地铁故障".into());
    posts[1].content.push_str(&"很长的内容".repeat(120));
    for (i, text) in ["火锅店排队两小时", "这家火锅太辣了", "下雨天适合吃火锅"].iter().enumerate() {
        let mut p = post(PostSource::Topic, &format!("t{i}"), &format!("2025-01-0{} 10:00:00", i + 1), text);
        p.topic = Some("重庆 火锅".into());
        p.ordinal = i as i64;
        p.bucket = buckets::topic("重庆 火锅");
        p.title = Some("重庆 火锅".into());
        posts.push(p);
    }
    for (i, text) in ["今天去看了演唱会[心]", "早上好", "周末吃火锅"].iter().enumerate() {
        let mut p = post(PostSource::Weibo, &format!("w{i}"), &format!("2025-03-0{} 12:00:00", i + 1), text);
        p.uid = Some("1001".into());
        // The timeline's file lists it newest first.
        p.ordinal = 2 - i as i64;
        p.nickname = None;
        p.platform = None;
        p.bucket = buckets::weibo("1001");
        p.client = Some("iPhone客户端".into());
        p.location = Some("发布于 北京".into());
        (p.reposts, p.comments, p.likes, p.pic_num, p.pictures) = (Some(1), Some(2), Some(3), Some(0), Some("[]".into()));
        posts.push(p);
    }
    let users = vec![UserRow {
        uid: "1001".into(),
        name: Some("小兔子".into()),
        followers_count: Some(250),
        friends_count: Some(80),
        total_rcl_count: Some(1200),
        verified_reason: None,
        description: Some("喜欢音乐和美食".into()),
        location: Some("北京".into()),
        extra: None,
    }];
    let knowledge = [
        "The unemployment rate fell to 3.5 percent, records show.",
        "Wildfire funding was cut in the state budget.",
        "Traffic deaths rose in the city.",
    ]
    .iter()
    .enumerate()
    .map(|(i, c)| KnowledgeRow {
        doc_index: i as i64,
        content: c.to_string(),
        link: Some(format!("https://factwatch.example/{i}")),
        extra: None,
    })
    .collect();
    (posts, users, knowledge)
}

fn embedding(collection: &str, bucket: &str, id: &str, v: &[f32]) -> EmbeddingRow {
    EmbeddingRow {
        id: id.into(),
        dtype: "f32".into(),
        dim: v.len() as i32,
        vector: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        collection: collection.into(),
        model: MODEL.into(),
        bucket: bucket.into(),
    }
}

struct KeywordEmbedder;

#[async_trait::async_trait]
impl Embedder for KeywordEmbedder {
    fn model(&self) -> &str {
        MODEL
    }
    fn dim(&self) -> usize {
        4
    }
    async fn embed(&self, texts: &[String], _: Purpose) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| vector(t)).collect())
    }
}

/// Answers the two summarization prompts with fixed JSON.
fn scripted_summarizer() -> ScriptedModel {
    ScriptedModel::new("scripted", |request| {
        let prompt = &request.messages[0].content;
        let content = if prompt.contains("输入摘要：") {
            r#"{"title": "北京地铁10号线早高峰故障致乘客滞留", "location": "北京"}"#
        } else if prompt.contains("地铁") {
            "<think>先看新闻</think>```json\n{\"summary\": \"北京地铁10号线早高峰发生故障，国贸站大量乘客滞留，引发关注\", \"time\": \"2025.05.01\"}\n```"
        } else {
            r#"{"summary": "无", "time": "xxxx.xx.xx"}"#
        };
        Ok(ChatResponse {
            content: content.into(),
            usage: Usage { prompt_tokens: 10, completion_tokens: 5, cached_tokens: 0 },
            model: "scripted".into(),
            ..Default::default()
        })
    })
}

async fn lake_with_world() -> (tempfile::TempDir, Lake) {
    let dir = tempfile::tempdir().unwrap();
    let lake = Lake::open(&LakeLocation::Local(dir.path().join("lake"))).await.unwrap();
    let (posts, users, knowledge) = world();
    let mut embeddings: Vec<EmbeddingRow> =
        posts.iter().filter(|p| p.post_id != "r2").map(|p| embedding("posts", &p.bucket, &p.post_id, &vector(&p.content))).collect();
    embeddings.extend(knowledge.iter().map(|k| embedding("knowledge", "all", &k.doc_index.to_string(), &vector(&k.content))));
    let mut txn = lake.txn();
    txn.write_rows(posts).await.unwrap();
    txn.write_rows(users).await.unwrap();
    txn.write_rows(knowledge).await.unwrap();
    txn.write_rows(embeddings).await.unwrap();
    txn.commit().await.unwrap();
    (dir, lake)
}

/// (tool, arguments) in the order an agent might make them.
fn script() -> Vec<(&'static str, Value)> {
    let window = "北京_2025-05-01 08:00:00_2025-05-01 09:00:00";
    vec![
        ("post_search", json!({"location": "北京", "start_time": "2025-05-01 08:00:00", "end_time": "2025-05-01 09:00:00"})),
        ("data_folder", json!({"folder_name": window, "start_idx": 0, "end_idx": 2})),
        ("data_folder", json!({"folder_name": window, "start_idx": 0, "end_idx": 2})),
        ("data_folder", json!({"folder_name": window, "start_idx": 1, "end_idx": 4})),
        ("data_folder", json!({"folder_name": window, "start_idx": 3, "end_idx": 2})),
        ("data_folder", json!({"folder_name": window, "start_idx": 0, "end_idx": 9})),
        ("data_folder", json!({"folder_name": format!("{window}_idx"), "start_idx": 0, "end_idx": 2})),
        ("data_folder", json!({"folder_name": "不存在的文件夹", "start_idx": 0, "end_idx": 1})),
        ("data_folder", json!({"folder_name": window, "start_idx": "abc", "end_idx": 1})),
        ("data_folder", json!({"folder_name": window, "end_idx": 1})),
        ("topic_clustering", json!({"folder_name": window})),
        ("data_folder", json!({"folder_name": format!("{window}_cluster"), "start_idx": 0, "end_idx": 2})),
        ("topic_summarization", json!({"folder_name": format!("{window}_cluster")})),
        ("data_folder", json!({"folder_name": format!("{window}_summarization"), "start_idx": 0, "end_idx": 1})),
        ("topic_clustering", json!({"folder_name": "重庆 火锅"})),
        ("post_search", json!({"location": "北京", "start_time": "2025-05-01 23:00:00", "end_time": "2025-05-02 01:00:00"})),
        ("post_search", json!({"location": "上海", "start_time": "2025-05-01 08:00:00", "end_time": "2025-05-01 09:00:00"})),
        ("post_search", json!({"location": "北京", "start_time": "2025/05/01 08:00", "end_time": "2025-05-01 09:00:00"})),
        ("post_search", json!({"location": "../../etc/passwd", "start_time": "2025-05-01 08:00:00", "end_time": "2025-05-01 09:00:00"})),
        ("topic_search", json!({"topic_name": "重庆 火锅"})),
        ("data_folder", json!({"folder_name": "重庆 火锅", "start_idx": 0, "end_idx": 3})),
        ("topic_search", json!({"topic_name": "x' OR '1'='1"})),
        ("user_search", json!({"uid": "1001"})),
        ("data_folder", json!({"folder_name": "1001_weibo", "start_idx": 0, "end_idx": 2})),
        ("user_search", json!({"uid": "1; DROP TABLE users"})),
        ("post_retrieve", json!({"query": "火锅好吃吗", "folder_name": "重庆 火锅", "topk": 2})),
        ("post_retrieve", json!({"query": "火锅", "folder_name": "重庆 火锅", "topk": 9})),
        ("post_retrieve", json!({"query": "火锅", "folder_name": "重庆 火锅", "topk": 0})),
        ("post_retrieve", json!({"query": "地铁", "folder_name": "1001_weibo", "topk": 1})),
        ("knowledge_retrieve", json!({"query": "traffic deaths", "topk": 2})),
        ("knowledge_retrieve", json!({"query": "traffic", "topk": 0})),
        ("search_web", json!({"q": "x"})),
    ]
}

async fn transcript(settings: &ToolSettings) -> String {
    let (_dir, lake) = lake_with_world().await;
    transcript_on(&lake, settings, &Arc::new(CpuKernels::new(2))).await
}

/// The script's calls on `lake` with `kernels`, as text.
async fn transcript_on(lake: &Lake, settings: &ToolSettings, kernels: &dyn KernelService) -> String {
    let backend = LakeBackend::new(lake.clone()).unwrap();
    let summarizer = scripted_summarizer();
    let ctx = ToolContext { backend: &backend, kernels, embedder: Some(&KeywordEmbedder), chat: Some(&summarizer), settings };
    let mut folders = Folders::default();
    let mut out = String::new();
    for (i, (tool, args)) in script().into_iter().enumerate() {
        let args: Map<String, Value> = args.as_object().unwrap().clone();
        let outcome = call_tool(&ctx, &mut folders, &ALL_TOOLS, tool, &args).await.unwrap_or_else(|e| panic!("{tool}: {e}"));
        out.push_str(&format!(
            "=== {i} {tool} {} (error: {}, model calls: {})\n{}\n",
            Value::Object(args),
            outcome.error,
            outcome.model_calls,
            outcome.text
        ));
    }
    out
}

fn golden(name: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("golden").join(name);
    if std::env::var("SOME_BLESS").is_ok_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (create it with SOME_BLESS=1)", path.display()));
    if expected != actual {
        let first = expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{} differs from the tools' output at line {}:\nexpected: {:?}\nactual:   {:?}\n(rerun with SOME_BLESS=1 and review the diff if the change is intended)",
            path.display(),
            first + 1,
            expected.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

#[tokio::test]
async fn tool_outputs_match_the_golden_transcript() {
    golden("tools.txt", &transcript(&ToolSettings::for_embedding_model(MODEL)).await);
}

#[tokio::test]
async fn reference_quirks_reproduce_the_reference() {
    let settings = ToolSettings { reference_quirks: true, ..ToolSettings::for_embedding_model(MODEL) };
    golden("tools-reference-quirks.txt", &transcript(&settings).await);
}

/// Every tool call gives the same text when a compute worker serves the
/// kernels over RabbitMQ (knowledge kept resident, searches batched) as
/// with the kernels of this process, errors included.
#[test]
fn compute_workers_answer_every_tool_call_as_the_local_kernels_do() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    with_runtime(async {
        let vhost = Vhost::create();
        let (_dir, lake) = lake_with_world().await;
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let server = KernelServer::new(lake.clone(), Arc::new(CpuKernels::new(2)));
        let url = vhost.url();
        let serving = tokio::spawn(async move { server.serve(&url, stopped).await });
        let remote = RemoteKernels::connect(&vhost.url()).await.unwrap();
        for settings in
            [ToolSettings::for_embedding_model(MODEL), ToolSettings { reference_quirks: true, ..ToolSettings::for_embedding_model(MODEL) }]
        {
            let local = transcript_on(&lake, &settings, &Arc::new(CpuKernels::new(2))).await;
            assert_eq!(transcript_on(&lake, &settings, &remote).await, local);
        }

        // Concurrent retrievals (one batch on the worker) each get their own hits.
        let index = LakeBackend::new(lake.clone()).unwrap().knowledge(MODEL).await.unwrap();
        let corpus = SearchCorpus::Knowledge { model: MODEL, index: &index };
        let queries: Vec<Vec<f32>> = ["traffic", "wildfire", "火锅", "其他"].iter().map(|t| vector(t)).collect();
        let local = Arc::new(CpuKernels::new(1));
        let remote_hits = futures::future::join_all(queries.iter().enumerate().map(|(i, q)| remote.top_k(corpus, q, 1 + i))).await;
        for (i, (q, hits)) in queries.iter().zip(remote_hits).enumerate() {
            assert_eq!(hits.unwrap(), local.top_k(corpus, q, 1 + i).await.unwrap(), "query {i}");
        }

        // A knowledge base the worker's lake does not hold is a clear error, not an answer.
        let other = some_jobs::tools::KnowledgeIndex { docs: index.docs[..1].to_vec(), ..(*index).clone() };
        let stale = SearchCorpus::Knowledge { model: MODEL, index: &other };
        let err = remote.top_k(stale, &queries[0], 1).await.unwrap_err().to_string();
        assert!(err.contains("do both read the same lake?"), "{err}");
        let _ = stop.send(true);
        serving.await.unwrap();
    });
}

/// A request sent while no compute worker runs waits in the queue and is
/// answered by the first one to start.
#[test]
fn a_request_waits_for_a_compute_worker() {
    let _shared = BROKER.read().unwrap_or_else(|p| p.into_inner());
    with_runtime(async {
        let vhost = Vhost::create();
        let (_dir, lake) = lake_with_world().await;
        let remote = RemoteKernels::connect(&vhost.url()).await.unwrap();
        let vectors: Vec<f32> = ["地铁", "交通", "下雨", "火锅"].iter().flat_map(|t| vector(t)).collect();
        let asked = tokio::spawn(async move { remote.single_pass_cluster(&vectors, 4, 0.5).await });
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert!(!asked.is_finished(), "answered with no compute worker running");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let server = KernelServer::new(lake, Arc::new(CpuKernels::new(1)));
        let url = vhost.url();
        let serving = tokio::spawn(async move { server.serve(&url, stopped).await });
        assert_eq!(asked.await.unwrap().unwrap(), vec![1, 1, 2, 3]);
        let _ = stop.send(true);
        serving.await.unwrap();
    });
}

/// Runs a test's body on a runtime of its own: the broker lock is a plain
/// lock, held by the test's thread, not across the body's await points.
fn with_runtime(body: impl std::future::Future<Output = ()>) {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(body)
}

#[test]
fn tool_schemas_are_listed_once_for_every_tool() {
    let names: Vec<&str> = ALL_TOOLS.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "data_folder",
            "post_search",
            "topic_search",
            "user_search",
            "post_retrieve",
            "knowledge_retrieve",
            "topic_clustering",
            "topic_summarization"
        ]
    );
    let by_name: HashMap<&str, &str> = ALL_TOOLS.iter().map(|t| (t.name, t.paper_name)).collect();
    assert_eq!(by_name["topic_clustering"], "PostClustering");
}
