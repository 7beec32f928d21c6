//! Building blocks shared by the algorithms: the std/loom atomics shim,
//! backoff delays, compact thread indexes, the per-thread queue-node arrays,
//! the pool of migrating CLH nodes and the thread-exit hook that hands the
//! per-thread parts back.
//!
//! Nothing on a lock's path here allocates (std build): with the
//! interposer, a `malloc` that takes pthread mutexes takes locklab's locks,
//! and an allocation on their path would re-enter it. The modules that hold
//! per-thread or lazily built state (`thread_index`, `nodes`, `clh_pool`,
//! `thread_exit`) each say how they avoid it.

/// Defines a `const fn` normally and a plain `fn` under loom, whose atomics
/// cannot be built in a const. Lock constructors use it so the same
/// algorithm code serves both the `lock_api` layer and the model checks.
macro_rules! loom_const_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty $body:block) => {
        $(#[$m])* #[cfg(not(loom))] $vis const fn $name($($arg: $ty),*) -> $ret $body
        $(#[$m])* #[cfg(loom)] $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}

/// Implements `lock_api::RawMutex` with a `GuardSend` guard for a lock whose
/// inherent `acquire`, `try_acquire -> bool`, `unsafe release` and `is_held`
/// are the algorithm: the same thin layer for every lock that needs no
/// per-acquisition state. Write the lock's own SAFETY argument (why at most
/// one guard exists at a time, and how acquire and release are ordered)
/// above each use; generic locks list their generics in brackets:
/// `guardless_raw_mutex!([P: SpinPolicy] RawHybridMutex<P>);`.
#[cfg(not(loom))]
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
#[cfg(not(loom))]
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

pub(crate) use loom_const_fn;
#[cfg(not(loom))]
pub(crate) use {guardless_raw_mutex, guardless_raw_rwlock};

pub mod backoff;
pub mod clh_pool;
pub mod nodes;
pub mod pause;
pub(crate) mod spares;
pub mod sync;
#[cfg(all(test, not(loom)))]
pub(crate) mod testing;
#[cfg(not(loom))]
pub(crate) mod thread_exit;
pub mod thread_index;

/// How far into its first 4 KiB a fresh `mmap`ed chunk of nodes may start
/// (see [`colour`]); such a chunk maps this much more than it uses.
#[cfg(not(loom))]
pub(crate) const COLOUR_SPAN: usize = 4096;

/// Where in a fresh `mmap`ed chunk its first node starts: a multiple of
/// `step` (a power of two, the nodes' alignment) below [`COLOUR_SPAN`],
/// different from chunk to chunk and never 0. This is the cache colouring
/// of Bonwick's slab allocator, for one more reason than spreading chunks
/// over cache sets: every `mmap`-based arena (the interposer's, for lock
/// cells) puts its first object at the start of a page, and x86 cores
/// check whether a load may depend on an earlier store by the low 12
/// address bits only, so a node whose page offset equals its lock word's
/// makes the tail swap wait on the node's initialising stores ("4K
/// aliasing"). Heap-allocated nodes landed at arbitrary offsets; chunks
/// starting at offset 0 measurably slowed uncontended MCS (a few ns a pair).
#[cfg(not(loom))]
pub(crate) fn colour(step: usize) -> usize {
    use core::sync::atomic::{AtomicUsize, Ordering};
    // Only a spread is wanted, not an order.
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    debug_assert!(step.is_power_of_two() && step <= COLOUR_SPAN);
    let colours = COLOUR_SPAN / step;
    if colours < 2 {
        return 0;
    }
    (NEXT.fetch_add(1, Ordering::Relaxed) % (colours - 1) + 1) * step
}

/// A fresh anonymous private mapping of `len` bytes (zeroed, page-aligned,
/// never from the allocator: the caller may be inside a `malloc` that takes
/// locklab's locks); aborts with `what` (one line) if the kernel has no
/// memory for it.
#[cfg(not(loom))]
pub fn map_anon(len: usize, what: &str) -> *mut u8 {
    try_map_anon(len).unwrap_or_else(|| abort_with(what))
}

/// A fresh anonymous private mapping of `len` bytes (zeroed,
/// page-aligned, never from the allocator: the caller may be inside a
/// `malloc` that takes locklab's locks), or `None` if the kernel has no
/// memory for it.
#[cfg(not(loom))]
pub fn try_map_anon(len: usize) -> Option<*mut u8> {
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing touches no existing memory.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p.cast())
}

/// Writes `msg` to standard error and aborts, without allocating (a
/// formatted `eprintln!` might, and the caller may be inside a `malloc`
/// that takes locklab's locks): for the few conditions a lock cannot
/// recover from.
#[cfg(not(loom))]
#[cold]
pub fn abort_with(msg: &str) -> ! {
    // SAFETY: `msg` is valid for `msg.len()` bytes; a short or failed write
    // loses only the message.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
    std::process::abort()
}

pub use crossbeam_utils::CachePadded;
