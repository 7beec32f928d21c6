//! Building blocks shared by the algorithms: the std/loom atomics shim,
//! backoff delays, compact thread indexes, the per-thread queue-node arrays
//! and the pool of migrating CLH nodes.

/// Defines a `const fn` normally and a plain `fn` under loom, whose atomics
/// cannot be built in a const. Lock constructors use it so the same
/// algorithm code serves both the `lock_api` layer and the model checks.
#[doc(hidden)]
#[macro_export]
macro_rules! loom_const_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident() -> $ret:ty $body:block) => {
        $(#[$m])* #[cfg(not(loom))] $vis const fn $name() -> $ret $body
        $(#[$m])* #[cfg(loom)] $vis fn $name() -> $ret $body
    };
}

/// Implements `lock_api::RawMutex` with a `GuardSend` guard for a lock whose
/// inherent `acquire`, `try_acquire -> bool`, `unsafe release` and `is_held`
/// are the algorithm: the same thin layer for every lock that needs no
/// per-acquisition state. Write the lock's own SAFETY argument (why at most
/// one guard exists at a time, and how acquire and release are ordered)
/// above each use; generic locks list their generics in brackets:
/// `guardless_raw_mutex!([P: SpinPolicy] RawHybridMutex<P>);`.
#[doc(hidden)]
#[macro_export]
macro_rules! guardless_raw_mutex {
    ([$($gen:tt)*] $ty:ty) => {
        // SAFETY: the invoker states above the macro why the algorithm
        // excludes; this layer only forwards to it.
        unsafe impl<$($gen)*> lock_api::RawMutex for $ty {
            const INIT: Self = Self::new();
            type Guard = lock_api::GuardSend;

            #[inline]
            fn lock(&self) -> lock_api::GuardSend {
                self.acquire();
                lock_api::GuardSend::new()
            }

            #[inline]
            fn try_lock(&self) -> Option<lock_api::GuardSend> {
                self.try_acquire().then(lock_api::GuardSend::new)
            }

            #[inline]
            unsafe fn unlock(&self, _guard: lock_api::GuardSend) {
                // SAFETY: the caller passes the guard of a held lock.
                unsafe { self.release() }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.is_held()
            }
        }
    };
    ($ty:ty) => {
        $crate::guardless_raw_mutex!([] $ty);
    };
}

/// Implements `lock_api::RawRwLock` with `GuardSend` guards for a
/// reader-writer lock whose inherent `acquire_shared`,
/// `try_acquire_shared -> bool`, `unsafe release_shared`,
/// `acquire_exclusive`, `try_acquire_exclusive -> bool`,
/// `unsafe release_exclusive`, `is_held` and `is_held_exclusive` are the
/// algorithm: the reader-writer counterpart of [`guardless_raw_mutex!`].
/// Write the lock's own SAFETY argument (why a write guard excludes every
/// other guard, and how entering and leaving are ordered) above each use.
#[doc(hidden)]
#[macro_export]
macro_rules! guardless_raw_rwlock {
    ($ty:ty) => {
        // SAFETY: the invoker states above the macro why the algorithm
        // excludes; this layer only forwards to it.
        unsafe impl lock_api::RawRwLock for $ty {
            const INIT: Self = Self::new();
            type SharedGuard = lock_api::GuardSend;
            type ExclusiveGuard = lock_api::GuardSend;

            #[inline]
            fn lock_shared(&self) -> lock_api::GuardSend {
                self.acquire_shared();
                lock_api::GuardSend::new()
            }

            #[inline]
            fn try_lock_shared(&self) -> Option<lock_api::GuardSend> {
                self.try_acquire_shared().then(lock_api::GuardSend::new)
            }

            #[inline]
            unsafe fn unlock_shared(&self, _: lock_api::GuardSend) {
                // SAFETY: the caller holds a read lock.
                unsafe { self.release_shared() }
            }

            #[inline]
            fn lock_exclusive(&self) -> lock_api::GuardSend {
                self.acquire_exclusive();
                lock_api::GuardSend::new()
            }

            #[inline]
            fn try_lock_exclusive(&self) -> Option<lock_api::GuardSend> {
                self.try_acquire_exclusive().then(lock_api::GuardSend::new)
            }

            #[inline]
            unsafe fn unlock_exclusive(&self, _: lock_api::GuardSend) {
                // SAFETY: the caller holds the write lock.
                unsafe { self.release_exclusive() }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.is_held()
            }

            #[inline]
            fn is_locked_exclusive(&self) -> bool {
                self.is_held_exclusive()
            }
        }
    };
}

pub mod backoff;
pub mod clh_pool;
pub mod nodes;
pub mod pause;
pub mod sync;
#[cfg(all(test, not(loom)))]
pub(crate) mod testing;
pub mod thread_index;

pub use crossbeam_utils::CachePadded;
