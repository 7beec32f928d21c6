//! The locks the interposer can put under a program, each as a table of
//! functions monomorphized for its type, and the storage they run on.
//!
//! A lock lives in a *cell*: the lock itself and the guard its holder's
//! acquisition returned (a queue lock's guard names the holder's queue
//! node; `lock_api` hands it back to `unlock`, and the C interface has no
//! place for it but the object). Only the holder reads or writes the
//! guard, between its acquisition and its release, so the lock's own
//! acquire/release ordering covers it.

use core::cell::UnsafeCell;
use core::mem::{align_of, size_of, MaybeUninit};
use lock_api::{RawMutex, RawRwLock};
use locklab::Described;

/// A mutex and its holder's guard.
#[repr(C)]
pub(crate) struct MutexCell<R: RawMutex> {
    lock: R,
    guard: UnsafeCell<MaybeUninit<R::Guard>>,
}

/// One mutex type's operations on a cell at a raw address.
pub struct MutexOps {
    /// The registry name (`mcs`, `spin-park(ticket)`, …).
    pub name: &'static str,
    /// Whether the lock only spins (no futex): such a lock also works in
    /// memory shared between processes, and can stand in for
    /// `pthread_spinlock_t`.
    pub spins: bool,
    /// Size and alignment of its cell.
    pub size: usize,
    /// See `size`.
    pub align: usize,
    /// Writes a fresh, unlocked cell.
    pub init: unsafe fn(*mut u8),
    /// Acquires, keeping the guard in the cell.
    pub lock: unsafe fn(*mut u8),
    /// Acquires if free at once, keeping the guard; whether it did.
    pub try_lock: unsafe fn(*mut u8) -> bool,
    /// Releases with the kept guard.
    pub unlock: unsafe fn(*mut u8),
    /// Times this many uncontended acquire/release pairs of a lock of this
    /// type used directly from Rust (no C interface, no cell): ns in all.
    pub direct: fn(u64) -> u64,
    /// `pthread_mutex_lock`, `_trylock` and `_unlock` for this type,
    /// monomorphized: a default-type mutex of ours is handled with the
    /// lock's code inlined; anything else goes the general way
    /// ([`crate::mutex`]).
    pub c_lock: crate::config::MutexFn,
    /// See `c_lock`.
    pub c_trylock: crate::config::MutexFn,
    /// See `c_lock`.
    pub c_unlock: crate::config::MutexFn,
    /// The same three, counted (`LOCKLAB_PROFILE`).
    pub c_lock_counted: crate::config::MutexFn,
    /// See `c_lock_counted`.
    pub c_trylock_counted: crate::config::MutexFn,
    /// See `c_lock_counted`.
    pub c_unlock_counted: crate::config::MutexFn,
}

/// See [`MutexOps::direct`].
fn mutex_direct<R: RawMutex>(pairs: u64) -> u64 {
    let lock = R::INIT;
    let mut sink = 0u64;
    let start = std::time::Instant::now();
    for i in 0..pairs {
        let l = core::hint::black_box(&lock);
        let g = l.lock();
        // As `c/uncontended.c` does inside its critical section.
        // SAFETY: a live local.
        unsafe { core::ptr::write_volatile(&mut sink, i) };
        // SAFETY: this thread acquired it just now, with this guard.
        unsafe { l.unlock(g) };
    }
    start.elapsed().as_nanos() as u64
}

/// # Safety
/// `p` is valid for writes of a `MutexCell<R>` and suitably aligned.
pub(crate) unsafe fn mutex_init<R: RawMutex>(p: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        p.cast::<MutexCell<R>>().write(MutexCell {
            lock: R::INIT,
            guard: UnsafeCell::new(MaybeUninit::uninit()),
        });
    }
}

/// # Safety
/// `p` holds a cell written by [`mutex_init`] for `R`.
#[inline]
pub(crate) unsafe fn mutex_lock<R: RawMutex>(p: *mut u8) {
    let c = p.cast::<MutexCell<R>>();
    // SAFETY: a live cell; the lock is shared between threads by design
    // (interior mutability), and the guard slot is ours once we hold it.
    unsafe {
        let g = (*c).lock.lock();
        (*(*c).guard.get()).write(g);
    }
}

/// # Safety
/// As for [`mutex_lock`].
#[inline]
pub(crate) unsafe fn mutex_try_lock<R: RawMutex>(p: *mut u8) -> bool {
    let c = p.cast::<MutexCell<R>>();
    // SAFETY: as in `mutex_lock`.
    unsafe {
        match (*c).lock.try_lock() {
            Some(g) => {
                (*(*c).guard.get()).write(g);
                true
            }
            None => false,
        }
    }
}

/// # Safety
/// As for [`mutex_lock`], and the calling thread holds the lock.
#[inline]
pub(crate) unsafe fn mutex_unlock<R: RawMutex>(p: *mut u8) {
    let c = p.cast::<MutexCell<R>>();
    // SAFETY: the holder wrote the guard when it acquired; it is read once
    // here, before the release that lets the next holder overwrite it.
    unsafe {
        let g = (*(*c).guard.get()).assume_init_read();
        (*c).lock.unlock(g);
    }
}

/// The operations of mutex type `R`.
pub const fn mutex_ops<R: RawMutex + Described>() -> MutexOps {
    MutexOps {
        name: R::INFO.name,
        spins: !R::INFO.blocking,
        size: size_of::<MutexCell<R>>(),
        align: align_of::<MutexCell<R>>(),
        init: mutex_init::<R>,
        lock: mutex_lock::<R>,
        try_lock: mutex_try_lock::<R>,
        unlock: mutex_unlock::<R>,
        direct: mutex_direct::<R>,
        c_lock: crate::mutex::typed_lock::<R>,
        c_trylock: crate::mutex::typed_trylock::<R>,
        c_unlock: crate::mutex::typed_unlock::<R>,
        c_lock_counted: crate::mutex::typed_lock_counted::<R>,
        c_trylock_counted: crate::mutex::typed_trylock_counted::<R>,
        c_unlock_counted: crate::mutex::typed_unlock_counted::<R>,
    }
}

/// A reader-writer lock and its writer's guard.
#[repr(C)]
struct RwCell<R: RawRwLock> {
    lock: R,
    guard: UnsafeCell<MaybeUninit<R::ExclusiveGuard>>,
}

/// One reader-writer lock type's operations on a cell at a raw address.
pub struct RwOps {
    /// The registry name (`rw-fair`, `rwsem`, …).
    pub name: &'static str,
    /// Size and alignment of its cell.
    pub size: usize,
    /// See `size`.
    pub align: usize,
    /// Whether a reader's guard carries something (`brlock`'s slot): the
    /// caller keeps it per thread between `lock_shared` and
    /// `unlock_shared`. Otherwise the tokens below are 0.
    pub reader_token: bool,
    /// Writes a fresh, free cell.
    pub init: unsafe fn(*mut u8),
    /// Acquires shared; the reader's token.
    pub lock_shared: unsafe fn(*mut u8) -> u64,
    /// Acquires shared if that is possible at once.
    pub try_lock_shared: unsafe fn(*mut u8) -> Option<u64>,
    /// Releases a shared acquisition by its token.
    pub unlock_shared: unsafe fn(*mut u8, u64),
    /// Acquires exclusive, keeping the guard in the cell.
    pub lock_exclusive: unsafe fn(*mut u8),
    /// Acquires exclusive if free at once.
    pub try_lock_exclusive: unsafe fn(*mut u8) -> bool,
    /// Releases the exclusive acquisition.
    pub unlock_exclusive: unsafe fn(*mut u8),
    /// Acquires shared if no writer holds it, passing waiting writers (a
    /// real-time reader's right in POSIX, see [`crate::rwlock`]); `None`
    /// where the algorithm has no such entry. Only for locks whose
    /// readers carry no token.
    pub shared_past_waiters: Option<unsafe fn(*mut u8) -> bool>,
}

/// A reader-writer lock that can let a reader pass waiting writers.
pub trait PastWaiters: RawRwLock {
    /// See [`RwOps::shared_past_waiters`].
    fn try_lock_shared_past_waiters(&self) -> bool;
}

impl PastWaiters for locklab::RawRwFair {
    fn try_lock_shared_past_waiters(&self) -> bool {
        self.try_acquire_shared_past_waiters()
    }
}

impl PastWaiters for locklab::RawRwWriter {
    fn try_lock_shared_past_waiters(&self) -> bool {
        self.try_acquire_shared_past_waiters()
    }
}

impl PastWaiters for locklab::RawRwSem {
    fn try_lock_shared_past_waiters(&self) -> bool {
        self.try_acquire_shared_past_waiters()
    }
}

/// # Safety
/// As for [`rw_lock_shared`].
unsafe fn rw_shared_past_waiters<R: PastWaiters>(p: *mut u8) -> bool {
    // SAFETY: a live cell, shared by design.
    unsafe { (*p.cast::<RwCell<R>>()).lock.try_lock_shared_past_waiters() }
}

/// A reader's guard as the 8 bytes the caller keeps.
fn token_of<G>(g: G) -> u64 {
    const { assert!(size_of::<G>() <= 8) };
    let mut t = 0u64;
    // SAFETY: `G` fits in the 8 bytes (checked above); its bytes are moved
    // into `t` and `g` is not dropped, so `from_token` can give it back.
    unsafe {
        core::ptr::copy_nonoverlapping(
            (&g as *const G).cast::<u8>(),
            (&mut t as *mut u64).cast::<u8>(),
            size_of::<G>(),
        )
    };
    core::mem::forget(g);
    t
}

/// # Safety
/// `t` came from [`token_of`] for the same `G`, and is used once.
unsafe fn from_token<G>(t: u64) -> G {
    // SAFETY: the caller's contract: these bytes are a `G` moved out.
    unsafe { core::ptr::read_unaligned((&t as *const u64).cast::<G>()) }
}

/// # Safety
/// `p` is valid for writes of an `RwCell<R>` and suitably aligned.
unsafe fn rw_init<R: RawRwLock>(p: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        p.cast::<RwCell<R>>().write(RwCell {
            lock: R::INIT,
            guard: UnsafeCell::new(MaybeUninit::uninit()),
        });
    }
}

/// # Safety
/// `p` holds a cell written by [`rw_init`] for `R`.
unsafe fn rw_lock_shared<R: RawRwLock>(p: *mut u8) -> u64 {
    // SAFETY: a live cell, shared by design.
    token_of(unsafe { (*p.cast::<RwCell<R>>()).lock.lock_shared() })
}

/// # Safety
/// As for [`rw_lock_shared`].
unsafe fn rw_try_lock_shared<R: RawRwLock>(p: *mut u8) -> Option<u64> {
    // SAFETY: a live cell, shared by design.
    unsafe { (*p.cast::<RwCell<R>>()).lock.try_lock_shared() }.map(token_of)
}

/// # Safety
/// As for [`rw_lock_shared`], and `t` is the token of this thread's shared
/// acquisition.
unsafe fn rw_unlock_shared<R: RawRwLock>(p: *mut u8, t: u64) {
    // SAFETY: the caller's contract.
    unsafe { (*p.cast::<RwCell<R>>()).lock.unlock_shared(from_token(t)) }
}

/// # Safety
/// As for [`rw_lock_shared`].
unsafe fn rw_lock_exclusive<R: RawRwLock>(p: *mut u8) {
    let c = p.cast::<RwCell<R>>();
    // SAFETY: as in `mutex_lock`: the guard slot is the writer's.
    unsafe {
        let g = (*c).lock.lock_exclusive();
        (*(*c).guard.get()).write(g);
    }
}

/// # Safety
/// As for [`rw_lock_shared`].
unsafe fn rw_try_lock_exclusive<R: RawRwLock>(p: *mut u8) -> bool {
    let c = p.cast::<RwCell<R>>();
    // SAFETY: as in `mutex_lock`.
    unsafe {
        match (*c).lock.try_lock_exclusive() {
            Some(g) => {
                (*(*c).guard.get()).write(g);
                true
            }
            None => false,
        }
    }
}

/// # Safety
/// As for [`rw_lock_shared`], and the calling thread holds it exclusive.
unsafe fn rw_unlock_exclusive<R: RawRwLock>(p: *mut u8) {
    let c = p.cast::<RwCell<R>>();
    // SAFETY: as in `mutex_unlock`.
    unsafe {
        let g = (*(*c).guard.get()).assume_init_read();
        (*c).lock.unlock_exclusive(g);
    }
}

/// The operations of reader-writer lock type `R`.
pub const fn rw_ops<R: RawRwLock + Described>() -> RwOps {
    RwOps {
        name: R::INFO.name,
        size: size_of::<RwCell<R>>(),
        align: align_of::<RwCell<R>>(),
        reader_token: size_of::<R::SharedGuard>() > 0,
        init: rw_init::<R>,
        lock_shared: rw_lock_shared::<R>,
        try_lock_shared: rw_try_lock_shared::<R>,
        unlock_shared: rw_unlock_shared::<R>,
        lock_exclusive: rw_lock_exclusive::<R>,
        try_lock_exclusive: rw_try_lock_exclusive::<R>,
        unlock_exclusive: rw_unlock_exclusive::<R>,
        shared_past_waiters: None,
    }
}

/// The operations of reader-writer lock type `R`, whose readers can pass
/// waiting writers.
pub const fn rw_ops_past<R: PastWaiters + Described>() -> RwOps {
    const { assert!(size_of::<R::SharedGuard>() == 0) };
    RwOps {
        shared_past_waiters: Some(rw_shared_past_waiters::<R>),
        ..rw_ops::<R>()
    }
}
