use crate::harness::{self, ModelLock};
use locklab::{HemlockToken, RawHemlock};

impl ModelLock for RawHemlock {
    type Token = HemlockToken;
    fn new() -> Self {
        RawHemlock::new()
    }
    fn acquire(&self) -> HemlockToken {
        RawHemlock::acquire(self)
    }
    fn try_acquire(&self) -> Option<HemlockToken> {
        RawHemlock::try_acquire(self)
    }
    fn release(&self, token: HemlockToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { RawHemlock::release(self, token) }
    }
}

#[test]
fn hemlock_two_threads_twice() {
    harness::mutual_exclusion::<RawHemlock>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn hemlock_three_threads() {
    crate::extra::mutual_exclusion_bounded::<RawHemlock>(3, 1, 1);
}

#[test]
fn hemlock_try_against_lock() {
    harness::try_against_lock::<RawHemlock>();
}

// The holder of A and B is the predecessor of a waiter on each: both wait
// on its one grant word, each for its own lock's address.
#[test]
fn hemlock_nested_two() {
    harness::nested_two::<RawHemlock>();
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn hemlock_two_threads_thrice_deeper() {
    crate::extra::mutual_exclusion_bounded::<RawHemlock>(2, 3, 3);
}

// Three threads, two rounds each: a thread's second acquisition may queue
// behind a thread that queued behind its first.
#[test]
fn hemlock_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<RawHemlock>(3, 2, 1);
}

// A thread whose successor S1 acknowledged its grant word, queueing again
// and finding a new successor S2: S2 must not read the word's old grant of
// this same lock. That is what the tail swap's Release half is for;
// weakened to Acquire, this model fails (a causality violation) where the
// others pass.
#[test]
fn hemlock_requeue_with_yields() {
    harness::requeue_with_yields::<RawHemlock>();
}
