//! RabbitMQ through lapin: durable quorum queues per job kind with a
//! delivery limit, persistent messages, publisher confirms, manual
//! acknowledgement, and a dead-letter exchange whose queues keep every
//! message that will not be delivered again, with the reason.
//!
//! A deferred delivery is settled by publishing a copy of the message and
//! acknowledging the original, so the broker's count of deliveries does not
//! grow; the copy carries the counted deliveries and the deferrals of the
//! message in headers of its own, and its consumer adds them to the
//! broker's count. If the acknowledgement is lost after the copy was
//! published, both are delivered (at least once, never lost: the handlers
//! find what the first of them committed).
//!
//! Connections fail (a broker restart, a network cut): publishing
//! reconnects and retries until its deadline; a consumer's stream ends, and
//! the worker loop consumes again, which reconnects. Unacknowledged
//! deliveries of a lost connection are requeued by the broker.

use std::time::Duration;

use lapin::options::{
    BasicAckOptions, BasicConsumeOptions, BasicGetOptions, BasicNackOptions, BasicPublishOptions, BasicQosOptions, ConfirmSelectOptions,
    ExchangeDeclareOptions, QueueBindOptions, QueueDeclareOptions,
};
use lapin::types::{AMQPValue, FieldTable, LongString, ShortString};
use lapin::{BasicProperties, Channel, Connection, ConnectionProperties, ExchangeKind};
use some_schemas::JobKind;
use tokio::sync::Mutex;

use super::{DeadLetter, Deliveries, Delivery, Queue, Settle};
use crate::error::{Error, Result};

/// The exchange dead letters are routed through (routing key: the queue).
const DLX: &str = "some.dlx";
/// The header a dead letter's reason travels in.
const REASON: &str = "x-some-reason";
/// The header a deferred copy carries its earlier counted deliveries in.
const COUNTED: &str = "x-some-counted";
/// The header a deferred copy carries its earlier deferrals in.
const DEFERRED: &str = "x-some-deferred";
/// How long publishing keeps trying through a lost connection.
const PUBLISH_DEADLINE: Duration = Duration::from_secs(120);

fn dead_queue(kind: JobKind) -> String {
    format!("{}.dead", kind.queue())
}

pub(super) fn err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Queue(format!("RabbitMQ {what}: {e}"))
}

/// A connection to RabbitMQ for publishing; consumers open their own.
pub struct RabbitQueue {
    url: String,
    limit: u32,
    publisher: Mutex<Option<(Connection, Channel)>>,
}

impl RabbitQueue {
    /// Connects and declares the topology (idempotent).
    pub async fn connect(url: &str, delivery_limit: u32) -> Result<RabbitQueue> {
        let queue = RabbitQueue { url: with_heartbeat(url), limit: delivery_limit, publisher: Mutex::new(None) };
        let (conn, channel) = queue.open_channel().await?;
        queue.declare(&channel).await?;
        *queue.publisher.lock().await = Some((conn, channel));
        Ok(queue)
    }

    async fn open_channel(&self) -> Result<(Connection, Channel)> {
        let conn = Connection::connect(&self.url, ConnectionProperties::default())
            .await
            .map_err(|e| err(&format!("connecting to {}", redact(&self.url)), e))?;
        let channel = conn.create_channel().await.map_err(|e| err("opening a channel", e))?;
        Ok((conn, channel))
    }

    async fn declare(&self, channel: &Channel) -> Result<()> {
        let durable = ExchangeDeclareOptions { durable: true, ..Default::default() };
        channel
            .exchange_declare(DLX.into(), ExchangeKind::Direct, durable, FieldTable::default())
            .await
            .map_err(|e| err("declaring the dead-letter exchange", e))?;
        for kind in JobKind::ALL {
            let queue = kind.queue();
            let mut quorum = FieldTable::default();
            quorum.insert("x-queue-type".into(), AMQPValue::LongString("quorum".into()));
            channel
                .queue_declare(dead_queue(kind).as_str().into(), QueueDeclareOptions::durable(), quorum.clone())
                .await
                .map_err(|e| err(&format!("declaring {}", dead_queue(kind)), e))?;
            channel
                .queue_bind(dead_queue(kind).as_str().into(), DLX.into(), queue.into(), QueueBindOptions::default(), FieldTable::default())
                .await
                .map_err(|e| err("binding the dead-letter queue", e))?;
            let mut args = quorum;
            args.insert("x-delivery-limit".into(), AMQPValue::LongInt(self.limit as i32));
            args.insert("x-dead-letter-exchange".into(), AMQPValue::LongString(DLX.into()));
            args.insert("x-dead-letter-routing-key".into(), AMQPValue::LongString(queue.into()));
            channel
                .queue_declare(queue.into(), QueueDeclareOptions::durable(), args)
                .await
                .map_err(|e| err(&format!("declaring {queue}"), e))?;
        }
        Ok(())
    }

    /// One confirmed publish on the shared channel, reconnecting once if it
    /// is gone.
    async fn publish_to(&self, exchange: &str, routing_key: &str, body: &[u8], headers: FieldTable) -> Result<()> {
        let started = std::time::Instant::now();
        let mut delay = Duration::from_millis(200);
        loop {
            let attempt = async {
                let mut slot = self.publisher.lock().await;
                if slot.as_ref().is_none_or(|(c, ch)| !c.status().connected() || !ch.status().connected()) {
                    let (conn, channel) = self.open_channel().await?;
                    self.declare(&channel).await?;
                    *slot = Some((conn, channel));
                }
                let (_, channel) = slot.as_ref().expect("just connected");
                if !channel.status().confirm() {
                    channel.confirm_select(ConfirmSelectOptions::default()).await.map_err(|e| err("enabling confirms", e))?;
                }
                let props = BasicProperties::default().with_delivery_mode(2).with_headers(headers.clone());
                let confirm = channel.basic_publish(exchange.into(), routing_key.into(), BasicPublishOptions::default(), body, props).await;
                let result = match confirm {
                    Ok(pending) => pending
                        .await
                        .map_err(|e| err("awaiting the confirm", e))
                        .and_then(|c| if c.is_ack() { Ok(()) } else { Err(Error::Queue("RabbitMQ refused the message (nack)".into())) }),
                    Err(e) => Err(err("publishing", e)),
                };
                if result.is_err() {
                    *slot = None;
                }
                result
            };
            match attempt.await {
                Ok(()) => return Ok(()),
                Err(e) if started.elapsed() < PUBLISH_DEADLINE => {
                    tracing::warn!(error = %e, "publish failed; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Heartbeats let the broker notice a hung worker and requeue its work.
pub(super) fn with_heartbeat(url: &str) -> String {
    if url.contains('?') { url.to_string() } else { format!("{url}?heartbeat=10") }
}

/// The URL without its password, for messages.
pub(super) fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            let user = creds.split(':').next().unwrap_or_default();
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}

fn header<'a>(headers: &'a Option<FieldTable>, name: &str) -> Option<&'a AMQPValue> {
    headers.as_ref()?.inner().get(&ShortString::from(name))
}

fn as_text(v: &AMQPValue) -> Option<String> {
    match v {
        AMQPValue::LongString(s) => Some(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        AMQPValue::ShortString(s) => Some(s.as_str().to_string()),
        _ => None,
    }
}

fn as_count(v: &AMQPValue) -> Option<u32> {
    match v {
        AMQPValue::LongInt(n) => u32::try_from(*n).ok(),
        AMQPValue::LongLongInt(n) => u32::try_from(*n).ok(),
        AMQPValue::LongUInt(n) => Some(*n),
        AMQPValue::ShortInt(n) => u32::try_from(*n).ok(),
        _ => None,
    }
}

#[async_trait::async_trait]
impl Queue for RabbitQueue {
    async fn publish(&self, kind: JobKind, body: Vec<u8>) -> Result<()> {
        self.publish_to("", kind.queue(), &body, FieldTable::default()).await
    }

    async fn consume(&self, kind: JobKind, prefetch: u16) -> Result<Box<dyn Deliveries>> {
        let (conn, channel) = self.open_channel().await?;
        self.declare(&channel).await?;
        channel.basic_qos(prefetch.max(1), BasicQosOptions::default()).await.map_err(|e| err("setting prefetch", e))?;
        let consumer = channel
            .basic_consume(kind.queue().into(), "".into(), BasicConsumeOptions::default(), FieldTable::default())
            .await
            .map_err(|e| err(&format!("consuming {}", kind.queue()), e))?;
        // Dead-lettering with a reason publishes to the exchange, and
        // deferring publishes a copy; they need a confirming channel of
        // their own.
        let publisher = RabbitQueue { url: self.url.clone(), limit: self.limit, publisher: Mutex::new(None) };
        Ok(Box::new(RabbitDeliveries { _conn: conn, _channel: channel, consumer, kind, publisher: std::sync::Arc::new(publisher) }))
    }

    async fn depth(&self, kind: JobKind) -> Result<u64> {
        let (conn, channel) = self.open_channel().await?;
        let passive = QueueDeclareOptions { passive: true, ..Default::default() };
        let q = channel
            .queue_declare(kind.queue().into(), passive, FieldTable::default())
            .await
            .map_err(|e| err("reading the queue depth", e))?;
        let _ = conn.close(200, "depth read".into()).await;
        Ok(u64::from(q.message_count()))
    }

    /// Reads the dead-letter queue without consuming it: every message is
    /// fetched unacknowledged and returns to the queue when the channel
    /// closes.
    async fn dead_letters(&self, kind: JobKind) -> Result<Vec<DeadLetter>> {
        let (conn, channel) = self.open_channel().await?;
        let mut out = Vec::new();
        while let Some(msg) = channel
            .basic_get(dead_queue(kind).as_str().into(), BasicGetOptions::default())
            .await
            .map_err(|e| err("reading dead letters", e))?
        {
            let headers = msg.delivery.properties.headers();
            let reason = header(headers, REASON)
                .and_then(as_text)
                .or_else(|| header(headers, "x-first-death-reason").and_then(as_text))
                .unwrap_or_else(|| "unknown".into());
            out.push(DeadLetter { body: msg.delivery.data.clone(), reason });
            if msg.message_count == 0 {
                break;
            }
        }
        let _ = conn.close(200, "dead letters read".into()).await;
        Ok(out)
    }
}

struct RabbitDeliveries {
    _conn: Connection,
    _channel: Channel,
    consumer: lapin::Consumer,
    kind: JobKind,
    publisher: std::sync::Arc<RabbitQueue>,
}

#[async_trait::async_trait]
impl Deliveries for RabbitDeliveries {
    async fn next(&mut self) -> Option<Result<Delivery>> {
        use futures::StreamExt;
        match self.consumer.next().await? {
            Err(e) => {
                tracing::warn!(error = %e, queue = self.kind.queue(), "consumer stopped");
                None
            }
            Ok(delivery) => {
                // Quorum queues count earlier deliveries in this header; a
                // deferred copy adds those of the messages it copies.
                let headers = delivery.properties.headers();
                let broker_count = header(headers, "x-delivery-count").and_then(as_count).unwrap_or(u32::from(delivery.redelivered));
                let delivery_count = broker_count.saturating_add(header(headers, COUNTED).and_then(as_count).unwrap_or(0));
                let deferred = header(headers, DEFERRED).and_then(as_count).unwrap_or(0);
                let body = delivery.data.clone();
                let limit = self.publisher.limit;
                let settle = RabbitSettle {
                    acker: delivery.acker,
                    body: body.clone(),
                    kind: self.kind,
                    delivery_count,
                    deferred,
                    publisher: self.publisher.clone(),
                };
                Some(Ok(Delivery { body, delivery_count, deferred, limit, settle: Box::new(settle) }))
            }
        }
    }
}

struct RabbitSettle {
    acker: lapin::Acker,
    body: Vec<u8>,
    kind: JobKind,
    /// The delivery's counts, as [`Delivery`] has them.
    delivery_count: u32,
    deferred: u32,
    publisher: std::sync::Arc<RabbitQueue>,
}

#[async_trait::async_trait]
impl Settle for RabbitSettle {
    async fn ack(&self) -> Result<()> {
        self.acker.ack(BasicAckOptions::default()).await.map(|_| ()).map_err(|e| err("acknowledging", e))
    }

    /// Requeues; the retry of the last allowed delivery dead-letters. The
    /// broker does that itself for a message it counted whole, not for a
    /// deferred copy (it counts the copy's deliveries only).
    async fn retry(&self) -> Result<()> {
        let limit = self.publisher.limit;
        if self.delivery_count >= limit {
            return self.dead_letter(&format!("delivered {} times, over the limit of {limit}", self.delivery_count + 1)).await;
        }
        let requeue = BasicNackOptions { requeue: true, ..Default::default() };
        self.acker.nack(requeue).await.map(|_| ()).map_err(|e| err("requeueing", e))
    }

    /// Publishes a copy that carries the counts, then acknowledges this
    /// delivery.
    async fn defer(&self) -> Result<()> {
        let count = |n: u32| AMQPValue::LongInt(i32::try_from(n).unwrap_or(i32::MAX));
        let mut headers = FieldTable::default();
        headers.insert(COUNTED.into(), count(self.delivery_count));
        headers.insert(DEFERRED.into(), count(self.deferred.saturating_add(1)));
        self.publisher.publish_to("", self.kind.queue(), &self.body, headers).await?;
        self.ack().await
    }

    /// Publishes the message to the dead-letter queue with the reason, then
    /// acknowledges it (if the ack is lost, the redelivered copy is
    /// dead-lettered again: at least once, never lost).
    async fn dead_letter(&self, reason: &str) -> Result<()> {
        let mut headers = FieldTable::default();
        headers.insert(REASON.into(), AMQPValue::LongString(LongString::from(reason.to_string())));
        self.publisher.publish_to(DLX, self.kind.queue(), &self.body, headers).await?;
        self.ack().await
    }
}

/// A delivery dropped unsettled (its job's task panicked or was cancelled)
/// goes back to the queue now, as on the in-process queue, rather than
/// holding a prefetch slot until the channel closes.
impl Drop for RabbitSettle {
    fn drop(&mut self) {
        if !self.acker.usable() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let acker = self.acker.clone();
            runtime.spawn(async move {
                let _ = acker.nack(BasicNackOptions { requeue: true, ..Default::default() }).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(super::redact("amqp://guest:secret@127.0.0.1:5672/%2f"), "amqp://guest:***@127.0.0.1:5672/%2f");
        assert_eq!(super::redact("amqp://127.0.0.1"), "amqp://127.0.0.1");
    }
}
