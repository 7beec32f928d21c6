//! The interfaces the lab drives every lock through.
//!
//! locklab's own locks and `parking_lot` implement `lock_api::RawMutex`; the
//! `std` and `pthread` peers and the physical floor cannot (std's guard
//! borrows the mutex), so the lab runs a critical section through a closure:
//! [`LabLock::with`]. A delegation lock (flat combining) has no lock and
//! unlock at all: it runs its callers' closures on whichever thread is
//! combining. [`LabMutex`] is what every mutex of the registry is measured
//! through, both kinds: every [`LabLock`] is one (the section runs on the
//! calling thread), and so is [`Combining`] (it runs on the combiner's).
//! Each benchmark is generic over `L: LabMutex` and instantiated per lock
//! by the registry, so the closure is inlined and no `dyn` call sits on the
//! measured path; a `LabLock`'s section compiles to what `with` alone
//! gives.

/// A mutual-exclusion lock the lab can construct and run critical sections
/// under, on the calling thread.
pub trait LabLock: Send + Sync + 'static {
    /// An unlocked lock.
    fn new() -> Self;
    /// Runs `f` while holding the lock.
    fn with<R>(&self, f: impl FnOnce() -> R) -> R;
}

/// A mutex the lab measures: something that runs a critical section under
/// mutual exclusion with every other section run through it, on the
/// calling thread or on another one. The section must therefore be `Send`
/// (and so must its result): it carries what it needs as values, or as
/// references to data shared by every thread, never as references to the
/// caller's thread-locals.
pub trait LabMutex: Send + Sync + 'static {
    /// Whether a section may run on another thread than its caller's (a
    /// delegation lock's combiner). What a study records of the thread
    /// that *ran* a section (where the protected data went) must then be
    /// read on that thread, inside the section.
    const DELEGATES: bool;
    /// An unlocked mutex.
    fn new() -> Self;
    /// Runs `cs` under mutual exclusion and returns its result here.
    fn execute<R: Send>(&self, cs: impl FnOnce() -> R + Send) -> R;
}

impl<L: LabLock> LabMutex for L {
    const DELEGATES: bool = false;

    #[inline]
    fn new() -> Self {
        <L as LabLock>::new()
    }

    #[inline(always)]
    fn execute<R: Send>(&self, cs: impl FnOnce() -> R + Send) -> R {
        self.with(cs)
    }
}

/// `locklab::CombiningMutex` (flat combining, `combining` in the registry)
/// as a [`LabMutex`]: each section is a request that whichever thread
/// holds the combiner's lock runs, its own and the others' published ones
/// in turn. It protects no value of its own (`()`): the section touches the
/// same shared data as under any other lock of the same study, so the work
/// is the same and only who runs it differs.
pub struct Combining(locklab::CombiningMutex<()>);

impl LabMutex for Combining {
    const DELEGATES: bool = true;

    #[inline]
    fn new() -> Self {
        Combining(locklab::CombiningMutex::new(()))
    }

    #[inline(always)]
    fn execute<R: Send>(&self, cs: impl FnOnce() -> R + Send) -> R {
        self.0.apply(|_| cs())
    }
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
