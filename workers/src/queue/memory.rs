//! The in-process queue of the embedded default: the broker's semantics
//! (prefetch, requeue of unsettled deliveries, delivery limit, dead letters,
//! deferral) without a broker.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use some_schemas::JobKind;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::{DeadLetter, Deliveries, Delivery, Queue, Settle};
use crate::error::{Error, Result};

struct Message {
    body: Vec<u8>,
    /// Deliveries that count toward the limit.
    deliveries: u32,
    /// Deliveries that were deferred.
    deferred: u32,
}

#[derive(Default)]
struct State {
    ready: HashMap<JobKind, VecDeque<Message>>,
    unsettled: HashMap<JobKind, usize>,
    dead: HashMap<JobKind, Vec<DeadLetter>>,
}

struct Shared {
    state: Mutex<State>,
    /// Woken on every publish, requeue and settle.
    changed: Notify,
    limit: u32,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data (every
        // change is one statement), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An in-process queue. Clones share the queue.
#[derive(Clone)]
pub struct MemoryQueue {
    shared: Arc<Shared>,
}

impl MemoryQueue {
    pub fn new(delivery_limit: u32) -> MemoryQueue {
        MemoryQueue { shared: Arc::new(Shared { state: Mutex::new(State::default()), changed: Notify::new(), limit: delivery_limit }) }
    }

    /// Waits until no message of `kind` is waiting or being worked on.
    pub async fn drained(&self, kind: JobKind) {
        loop {
            let notified = self.shared.changed.notified();
            {
                let state = self.shared.lock();
                let waiting = state.ready.get(&kind).map_or(0, VecDeque::len);
                if waiting == 0 && state.unsettled.get(&kind).copied().unwrap_or(0) == 0 {
                    return;
                }
            }
            notified.await;
        }
    }
}

#[async_trait::async_trait]
impl Queue for MemoryQueue {
    async fn publish(&self, kind: JobKind, body: Vec<u8>) -> Result<()> {
        self.shared.lock().ready.entry(kind).or_default().push_back(Message { body, deliveries: 0, deferred: 0 });
        self.shared.changed.notify_waiters();
        Ok(())
    }

    async fn consume(&self, kind: JobKind, prefetch: u16) -> Result<Box<dyn Deliveries>> {
        Ok(Box::new(Consumer { shared: self.shared.clone(), kind, permits: Arc::new(Semaphore::new(usize::from(prefetch.max(1)))) }))
    }

    async fn depth(&self, kind: JobKind) -> Result<u64> {
        Ok(self.shared.lock().ready.get(&kind).map_or(0, |q| q.len() as u64))
    }

    async fn dead_letters(&self, kind: JobKind) -> Result<Vec<DeadLetter>> {
        Ok(self.shared.lock().dead.get(&kind).cloned().unwrap_or_default())
    }
}

struct Consumer {
    shared: Arc<Shared>,
    kind: JobKind,
    permits: Arc<Semaphore>,
}

#[async_trait::async_trait]
impl Deliveries for Consumer {
    async fn next(&mut self) -> Option<Result<Delivery>> {
        let permit = match self.permits.clone().acquire_owned().await {
            Ok(p) => p,
            Err(e) => return Some(Err(Error::Queue(e.to_string()))),
        };
        loop {
            let notified = self.shared.changed.notified();
            {
                let mut state = self.shared.lock();
                if let Some(mut message) = state.ready.get_mut(&self.kind).and_then(VecDeque::pop_front) {
                    *state.unsettled.entry(self.kind).or_default() += 1;
                    let (delivery_count, deferred) = (message.deliveries, message.deferred);
                    message.deliveries += 1;
                    let body = message.body.clone();
                    let settle = MemorySettle { shared: self.shared.clone(), kind: self.kind, held: Mutex::new(Some((message, permit))) };
                    let limit = self.shared.limit;
                    return Some(Ok(Delivery { body, delivery_count, deferred, limit, settle: Box::new(settle) }));
                }
            }
            notified.await;
        }
    }
}

/// Settles one delivery; dropping it unsettled requeues it, as a broker
/// does when a consumer's channel closes.
struct MemorySettle {
    shared: Arc<Shared>,
    kind: JobKind,
    /// The message and its prefetch slot, both given up when settled.
    held: Mutex<Option<(Message, OwnedSemaphorePermit)>>,
}

enum Outcome {
    Done,
    Requeue,
    /// Requeued without counting the delivery.
    Defer,
    Dead(String),
}

impl MemorySettle {
    fn settle(&self, outcome: Outcome) {
        let Some((message, permit)) = self.held.lock().unwrap_or_else(|p| p.into_inner()).take() else { return };
        drop(permit);
        let mut state = self.shared.lock();
        if let Some(n) = state.unsettled.get_mut(&self.kind) {
            *n = n.saturating_sub(1);
        }
        let outcome = match outcome {
            Outcome::Requeue if message.deliveries > self.shared.limit => {
                Outcome::Dead(format!("delivered {} times, over the limit of {}", message.deliveries, self.shared.limit))
            }
            other => other,
        };
        match outcome {
            Outcome::Done => {}
            Outcome::Requeue => state.ready.entry(self.kind).or_default().push_back(message),
            Outcome::Defer => {
                let message = Message { deliveries: message.deliveries - 1, deferred: message.deferred + 1, ..message };
                state.ready.entry(self.kind).or_default().push_back(message);
            }
            Outcome::Dead(reason) => state.dead.entry(self.kind).or_default().push(DeadLetter { body: message.body, reason }),
        }
        drop(state);
        self.shared.changed.notify_waiters();
    }
}

impl Drop for MemorySettle {
    fn drop(&mut self) {
        self.settle(Outcome::Requeue);
    }
}

#[async_trait::async_trait]
impl Settle for MemorySettle {
    async fn ack(&self) -> Result<()> {
        self.settle(Outcome::Done);
        Ok(())
    }
    async fn retry(&self) -> Result<()> {
        self.settle(Outcome::Requeue);
        Ok(())
    }
    async fn defer(&self) -> Result<()> {
        self.settle(Outcome::Defer);
        Ok(())
    }
    async fn dead_letter(&self, reason: &str) -> Result<()> {
        self.settle(Outcome::Dead(reason.to_string()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn unsettled_deliveries_come_back_and_the_limit_dead_letters() {
        let q = MemoryQueue::new(2);
        let kind = JobKind::Episode;
        q.publish(kind, b"a".to_vec()).await.unwrap();
        q.publish(kind, b"b".to_vec()).await.unwrap();
        let mut c = q.consume(kind, 1).await.unwrap();
        let a = c.next().await.unwrap().unwrap();
        assert_eq!((a.body.as_slice(), a.delivery_count), (b"a".as_slice(), 0));
        // Prefetch 1: nothing more until `a` is settled; dropping it requeues.
        drop(a);
        let b = c.next().await.unwrap().unwrap();
        assert_eq!(b.body, b"b");
        b.ack().await.unwrap();
        for count in 1..=2 {
            let a = c.next().await.unwrap().unwrap();
            assert_eq!((a.body.as_slice(), a.delivery_count), (b"a".as_slice(), count));
            assert_eq!(a.is_last_try(), count == 2);
            a.retry().await.unwrap();
        }
        // Third delivery was the last allowed: its retry dead-letters it.
        assert_eq!(q.depth(kind).await.unwrap(), 0);
        let dead = q.dead_letters(kind).await.unwrap();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].reason, "delivered 3 times, over the limit of 2");
        q.drained(kind).await;

        q.publish(kind, b"poison".to_vec()).await.unwrap();
        let p = c.next().await.unwrap().unwrap();
        p.dead_letter("undecodable").await.unwrap();
        assert_eq!(q.dead_letters(kind).await.unwrap()[1], DeadLetter { body: b"poison".to_vec(), reason: "undecodable".into() });
    }
}
