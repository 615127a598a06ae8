//! Compute workers serving the tools' kernels: `some worker --kind compute`
//! answers similarity and clustering requests from LLM workers
//! (`some worker --remote-kernels`) over RabbitMQ ([`crate::queue::rpc`]).
//!
//! - A knowledge base is loaded from the lake once per embedding model and
//!   kept by the worker's kernels ([`Kernels::keep`]: in device memory on a
//!   GPU), so a retrieval sends only its query vector.
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
use some_jobs::tools::{BackendError, KernelService, SearchCorpus, WorldBackend};
use tokio::sync::{Mutex, mpsc, oneshot, watch};

use crate::lake::Lake;
use crate::queue::rpc::{RpcClient, serve};
use crate::world::LakeBackend;

/// The queue kernel requests go to.
pub const KERNEL_QUEUE: &str = "some.kernels";
/// Most queries searched in one batch.
pub const MAX_BATCH: usize = 64;
/// Requests a compute worker holds at once: several batches' worth, so one
/// fills while another computes.
const IN_HAND: u16 = 4 * MAX_BATCH as u16;

/// What a request asks; its vectors follow the header in the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
enum Op {
    /// Top-k over `model`'s knowledge base, which has `rows` reports on the
    /// caller's side (a worker holding another count reloads it); the
    /// query follows.
    KnowledgeTopK {
        model: String,
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

/// Answers kernel requests with this process's kernels.
pub struct KernelServer {
    lake: Lake,
    kernels: Arc<dyn Kernels>,
    kept: Mutex<HashMap<String, Arc<Kept>>>,
}

impl KernelServer {
    pub fn new(lake: Lake, kernels: Arc<dyn Kernels>) -> Arc<KernelServer> {
        Arc::new(KernelServer { lake, kernels, kept: Mutex::new(HashMap::new()) })
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
            Op::KnowledgeTopK { model, rows, dim, k } => {
                if floats.len() != dim {
                    return Err(format!("a {}-value query for a {dim}-d knowledge base", floats.len()));
                }
                let kept = self.knowledge(&model, rows, dim).await?;
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

    /// `model`'s knowledge base, kept; loaded again if the caller counts
    /// another number of reports (it was re-embedded or extended).
    async fn knowledge(&self, model: &str, rows: usize, dim: usize) -> Result<Arc<Kept>, String> {
        let mut kept = self.kept.lock().await;
        if let Some(k) = kept.get(model).filter(|k| k.corpus.rows() == rows && k.corpus.dim() == dim) {
            return Ok(k.clone());
        }
        let backend = LakeBackend::new(self.lake.clone()).map_err(|e| e.to_string())?;
        let index = backend.knowledge(model).await.map_err(|e| e.to_string())?;
        if index.docs.len() != rows || index.dim != dim {
            return Err(format!(
                "this compute worker's lake has {} reports with {}-d {model} vectors, the caller's {rows} with {dim}-d: do both read the same lake?",
                index.docs.len(),
                index.dim
            ));
        }
        let corpus = {
            let (kernels, vectors) = (self.kernels.clone(), index.vectors.clone());
            tokio::task::spawn_blocking(move || kernels.keep(vectors, dim)).await.map_err(|e| format!("keeping the knowledge base: {e}"))?
        };
        tracing::info!(model, rows, dim, kernels = Kernels::name(self.kernels.as_ref()), "knowledge base kept");
        let (searches, queue) = mpsc::unbounded_channel();
        tokio::spawn(run_batches(corpus.clone(), queue));
        let entry = Arc::new(Kept { corpus, searches });
        kept.insert(model.to_string(), entry.clone());
        Ok(entry)
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
            SearchCorpus::Knowledge { model, index } => {
                let op = Op::KnowledgeTopK { model: model.to_string(), rows: index.docs.len(), dim: index.dim, k };
                self.ask(&op, &[query]).await?
            }
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
        let op = Op::KnowledgeTopK { model: "m".into(), rows: 3, dim: 2, k: 5 };
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
}
