//! The Malthusian lock: two threads never cull (a release needs two linked
//! waiters to cull one), so the three-thread models are the ones that
//! reach the passive set: the culled waiter parks on loom's futex model
//! and must be woken by the drain (default period) or by a rotation
//! (period 1, `Rotating`: every release with a passive waiter rotates). A
//! lost wake-up shows as a deadlock, a hand-over to the wrong node as an
//! overlapping access or a lost update.

use crate::harness::{self, ModelLock};
use locklab::{MalthusianToken, RawMalthusian};

impl ModelLock for RawMalthusian {
    type Token = MalthusianToken;
    fn new() -> Self {
        RawMalthusian::new()
    }
    fn acquire(&self) -> MalthusianToken {
        RawMalthusian::acquire(self)
    }
    fn try_acquire(&self) -> Option<MalthusianToken> {
        RawMalthusian::try_acquire(self)
    }
    fn release(&self, token: MalthusianToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { RawMalthusian::release(self, token) }
    }
}

/// A Malthusian lock that rotates at every release with a passive waiter.
struct Rotating(RawMalthusian);

impl ModelLock for Rotating {
    type Token = MalthusianToken;
    fn new() -> Self {
        Rotating(RawMalthusian::with_period(1))
    }
    fn acquire(&self) -> MalthusianToken {
        self.0.acquire()
    }
    fn try_acquire(&self) -> Option<MalthusianToken> {
        self.0.try_acquire()
    }
    fn release(&self, token: MalthusianToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { self.0.release(token) }
    }
}

#[test]
fn malthusian_two_threads_twice() {
    harness::mutual_exclusion::<RawMalthusian>(2, 2);
}

#[test]
fn malthusian_three_threads() {
    crate::extra::mutual_exclusion_bounded::<RawMalthusian>(3, 1, 1);
}

#[test]
fn malthusian_rotating_three_threads() {
    crate::extra::mutual_exclusion_bounded::<Rotating>(3, 1, 1);
}

#[test]
fn malthusian_try_against_lock() {
    harness::try_against_lock::<RawMalthusian>();
}

#[test]
fn malthusian_nested_two() {
    harness::nested_two::<RawMalthusian>();
}

#[test]
fn malthusian_rotating_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<Rotating>(3, 2, 1);
}

#[test]
fn malthusian_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<RawMalthusian>(3, 2, 1);
}

#[test]
fn malthusian_two_threads_three_preemptions() {
    crate::extra::mutual_exclusion_bounded::<RawMalthusian>(2, 2, 3);
}
