//! Threads kept for the length of one call and woken for each of its many
//! short parallel steps.
//!
//! The clustering runs a parallel step per block of vectors, thousands per
//! call, each a fraction of a millisecond. Starting and joining a thread
//! costs tens of microseconds on a quiet machine and hundreds on a busy one.
//!
//! A step is a list of items that every thread, the caller included, claims
//! one at a time from a shared counter: a worker that wakes late or loses
//! its core to another process just claims fewer, and the caller never
//! waits for work nobody has started. Workers spin through the short gap
//! between steps and park when none comes for [`SPIN_FOR`], so that an idle
//! crew does not hold the cores.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// How long a waiting thread spins before it parks or yields.
const SPIN_FOR: Duration = Duration::from_micros(300);

const DISMISSED: usize = usize::MAX;

#[derive(Debug, Default)]
pub(crate) struct Crew {
    /// The current round, for workers to wait on; `tickets` is the truth.
    round: AtomicUsize,
    tickets: Mutex<Tickets>,
    done: AtomicUsize,
    failed: AtomicBool,
}

/// The items of the current round not yet claimed. A claim names its
/// round, so a worker still finishing one round cannot take an item of the
/// next for it.
#[derive(Debug, Default)]
struct Tickets {
    round: usize,
    items: usize,
    next: usize,
}

impl Crew {
    /// A worker's loop: each round, runs `work(item)` for the items it
    /// claims, until dismissed.
    pub(crate) fn serve(&self, mut work: impl FnMut(usize)) {
        let failure = FlagOnPanic(&self.failed);
        let mut seen = 0;
        loop {
            let mut wait = Wait::new();
            let round = loop {
                let round = self.round.load(Ordering::Acquire);
                if round != seen {
                    break round;
                }
                if !wait.spin() {
                    std::thread::park();
                }
            };
            if round == DISMISSED {
                break;
            }
            seen = round;
            self.claim(round, &mut work);
        }
        drop(failure);
    }

    /// Runs `work(item)` for each of `items` items on the caller and
    /// `workers`; returns when all are done.
    ///
    /// # Panics
    /// If a worker panicked.
    pub(crate) fn run(&self, items: usize, workers: &[Thread], mut work: impl FnMut(usize)) {
        self.done.store(0, Ordering::Release);
        let round = {
            let mut tickets = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
            // DISMISSED is never a round.
            tickets.round = (tickets.round + 1) % DISMISSED;
            tickets.items = items;
            tickets.next = 0;
            tickets.round
        };
        if items > 1 && !workers.is_empty() {
            self.round.store(round, Ordering::Release);
            workers.iter().for_each(Thread::unpark);
        }
        self.claim(round, &mut work);
        let mut wait = Wait::new();
        while self.done.load(Ordering::Acquire) < items {
            assert!(!self.failed.load(Ordering::Acquire), "a kernel worker thread panicked");
            if !wait.spin() {
                std::thread::yield_now();
            }
        }
    }

    fn claim(&self, round: usize, work: &mut impl FnMut(usize)) {
        loop {
            let item = {
                let mut tickets = self.tickets.lock().unwrap_or_else(PoisonError::into_inner);
                if tickets.round != round || tickets.next >= tickets.items {
                    return;
                }
                tickets.next += 1;
                tickets.next - 1
            };
            work(item);
            self.done.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Tells `workers` to return; done on drop of the guard, so that a panic
    /// on the calling thread does not leave a scope waiting on them.
    pub(crate) fn dismiss_on_drop<'a>(&'a self, workers: &'a [Thread]) -> Dismiss<'a> {
        Dismiss { crew: self, workers }
    }
}

pub(crate) struct Dismiss<'a> {
    crew: &'a Crew,
    workers: &'a [Thread],
}

impl Drop for Dismiss<'_> {
    fn drop(&mut self) {
        self.crew.round.store(DISMISSED, Ordering::Release);
        self.workers.iter().for_each(Thread::unpark);
    }
}

/// Spinning for at most [`SPIN_FOR`], reading the clock every 64 spins.
struct Wait {
    start: Instant,
    spins: u32,
}

impl Wait {
    fn new() -> Wait {
        Wait { start: Instant::now(), spins: 0 }
    }

    /// Spins once; false once the time to spin is up.
    fn spin(&mut self) -> bool {
        self.spins = self.spins.wrapping_add(1);
        if self.spins.is_multiple_of(64) && self.start.elapsed() > SPIN_FOR {
            return false;
        }
        spin_loop();
        true
    }
}

/// Raises the flag if dropped while its thread panics.
struct FlagOnPanic<'a>(&'a AtomicBool);

impl Drop for FlagOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}
