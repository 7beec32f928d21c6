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
//!
//! # Halting
//!
//! A real idle core halts until an interrupt arrives; an emulated one that
//! polls shares its CPU badly, and one that gives the CPU away with
//! `sched_yield` waits for the host scheduler's next turn before it sees its
//! interrupt, which on a busy host is milliseconds per request. So after a
//! short poll the idle loop halts on its core's [`Doorbell`], a futex word
//! (`locklab::block::futex`), and whoever makes work for the core (another
//! core's wake-up of one of its threads, a device raising one of its lines,
//! the end of the run) rings it: the host wakes a sleeper at once, as a real
//! inter-processor interrupt wakes a halted core.
//!
//! Halting must not lose a ring that comes while the core decides to halt.
//! It is Dekker's pattern: the core stores `halted`, then looks for work;
//! the waker publishes the work, then loads `halted`. A `SeqCst` fence on
//! each side between the store and the load means at least one of them sees
//! the other's write: the core finds the work and does not sleep, or the
//! waker finds the core halted and wakes it (and the futex compares `halted`
//! with 1 atomically with going to sleep, so a ring between the core's look
//! and its sleep makes the sleep return at once). A halt is also bounded by
//! a timeout, so a waker that forgot to ring costs time, never a hang; the
//! kernel's tests count the halts that ended that way.

use crossbeam_utils::CachePadded;
use locklab::block::futex;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering::Relaxed, Ordering::SeqCst};
use std::time::{Duration, Instant};

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
    /// The core enters its idle loop at time-stamp `now()` (no-op, without
    /// reading the clock, if already idle: the idle loop calls it on every
    /// poll).
    #[inline]
    pub(crate) fn enter(&mut self, c: &IdleClock, now: impl FnOnce() -> u64) {
        if self.since.is_none() {
            let t = now();
            self.since = Some(t);
            c.word
                .store(IDLE | (self.total.wrapping_sub(t) & MASK), Relaxed);
        }
    }

    /// The core leaves its idle loop at time-stamp `now()` (no-op, without
    /// reading the clock, if busy).
    #[inline]
    pub(crate) fn leave(&mut self, c: &IdleClock, now: impl FnOnce() -> u64) {
        if let Some(s) = self.since.take() {
            self.total = self.total.wrapping_add(now().saturating_sub(s));
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
        let now = locklab::sys::ticks();
        (now, Self::at(w, now))
    }

    /// Whether the core is in its idle loop now.
    pub fn is_idle(&self) -> bool {
        self.word.load(Relaxed) & IDLE != 0
    }
}

/// A halted core's wake-up (see "Halting" in the module documentation).
#[derive(Debug, Default)]
pub struct Doorbell {
    /// 1 while the core is halted or about to be.
    halted: CachePadded<AtomicU32>,
    /// Halts that ended by their timeout with work waiting: rings lost.
    late: AtomicU64,
}

impl Doorbell {
    /// Waker side, after publishing work for the core: wakes it if it is
    /// halted. The fence orders the caller's publication before the load.
    #[inline]
    pub fn ring(&self) {
        fence(SeqCst);
        if self.halted.load(Relaxed) != 0 && self.halted.swap(0, Relaxed) != 0 {
            futex::wake_all(&self.halted);
        }
    }

    /// Core side: halts until rung or until `max` has passed, unless
    /// `work()`, read after the halt is announced, finds work already.
    pub(crate) fn halt(&self, work: impl Fn() -> bool, max: Duration) {
        self.halted.store(1, Relaxed);
        fence(SeqCst);
        if !work() {
            let deadline = Instant::now() + max;
            while self.halted.load(Relaxed) != 0 {
                if futex::wait(&self.halted, 1, Some(deadline)) == futex::Wake::TimedOut {
                    // Not rung (a ring swaps the word to 0 first), yet work
                    // is there: its waker did not ring.
                    if self.halted.swap(0, Relaxed) != 0 && work() {
                        self.late.fetch_add(1, Relaxed);
                    }
                    break;
                }
            }
        }
        self.halted.store(0, Relaxed);
    }

    /// Halts that timed out with work waiting (a waker that did not ring).
    pub fn late(&self) -> u64 {
        self.late.load(Relaxed)
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
        m.enter(&c, || 1_000);
        m.enter(&c, || 1_200); // already idle: the first start holds
        assert!(c.is_idle());
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 1_300), 300);
        m.leave(&c, || 1_400);
        assert!(!c.is_idle());
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 9_999), 400);
        m.enter(&c, || 2_000);
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 2_050), 450);
        m.leave(&c, || 2_100);
        assert_eq!(IdleClock::at(c.word.load(Relaxed), 5_000), 500);
    }

    #[test]
    fn a_halt_with_work_waiting_returns_at_once() {
        let b = Doorbell::default();
        let t = Instant::now();
        b.halt(|| true, Duration::from_secs(30));
        assert!(t.elapsed() < Duration::from_secs(30));
        assert_eq!(b.late(), 0);
    }

    #[test]
    fn a_ring_wakes_a_halted_core_and_a_forgotten_one_is_counted() {
        use std::sync::atomic::AtomicBool;
        // The other thread makes work once the halting core has looked for
        // it (so the core is asleep or about to be), ringing or not.
        fn halt_while_work_comes(ring: bool, max: Duration) -> (Duration, u64) {
            let b = Doorbell::default();
            let (work, looked) = (AtomicBool::new(false), AtomicU32::new(0));
            let t = Instant::now();
            std::thread::scope(|s| {
                s.spawn(|| {
                    while looked.load(SeqCst) == 0 {
                        std::thread::yield_now();
                    }
                    work.store(true, SeqCst);
                    if ring {
                        b.ring();
                    }
                });
                b.halt(
                    || {
                        looked.fetch_add(1, SeqCst);
                        work.load(SeqCst)
                    },
                    max,
                );
            });
            (t.elapsed(), b.late())
        }
        // Rung: the halt ends long before its 30 s bound, and is not late.
        let max = Duration::from_secs(30);
        let (took, late) = halt_while_work_comes(true, max);
        assert!(took < max, "{took:?}");
        assert_eq!(late, 0);
        // Not rung: the halt runs to its bound and says so.
        let max = Duration::from_millis(100);
        let (took, late) = halt_while_work_comes(false, max);
        assert!(took >= max, "{took:?}");
        assert_eq!(late, 1);
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
