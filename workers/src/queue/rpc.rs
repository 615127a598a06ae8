//! Request and reply over RabbitMQ, for work a caller waits on (the
//! compute workers' kernels) rather than work committed to the lake.
//!
//! Requests go to a named queue; replies come back on the caller's own
//! connection through RabbitMQ's direct reply-to, matched by correlation
//! id, so no reply queue is declared per caller. A server acknowledges a
//! request only after its reply is published: a server killed mid-request
//! leaves it to another. A caller whose connection drops (a broker
//! restart) sends its requests again on a new one. Requests are
//! idempotent, so a reply that arrives twice is harmless (the second finds
//! no caller and is dropped). Requests nobody takes expire after
//! [`REQUEST_TTL`], with the callers that are waiting for them.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use lapin::options::{BasicAckOptions, BasicConsumeOptions, BasicPublishOptions, BasicQosOptions, QueueDeclareOptions};
use lapin::types::{AMQPValue, FieldTable};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties};
use tokio::sync::{oneshot, watch};

use super::rabbit::{err, redact, with_heartbeat};
use crate::error::{Error, Result};

/// The pseudo-queue of RabbitMQ's direct reply-to.
const REPLY_TO: &str = "amq.rabbitmq.reply-to";
/// How long a request waits for a server, in the queue and in the caller.
pub const REQUEST_TTL: Duration = Duration::from_secs(300);

async fn open(url: &str) -> Result<(Connection, Channel)> {
    let conn =
        Connection::connect(url, ConnectionProperties::default()).await.map_err(|e| err(&format!("connecting to {}", redact(url)), e))?;
    let channel = conn.create_channel().await.map_err(|e| err("opening a channel", e))?;
    Ok((conn, channel))
}

/// Declares a request queue, the same way on both sides: not durable (a
/// request outlives no broker restart; its caller sends it again), with
/// the requests' time to live.
async fn declare(channel: &Channel, queue: &str) -> Result<()> {
    let mut args = FieldTable::default();
    args.insert("x-message-ttl".into(), AMQPValue::LongUInt(REQUEST_TTL.as_millis() as u32));
    let options = QueueDeclareOptions { durable: false, ..Default::default() };
    channel.queue_declare(queue.into(), options, args).await.map_err(|e| err(&format!("declaring {queue}"), e))?;
    Ok(())
}

type Waiting = Arc<Mutex<HashMap<String, oneshot::Sender<Vec<u8>>>>>;

/// One connection of a caller, with the task routing its replies.
struct Link {
    _conn: Connection,
    channel: Channel,
    waiting: Waiting,
}

impl Link {
    async fn open(url: &str, queue: &str) -> Result<Link> {
        let (conn, channel) = open(url).await?;
        declare(&channel, queue).await?;
        let no_ack = BasicConsumeOptions { no_ack: true, ..Default::default() };
        let mut replies = channel
            .basic_consume(REPLY_TO.into(), "".into(), no_ack, FieldTable::default())
            .await
            .map_err(|e| err("consuming replies", e))?;
        let waiting: Waiting = Arc::default();
        let routes = waiting.clone();
        tokio::spawn(async move {
            while let Some(Ok(reply)) = replies.next().await {
                let Some(id) = reply.properties.correlation_id() else { continue };
                let caller = routes.lock().unwrap_or_else(|p| p.into_inner()).remove(id.as_str());
                if let Some(caller) = caller {
                    let _ = caller.send(reply.data);
                }
            }
            // The connection is gone: every waiting caller sends again.
            routes.lock().unwrap_or_else(|p| p.into_inner()).clear();
        });
        Ok(Link { _conn: conn, channel, waiting })
    }

    fn connected(&self) -> bool {
        self.channel.status().connected()
    }
}

/// Sends requests to one queue and waits for their replies.
pub struct RpcClient {
    url: String,
    queue: String,
    link: tokio::sync::Mutex<Option<Arc<Link>>>,
    next_id: AtomicU64,
    /// Distinguishes this caller's ids in a server's logs.
    caller: String,
}

impl RpcClient {
    /// Connects (failing at once if the broker cannot be reached) and
    /// declares `queue`.
    pub async fn connect(url: &str, queue: &str) -> Result<RpcClient> {
        let client = RpcClient {
            url: with_heartbeat(url),
            queue: queue.to_string(),
            link: tokio::sync::Mutex::new(None),
            next_id: AtomicU64::new(0),
            caller: format!("{:08x}", rand::random::<u32>()),
        };
        client.link().await?;
        Ok(client)
    }

    async fn link(&self) -> Result<Arc<Link>> {
        let mut slot = self.link.lock().await;
        match slot.as_ref() {
            Some(link) if link.connected() => Ok(link.clone()),
            _ => {
                let link = Arc::new(Link::open(&self.url, &self.queue).await?);
                *slot = Some(link.clone());
                Ok(link)
            }
        }
    }

    /// Sends `body` and returns the reply; sends it again on a new
    /// connection if the broker drops this one, and gives up after
    /// [`REQUEST_TTL`].
    pub async fn call(&self, body: &[u8]) -> Result<Vec<u8>> {
        let deadline = tokio::time::Instant::now() + REQUEST_TTL;
        let id = format!("{}-{}", self.caller, self.next_id.fetch_add(1, Ordering::Relaxed));
        let mut pause = Duration::from_millis(200);
        loop {
            let attempt = async {
                let link = self.link().await?;
                let (tx, rx) = oneshot::channel();
                link.waiting.lock().unwrap_or_else(|p| p.into_inner()).insert(id.clone(), tx);
                let props = BasicProperties::default().with_reply_to(REPLY_TO.into()).with_correlation_id(id.as_str().into());
                let sent =
                    link.channel.basic_publish("".into(), self.queue.as_str().into(), BasicPublishOptions::default(), body, props).await;
                if let Err(e) = sent {
                    link.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                    return Err(err("sending a request", e));
                }
                // Dropped sender: the connection went away before the reply.
                rx.await.map_err(|_| Error::Queue("RabbitMQ connection lost while waiting for a reply".into()))
            };
            match tokio::time::timeout_at(deadline, attempt).await {
                Ok(Ok(reply)) => return Ok(reply),
                Ok(Err(e)) if tokio::time::Instant::now() + pause < deadline => {
                    tracing::warn!(error = %e, queue = self.queue, "request failed; sending it again");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(5));
                }
                Ok(Err(e)) => return Err(e),
                Err(_) => {
                    if let Some(link) = self.link.lock().await.as_ref() {
                        link.waiting.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
                    }
                    return Err(Error::Queue(format!(
                        "no reply on {} within {} s: is a server consuming it?",
                        self.queue,
                        REQUEST_TTL.as_secs()
                    )));
                }
            }
        }
    }
}

/// Answers requests from `queue` with `answer`, up to `prefetch` at once,
/// until `stop` turns true; reconnects when the connection is lost.
pub async fn serve<F, Fut>(url: &str, queue: &str, prefetch: u16, answer: F, stop: watch::Receiver<bool>)
where
    F: Fn(Vec<u8>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<u8>> + Send + 'static,
{
    let url = with_heartbeat(url);
    let answer = Arc::new(answer);
    let connect = || async {
        let (conn, channel) = open(&url).await?;
        declare(&channel, queue).await?;
        channel.basic_qos(prefetch.max(1), BasicQosOptions::default()).await.map_err(|e| err("setting prefetch", e))?;
        let requests = channel
            .basic_consume(queue.into(), "".into(), BasicConsumeOptions::default(), FieldTable::default())
            .await
            .map_err(|e| err(&format!("consuming {queue}"), e))?;
        Ok::<_, Error>((conn, channel, requests))
    };
    let serve = |(_conn, channel, mut requests): (Connection, Channel, lapin::Consumer), mut stop: watch::Receiver<bool>| {
        let answer = answer.clone();
        async move {
            loop {
                let next = tokio::select! {
                    next = requests.next() => next,
                    _ = stop.changed() => None,
                };
                let Some(Ok(request)) = next else { break };
                let (answer, channel) = (answer.clone(), channel.clone());
                tokio::spawn(async move {
                    let (Some(reply_to), Some(id)) = (request.properties.reply_to().clone(), request.properties.correlation_id().clone())
                    else {
                        tracing::warn!("a request without reply-to or correlation id: dropped");
                        let _ = request.acker.ack(BasicAckOptions::default()).await;
                        return;
                    };
                    let reply = answer(request.data).await;
                    let props = BasicProperties::default().with_correlation_id(id);
                    let sent = channel.basic_publish("".into(), reply_to, BasicPublishOptions::default(), &reply, props).await;
                    // Unacknowledged, the request goes to another server when this connection closes.
                    match sent {
                        Ok(_) => {
                            let _ = request.acker.ack(BasicAckOptions::default()).await;
                        }
                        Err(e) => tracing::warn!(error = %e, "could not send a reply"),
                    }
                });
            }
        }
    };
    super::consume_reconnecting(queue, stop, connect, serve).await;
}
