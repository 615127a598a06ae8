//! The `Queue` contract, run against every implementation: the in-process
//! queue and RabbitMQ (a vhost of its own on the machine's broker). The
//! worker loop relies on each of these behaviours, so a backend that fails
//! one here would lose or double work there.

use std::time::Duration;

use some_schemas::JobKind;
use some_tests::Vhost;
use some_workers::queue::{DeadLetter, Deliveries, Delivery, MemoryQueue, Queue, RabbitQueue};

/// The delivery limit every backend is opened with here.
const LIMIT: u32 = 2;

/// The next delivery, or a failure naming `what` after a while.
async fn next(c: &mut Box<dyn Deliveries>, what: &str) -> Delivery {
    match tokio::time::timeout(Duration::from_secs(20), c.next()).await {
        Ok(Some(Ok(d))) => d,
        Ok(Some(Err(e))) => panic!("{what}: {e}"),
        Ok(None) => panic!("{what}: the consumer stopped"),
        Err(_) => panic!("{what}: nothing delivered in 20 s"),
    }
}

/// The queue's dead letters once there are some (a broker moves them
/// asynchronously), or none after 5 s.
async fn dead_letters_arrive(q: &dyn Queue, kind: JobKind) -> Vec<DeadLetter> {
    for _ in 0..100 {
        let dead = q.dead_letters(kind).await.unwrap();
        if !dead.is_empty() {
            return dead;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Vec::new()
}

/// Polls `depth` until it reads `want` (a broker's count may lag a settle).
async fn depth_settles(q: &dyn Queue, kind: JobKind, want: u64) {
    for _ in 0..100 {
        if q.depth(kind).await.unwrap() == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("depth of {kind:?} stayed at {} (expected {want})", q.depth(kind).await.unwrap());
}

/// Published messages wait, come in order, and an ack removes them.
async fn published_messages_are_delivered_once_acknowledged(q: &dyn Queue) {
    let kind = JobKind::Episode;
    for body in ["a", "b", "c"] {
        q.publish(kind, body.as_bytes().to_vec()).await.unwrap();
    }
    depth_settles(q, kind, 3).await;
    let mut c = q.consume(kind, 3).await.unwrap();
    for body in ["a", "b", "c"] {
        let d = next(&mut c, "a published message").await;
        assert_eq!((d.body.as_slice(), d.delivery_count, d.limit), (body.as_bytes(), 0, LIMIT));
        assert!(!d.is_last_try());
        d.ack().await.unwrap();
    }
    depth_settles(q, kind, 0).await;
    assert!(q.dead_letters(kind).await.unwrap().is_empty());
}

/// A delivery dropped without being settled is delivered again.
async fn an_unsettled_delivery_comes_back(q: &dyn Queue) {
    let kind = JobKind::Judge;
    q.publish(kind, b"dropped".to_vec()).await.unwrap();
    let mut c = q.consume(kind, 1).await.unwrap();
    drop(next(&mut c, "the first delivery").await);
    let again = next(&mut c, "the dropped delivery, again").await;
    assert_eq!(again.body, b"dropped");
    again.ack().await.unwrap();
    depth_settles(q, kind, 0).await;
}

/// Retries count deliveries; the retry of the last allowed one
/// dead-letters the message, with a reason, and it is not delivered again.
async fn retries_past_the_limit_dead_letter(q: &dyn Queue) {
    let kind = JobKind::Ingest;
    q.publish(kind, b"flaky".to_vec()).await.unwrap();
    let mut c = q.consume(kind, 1).await.unwrap();
    for count in 0..=LIMIT {
        let d = next(&mut c, "a retried delivery").await;
        assert_eq!((d.body.as_slice(), d.delivery_count), (b"flaky".as_slice(), count));
        assert_eq!(d.is_last_try(), count == LIMIT);
        d.retry().await.unwrap();
    }
    let dead = dead_letters_arrive(q, kind).await;
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].body, b"flaky");
    assert!(!dead[0].reason.is_empty());
    depth_settles(q, kind, 0).await;
}

/// A message dead-lettered by its consumer keeps the consumer's reason.
async fn a_dead_letter_keeps_its_reason(q: &dyn Queue) {
    let kind = JobKind::Embed;
    q.publish(kind, b"poison".to_vec()).await.unwrap();
    let mut c = q.consume(kind, 1).await.unwrap();
    next(&mut c, "the poison message").await.dead_letter("undecodable: line 1").await.unwrap();
    let dead = q.dead_letters(kind).await.unwrap();
    assert_eq!(
        dead.iter().map(|d| (d.body.as_slice(), d.reason.as_str())).collect::<Vec<_>>(),
        [(b"poison".as_slice(), "undecodable: line 1")]
    );
    depth_settles(q, kind, 0).await;
}

/// A deferred delivery comes back without counting toward the limit, as
/// often as it is deferred (past the limit), and says it was delivered
/// before; the deliveries that count go on from where they were, and the
/// retry of the last allowed one dead-letters.
async fn deferred_deliveries_do_not_count(q: &dyn Queue) {
    let kind = JobKind::Sim;
    q.publish(kind, b"waiting".to_vec()).await.unwrap();
    let mut c = q.consume(kind, 1).await.unwrap();
    let first = next(&mut c, "the first delivery").await;
    assert!(!first.redelivered());
    first.defer().await.unwrap();
    let again = next(&mut c, "the deferred first delivery").await;
    assert_eq!((again.body.as_slice(), again.delivery_count, again.deferred), (b"waiting".as_slice(), 0, 1));
    assert!(again.redelivered(), "a deferred delivery was delivered before");
    again.retry().await.unwrap();
    for deferred in 1..=LIMIT + 2 {
        let d = next(&mut c, "a deferred delivery").await;
        assert_eq!((d.body.as_slice(), d.delivery_count, d.deferred), (b"waiting".as_slice(), 1, deferred));
        assert!(d.redelivered() && !d.is_last_try());
        d.defer().await.unwrap();
    }
    assert!(q.dead_letters(kind).await.unwrap().is_empty(), "deferrals past the limit dead-lettered the message");
    for count in 1..=LIMIT {
        let d = next(&mut c, "a retried delivery after deferrals").await;
        assert_eq!((d.body.as_slice(), d.delivery_count, d.deferred), (b"waiting".as_slice(), count, LIMIT + 3));
        assert_eq!(d.is_last_try(), count == LIMIT);
        d.retry().await.unwrap();
    }
    let dead = dead_letters_arrive(q, kind).await;
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].body, b"waiting");
    depth_settles(q, kind, 0).await;
}

/// Every case, on a fresh queue from `open`.
async fn conforms<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Box<dyn Queue>>,
{
    published_messages_are_delivered_once_acknowledged(open().await.as_ref()).await;
    an_unsettled_delivery_comes_back(open().await.as_ref()).await;
    retries_past_the_limit_dead_letter(open().await.as_ref()).await;
    a_dead_letter_keeps_its_reason(open().await.as_ref()).await;
    deferred_deliveries_do_not_count(open().await.as_ref()).await;
}

#[tokio::test]
async fn the_in_process_queue_keeps_the_queue_contract() {
    conforms(|| async { Box::new(MemoryQueue::new(LIMIT)) as Box<dyn Queue> }).await;
}

#[tokio::test]
async fn rabbitmq_keeps_the_queue_contract() {
    let vhost = Vhost::create();
    let url = vhost.url();
    // Each case uses job kinds the others do not, so one vhost serves all.
    conforms(|| async { Box::new(RabbitQueue::connect(&url, LIMIT).await.unwrap()) as Box<dyn Queue> }).await;
}
