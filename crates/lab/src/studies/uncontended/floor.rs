//! The references `bench uncontended` measures beside the locks: the
//! physical floor (one atomic swap plus one release store on an
//! uncontended word: what any lock must at least pay), which the ratios
//! refer to, and the two-RMW floor (what a lock pays whose release must
//! atomically check for waiters).

use crate::core::lablock::LabLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The physical floor of an uncontended acquire+release: one `swap` with
/// Acquire and one Release store on a word no other thread touches. It is
/// not a lock anyone should use (it never waits), so only this study
/// measures it.
pub struct Floor(AtomicBool);

impl LabLock for Floor {
    fn new() -> Self {
        Floor(AtomicBool::new(false))
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.swap(true, Ordering::Acquire);
        let r = f();
        self.0.store(false, Ordering::Release);
        r
    }
}

/// The floor of a lock whose release is itself a read-modify-write: a
/// compare-exchange to take the word and another to give it back. A lock
/// that keeps "held" and "who waits" in one word (K42, MCS, parking_lot)
/// must release that way, since a plain store could erase a waiter that
/// enqueued a moment before; only a lock whose waiters never write the
/// holder's flag (test-and-set, ticket, qspinlock's locked byte, CLH's
/// node) can release with a store.
pub struct Floor2Rmw(AtomicBool);

impl LabLock for Floor2Rmw {
    fn new() -> Self {
        Floor2Rmw(AtomicBool::new(false))
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        let taken = self
            .0
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed);
        let r = f();
        let given = self
            .0
            .compare_exchange(true, false, Ordering::Release, Ordering::Relaxed);
        // Nobody else touches the word: both always succeed. Checking keeps
        // the compiler from treating either as a value nobody reads.
        debug_assert!(taken.is_ok() && given.is_ok());
        r
    }
}
