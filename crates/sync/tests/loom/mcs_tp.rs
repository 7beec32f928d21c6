//! The time-published MCS lock. Under loom a waiter looks preempted from
//! the moment it links until its first look at its state (see
//! `locklab::spin::mcs_tp`), so every model also explores releases that
//! pass waiters over: the removal protocol (a removed node is reset and
//! queued again by its thread while the releaser walks on) is checked for
//! races on the node and for lost or doubled hand-overs. `Patient` never
//! passes anyone over: the plain MCS path with stamps.

use crate::harness::{self, ModelLock};
use locklab::{McsTpToken, RawMcsTp};

impl ModelLock for RawMcsTp {
    type Token = McsTpToken;
    fn new() -> Self {
        RawMcsTp::new()
    }
    fn acquire(&self) -> McsTpToken {
        RawMcsTp::acquire(self)
    }
    fn try_acquire(&self) -> Option<McsTpToken> {
        RawMcsTp::try_acquire(self)
    }
    fn release(&self, token: McsTpToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { RawMcsTp::release(self, token) }
    }
}

/// An MCS-TP lock with an infinite threshold.
struct Patient(RawMcsTp);

impl ModelLock for Patient {
    type Token = McsTpToken;
    fn new() -> Self {
        Patient(RawMcsTp::with_threshold_ns(u64::MAX))
    }
    fn acquire(&self) -> McsTpToken {
        self.0.acquire()
    }
    fn try_acquire(&self) -> Option<McsTpToken> {
        self.0.try_acquire()
    }
    fn release(&self, token: McsTpToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { self.0.release(token) }
    }
}

#[test]
fn mcs_tp_two_threads_twice() {
    harness::mutual_exclusion::<RawMcsTp>(2, 2);
}

#[test]
fn mcs_tp_three_threads() {
    crate::extra::mutual_exclusion_bounded::<RawMcsTp>(3, 1, 1);
}

#[test]
fn mcs_tp_patient_two_threads_twice() {
    harness::mutual_exclusion::<Patient>(2, 2);
}

#[test]
fn mcs_tp_try_against_lock() {
    harness::try_against_lock::<RawMcsTp>();
}

#[test]
fn mcs_tp_nested_two() {
    harness::nested_two::<RawMcsTp>();
}

#[test]
fn mcs_tp_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<RawMcsTp>(3, 2, 1);
}

#[test]
fn mcs_tp_two_threads_three_preemptions() {
    crate::extra::mutual_exclusion_bounded::<RawMcsTp>(2, 2, 3);
}
