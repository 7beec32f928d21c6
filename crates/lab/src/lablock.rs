//! The one interface the lab drives every lock through.
//!
//! locklab's own locks and `parking_lot` implement `lock_api::RawMutex`; the
//! `std` and `pthread` peers and the physical floor cannot (std's guard
//! borrows the mutex), so the lab runs a critical section through a closure:
//! [`LabLock::with`]. Each benchmark is generic over `L: LabLock` and
//! instantiated per lock by the registry, so the closure is inlined and no
//! `dyn` call sits on the measured path.

/// A mutual-exclusion lock the lab can construct and run critical sections
/// under.
pub trait LabLock: Send + Sync + 'static {
    /// An unlocked lock.
    fn new() -> Self;
    /// Runs `f` while holding the lock.
    fn with<R>(&self, f: impl FnOnce() -> R) -> R;
}

/// Adapter for any `lock_api::RawMutex` (locklab's locks, parking_lot).
pub struct Raw<R>(R);

impl<R> LabLock for Raw<R>
where
    R: lock_api::RawMutex + Send + Sync + 'static,
{
    #[inline]
    fn new() -> Self {
        Raw(R::INIT)
    }

    #[inline(always)]
    fn with<T>(&self, f: impl FnOnce() -> T) -> T {
        let g = self.0.lock();
        let r = f();
        // SAFETY: `g` is the guard of the acquisition just made, on this thread.
        unsafe { self.0.unlock(g) };
        r
    }
}
