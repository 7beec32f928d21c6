//! The spin-then-yield and spin-then-park adapters. Under loom the spin
//! budget is one attempt, so every contended acquisition takes the yield or
//! sleep path; a lost wake-up in `SpinPark` shows as a deadlock.
//!
//! Inner locks: `ttas` rather than `tas`, because loom does not keep a
//! failed swap (a write of `true` over `true`) atomic with respect to a
//! concurrent plain store: it let a thread's load right after its own
//! release store read another thread's earlier failed swap, and then
//! reported a `spin-park(tas)` waiter asleep on a lock that real hardware
//! would have shown free (see also `harness::try_only`). `clh` is not
//! checked here: see `locklab::block::park` on why loom cannot exhaust it.

use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::{RawMcs, RawTicket, RawTtas, SpinCore, SpinPark, SpinYield};

impl<L: SpinCore + 'static> ModelLock for SpinPark<L> {
    type Token = L::Token;
    fn new() -> Self {
        SpinPark::new()
    }
    fn acquire(&self) -> L::Token {
        SpinPark::acquire(self)
    }
    fn try_acquire(&self) -> Option<L::Token> {
        SpinPark::try_acquire(self)
    }
    fn release(&self, token: L::Token) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { SpinPark::release(self, token) }
    }
}

impl<L: SpinCore + 'static> ModelLock for SpinYield<L> {
    type Token = L::Token;
    fn new() -> Self {
        SpinYield::new()
    }
    fn acquire(&self) -> L::Token {
        SpinYield::acquire(self)
    }
    fn try_acquire(&self) -> Option<L::Token> {
        SpinYield::try_acquire(self)
    }
    fn release(&self, token: L::Token) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { SpinYield::release(self, token) }
    }
}

#[test]
fn park_ttas_two_threads_twice() {
    harness::mutual_exclusion::<SpinPark<RawTtas>>(2, 2);
}

#[test]
fn park_ttas_three_threads_once() {
    harness::mutual_exclusion::<SpinPark<RawTtas>>(3, 1);
}

#[test]
fn park_ticket_two_threads_twice() {
    harness::mutual_exclusion::<SpinPark<RawTicket>>(2, 2);
}

#[test]
fn park_ticket_three_threads_once() {
    harness::mutual_exclusion::<SpinPark<RawTicket>>(3, 1);
}

#[test]
fn park_mcs_two_threads_twice() {
    harness::mutual_exclusion::<SpinPark<RawMcs>>(2, 2);
}

#[test]
fn park_ticket_try_after_critical() {
    extra::try_after_critical::<SpinPark<RawTicket>>();
}

// SpinYield polls without end, so two waiters at once need the lower bound
// (see `extra`).
#[test]
fn yield_ticket_two_threads_twice() {
    harness::mutual_exclusion::<SpinYield<RawTicket>>(2, 2);
}

#[test]
fn yield_ttas_three_threads_once() {
    extra::mutual_exclusion_bounded::<SpinYield<RawTtas>>(3, 1, 1);
}
