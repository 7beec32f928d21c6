//! `ttas`: the test-and-test-and-set spin lock.
//!
//! Seed 001 (Bueso) calls it CCAS, "compare compare-and-swap", after Rudolph
//! & Segall (ISCA 1984): a waiter reads the flag until it looks free and only
//! then makes one atomic attempt. Reads are served from the waiter's own
//! cached copy of the line, so while the lock is held the waiters generate no
//! coherence traffic; only a release (which invalidates their copies) and the
//! burst of attempts after it do. [`RawTas`](super::RawTas) instead pulls
//! the line over in exclusive state on every spin.
//!
//! The attempt is a `compare_exchange(false, true)`, not a swap: a failed
//! compare-exchange writes nothing. On the hardware this is equivalent, but it
//! keeps the lock's waits made of loads, which loom can exhaust (a loop of
//! failing swaps is a new conflicting write every turn).
//!
//! The first attempt is made before looking: an uncontended acquire is then
//! a single read-modify-write, where reading first would fetch the line in
//! shared state and then again in exclusive state.
//!
//! Orderings: a successful attempt is `Acquire`, pairing with the `Release`
//! store of the previous owner, so the critical section sees everything the
//! previous one wrote and cannot begin before the lock is ours. The
//! spin-reads and failed attempts only decide whether to try again; they
//! carry no data, so `Relaxed`.

use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{spin_loop, AtomicBool, Ordering};

/// Test-and-test-and-set spin lock. See the module documentation.
#[derive(Debug)]
pub struct RawTtas {
    locked: AtomicBool,
}

impl RawTtas {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { locked: AtomicBool::new(false) }
        }
    }

    /// Spins until the lock is ours.
    #[inline]
    pub fn acquire(&self) {
        if !self.try_acquire() {
            self.acquire_contended();
        }
    }

    #[cold]
    fn acquire_contended(&self) {
        loop {
            while self.locked.load(Ordering::Relaxed) {
                spin_loop();
            }
            if self.try_acquire() {
                return;
            }
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

impl Default for RawTtas {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawTtas {
    const INFO: LockInfo = LockInfo {
        name: "ttas",
        family: Family::Spin,
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "test-and-test-and-set (CCAS): Rudolph & Segall, ISCA 1984; Bueso, Scalability Techniques for Practical Synchronization Primitives (seed 001)",
        summary: "spin reading the flag until it looks free, then one compare-and-swap",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawTtas;

    // SAFETY: `acquire` returns only once this thread's compare-exchange
    // turned the flag from false to true, so at most one guard exists at a
    // time; the success is `Acquire` and the release `Release`.
    crate::guardless_raw_mutex!(RawTtas);

    /// A mutex protected by a test-and-test-and-set spin lock.
    pub type TtasMutex<T> = lock_api::Mutex<RawTtas, T>;
}

#[cfg(not(loom))]
pub use raw::TtasMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::hammer_yielding;

    #[test]
    fn try_acquire_fails_while_held_and_succeeds_after_release() {
        let l = RawTtas::new();
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
        hammer_yielding(RawTtas::new(), 4, 20_000);
    }
}
