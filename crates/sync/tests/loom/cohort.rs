//! `c-bo-mcs` with a bound of 1 on consecutive local hand-overs, so that short
//! models reach the bound. Under loom a thread's node is its index's
//! parity, so with two or three threads the models see hand-overs both
//! within a node and across nodes.

use crate::harness::{self, ModelLock};
use locklab::{CboMcsToken, RawCboMcs};

type Lock = RawCboMcs<1>;

impl ModelLock for Lock {
    type Token = CboMcsToken;
    fn new() -> Self {
        RawCboMcs::new()
    }
    fn acquire(&self) -> CboMcsToken {
        RawCboMcs::acquire(self)
    }
    fn try_acquire(&self) -> Option<CboMcsToken> {
        RawCboMcs::try_acquire(self)
    }
    fn release(&self, token: CboMcsToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { RawCboMcs::release(self, token) }
    }
}

#[test]
fn cohort_two_threads_twice() {
    harness::mutual_exclusion::<Lock>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn cohort_three_threads() {
    crate::extra::mutual_exclusion_bounded::<Lock>(3, 1, 1);
}

// Three threads twice each: more tenures, so that the bound of 1 ends
// some (and, for CNA, a secondary queue is flushed in front of a waiter).
#[test]
fn cohort_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<Lock>(3, 2, 1);
}

#[test]
fn cohort_try_against_lock() {
    harness::try_against_lock::<Lock>();
}

#[test]
fn cohort_nested_two() {
    harness::nested_two::<Lock>();
}
