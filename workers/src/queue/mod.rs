//! Job queues: RabbitMQ for many machines, an in-process queue for the
//! embedded default, with the same semantics so one worker loop serves both.
//!
//! - Publishing returns once the broker has the message durably (publisher
//!   confirms; the in-process queue has it when the call returns).
//! - A delivery is acknowledged only after its results are committed to the
//!   lake. A delivery that is neither acknowledged nor settled (its worker
//!   died, hung past the heartbeat, or dropped it) is delivered again.
//! - [`Delivery::retry`] gives it back for another try; once a message has
//!   been delivered more than the delivery limit, or is
//!   [`Delivery::dead_letter`]ed, it goes to the kind's dead-letter queue.
//! - [`Delivery::defer`] gives it back for another try that does not count
//!   toward the limit (the worker defers a job that failed while the
//!   object store was down: the outage is not the job's fault); the next
//!   delivery still says it was delivered before.
//!
//! [`rpc`] is the other use of the broker: requests a caller waits on.

mod memory;
mod rabbit;
pub mod rpc;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use some_schemas::{JobKind, QueueLocation};
use tokio::sync::watch;

pub use memory::MemoryQueue;
pub use rabbit::RabbitQueue;

use crate::error::Result;

/// How often a message may be delivered before it is dead-lettered, unless
/// `SOME_DELIVERY_LIMIT` says otherwise (see [`delivery_limit`]).
pub const DELIVERY_LIMIT: u32 = 5;

/// The delivery limit the queues are opened with: `SOME_DELIVERY_LIMIT`, else
/// [`DELIVERY_LIMIT`]. Every process on one broker must use the same one:
/// RabbitMQ refuses to declare a queue again with another limit.
pub fn delivery_limit() -> u32 {
    std::env::var("SOME_DELIVERY_LIMIT").ok().and_then(|v| v.parse().ok()).unwrap_or(DELIVERY_LIMIT)
}

/// A queue of jobs, by kind.
#[async_trait::async_trait]
pub trait Queue: Send + Sync {
    /// Publishes durably (returns once confirmed).
    async fn publish(&self, kind: JobKind, body: Vec<u8>) -> Result<()>;
    /// Starts consuming `kind`, with at most `prefetch` deliveries
    /// unsettled at once.
    async fn consume(&self, kind: JobKind, prefetch: u16) -> Result<Box<dyn Deliveries>>;
    /// Messages waiting (not delivered) per queue, for status and scaling.
    async fn depth(&self, kind: JobKind) -> Result<u64>;
    /// Dead-lettered messages of a kind, with the reason when known.
    async fn dead_letters(&self, kind: JobKind) -> Result<Vec<DeadLetter>>;
}

/// A consumer's stream of deliveries.
#[async_trait::async_trait]
pub trait Deliveries: Send {
    /// The next delivery; `None` when the connection is gone (reconnect to
    /// go on: unsettled deliveries come back).
    async fn next(&mut self) -> Option<Result<Delivery>>;
}

/// How a delivery is settled.
#[async_trait::async_trait]
pub trait Settle: Send + Sync {
    async fn ack(&self) -> Result<()>;
    async fn retry(&self) -> Result<()>;
    /// Gives the message back for another try that does not count toward
    /// the delivery limit: the next delivery has the same `delivery_count`
    /// and one more `deferred`.
    async fn defer(&self) -> Result<()>;
    async fn dead_letter(&self, reason: &str) -> Result<()>;
}

/// One delivered message.
pub struct Delivery {
    pub body: Vec<u8>,
    /// Earlier deliveries of this message that count toward the limit (0
    /// the first time).
    pub delivery_count: u32,
    /// Earlier deliveries of this message that were deferred: they do not
    /// count toward the limit.
    pub deferred: u32,
    /// The queue's delivery limit.
    pub limit: u32,
    pub settle: Box<dyn Settle>,
}

impl Delivery {
    /// Whether a retry would dead-letter the message: the worker
    /// dead-letters it itself then, with the error.
    pub fn is_last_try(&self) -> bool {
        self.delivery_count >= self.limit
    }

    /// Whether the message was delivered before, counted or deferred (part
    /// of its work may be committed).
    pub fn redelivered(&self) -> bool {
        self.delivery_count > 0 || self.deferred > 0
    }

    pub async fn ack(&self) -> Result<()> {
        self.settle.ack().await
    }
    pub async fn retry(&self) -> Result<()> {
        self.settle.retry().await
    }
    pub async fn defer(&self) -> Result<()> {
        self.settle.defer().await
    }
    pub async fn dead_letter(&self, reason: &str) -> Result<()> {
        self.settle.dead_letter(reason).await
    }
}

/// A message that will not be delivered again.
#[derive(Debug, Clone, PartialEq)]
pub struct DeadLetter {
    pub body: Vec<u8>,
    pub reason: String,
}

/// Opens the queue at `location`: this process's in-process queue, or a
/// connection to the broker.
pub async fn open(location: &QueueLocation) -> Result<Arc<dyn Queue>> {
    Ok(match location {
        QueueLocation::Memory => Arc::new(MemoryQueue::new(delivery_limit())),
        QueueLocation::Amqp(url) => Arc::new(RabbitQueue::connect(url, delivery_limit()).await?),
    })
}

/// Consumes until `stop` turns true, reconnecting: `connect` opens a
/// consumer and `serve` takes its messages until the connection is lost
/// (or `stop`); a lost connection is opened again at once, a failed open
/// after a pause (200 ms, doubling to 5 s). Job workers and the RPC
/// servers both consume through it.
pub async fn consume_reconnecting<S, C, CF, F, FF>(what: &str, mut stop: watch::Receiver<bool>, mut connect: C, mut serve: F)
where
    C: FnMut() -> CF,
    CF: Future<Output = Result<S>>,
    F: FnMut(S, watch::Receiver<bool>) -> FF,
    FF: Future<Output = ()>,
{
    let mut pause = Duration::from_millis(200);
    while !*stop.borrow() {
        match connect().await {
            Ok(consumer) => {
                pause = Duration::from_millis(200);
                serve(consumer, stop.clone()).await;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot consume {what}; retrying");
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    _ = stop.changed() => {}
                }
                pause = (pause * 2).min(Duration::from_secs(5));
            }
        }
    }
}
