//! The hybrid mutex: mutual exclusion and no lost wake-up (a lost wake-up
//! shows as a deadlock: every thread asleep) through all three paths, the
//! handoff (which loom triggers after one sleep, having no clock), the fair
//! unlock, and the give-up path of a timed acquisition (under loom a timed
//! futex wait times out at once).
//!
//! Under loom every wait between two looks at the lock word counts as
//! `LOOM_RELAX_NS` (20 µs), so the real policies give up after a look or
//! two: the sleep path is checked with a policy that never spins
//! ([`NoSpin`]), the spin path with the real ones, and the yield path
//! (patience out while others sleep) with [`YieldingSpin`].

use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::sys::LOOM_RELAX_NS;
use locklab::{AdaptiveSpin, FixedSpin, LockInfo, RawHybridMutex, SpinPolicy};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use std::time::Instant;

impl<P: SpinPolicy> ModelLock for RawHybridMutex<P> {
    type Token = ();
    fn new() -> Self {
        RawHybridMutex::new()
    }
    fn acquire(&self) {
        RawHybridMutex::acquire(self)
    }
    fn try_acquire(&self) -> Option<()> {
        RawHybridMutex::try_acquire(self).then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { RawHybridMutex::release(self) }
    }
}

/// Contenders go straight to sleep: the slow path and the handoff alone.
enum NoSpin {}

impl SpinPolicy for NoSpin {
    const INFO: LockInfo = FixedSpin::INFO;
    const RESTART_ON_PROGRESS: bool = false;
    const LEARNS: bool = false;
    const SPIN_BUDGET_NS: u64 = 0;
    fn patience_ns(_: u32) -> u64 {
        0
    }
}

/// Spins with a patience shorter than one wait and a budget of two waits,
/// so that a spinner whose lock does not move
/// reaches the yield path when another thread sleeps: three threads, one
/// holding, one asleep, one spinning.
enum YieldingSpin {}

impl SpinPolicy for YieldingSpin {
    const INFO: LockInfo = AdaptiveSpin::INFO;
    const RESTART_ON_PROGRESS: bool = true;
    const LEARNS: bool = false;
    const SPIN_BUDGET_NS: u64 = 2 * LOOM_RELAX_NS;
    fn patience_ns(_: u32) -> u64 {
        500
    }
}

/// The sleeping mutex released with `unlock_fair` (always hand over).
struct Fair(RawHybridMutex<NoSpin>);

impl ModelLock for Fair {
    type Token = ();
    fn new() -> Self {
        Fair(RawHybridMutex::new())
    }
    fn acquire(&self) {
        self.0.acquire()
    }
    fn try_acquire(&self) -> Option<()> {
        self.0.try_acquire().then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { self.0.release_fair() }
    }
}

#[test]
fn mutex_two_threads_twice() {
    harness::mutual_exclusion::<RawHybridMutex<AdaptiveSpin>>(2, 2);
}

#[test]
fn mutex_three_threads_once() {
    extra::mutual_exclusion_bounded::<RawHybridMutex<AdaptiveSpin>>(3, 1, 1);
}

/// The yield path: the holder (this thread) is blocked in `join`, so the
/// lock cannot move; one timed contender sleeps (counted) while the other
/// spinner runs out of patience and yields. Under loom a timed sleep times
/// out at once, so both give up, and the lock must still work afterwards.
/// A panic planted in the yield branch showed that loom reaches it here
/// (and not in the plain three-thread check, whose holder always runs).
#[test]
fn mutex_yield_path_with_a_blocked_holder() {
    harness::builder().check(|| {
        let m = Arc::new(RawHybridMutex::<YieldingSpin>::new());
        m.acquire();
        let contenders: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                loom::thread::spawn(move || m.acquire_until(Instant::now()))
            })
            .collect();
        for c in contenders {
            assert!(!c.join().unwrap(), "took a lock this thread holds");
        }
        // SAFETY: acquired above by this thread.
        unsafe { m.release() };
        assert!(m.try_acquire(), "left locked");
        // SAFETY: just acquired.
        unsafe { m.release() };
    });
}

#[test]
fn mutex_fixed_two_threads_twice() {
    harness::mutual_exclusion::<RawHybridMutex<FixedSpin>>(2, 2);
}

#[test]
fn mutex_fair_unlock_two_threads_twice() {
    harness::mutual_exclusion::<Fair>(2, 2);
}

#[test]
fn mutex_fair_unlock_three_threads_once() {
    extra::mutual_exclusion_bounded::<Fair>(3, 1, 1);
}

#[test]
fn mutex_sleeping_two_threads_twice() {
    harness::mutual_exclusion::<RawHybridMutex<NoSpin>>(2, 2);
}

#[test]
fn mutex_sleeping_three_threads_once() {
    extra::mutual_exclusion_bounded::<RawHybridMutex<NoSpin>>(3, 1, 1);
}

#[test]
fn mutex_try_against_lock() {
    harness::try_against_lock::<RawHybridMutex<AdaptiveSpin>>();
}

/// One thread takes the mutex plainly, another with a deadline that (under
/// loom) expires at its first sleep. Whatever happens, the data stays
/// exclusive and afterwards the mutex can be taken again: a timed waiter
/// that leaves must not strand the word locked or a sleeper unwoken.
#[test]
fn mutex_timed_waiter_gives_up_cleanly() {
    harness::builder().check(|| {
        let m = Arc::new((RawHybridMutex::<NoSpin>::new(), UnsafeCell::new(0)));
        let m2 = m.clone();
        let plain = loom::thread::spawn(move || {
            m2.0.acquire();
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            m2.1.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: acquired just above.
            unsafe { m2.0.release() };
        });
        let timed = if m.0.acquire_until(Instant::now()) {
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            m.1.with_mut(|p| unsafe { *p += 1 });
            // SAFETY: acquired just above.
            unsafe { m.0.release() };
            1
        } else {
            0
        };
        plain.join().unwrap();
        m.0.acquire();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let total = m.1.with(|p| unsafe { *p });
        assert_eq!(total, 1 + timed);
        // SAFETY: acquired just above.
        unsafe { m.0.release() };
    });
}
