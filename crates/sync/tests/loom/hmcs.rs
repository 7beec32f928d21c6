//! `hmcs` with a bound of 1 on consecutive local hand-overs, so that short
//! models reach the bound. Under loom a thread's node is its index's
//! parity, so with two or three threads the models see hand-overs both
//! within a node and across nodes.

use crate::harness::{self, ModelLock};
use locklab::{HmcsToken, RawHmcs};

type Lock = RawHmcs<1>;

impl ModelLock for Lock {
    type Token = HmcsToken;
    fn new() -> Self {
        RawHmcs::new()
    }
    fn acquire(&self) -> HmcsToken {
        RawHmcs::acquire(self)
    }
    fn try_acquire(&self) -> Option<HmcsToken> {
        RawHmcs::try_acquire(self)
    }
    fn release(&self, token: HmcsToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { RawHmcs::release(self, token) }
    }
}

#[test]
fn hmcs_two_threads_twice() {
    harness::mutual_exclusion::<Lock>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn hmcs_three_threads() {
    crate::extra::mutual_exclusion_bounded::<Lock>(3, 1, 1);
}

// Three threads twice each: more tenures, so that the bound of 1 ends
// some (and, for CNA, a secondary queue is flushed in front of a waiter).
#[test]
fn hmcs_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<Lock>(3, 2, 1);
}

#[test]
fn hmcs_try_against_lock() {
    harness::try_against_lock::<Lock>();
}

#[test]
fn hmcs_nested_two() {
    harness::nested_two::<Lock>();
}
