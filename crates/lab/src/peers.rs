//! Locks from outside locklab, measured beside it in the same process: the
//! standard library's mutex, glibc's `pthread_mutex_t`, and two references
//! for the uncontended path: the physical floor (one atomic swap plus one
//! release store on an uncontended word: what any lock must at least pay)
//! and the two-RMW floor (what a lock pays whose release must atomically
//! check for waiters). `parking_lot` needs no adapter: it implements
//! `lock_api::RawMutex` itself.

use crate::lablock::{LabLock, LabRwLock};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};

/// `std::sync::Mutex<()>` (futex-based on Linux).
pub struct StdPeer(std::sync::Mutex<()>);

impl LabLock for StdPeer {
    fn new() -> Self {
        StdPeer(std::sync::Mutex::new(()))
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        // A poisoned lock still excludes; the lab's workloads do not panic.
        let _g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        f()
    }
}

/// glibc's default `pthread_mutex_t` through libc.
pub struct PthreadPeer(Box<UnsafeCell<libc::pthread_mutex_t>>);

// SAFETY: a pthread mutex is made to be shared between threads; it is boxed
// so its address never changes after initialisation.
unsafe impl Send for PthreadPeer {}
// SAFETY: as above.
unsafe impl Sync for PthreadPeer {}

impl LabLock for PthreadPeer {
    fn new() -> Self {
        PthreadPeer(Box::new(UnsafeCell::new(libc::PTHREAD_MUTEX_INITIALIZER)))
    }

    #[inline(always)]
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: the mutex is initialised and pinned in its box; lock and
        // unlock are paired on this thread. Errors (EINVAL, EDEADLK) cannot
        // occur for a default mutex used this way.
        unsafe { libc::pthread_mutex_lock(self.0.get()) };
        let r = f();
        // SAFETY: as above.
        unsafe { libc::pthread_mutex_unlock(self.0.get()) };
        r
    }
}

impl Drop for PthreadPeer {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: nobody holds or waits for the mutex.
        unsafe { libc::pthread_mutex_destroy(self.0.get()) };
    }
}

/// `std::sync::RwLock<()>` (futex-based on Linux).
pub struct StdRwPeer(std::sync::RwLock<()>);

impl LabRwLock for StdRwPeer {
    fn new() -> Self {
        StdRwPeer(std::sync::RwLock::new(()))
    }

    #[inline(always)]
    fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        // A panic inside `f` poisons the lock; the lab never panics while
        // holding it, and a poisoned guard still excludes.
        let _g = self.0.read().unwrap_or_else(|e| e.into_inner());
        f()
    }

    #[inline(always)]
    fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        let _g = self.0.write().unwrap_or_else(|e| e.into_inner());
        f()
    }
}

/// glibc's default `pthread_rwlock_t` (reader-preferring) through libc.
pub struct PthreadRwPeer(Box<UnsafeCell<libc::pthread_rwlock_t>>);

// SAFETY: a pthread rwlock is made to be shared between threads; it is
// boxed so its address never changes after initialisation.
unsafe impl Send for PthreadRwPeer {}
// SAFETY: as above.
unsafe impl Sync for PthreadRwPeer {}

impl LabRwLock for PthreadRwPeer {
    fn new() -> Self {
        PthreadRwPeer(Box::new(UnsafeCell::new(libc::PTHREAD_RWLOCK_INITIALIZER)))
    }

    #[inline(always)]
    fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: initialised and pinned in its box; lock and unlock are
        // paired on this thread. EAGAIN (too many readers) cannot occur with
        // the lab's thread counts, and a default rwlock reports no EDEADLK
        // for a thread that holds it shared only once.
        unsafe { libc::pthread_rwlock_rdlock(self.0.get()) };
        let r = f();
        // SAFETY: as above.
        unsafe { libc::pthread_rwlock_unlock(self.0.get()) };
        r
    }

    #[inline(always)]
    fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        // SAFETY: as in `read`.
        unsafe { libc::pthread_rwlock_wrlock(self.0.get()) };
        let r = f();
        // SAFETY: as above.
        unsafe { libc::pthread_rwlock_unlock(self.0.get()) };
        r
    }
}

impl Drop for PthreadRwPeer {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: nobody holds or waits for the lock.
        unsafe { libc::pthread_rwlock_destroy(self.0.get()) };
    }
}

/// The physical floor of an uncontended acquire+release: one `swap` with
/// Acquire and one Release store on a word no other thread touches. It is
/// not a lock anyone should use (it never waits), so it is only measured by
/// `bench uncontended`, never by the contended benchmarks or torture.
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
/// node) can release with a store. Measured only by `bench uncontended`.
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
