//! `backoff`: test-and-test-and-set with bounded randomized exponential
//! backoff.
//!
//! [`RawTtas`](super::RawTtas) keeps waiters off the lock's cache line while
//! it is held, but every release still sets all of them on it at once: each
//! sees the flag clear, each attempts, one wins and the rest have pulled the
//! line over for nothing. Backoff spreads that burst out. A waiter that saw
//! the lock free and still lost the attempt has learned that there is
//! contention, so before looking again it waits a random number of
//! `spin_loop()`s in a window that doubles with each loss, up to a cap
//! (Anderson, IEEE TPDS 1990; Mellor-Crummey & Scott, ACM TOCS 1991, §2.1;
//! seed 001 (Bueso) discusses static, proportional and exponential delays).
//! The window's bounds and the generator live in
//! `util::backoff` (private), where the constants are
//! justified.
//!
//! The price is fairness and hand-over latency: a waiter deep in its backoff
//! misses releases, and newcomers (who start with the smallest window) tend
//! to win. The cap bounds how late a waiter can be.
//!
//! Orderings are those of `ttas`: a successful compare-exchange is `Acquire`,
//! pairing with the `Release` store that frees the lock, so each critical
//! section sees the previous one's writes; the spin-reads and failed attempts
//! carry no data and are `Relaxed`.

use crate::info::{Described, Family, LockInfo};
use crate::util::backoff::Backoff;
use crate::util::sync::{spin_loop, AtomicBool, Ordering};

/// Test-and-test-and-set spin lock with randomized exponential backoff. See
/// the module documentation.
#[derive(Debug)]
pub struct RawBackoff {
    locked: AtomicBool,
}

impl RawBackoff {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { locked: AtomicBool::new(false) }
        }
    }

    /// Spins, backing off after each lost attempt, until the lock is ours.
    #[inline]
    pub fn acquire(&self) {
        if !self.try_acquire() {
            self.acquire_contended();
        }
    }

    #[cold]
    fn acquire_contended(&self) {
        let mut backoff = Backoff::new();
        loop {
            while self.locked.load(Ordering::Relaxed) {
                spin_loop();
            }
            if self.try_acquire() {
                return;
            }
            // Saw it free and lost: others are contending for each release.
            backoff.wait();
        }
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock.
    ///
    /// # Safety
    /// The caller must hold the lock.
    #[inline]
    pub unsafe fn release(&self) {
        self.locked.store(false, Ordering::Release);
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

impl Default for RawBackoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawBackoff {
    const INFO: LockInfo = LockInfo {
        name: "backoff",
        family: Family::Spin,
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "test-and-test-and-set with exponential backoff: Anderson, IEEE TPDS 1(1) 1990; Mellor-Crummey & Scott, ACM TOCS 9(1) 1991; Bueso (seed 001)",
        summary: "ttas that waits a random, doubling (capped) number of spins after each lost attempt",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawBackoff;

    // SAFETY: `acquire` returns only once this thread's compare-exchange
    // turned the flag from false to true, so at most one guard exists at a
    // time; the success is `Acquire` and the release `Release`.
    crate::guardless_raw_mutex!(RawBackoff);

    /// A mutex protected by a test-and-test-and-set spin lock with
    /// exponential backoff.
    pub type BackoffMutex<T> = lock_api::Mutex<RawBackoff, T>;
}

#[cfg(not(loom))]
pub use raw::BackoffMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::hammer_yielding;

    #[test]
    fn try_acquire_fails_while_held_and_succeeds_after_release() {
        let l = RawBackoff::new();
        assert!(!l.is_held());
        assert!(l.try_acquire());
        assert!(l.is_held());
        assert!(!l.try_acquire());
        // SAFETY: held by this test.
        unsafe { l.release() };
        assert!(!l.is_held());
        l.acquire();
        assert!(l.is_held());
        // SAFETY: held by this test.
        unsafe { l.release() };
    }

    #[test]
    fn four_threads_count_exactly() {
        hammer_yielding(RawBackoff::new(), 4, 20_000);
    }
}
