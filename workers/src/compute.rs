//! Compute workers serving the tools' kernels: `some worker --kind compute`
//! answers similarity and clustering requests from LLM workers
//! (`some worker --remote-kernels`) over RabbitMQ ([`crate::queue::rpc`]).
//!
//! - A knowledge base is loaded from the lake once per embedding model and
//!   world and kept by the worker's kernels ([`Kernels::keep`]: in device
//!   memory on a GPU), so a retrieval sends only its query vector and the
//!   world it reads ([`WorldVersion`]: a lake version and the world's key).
//!   A replaced world is a new key, so its knowledge base is loaded, even
//!   one with as many reports and dimensions as the old; the last
//!   [`KEPT_WORLDS`] worlds of a model stay kept, so episodes still reading
//!   the old world get the old one's hits.
//! - Concurrent searches of one knowledge base run as one batch: a search
//!   that arrives while a batch computes joins the next, up to
//!   [`MAX_BATCH`] queries; each gets the first `k` of the batch's top
//!   `max k` (the same hits: the order is total).
//! - Post retrieval and clustering carry their folder's vectors (hundreds
//!   of rows) and run as they come.
//!
//! The answers are those of the same kernels in the LLM worker's own
//! process; `tests/e2e/tools.rs` runs every tool both ways, and
//! `tests/e2e/distributed.rs` a whole run through worker processes.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use some_jobs::kernels::{Hit, Kernels, Matrix, ResidentCorpus};
use some_jobs::tools::{BackendError, KernelService, KnowledgeIndex, SearchCorpus, WorldBackend, WorldVersion};
use tokio::sync::{Mutex, mpsc, oneshot, watch};

use crate::lake::{AsOf, Lake};
use crate::queue::rpc::{RpcClient, serve};
use crate::world::LakeBackend;

/// The queue kernel requests go to.
pub const KERNEL_QUEUE: &str = "some.kernels";
/// Most queries searched in one batch.
pub const MAX_BATCH: usize = 64;
/// Requests a compute worker holds at once: several batches' worth, so one
/// fills while another computes.
const IN_HAND: u16 = 4 * MAX_BATCH as u16;
/// Worlds whose knowledge base of one model a compute worker keeps at once
/// (the least recently searched goes first): across a replace, the episodes
/// that started on the old world and those on the new one.
pub const KEPT_WORLDS: usize = 2;

/// What a request asks; its vectors follow the header in the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Op {
    /// Top-k over `model`'s knowledge base in the world `world` (its key),
    /// which the lake holds at `version`, and which has `rows` reports of
    /// `dim` values on the caller's side; the query follows.
    KnowledgeTopK {
        model: String,
        world: u64,
        version: u64,
        rows: usize,
        dim: usize,
        k: usize,
    },
    /// Top-k over the vectors after the query.
    TopK {
        dim: usize,
        k: usize,
    },
    SinglePassCluster {
        dim: usize,
        theta: f32,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Reply {
    Hits(Vec<(u32, f32)>),
    Clusters(Vec<u32>),
    Failed(String),
}

/// A request on the wire: the header's length (u32, little-endian), the
/// header as JSON, then the vectors as little-endian f32.
fn encode(op: &Op, vectors: &[&[f32]]) -> Vec<u8> {
    let header = serde_json::to_vec(op).expect("a header serialises");
    let floats: usize = vectors.iter().map(|v| v.len()).sum();
    let mut out = Vec::with_capacity(4 + header.len() + 4 * floats);
    out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    out.extend_from_slice(&header);
    for v in vectors {
        out.extend(v.iter().flat_map(|x| x.to_le_bytes()));
    }
    out
}

fn decode(body: &[u8]) -> Result<(Op, Vec<f32>), String> {
    let len = body
        .get(..4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        .ok_or("a request shorter than its header length")?;
    let header = body.get(4..4 + len).ok_or("a request shorter than its header")?;
    let op = serde_json::from_slice(header).map_err(|e| format!("an unreadable request header: {e}"))?;
    let rest = &body[4 + len..];
    if !rest.len().is_multiple_of(4) {
        return Err(format!("{} bytes of vectors: not whole f32 values", rest.len()));
    }
    Ok((op, rest.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect()))
}

/// A knowledge base kept by the kernels, and the queue of its searches.
struct Kept {
    corpus: Arc<dyn ResidentCorpus>,
    searches: mpsc::UnboundedSender<Search>,
}

struct Search {
    query: Vec<f32>,
    k: usize,
    reply: oneshot::Sender<Vec<Hit>>,
}

/// A use counter, and (model, world key) -> (last use, knowledge base kept).
type KeptBases = (u64, HashMap<(String, u64), (u64, Arc<Kept>)>);

/// Answers kernel requests with this process's kernels.
pub struct KernelServer {
    lake: Lake,
    kernels: Arc<dyn Kernels>,
    kept: Mutex<KeptBases>,
}

impl KernelServer {
    pub fn new(lake: Lake, kernels: Arc<dyn Kernels>) -> Arc<KernelServer> {
        Arc::new(KernelServer { lake, kernels, kept: Mutex::new((0, HashMap::new())) })
    }

    /// Serves [`KERNEL_QUEUE`] on the broker at `url` until `stop`.
    pub async fn serve(self: Arc<Self>, url: &str, stop: watch::Receiver<bool>) {
        serve(
            url,
            KERNEL_QUEUE,
            IN_HAND,
            move |body| {
                let server = self.clone();
                async move { server.answer(&body).await }
            },
            stop,
        )
        .await
    }

    /// One request's reply, as bytes.
    pub async fn answer(&self, body: &[u8]) -> Vec<u8> {
        let reply = match decode(body) {
            Err(e) => Reply::Failed(e),
            Ok((op, floats)) => self.run(op, floats).await.unwrap_or_else(Reply::Failed),
        };
        serde_json::to_vec(&reply).expect("a reply serialises")
    }

    async fn run(&self, op: Op, floats: Vec<f32>) -> Result<Reply, String> {
        let hits = |hits: Vec<Hit>| Reply::Hits(hits.into_iter().map(|h| (h.index, h.score)).collect());
        match op {
            Op::KnowledgeTopK { model, world, version, rows, dim, k } => {
                if floats.len() != dim {
                    return Err(format!("a {}-value query for a {dim}-d knowledge base", floats.len()));
                }
                let kept = self.knowledge(&model, WorldVersion { version, key: world }, rows, dim).await?;
                let (reply, answer) = oneshot::channel();
                kept.searches.send(Search { query: floats, k, reply }).map_err(|_| "the batch loop stopped".to_string())?;
                answer.await.map(hits).map_err(|_| "the search failed".into())
            }
            Op::TopK { dim, k } => {
                let (query, corpus) = split_rows(&floats, dim, 1)?;
                let kernels = self.kernels.clone();
                let (query, corpus) = (query.to_vec(), corpus.to_vec());
                let found = tokio::task::spawn_blocking(move || {
                    let corpus = kernels.corpus(Matrix::F32 { data: &corpus, dim });
                    Kernels::top_k(kernels.as_ref(), Matrix::F32 { data: &query, dim }, &corpus, k).pop().unwrap_or_default()
                });
                found.await.map(hits).map_err(|e| format!("the search failed: {e}"))
            }
            Op::SinglePassCluster { dim, theta } => {
                split_rows(&floats, dim, 0)?;
                let kernels = self.kernels.clone();
                let ids = tokio::task::spawn_blocking(move || {
                    Kernels::single_pass_cluster(kernels.as_ref(), Matrix::F32 { data: &floats, dim }, theta)
                });
                ids.await.map(Reply::Clusters).map_err(|e| format!("the clustering failed: {e}"))
            }
        }
    }

    /// `model`'s knowledge base in `world`, kept; loaded from the lake as
    /// of the world's version the first time that world is asked for.
    async fn knowledge(&self, model: &str, world: WorldVersion, rows: usize, dim: usize) -> Result<Arc<Kept>, String> {
        let mut kept = self.kept.lock().await;
        kept.0 += 1;
        let tick = kept.0;
        let key = (model.to_string(), world.key);
        let entry = match kept.1.get_mut(&key) {
            Some(entry) => {
                entry.0 = tick;
                entry.1.clone()
            }
            None => {
                let entry = self.load(model, world, rows, dim).await?;
                let of_model: Vec<(u64, (String, u64))> =
                    kept.1.iter().filter(|((m, _), _)| m == model).map(|(k, (used, _))| (*used, k.clone())).collect();
                if of_model.len() >= KEPT_WORLDS
                    && let Some((_, least)) = of_model.into_iter().min()
                {
                    kept.1.remove(&least);
                }
                kept.1.insert(key, (tick, entry.clone()));
                entry
            }
        };
        if entry.corpus.rows() != rows || entry.corpus.dim() != dim {
            return Err(format!(
                "this compute worker's lake has {} reports with {}-d {model} vectors in the caller's world, the caller's {rows} with {dim}-d: do both read the same lake?",
                entry.corpus.rows(),
                entry.corpus.dim()
            ));
        }
        Ok(entry)
    }

    /// Reads `model`'s knowledge base in `world` and has the kernels keep it.
    async fn load(&self, model: &str, world: WorldVersion, rows: usize, dim: usize) -> Result<Arc<Kept>, String> {
        let same_lake = |e: String| format!("{e}: do both read the same lake?");
        let lake = self.lake.as_of(AsOf::Version(world.version)).await.map_err(|e| match e {
            // A version this lake does not have.
            crate::Error::Invalid(why) => same_lake(why),
            e => e.to_string(),
        })?;
        let read = LakeBackend::new(lake).map_err(|e| e.to_string())?.world().await.map_err(|e| e.to_string())?;
        if read.world_version().key != world.key {
            return Err(same_lake(format!(
                "this compute worker's lake holds another world at version {} than the caller's",
                world.version
            )));
        }
        let index = read.knowledge(model).await.map_err(|e| e.to_string())?;
        if index.docs.len() != rows || index.dim != dim {
            return Err(same_lake(format!(
                "this compute worker's lake has {} reports with {}-d {model} vectors at version {}, the caller's {rows} with {dim}-d",
                index.docs.len(),
                index.dim,
                world.version
            )));
        }
        let corpus = {
            let (kernels, vectors) = (self.kernels.clone(), index.vectors.clone());
            tokio::task::spawn_blocking(move || kernels.keep(vectors, dim)).await.map_err(|e| format!("keeping the knowledge base: {e}"))?
        };
        tracing::info!(model, rows, dim, version = world.version, kernels = Kernels::name(self.kernels.as_ref()), "knowledge base kept");
        let (searches, queue) = mpsc::unbounded_channel();
        tokio::spawn(run_batches(corpus.clone(), queue));
        Ok(Arc::new(Kept { corpus, searches }))
    }
}

/// `floats` as `head` rows of `dim` and the rest, checking the shape.
fn split_rows(floats: &[f32], dim: usize, head: usize) -> Result<(&[f32], &[f32]), String> {
    if dim == 0 || !floats.len().is_multiple_of(dim) || floats.len() < head * dim {
        return Err(format!("{} values are not rows of {dim}", floats.len()));
    }
    Ok(floats.split_at(head * dim))
}

/// Searches a kept corpus in batches: all searches waiting when one batch
/// ends make the next (no waiting to fill a batch, so a lone search is not
/// delayed).
async fn run_batches(corpus: Arc<dyn ResidentCorpus>, mut queue: mpsc::UnboundedReceiver<Search>) {
    while let Some(first) = queue.recv().await {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(s) => batch.push(s),
                Err(_) => break,
            }
        }
        let k = batch.iter().map(|s| s.k).max().unwrap_or(0);
        let queries: Vec<f32> = batch.iter().flat_map(|s| s.query.iter().copied()).collect();
        let corpus = corpus.clone();
        let dim = corpus.dim();
        let found = tokio::task::spawn_blocking(move || corpus.top_k(Matrix::F32 { data: &queries, dim }, k)).await;
        let Ok(found) = found else { continue };
        for (search, mut hits) in batch.into_iter().zip(found) {
            hits.truncate(search.k);
            let _ = search.reply.send(hits);
        }
    }
}

/// The tools' kernels on compute workers, reached through the broker.
pub struct RemoteKernels {
    rpc: RpcClient,
}

impl RemoteKernels {
    pub async fn connect(url: &str) -> crate::Result<RemoteKernels> {
        Ok(RemoteKernels { rpc: RpcClient::connect(url, KERNEL_QUEUE).await? })
    }

    async fn ask(&self, op: &Op, vectors: &[&[f32]]) -> Result<Reply, BackendError> {
        let body = encode(op, vectors);
        let reply = self.rpc.call(&body).await.map_err(|e| BackendError(format!("the compute workers: {e}")))?;
        match serde_json::from_slice(&reply) {
            Ok(Reply::Failed(why)) => Err(BackendError(format!("a compute worker could not answer: {why}"))),
            Ok(reply) => Ok(reply),
            Err(e) => Err(BackendError(format!("an unreadable reply from a compute worker: {e}"))),
        }
    }
}

/// The search of `model`'s knowledge base `index` in the world it was read from.
fn knowledge_op(model: &str, index: &KnowledgeIndex, k: usize) -> Result<Op, BackendError> {
    let Some(world) = index.world else {
        return Err(BackendError(format!("the {model} knowledge base was not read from a lake: a compute worker cannot search it")));
    };
    Ok(Op::KnowledgeTopK { model: model.to_string(), world: world.key, version: world.version, rows: index.docs.len(), dim: index.dim, k })
}

fn unexpected(reply: &Reply) -> BackendError {
    BackendError(format!("a compute worker answered with the wrong kind of reply: {reply:?}"))
}

#[async_trait::async_trait]
impl KernelService for RemoteKernels {
    fn name(&self) -> String {
        "remote".into()
    }

    async fn top_k(&self, corpus: SearchCorpus<'_>, query: &[f32], k: usize) -> Result<Vec<Hit>, BackendError> {
        let reply = match corpus {
            SearchCorpus::Knowledge { model, index } => self.ask(&knowledge_op(model, index, k)?, &[query]).await?,
            SearchCorpus::Vectors { data, dim } => self.ask(&Op::TopK { dim, k }, &[query, data]).await?,
        };
        match reply {
            Reply::Hits(hits) => Ok(hits.into_iter().map(|(index, score)| Hit { index, score }).collect()),
            other => Err(unexpected(&other)),
        }
    }

    async fn single_pass_cluster(&self, vectors: &[f32], dim: usize, theta: f32) -> Result<Vec<u32>, BackendError> {
        match self.ask(&Op::SinglePassCluster { dim, theta }, &[vectors]).await? {
            Reply::Clusters(ids) => Ok(ids),
            other => Err(unexpected(&other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_ones_say_what_is_wrong() {
        let op = Op::KnowledgeTopK { model: "m".into(), world: u64::MAX - 1, version: 7, rows: 3, dim: 2, k: 5 };
        let body = encode(&op, &[&[0.5, -1.25], &[f32::MIN_POSITIVE]]);
        assert_eq!(decode(&body), Ok((op, vec![0.5, -1.25, f32::MIN_POSITIVE])));
        assert_eq!(decode(&[1, 0]), Err("a request shorter than its header length".into()));
        assert_eq!(decode(&[9, 0, 0, 0, b'{']), Err("a request shorter than its header".into()));
        assert!(decode(&[1, 0, 0, 0, b'{']).unwrap_err().starts_with("an unreadable request header"));
        let mut odd = encode(&Op::TopK { dim: 1, k: 1 }, &[&[1.0]]);
        odd.push(0);
        assert_eq!(decode(&odd), Err("5 bytes of vectors: not whole f32 values".into()));
    }

    #[test]
    fn replies_keep_scores_to_the_bit() {
        let reply = Reply::Hits(vec![(7, 0.1 + 0.2), (1, -f32::EPSILON), (0, 1.0 / 3.0)]);
        let back: Reply = serde_json::from_slice(&serde_json::to_vec(&reply).unwrap()).unwrap();
        assert_eq!(back, reply);
    }

    #[test]
    fn rows_are_checked_against_the_dimension() {
        assert_eq!(split_rows(&[1.0, 2.0, 3.0, 4.0], 2, 1), Ok((&[1.0, 2.0][..], &[3.0, 4.0][..])));
        assert!(split_rows(&[1.0, 2.0, 3.0], 2, 0).is_err());
        assert!(split_rows(&[1.0, 2.0], 0, 0).is_err());
        assert!(split_rows(&[], 2, 1).is_err());
    }

    /// A batch answers each search as it would be answered alone, whatever `k` the others asked.
    #[tokio::test]
    async fn a_batch_gives_each_search_its_own_hits() {
        use some_jobs::kernels::CpuKernels;
        let dim = 8;
        let vectors: Vec<f32> = (0..200 * dim).map(|i| ((i * 7919) % 113) as f32 - 56.0).collect();
        let kernels = Arc::new(CpuKernels::new(1));
        let corpus = kernels.clone().keep(vectors, dim);
        let (tx, rx) = mpsc::unbounded_channel();
        let mut answers = Vec::new();
        let queries: Vec<(Vec<f32>, usize)> =
            (0..10).map(|q| ((0..dim).map(|i| ((q * 31 + i * 17) % 23) as f32 - 11.0).collect(), 1 + q * 3)).collect();
        // Queued before the loop starts, so they make one batch.
        for (query, k) in &queries {
            let (reply, answer) = oneshot::channel();
            tx.send(Search { query: query.clone(), k: *k, reply }).unwrap();
            answers.push(answer);
        }
        drop(tx);
        run_batches(corpus.clone(), rx).await;
        for ((query, k), answer) in queries.iter().zip(answers) {
            let alone = corpus.top_k(Matrix::F32 { data: query, dim }, *k).pop().unwrap();
            assert_eq!(answer.await.unwrap(), alone);
        }
    }

    /// A world of three reports, report `i`'s vector along axis `axes[i]`.
    async fn write_knowledge(lake: &Lake, axes: [usize; 3]) {
        use some_schemas::{EmbeddingRow, KnowledgeRow, knowledge};
        let docs =
            (0..3).map(|i| KnowledgeRow { doc_index: i, content: format!("report {i}"), link: None, extra: None }).collect::<Vec<_>>();
        let vectors = axes
            .iter()
            .enumerate()
            .map(|(i, axis)| {
                let v: Vec<f32> = (0..3).map(|j| if j == *axis { 1.0 } else { 0.0 }).collect();
                EmbeddingRow {
                    id: i.to_string(),
                    dtype: "f32".into(),
                    dim: 3,
                    vector: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    collection: knowledge::TABLE.into(),
                    model: "m".into(),
                    bucket: "all".into(),
                }
            })
            .collect::<Vec<_>>();
        let mut txn = lake.txn();
        txn.replace_tables(&crate::world::WORLD_TABLES);
        txn.write_rows(docs).await.unwrap();
        txn.write_rows(vectors).await.unwrap();
        txn.commit().await.unwrap();
    }

    /// A replace with as many reports and dimensions but other vectors is
    /// searched as replaced (the knowledge base is kept per world, not per
    /// count), an episode still on the old world gets the old one's hits,
    /// and a world the worker's lake does not hold is a clear error.
    #[tokio::test]
    async fn a_replaced_knowledge_base_with_the_same_counts_is_searched_as_replaced() {
        use some_jobs::kernels::CpuKernels;
        let dir = tempfile::tempdir().unwrap();
        let lake = Lake::open(&crate::LakeLocation::Local(dir.path().join("lake"))).await.unwrap();
        let server = KernelServer::new(lake.clone(), Arc::new(CpuKernels::new(1)));
        let local = Arc::new(CpuKernels::new(1));
        let query = [1.0f32, 0.0, 0.0];
        let search = async |index: &KnowledgeIndex| {
            let reply = server.answer(&encode(&knowledge_op("m", index, 1).unwrap(), &[&query])).await;
            let Reply::Hits(hits) = serde_json::from_slice::<Reply>(&reply).unwrap() else { panic!("{}", String::from_utf8_lossy(&reply)) };
            let corpus = SearchCorpus::Knowledge { model: "m", index };
            let alone: Vec<(u32, f32)> = local.top_k(corpus, &query, 1).await.unwrap().into_iter().map(|h| (h.index, h.score)).collect();
            assert_eq!(hits, alone, "the compute worker searched another knowledge base than the caller's");
            hits[0].0
        };
        let backend = LakeBackend::new(lake.clone()).unwrap();

        write_knowledge(&lake, [0, 1, 2]).await;
        let old = backend.world().await.unwrap().knowledge("m").await.unwrap();
        assert_eq!(search(&old).await, 0);

        // `some ingest release --replace`: the same counts, report 1 now nearest.
        write_knowledge(&lake, [1, 0, 2]).await;
        let new = backend.world().await.unwrap().knowledge("m").await.unwrap();
        assert_eq!((new.docs.len(), new.dim), (old.docs.len(), old.dim));
        assert_ne!(new.world, old.world);
        assert_eq!(search(&new).await, 1, "the replaced knowledge base was searched");
        assert_eq!(search(&old).await, 0, "an episode on the old world got the new one's hits");

        let foreign = KnowledgeIndex { world: Some(WorldVersion { key: 42, ..new.world.unwrap() }), ..(*new).clone() };
        let reply = server.answer(&encode(&knowledge_op("m", &foreign, 1).unwrap(), &[&query])).await;
        let Reply::Failed(why) = serde_json::from_slice::<Reply>(&reply).unwrap() else {
            panic!("answered for a world the lake does not hold")
        };
        assert!(why.contains("do both read the same lake?"), "{why}");
        let unread = KnowledgeIndex { world: None, ..(*new).clone() };
        assert!(knowledge_op("m", &unread, 1).unwrap_err().to_string().contains("not read from a lake"));
    }
}
