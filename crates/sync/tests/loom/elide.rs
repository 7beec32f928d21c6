//! Lock elision's fall-back path: hardware that never commits (every
//! `begin` aborts), so each acquisition makes its attempts, waits for the
//! fall-back lock to read free between them, and then takes it. Modelled
//! transactions would give no isolation (loom runs them as plain code), so
//! a committing transaction is not modelled here; the retry logic around
//! it is tested in `elide.rs` with scripted hardware.
//!
//! The adaptive policy is checked the same way on hardware whose every
//! abort has the retry bit clear, so each acquisition either aborts once
//! and sets the lock's skip count or skips and counts it down: the count's
//! `Relaxed` loads and stores race (updates get lost), and the fall-back
//! must keep the threads apart whatever they read.

use crate::harness::{self, ModelLock};
use locklab::elide::{Abort, Adaptive, Elided, ElidedGuard, Htm, Path, Tunables};
use locklab::{RawTicket, Ticket};

/// `RawTicket` as a `lock_api::RawMutex`, which the library leaves out
/// under loom because loom's atomics cannot be built in a const.
struct Fallback(RawTicket);

// SAFETY: forwards to `RawTicket`, whose exclusion loom checks in
// `ticket.rs`.
unsafe impl lock_api::RawMutex for Fallback {
    const INIT: Self = panic!("loom's atomics cannot be built in a const");
    type Guard = Ticket;

    fn lock(&self) -> Ticket {
        self.0.acquire()
    }

    fn try_lock(&self) -> Option<Ticket> {
        self.0.try_acquire()
    }

    unsafe fn unlock(&self, ticket: Ticket) {
        // SAFETY: forwarded from the caller.
        unsafe { self.0.release(ticket) }
    }

    fn is_locked(&self) -> bool {
        self.0.is_held()
    }
}

/// Transactional hardware on which every transaction aborts at once, with
/// the RTM abort status `STATUS`.
struct NeverCommits<const STATUS: u32>;

/// A conflict, retry bit set: Fig. 1's policy waits and begins again.
const CONFLICT: u32 = 0b110;

/// A capacity abort, retry bit clear: the adaptive policy gives up at
/// once and sets the skip count.
const CAPACITY: u32 = 0b1000;

// SAFETY: `begin` never returns `Ok`, so there is no transaction to
// isolate, end or abort.
unsafe impl<const STATUS: u32> Htm for NeverCommits<STATUS> {
    const INIT: Self = NeverCommits;

    fn available(&self) -> bool {
        true
    }

    fn begin(&self) -> Result<(), Abort> {
        Err(Abort::from_status(STATUS))
    }

    unsafe fn end(&self) {
        unreachable!("no transaction ever started")
    }

    fn abort_lock_busy(&self) -> Abort {
        unreachable!("no transaction ever started")
    }

    fn abort_nested(&self) -> Abort {
        unreachable!("no transaction ever started")
    }

    fn in_transaction(&self) -> bool {
        false
    }
}

/// Two attempts per acquisition, so each one also waits once.
const THRESHOLD: u32 = 2;

type Model = Elided<Fallback, NeverCommits<CONFLICT>>;

impl ModelLock for Model {
    type Token = ElidedGuard<Ticket>;
    fn new() -> Self {
        Elided::from_parts(Fallback(RawTicket::new()), NeverCommits).with_threshold(THRESHOLD)
    }
    fn acquire(&self) -> Self::Token {
        let (guard, outcome) = self.lock_with_outcome();
        assert_eq!(outcome.path, Path::Fallback);
        assert_eq!(outcome.aborts, THRESHOLD);
        assert_eq!(outcome.last_abort, Some(Abort::from_status(CONFLICT)));
        guard
    }
    fn try_acquire(&self) -> Option<Self::Token> {
        self.try_lock_with_outcome().map(|(guard, _)| guard)
    }
    fn release(&self, guard: Self::Token) {
        // SAFETY: the harness releases only what it acquired, on the
        // thread that acquired it.
        unsafe { Elided::release(self, guard) }
    }
}

/// One skip after each abort, so that with two rounds per thread both
/// paths are taken.
const SKIP_ONE: Tunables = Tunables {
    skip_lock_busy: 1,
    skip_lock_internal_abort: 1,
    skip_trylock_internal_abort: 1,
};

type AdaptiveModel = Elided<Fallback, NeverCommits<CAPACITY>, Adaptive>;

impl ModelLock for AdaptiveModel {
    type Token = ElidedGuard<Ticket>;
    fn new() -> Self {
        Elided::with_policy(
            Fallback(RawTicket::new()),
            NeverCommits,
            Adaptive::with_tunables(SKIP_ONE),
        )
    }
    fn acquire(&self) -> Self::Token {
        let (guard, outcome) = self.lock_with_outcome();
        match outcome.path {
            // The first abort ends the attempts.
            Path::Fallback => assert_eq!(outcome.aborts, 1),
            Path::Skipped => assert_eq!(outcome.aborts, 0),
            p => panic!("{p:?}"),
        }
        guard
    }
    fn try_acquire(&self) -> Option<Self::Token> {
        self.try_lock_with_outcome().map(|(guard, _)| guard)
    }
    fn release(&self, guard: Self::Token) {
        // SAFETY: the harness releases only what it acquired, on the
        // thread that acquired it.
        unsafe { Elided::release(self, guard) }
    }
}

#[test]
fn elide_fallback_two_threads_twice() {
    harness::mutual_exclusion::<Model>(2, 2);
}

#[test]
fn elide_fallback_try_against_lock() {
    harness::try_against_lock::<Model>();
}

#[test]
fn elide_adaptive_skips_race_two_threads_twice() {
    harness::mutual_exclusion::<AdaptiveModel>(2, 2);
}

#[test]
fn elide_adaptive_try_against_lock() {
    harness::try_against_lock::<AdaptiveModel>();
}
