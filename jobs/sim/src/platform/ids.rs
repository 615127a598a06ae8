//! The identifiers and the clock of a simulation: agents, posts and turns.
//!
//! A turn is one simulated hour (the paper's sandbox timer). Turn 0 starts
//! on a Monday at 00:00; day and weekday follow from the turn number alone,
//! so every worker agrees on the calendar without sharing a clock.

use serde::{Deserialize, Serialize};

/// An agent; the same number as its account on the platform.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AgentId(pub u32);

/// A post or comment; assigned by the platform in application order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PostId(pub u64);

/// One simulated hour, counted from the start of the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Turn(pub u32);

/// Turns in a simulated day and week.
pub const TURNS_PER_DAY: u32 = 24;
pub const TURNS_PER_WEEK: u32 = 7 * TURNS_PER_DAY;

impl Turn {
    /// The hour of the day, 0-23.
    pub fn hour(self) -> u32 {
        self.0 % TURNS_PER_DAY
    }
    /// The simulated day, from 0.
    pub fn day(self) -> u32 {
        self.0 / TURNS_PER_DAY
    }
    /// The weekday, 0 = Monday ... 6 = Sunday.
    pub fn weekday(self) -> u32 {
        self.day() % 7
    }
    pub fn next(self) -> Turn {
        Turn(self.0 + 1)
    }
}

impl std::fmt::Display for AgentId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::Display for PostId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::Display for Turn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calendar_follows_from_the_turn() {
        let t = Turn(24 * 8 + 19);
        assert_eq!((t.day(), t.weekday(), t.hour()), (8, 1, 19));
        assert_eq!(Turn(TURNS_PER_WEEK - 1).weekday(), 6);
        assert_eq!(Turn(0).next(), Turn(1));
    }
}
