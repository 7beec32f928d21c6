//! Locks from outside locklab, measured beside it in the same process: the
//! standard library's mutex and reader-writer lock, glibc's
//! `pthread_mutex_t` and `pthread_rwlock_t`. `parking_lot` needs no
//! adapter: it implements `lock_api::RawMutex` itself.

use crate::core::lablock::{LabLock, LabRwLock};
use std::cell::UnsafeCell;

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
