//! How many calls one endpoint gets at once: a window that adapts to the
//! endpoint as TCP's congestion window does (AIMD), within the client's
//! concurrency as its ceiling.
//!
//! It starts at 2 and doubles per round of answers (slow start: +1 per
//! answer) until the endpoint first pushes back; from then on it grows by
//! one per round (+1/window per answer) and halves on push-back: a 429 or
//! a 5xx answer, or an answer much slower than the endpoint has shown it
//! can be. Calls that were already in flight when the window halved do not
//! halve it again, so one burst of refusals counts once. Waiting for room
//! is measured, so a run can tell a slow endpoint from a full one.
//!
//! Slowness is measured per token, since a model's latency grows with its
//! reply's length: an answer of `t` completion tokens is expected in
//! `best × (t + 8)`, `best` being the fastest time per token-and-overhead
//! seen so far (8 tokens' worth stands for the fixed cost of a call), and
//! is slow when it takes more than twice that and at least a second more (so
//! an instant endpoint's jitter is never read as congestion). An overloaded
//! server (vLLM batching more sequences, a one-at-a-time server queueing)
//! answers each token later, which is the signal.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The window of one endpoint.
#[derive(Debug)]
pub struct Window {
    state: Mutex<State>,
    ceiling: usize,
    /// Signalled whenever a place frees (shared by a pool's windows).
    room: Arc<Notify>,
}

#[derive(Debug)]
struct State {
    limit: f64,
    /// Below it the window grows by one per answer (slow start).
    threshold: f64,
    in_flight: usize,
    /// Counts halvings; a call started before the latest one cannot halve again.
    generation: u64,
    peak: usize,
    /// The fastest milliseconds per (completion token + overhead) so far.
    best: Option<f64>,
}

/// A call's place in a window, handed back with its outcome by
/// [`Ticket::release`]; dropped unreleased (its call was cancelled), it
/// frees its place and says nothing.
#[derive(Debug)]
#[must_use = "a ticket holds its place until released or dropped"]
pub struct Ticket<'w> {
    window: &'w Window,
    generation: u64,
    released: bool,
}

impl Ticket<'_> {
    /// Frees the place and adapts the window to what the call found; true
    /// if this halved the window (took calls at once down).
    pub fn release(mut self, outcome: Outcome) -> bool {
        self.released = true;
        self.window.release(self.generation, outcome)
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.released {
            self.window.release(self.generation, Outcome::Neutral);
        }
    }
}

/// What an attempt's answer says about the endpoint's capacity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// An answer: there was room.
    Answered,
    /// 429 or 5xx, or an answer far slower than the endpoint can be: too much.
    PushedBack,
    /// Anything else (a refused request, a broken connection): says nothing.
    Neutral,
}

const START: f64 = 2.0;

/// Completion tokens' worth of a call's fixed cost (prompt, connection).
const OVERHEAD_TOKENS: f64 = 8.0;
/// An answer this many times slower than expected is push-back...
const SLOW_FACTOR: f64 = 2.0;
/// ...if it is also at least this much later than expected.
const SLOW_MARGIN_MS: f64 = 1000.0;

impl Window {
    pub fn new(ceiling: usize, room: Arc<Notify>) -> Window {
        let ceiling = ceiling.max(1);
        let state = State { limit: START.min(ceiling as f64), threshold: f64::INFINITY, in_flight: 0, generation: 0, peak: 0, best: None };
        Window { state: Mutex::new(state), ceiling, room }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Calls it allows at once now.
    pub fn limit(&self) -> usize {
        self.lock().allowed()
    }

    /// The largest window so far.
    pub fn peak(&self) -> usize {
        self.lock().peak
    }

    pub fn in_flight(&self) -> usize {
        self.lock().in_flight
    }

    /// A place if there is room now.
    pub fn try_take(&self) -> Option<Ticket<'_>> {
        let mut s = self.lock();
        if s.in_flight >= s.allowed() {
            return None;
        }
        s.in_flight += 1;
        s.peak = s.peak.max(s.allowed());
        Some(Ticket { window: self, generation: s.generation, released: false })
    }

    /// What an answer of `tokens` completion tokens in `latency` says:
    /// answered, or pushed back when it was slow (see the module's doc).
    /// Every answer also teaches the window how fast the endpoint can be.
    pub fn judge(&self, latency: Duration, tokens: u64) -> Outcome {
        let ms = latency.as_secs_f64() * 1000.0;
        let units = tokens as f64 + OVERHEAD_TOKENS;
        let mut s = self.lock();
        let best = *s.best.get_or_insert(ms / units);
        s.best = Some(best.min(ms / units));
        let expected = best * units;
        if ms > SLOW_FACTOR * expected && ms - expected >= SLOW_MARGIN_MS { Outcome::PushedBack } else { Outcome::Answered }
    }

    fn release(&self, generation: u64, outcome: Outcome) -> bool {
        let halved = self.adapt(generation, outcome);
        self.room.notify_waiters();
        halved
    }

    fn adapt(&self, generation: u64, outcome: Outcome) -> bool {
        let mut s = self.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        match outcome {
            Outcome::Answered => {
                let step = if s.limit < s.threshold { 1.0 } else { 1.0 / s.limit };
                s.limit = (s.limit + step).min(self.ceiling as f64);
                false
            }
            Outcome::PushedBack if generation == s.generation => {
                // At one call at once there is nothing to halve: the
                // growth only turns additive, and nothing is reported.
                let before = s.allowed();
                s.limit = (s.limit / 2.0).max(1.0);
                s.threshold = s.limit;
                s.generation += 1;
                s.allowed() < before
            }
            Outcome::PushedBack | Outcome::Neutral => false,
        }
    }
}

impl State {
    fn allowed(&self) -> usize {
        self.limit.floor() as usize
    }
}

/// Time spent waiting for room, summed over calls.
#[derive(Debug, Default)]
pub struct Waited(std::sync::atomic::AtomicU64);

impl Waited {
    pub fn add(&self, since: Instant) {
        self.0.fetch_add(since.elapsed().as_millis() as u64, std::sync::atomic::Ordering::Relaxed);
    }

    pub fn total(&self) -> Duration {
        Duration::from_millis(self.0.load(std::sync::atomic::Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take_all(w: &Window) -> Vec<Ticket<'_>> {
        std::iter::from_fn(|| w.try_take()).collect()
    }

    fn window(ceiling: usize) -> Window {
        Window::new(ceiling, Arc::new(Notify::new()))
    }

    #[test]
    fn slow_start_doubles_per_round_up_to_the_ceiling() {
        let w = window(20);
        let mut rounds = Vec::new();
        for _ in 0..6 {
            let tickets = take_all(&w);
            rounds.push(tickets.len());
            tickets.into_iter().for_each(|t| {
                t.release(Outcome::Answered);
            });
        }
        assert_eq!(rounds, [2, 4, 8, 16, 20, 20]);
        assert_eq!(w.peak(), 20);
    }

    #[test]
    fn one_burst_of_push_back_halves_once_then_growth_is_one_per_round() {
        let w = window(64);
        for _ in 0..3 {
            take_all(&w).into_iter().for_each(|t| {
                t.release(Outcome::Answered);
            });
        }
        assert_eq!(w.limit(), 16);
        let burst = take_all(&w);
        let halved: Vec<bool> = burst.into_iter().map(|t| t.release(Outcome::PushedBack)).collect();
        assert_eq!(halved.iter().filter(|h| **h).count(), 1, "16 refusals of one round halve once");
        assert_eq!(w.limit(), 8);
        let round = take_all(&w);
        assert_eq!(round.len(), 8);
        round.into_iter().for_each(|t| {
            t.release(Outcome::Answered);
        });
        assert_eq!(w.limit(), 8, "after push-back, about one more per round");
        take_all(&w).into_iter().for_each(|t| {
            t.release(Outcome::Answered);
        });
        assert_eq!(w.limit(), 9);
        let t = w.try_take().unwrap();
        assert!(!t.release(Outcome::Neutral));
        drop(w.try_take().unwrap());
        assert_eq!((w.limit(), w.in_flight()), (9, 0), "a neutral answer and a cancelled call free their place and change nothing");
        // Never below one.
        for _ in 0..10 {
            let t = w.try_take().unwrap();
            t.release(Outcome::PushedBack);
        }
        assert_eq!(w.limit(), 1);
        assert!(!w.try_take().unwrap().release(Outcome::PushedBack), "at one there is nothing to halve");
    }

    #[test]
    fn an_answer_far_slower_per_token_than_the_best_is_push_back_and_jitter_is_not() {
        let w = window(64);
        let ms = Duration::from_millis;
        // 100 tokens in 1.08 s: 10 ms per token-and-overhead.
        assert_eq!(w.judge(ms(1080), 100), Outcome::Answered);
        // A reply four times as long, in about four times the time: not slow.
        assert_eq!(w.judge(ms(4500), 400), Outcome::Answered);
        // The same reply at 2.5 times the expected time: slow.
        assert_eq!(w.judge(ms(2700), 100), Outcome::PushedBack);
        // An instant endpoint's jitter (1 ms, then 5 ms) is below the margin.
        let instant = window(64);
        assert_eq!(instant.judge(ms(1), 10), Outcome::Answered);
        assert_eq!(instant.judge(ms(5), 10), Outcome::Answered);
        // A slow answer halves the window like a 429.
        for _ in 0..3 {
            take_all(&w).into_iter().for_each(|t| {
                t.release(Outcome::Answered);
            });
        }
        let t = w.try_take().unwrap();
        assert!(t.release(w.judge(ms(3000), 100)));
        assert_eq!(w.limit(), 8);
    }
}
