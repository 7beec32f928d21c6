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

/// A reader-writer lock the lab can construct and run read and write
/// sections under (the same closure scheme as [`LabLock`]).
pub trait LabRwLock: Send + Sync + 'static {
    /// An unlocked lock.
    fn new() -> Self;
    /// Runs `f` while holding the lock shared.
    fn read<R>(&self, f: impl FnOnce() -> R) -> R;
    /// Runs `f` while holding the lock exclusively.
    fn write<R>(&self, f: impl FnOnce() -> R) -> R;
}

/// Adapter for any `lock_api::RawRwLock` (locklab's, parking_lot's).
pub struct RawRw<R>(R);

impl<R> LabRwLock for RawRw<R>
where
    R: lock_api::RawRwLock + Send + Sync + 'static,
{
    #[inline]
    fn new() -> Self {
        RawRw(R::INIT)
    }

    #[inline(always)]
    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        let g = self.0.lock_shared();
        let r = f();
        // SAFETY: `g` is the guard of the shared acquisition just made.
        unsafe { self.0.unlock_shared(g) };
        r
    }

    #[inline(always)]
    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        let g = self.0.lock_exclusive();
        let r = f();
        // SAFETY: `g` is the guard of the exclusive acquisition just made.
        unsafe { self.0.unlock_exclusive(g) };
        r
    }
}

/// A mutex seen as a reader-writer lock whose readers exclude each other
/// too: code written over [`LabRwLock`] runs over any mutex through this.
pub struct Exclusive<L>(L);

impl<L: LabLock> LabRwLock for Exclusive<L> {
    #[inline]
    fn new() -> Self {
        Exclusive(L::new())
    }

    #[inline(always)]
    fn read<T>(&self, f: impl FnOnce() -> T) -> T {
        self.0.with(f)
    }

    #[inline(always)]
    fn write<T>(&self, f: impl FnOnce() -> T) -> T {
        self.0.with(f)
    }
}
