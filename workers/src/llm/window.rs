//! How many calls one endpoint gets at once: a window that adapts to the
//! endpoint as TCP's congestion window does (AIMD), within the client's
//! concurrency as its ceiling.
//!
//! It starts at 2 and doubles per round of answers (slow start: +1 per
//! answer) until the endpoint first pushes back; from then on it grows by
//! one per round (+1/window per answer) and halves on push-back: a 429 or
//! a 5xx answer. Calls that were already in flight when the window halved
//! do not halve it again, so one burst of refusals counts once. Waiting
//! for room is measured, so a run can tell a slow endpoint from a full one.
//!
//! Rising latency is not read as push-back: a model's latency grows with
//! its replies' length, which is not congestion.

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
    /// if this halved the window.
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
    /// 429 or 5xx: too much.
    PushedBack,
    /// Anything else (a refused request, a broken connection): says nothing.
    Neutral,
}

const START: f64 = 2.0;

impl Window {
    pub fn new(ceiling: usize, room: Arc<Notify>) -> Window {
        let ceiling = ceiling.max(1);
        let state = State { limit: START.min(ceiling as f64), threshold: f64::INFINITY, in_flight: 0, generation: 0, peak: 0 };
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
                s.limit = (s.limit / 2.0).max(1.0);
                s.threshold = s.limit;
                s.generation += 1;
                true
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
    }
}
