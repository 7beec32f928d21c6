//! `tas`: the test-and-set spin lock.
//!
//! The simplest lock: every attempt is an atomic swap of `true` into one
//! shared flag, so every waiting CPU keeps pulling the cache line over in
//! exclusive state. Seed 001 (Bueso) starts from the same kind of lock, a
//! loop of compare-and-swap attempts, which CCAS and the queue locks
//! improve on.
//!
//! Orderings: the winning swap is `Acquire`, so the critical section cannot
//! float above it and sees everything the previous owner wrote; the release
//! store is `Release`, publishing the critical section to the next winner.
//! Failed swaps carry no data, so `Acquire` on them costs nothing extra on
//! x86 and is simply what `swap` gives.

use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{spin_loop, AtomicBool, Ordering};

/// Test-and-set spin lock. See the module documentation.
#[derive(Debug)]
pub struct RawTas {
    locked: AtomicBool,
}

impl RawTas {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { locked: AtomicBool::new(false) }
        }
    }

    /// Spins until the lock is ours.
    #[inline]
    pub fn acquire(&self) {
        while self.locked.swap(true, Ordering::Acquire) {
            spin_loop();
        }
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        !self.locked.swap(true, Ordering::Acquire)
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

impl Default for RawTas {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawTas {
    const INFO: LockInfo = LockInfo {
        name: "tas",
        family: Family::Spin,
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "test-and-set; Bueso, Scalability Techniques for Practical Synchronization Primitives (seed 001)",
        summary: "atomic swap on one flag until it was free",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawTas;

    // SAFETY: `acquire` returns only once this thread's swap turned the flag
    // from false to true, so at most one guard exists at a time.
    crate::guardless_raw_mutex!(RawTas);

    /// A mutex protected by a test-and-set spin lock.
    pub type TasMutex<T> = lock_api::Mutex<RawTas, T>;
}

#[cfg(not(loom))]
pub use raw::TasMutex;
