//! The references `bench uncontended` measures beside the locks: the
//! physical floor (one atomic swap plus one release store on an
//! uncontended 32-bit word: what any lock must at least pay), which the
//! ratios refer to; the same on a byte (what a lock with a byte-wide word
//! pays); and the two-RMW floor (what a lock pays whose release must
//! atomically check for waiters).
//!
//! # Why 32 bits
//!
//! Until git f18bbb8 the floor swapped a byte (`AtomicBool`), and on an
//! AMD EPYC guest `ticket` (0.56×) and `clh` (0.65×) ran below it: their
//! read-modify-writes are 32 and 64 bits wide. Measured piece by piece in
//! one process on that machine (best of 15 batches of 2 million, ns a
//! pair): 32-bit swap + store 2.8, byte swap + store 4.7, byte CAS + store
//! 4.0-4.4, 32-bit fetch_add + store on another word of the same line
//! 2.9. A locked instruction on a byte costs about 1.7 times one on a
//! 32-bit word there, so the byte floor bounded nothing from below. The
//! floor is now the 32-bit pair, the cheapest width measured, and
//! `floor-u8` keeps the byte pair beside it to show what a byte-wide lock
//! word (`tas`, `ttas`, `parking_lot`) pays for its width.

use crate::core::lablock::LabLock;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// The physical floor of an uncontended acquire+release: one `swap` with
/// Acquire and one Release store on a 32-bit word no other thread touches.
/// It is not a lock anyone should use (it never waits), so only this
/// study measures it.
pub struct Floor(AtomicU32);

impl LabLock for Floor {
    fn new() -> Self {
        Floor(AtomicU32::new(0))
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.swap(1, Ordering::Acquire);
        let r = f();
        self.0.store(0, Ordering::Release);
        r
    }
}

/// [`Floor`] on a byte: what a lock whose word is a byte pays for the
/// width alone.
pub struct FloorU8(AtomicU8);

impl LabLock for FloorU8 {
    fn new() -> Self {
        FloorU8(AtomicU8::new(0))
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        self.0.swap(1, Ordering::Acquire);
        let r = f();
        self.0.store(0, Ordering::Release);
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
pub struct Floor2Rmw(AtomicU32);

impl LabLock for Floor2Rmw {
    fn new() -> Self {
        Floor2Rmw(AtomicU32::new(0))
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        let taken = self
            .0
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed);
        let r = f();
        let given = self
            .0
            .compare_exchange(1, 0, Ordering::Release, Ordering::Relaxed);
        // Nobody else touches the word: both always succeed. Checking keeps
        // the compiler from treating either as a value nobody reads.
        debug_assert!(taken.is_ok() && given.is_ok());
        r
    }
}
