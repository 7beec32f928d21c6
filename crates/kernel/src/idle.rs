//! Per-core idle accounting: the time each emulated core spends in its idle
//! loop with nothing to run, as seed 000 §5.2 and seed 002 §5.2.1
//! instrument seL4's idle loop to get each core's utilisation.
//!
//! The owning core marks the loop's entry and exit with time-stamps; any
//! thread may read, at any moment, how long the core has idled so far,
//! including the idle period it is in. The reading must never mix two
//! states (the total of finished periods from after an exit with the start
//! of a period from before it), so the whole state is one word, written
//! only by the owning core with one store:
//!
//! - busy: bit 63 clear, the low 63 bits the idle ticks of finished periods;
//! - idle: bit 63 set, the low 63 bits that total minus the period's start
//!   (mod 2⁶³), so that the idle ticks at time `now` are `now` plus the word.
//!
//! A reader loads the word, then reads the clock: a period that began
//! before the load began before the clock read, so the running period is
//! never negative; one that ended between the two is overstated by at most
//! the few nanoseconds between them. `Release`/`Acquire` are not needed for
//! other data (the word carries everything), so the accesses are `Relaxed`.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

const IDLE: u64 = 1 << 63;
const MASK: u64 = IDLE - 1;

/// One core's idle clock (see the module documentation).
#[derive(Debug, Default)]
pub struct IdleClock {
    word: CachePadded<AtomicU64>,
}

/// The owning core's side of its [`IdleClock`].
#[derive(Debug, Default)]
pub(crate) struct IdleMarks {
    total: u64,
    since: Option<u64>,
}

impl IdleMarks {
    /// The core enters its idle loop at tick `t` (no-op if already idle).
    #[inline]
    pub(crate) fn enter(&mut self, c: &IdleClock, t: u64) {
        if self.since.is_none() {
            self.since = Some(t);
            c.word
                .store(IDLE | (self.total.wrapping_sub(t) & MASK), Relaxed);
        }
    }

    /// The core leaves its idle loop at tick `t` (no-op if busy).
    #[inline]
    pub(crate) fn leave(&mut self, c: &IdleClock, t: u64) {
        if let Some(s) = self.since.take() {
            self.total = self.total.wrapping_add(t.saturating_sub(s));
            c.word.store(self.total & MASK, Relaxed);
        }
    }
}

impl IdleClock {
    /// Ticks the core has idled up to `now` (a time-stamp read after this
    /// call's load; see [`IdleClock::sample`]).
    #[inline]
    fn at(w: u64, now: u64) -> u64 {
        if w & IDLE != 0 {
            now.wrapping_add(w) & MASK
        } else {
            w & MASK
        }
    }

    /// Reads the clock: `(now, idle ticks up to now)`, `now` a time-stamp
    /// taken just after the state was read.
    pub fn sample(&self) -> (u64, u64) {
        let w = self.word.load(Relaxed);
        let now = locklab::util::pause::ticks();
        (now, Self::at(w, now))
    }

    /// Whether the core is in its idle loop now.
    pub fn is_idle(&self) -> bool {
        self.word.load(Relaxed) & IDLE != 0
    }
}

/// A core's idle time over an interval: the two samples at its ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IdleSpan {
    /// Ticks between the two samples.
    pub ticks: u64,
    /// Ticks the core idled in between.
    pub idle: u64,
}

impl IdleSpan {
    /// The span from sample `a` to the later sample `b`.
    pub fn between(a: (u64, u64), b: (u64, u64)) -> Self {
        IdleSpan {
            ticks: b.0.saturating_sub(a.0),
            idle: b.1.saturating_sub(a.1),
        }
    }

    /// Busy time over the span's length, in [0, 1] (0 for an empty span).
    pub fn utilisation(&self) -> f64 {
        if self.ticks == 0 {
            return 0.0;
        }
        let idle = self.idle.min(self.ticks);
        (self.ticks - idle) as f64 / self.ticks as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_period_counts_up_to_now_and_a_finished_one_stays() {
        let c = IdleClock::default();
        let mut m = IdleMarks::default();
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 500), 0);
        m.enter(&c, 1_000);
        m.enter(&c, 1_200); // already idle: the first start holds
        assert!(c.is_idle());
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 1_300), 300);
        m.leave(&c, 1_400);
        assert!(!c.is_idle());
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 9_999), 400);
        m.enter(&c, 2_000);
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 2_050), 450);
        m.leave(&c, 2_100);
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 5_000), 500);
    }

    #[test]
    fn utilisation_is_busy_over_the_span() {
        let s = IdleSpan::between((100, 10), (1_100, 260));
        assert_eq!(
            s,
            IdleSpan {
                ticks: 1_000,
                idle: 250
            }
        );
        assert!((s.utilisation() - 0.75).abs() < 1e-12);
        assert_eq!(IdleSpan::default().utilisation(), 0.0);
        // Idle can exceed the span by a read's skew; never below 0.
        assert_eq!(
            IdleSpan {
                ticks: 10,
                idle: 12
            }
            .utilisation(),
            0.0
        );
    }
}
