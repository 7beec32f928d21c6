//! `pthread_mutex_*` over the chosen mutex.
//!
//! The object is glibc's `pthread_mutex_t` (40 bytes on x86-64). Its
//! `__kind` word (offset 16) keeps glibc's meaning, so that the static
//! initializers (`PTHREAD_MUTEX_INITIALIZER`, and the recursive and
//! error-checking ones, which set only `__kind`) need no init call, and so
//! that an object glibc set up itself (process-shared, robust, or with a
//! priority protocol: those bits of `__kind`) is recognized on every call
//! and handed back to glibc. The rest is ours:
//!
//! | offset | glibc       | here                                      |
//! |--------|-------------|-------------------------------------------|
//! | 0      | `__lock`    | owner's thread id (recursive, error-checking) |
//! | 4      | `__count`   | recursion count                           |
//! | 0..8   |             | holder's thread pointer (default type)    |
//! | 8      | `__owner`   | wakes owed at release (recursive, error-checking) |
//! | 12     | `__nusers`  | state word of the cell ([`crate::slot`])  |
//! | 16     | `__kind`    | type, and glibc's flags                   |
//! | 24..40 | `__list`    | the cell, or its block's address          |
//!
//! **Paths.** `pthread_mutex_lock`, `_trylock` and `_unlock` are each one
//! load and a jump ([`config::Route`], set at load): under `pthread`
//! straight to the C library's function; under one of locklab's locks, to
//! that lock type's own monomorphized function ([`typed_lock`] and its
//! siblings, the lock's [`MutexOps`]), which handles a default-type mutex
//! of ours with the lock's code inlined; everything else (recursive and
//! error-checking mutexes, the C library's own objects) goes on from there
//! to the general path, out of line so that the others pay nothing for it,
//! as does every call before the configuration is read, and every call
//! while counting. Counting ([`crate::profile`]) has the same
//! two ways: typed for default-type mutexes of ours, general otherwise.
//!
//! **Misuse.** POSIX leaves unlocking a default-type mutex that the caller
//! does not hold undefined, and the C library just releases it; but a
//! queue lock's release follows the holder's guard (MCS: its queue node),
//! which a non-holder does not have, so such an unlock would crash or
//! corrupt the queue. A default-type mutex of ours therefore keeps its
//! holder: the thread pointer, stored (relaxed) once the lock is acquired
//! and cleared before it is released, so that the lock's own ordering
//! covers it. An unlock by any other thread, or of a free mutex, touches
//! nothing, returns `EPERM` (what the error-checking type says) and is
//! counted ([`profile::misuse`]). A thread reads its own pointer there
//! only if it holds the mutex (it wrote it, and nobody else writes until
//! it clears it), so the check is exact; it costs a store on lock and a
//! load on unlock.
//!
//! **Wakes owed at the release.** A condition variable signalled by the
//! holder defers its wake to the mutex's release ([`crate::cond`]): the
//! holder marks the mutex ([`owe_at_release`]), by setting bit 0 of its
//! own pointer in the holder word (the default type; a thread pointer is
//! aligned) or the word at offset 8 (recursive and error-checking), and
//! every release path pays after releasing ([`crate::cond::pay_owed`]).
//! The default type's fast release pays nothing for the check: the marked
//! word fails the comparison with the caller's pointer that it makes
//! anyway, and the mismatch is handled out of line.

use crate::config;
use crate::ops::{mutex_init, mutex_lock, mutex_try_lock, mutex_unlock, MutexCell, MutexOps};
use crate::{cond, profile, real, slot};
use core::ffi::c_int;
use core::sync::atomic::{AtomicUsize, Ordering};
use libc::{pthread_mutex_t, pthread_mutexattr_t, timespec};

const OWNER: usize = 0;
const COUNT: usize = 4;
const STATE: usize = 12;
const KIND: usize = 16;
const ROOM: usize = 24;

/// glibc's `__kind` flags of the objects it keeps: robust, priority
/// inheritance, priority protection, process-shared.
const GLIBC_ONLY: i32 = 16 | 32 | 64 | 128;
/// glibc's process-shared flag (see [`to_glibc`]).
const PSHARED: i32 = 128;
const RECURSIVE: i32 = libc::PTHREAD_MUTEX_RECURSIVE;
const ERRORCHECK: i32 = libc::PTHREAD_MUTEX_ERRORCHECK;

/// The holder of a default-type mutex of ours: its thread pointer, 0 when
/// free (see the module documentation).
///
/// # Safety
/// `m` points to a live `pthread_mutex_t` of ours of the default type.
#[inline(always)]
unsafe fn holder<'a>(m: *mut pthread_mutex_t) -> &'a AtomicUsize {
    // SAFETY: the first 8 bytes of a live, 8-aligned object, which only
    // the recursive and error-checking types use otherwise.
    unsafe { &*m.cast::<AtomicUsize>() }
}

/// Records the caller as the holder of the default-type mutex `m`, which
/// it has just acquired.
///
/// # Safety
/// As for [`holder`].
#[inline(always)]
unsafe fn now_held(m: *mut pthread_mutex_t) {
    // SAFETY: the caller's contract.
    unsafe { holder(m) }.store(profile::thread_pointer(), Ordering::Relaxed);
}

/// What a release finds in a mutex of ours.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Release {
    /// The caller holds it: release it.
    Plain,
    /// The caller holds it and owes condition variable wake-ups at its
    /// release ([`owe_at_release`]): release it, then pay them
    /// ([`cond::pay_owed`]).
    Owing,
    /// The caller does not hold it.
    NotHeld,
}

/// Whether the caller holds the default-type mutex `m` (and owes wake-ups
/// at its release); if so, forgets it as the holder (the caller releases
/// it next).
///
/// # Safety
/// As for [`holder`].
#[inline(always)]
unsafe fn release_held(m: *mut pthread_mutex_t) -> Release {
    // SAFETY: the caller's contract.
    let h = unsafe { holder(m) };
    let me = profile::thread_pointer();
    let v = h.load(Ordering::Relaxed);
    if v != me {
        return release_unusual(h, v, me);
    }
    h.store(0, Ordering::Relaxed);
    Release::Plain
}

/// [`release_held`] off its fast path: the holder word marked with
/// [`OWES`], or another thread's (or nobody's).
#[cold]
#[inline(never)]
fn release_unusual(h: &AtomicUsize, v: usize, me: usize) -> Release {
    if v != me | OWES {
        return Release::NotHeld;
    }
    h.store(0, Ordering::Relaxed);
    Release::Owing
}

/// The mark in a default-type mutex's holder word (a thread pointer, which
/// is aligned) that its holder owes wake-ups at its release.
const OWES: usize = 1;
/// The word of a recursive or error-checking mutex of ours (glibc's
/// `__owner`, unused by ours) that says the same, 1 or 0.
const OWED: usize = 8;

/// Whether the calling thread holds `m`, a live mutex of ours (then a
/// condition variable signalled under it can defer its wake-ups to its
/// release: [`owe_at_release`]). False for the C library's objects.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t`, and the configuration is one
/// of locklab's locks.
pub unsafe fn held_here(m: *mut pthread_mutex_t) -> bool {
    // SAFETY: the caller's contract.
    let k = unsafe { kind(m) };
    if k & GLIBC_ONLY != 0 {
        return false;
    }
    match k & 3 {
        RECURSIVE | ERRORCHECK => {
            // SAFETY: the owner word of a live object of ours.
            unsafe { slot::owner(m.cast::<u8>().add(OWNER)) }.load(Ordering::Relaxed) == slot::tid()
        }
        // SAFETY: a default-type mutex of ours: its holder word (only its
        // holder writes it with its own pointer, so the test is exact).
        _ => unsafe { holder(m) }.load(Ordering::Relaxed) & !OWES == profile::thread_pointer(),
    }
}

/// Marks `m`, which the caller holds ([`held_here`]), so that its release
/// (by `pthread_mutex_unlock`, or by a condition wait) calls
/// [`cond::pay_owed`] once the mutex is free. The default type's fast
/// release pays nothing for it: the mark changes the holder word, whose
/// comparison it makes anyway, and a mismatch goes out of line.
///
/// # Safety
/// As for [`held_here`], which said yes.
pub unsafe fn owe_at_release(m: *mut pthread_mutex_t) {
    // SAFETY: the caller's contract.
    match unsafe { kind(m) } & 3 {
        RECURSIVE | ERRORCHECK => {
            // SAFETY: the holder's own word of a live object of ours.
            unsafe { slot::owner(m.cast::<u8>().add(OWED)) }.store(1, Ordering::Relaxed)
        }
        // SAFETY: as above; only the holder writes it.
        _ => unsafe { holder(m) }.store(profile::thread_pointer() | OWES, Ordering::Relaxed),
    }
}

/// Releases a default-type mutex of ours by `unlock`, which the caller
/// has found held by itself: 0, or `EPERM` if it was not.
///
/// # Safety
/// `m` a live default-type mutex of ours, `held` its [`release_held`]
/// just now, `unlock` the release of its lock.
#[inline(always)]
unsafe fn finish_release(m: *mut pthread_mutex_t, held: Release, unlock: impl FnOnce()) -> c_int {
    match held {
        Release::Plain => {
            unlock();
            0
        }
        Release::Owing => {
            unlock();
            cond::pay_owed(m);
            0
        }
        Release::NotHeld => misused(),
    }
}

/// An unlock of a default-type mutex the caller does not hold: refused
/// and counted.
#[cold]
#[inline(never)]
fn misused() -> c_int {
    profile::misuse();
    libc::EPERM
}

/// How a call treats an object.
#[derive(Clone, Copy)]
pub enum Mutex {
    /// The C library's (passthrough, or an object only it can keep).
    Glibc,
    /// Ours: its cell, and its type (0, or recursive or error-checking).
    Ours(*mut u8, i32),
}

/// # Safety
/// `m` points to a live `pthread_mutex_t`.
#[inline]
unsafe fn kind(m: *mut pthread_mutex_t) -> i32 {
    // SAFETY: the kind word of a live object (read atomically: only init
    // and destroy write it, but a racing reader must not tear it).
    unsafe { slot::owner(m.cast::<u8>().add(KIND)) }.load(Ordering::Relaxed)
}

/// What to do with `m` under `ops`.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t`.
#[inline]
pub unsafe fn classify(m: *mut pthread_mutex_t, ops: &MutexOps) -> Mutex {
    if config::is_pass(ops) {
        return Mutex::Glibc;
    }
    // SAFETY: the caller's contract.
    let k = unsafe { kind(m) };
    if k & GLIBC_ONLY != 0 {
        return Mutex::Glibc;
    }
    let base = m.cast::<u8>();
    // SAFETY: the state word and the room are inside the object, aligned.
    let cell = unsafe {
        slot::cell(
            base.add(STATE),
            base.add(ROOM),
            ops.size,
            ops.align,
            ops.init,
        )
    };
    if cell.is_null() {
        // SAFETY: the caller's contract.
        return unsafe { to_glibc(m) };
    }
    Mutex::Ours(cell, k & 3)
}

/// A mutex of ours whose cell could not be set up for want of memory: a
/// statically initialized one first used with the address space
/// exhausted, whose lock call can report no error. From now on (until
/// `destroy`) it is the C library's, marked with glibc's process-shared
/// flag, which glibc handles as any mutex of its type (its futex is merely
/// not private) and which every call here recognizes. Nothing of ours was
/// ever used on it: every caller found the set-up failed.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t` whose set-up failed.
#[cold]
unsafe fn to_glibc(m: *mut pthread_mutex_t) -> Mutex {
    // SAFETY: the kind word of a live object (idempotent: every caller
    // that finds the set-up failed sets the same bit).
    unsafe { slot::owner(m.cast::<u8>().add(KIND)) }.fetch_or(PSHARED, Ordering::Relaxed);
    Mutex::Glibc
}

/// Acquires an object of ours for the calling thread.
///
/// # Safety
/// `m` is ours (`cell` from [`classify`]) and live.
unsafe fn lock_ours(m: *mut pthread_mutex_t, cell: *mut u8, ty: i32, ops: &MutexOps) -> c_int {
    let base = m.cast::<u8>();
    // SAFETY: the owner word of a live object.
    let owner = unsafe { slot::owner(base.add(OWNER)) };
    match ty {
        RECURSIVE | ERRORCHECK => {
            let me = slot::tid();
            if owner.load(Ordering::Relaxed) == me {
                if ty == ERRORCHECK {
                    return libc::EDEADLK;
                }
                // SAFETY: the count is the owner's, and we are it.
                let count = unsafe { &mut *base.add(COUNT).cast::<u32>() };
                if *count == u32::MAX {
                    return libc::EAGAIN;
                }
                *count += 1;
                return 0;
            }
            // SAFETY: a cell of `ops`.
            unsafe { (ops.lock)(cell) };
            owner.store(me, Ordering::Relaxed);
            // SAFETY: we own it now.
            unsafe { *base.add(COUNT).cast::<u32>() = 1 };
            0
        }
        _ => {
            // SAFETY: a cell of `ops`.
            unsafe { (ops.lock)(cell) };
            // SAFETY: a default-type mutex of ours, acquired.
            unsafe { now_held(m) };
            0
        }
    }
}

/// As [`lock_ours`], without waiting: `EBUSY` if held.
///
/// # Safety
/// As for `lock_ours`.
unsafe fn try_ours(m: *mut pthread_mutex_t, cell: *mut u8, ty: i32, ops: &MutexOps) -> c_int {
    let base = m.cast::<u8>();
    // SAFETY: the owner word of a live object.
    let owner = unsafe { slot::owner(base.add(OWNER)) };
    if ty == RECURSIVE || ty == ERRORCHECK {
        let me = slot::tid();
        if owner.load(Ordering::Relaxed) == me {
            if ty == ERRORCHECK {
                return libc::EBUSY;
            }
            // SAFETY: as in `lock_ours`.
            let count = unsafe { &mut *base.add(COUNT).cast::<u32>() };
            if *count == u32::MAX {
                return libc::EAGAIN;
            }
            *count += 1;
            return 0;
        }
        // SAFETY: a cell of `ops`.
        if !unsafe { (ops.try_lock)(cell) } {
            return libc::EBUSY;
        }
        owner.store(me, Ordering::Relaxed);
        // SAFETY: we own it now.
        unsafe { *base.add(COUNT).cast::<u32>() = 1 };
        return 0;
    }
    // SAFETY: a cell of `ops`.
    if unsafe { (ops.try_lock)(cell) } {
        // SAFETY: a default-type mutex of ours, acquired.
        unsafe { now_held(m) };
        0
    } else {
        libc::EBUSY
    }
}

/// Releases an object of ours: `EPERM` if it is not the caller's. With
/// `all`, a recursive mutex is released whatever its count, which is
/// returned (for a condition wait).
///
/// # Safety
/// As for `lock_ours`.
pub unsafe fn unlock_ours(
    m: *mut pthread_mutex_t,
    cell: *mut u8,
    ty: i32,
    ops: &MutexOps,
    all: bool,
) -> Result<u32, c_int> {
    let base = m.cast::<u8>();
    if ty == RECURSIVE || ty == ERRORCHECK {
        // SAFETY: the owner word of a live object.
        let owner = unsafe { slot::owner(base.add(OWNER)) };
        if owner.load(Ordering::Relaxed) != slot::tid() {
            return Err(libc::EPERM);
        }
        // SAFETY: the count is ours: we own the mutex.
        let count = unsafe { &mut *base.add(COUNT).cast::<u32>() };
        let held = *count;
        if ty == RECURSIVE && !all && held > 1 {
            *count -= 1;
            return Ok(held);
        }
        *count = 0;
        owner.store(0, Ordering::Relaxed);
        // SAFETY: the holder's own word.
        let owed = unsafe { slot::owner(base.add(OWED)) }.swap(0, Ordering::Relaxed) != 0;
        // SAFETY: we hold it.
        unsafe { (ops.unlock)(cell) };
        if owed {
            cond::pay_owed(m);
        }
        return Ok(held);
    }
    // SAFETY: a default-type mutex of ours; then the caller holds it.
    match unsafe { finish_release(m, release_held(m), || (ops.unlock)(cell)) } {
        0 => Ok(1),
        e => Err(e),
    }
}

/// Takes back an object of ours after a condition wait, with the
/// recursion count it had.
///
/// # Safety
/// As for `lock_ours`.
pub unsafe fn relock_ours(
    m: *mut pthread_mutex_t,
    cell: *mut u8,
    ty: i32,
    ops: &MutexOps,
    count: u32,
) {
    // SAFETY: the caller's contract; `lock_ours` cannot fail here: the
    // caller does not hold it.
    unsafe { lock_ours(m, cell, ty, ops) };
    if ty == RECURSIVE {
        // SAFETY: ours again.
        unsafe { *m.cast::<u8>().add(COUNT).cast::<u32>() = count.max(1) };
    }
}

/// # Safety
/// POSIX's contract for `pthread_mutex_init`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_mutex_init(
    m: *mut pthread_mutex_t,
    attr: *const pthread_mutexattr_t,
) -> c_int {
    let ops = config::mutex();
    if config::is_pass(ops) {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_mutex_init(m, attr) };
    }
    let mut ty = libc::PTHREAD_MUTEX_NORMAL;
    if !attr.is_null() {
        let (mut pshared, mut robust, mut protocol) = (0, 0, 0);
        // SAFETY: a live attribute object, read by the C library.
        unsafe {
            pthread_mutexattr_gettype(attr, &mut ty);
            libc::pthread_mutexattr_getpshared(attr, &mut pshared);
            pthread_mutexattr_getrobust(attr, &mut robust);
            pthread_mutexattr_getprotocol(attr, &mut protocol);
        }
        if pshared != libc::PTHREAD_PROCESS_PRIVATE || robust != 0 || protocol != 0 {
            // Only the C library keeps these: its kind flags mark the
            // object, and every call goes back to it.
            // SAFETY: passed through as is.
            return unsafe { real::__pthread_mutex_init(m, attr) };
        }
    }
    // SAFETY: POSIX: `m` points to a mutex object to initialize.
    unsafe {
        m.cast::<u8>()
            .write_bytes(0, core::mem::size_of::<pthread_mutex_t>());
        slot::owner(m.cast::<u8>().add(KIND)).store(ty & 3, Ordering::Relaxed);
    }
    // SAFETY: the object just written; its state word and room.
    unsafe {
        slot::reserve_at_init(
            m.cast::<u8>(),
            core::mem::size_of::<pthread_mutex_t>(),
            STATE,
            ROOM,
            ops.size,
            ops.align,
            ops.init,
        )
    }
}

extern "C" {
    fn pthread_mutexattr_gettype(a: *const pthread_mutexattr_t, t: *mut c_int) -> c_int;
    fn pthread_mutexattr_getrobust(a: *const pthread_mutexattr_t, r: *mut c_int) -> c_int;
    fn pthread_mutexattr_getprotocol(a: *const pthread_mutexattr_t, p: *mut c_int) -> c_int;
}

/// # Safety
/// POSIX's contract for `pthread_mutex_destroy`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int {
    let ops = config::mutex();
    // SAFETY: POSIX: a live mutex.
    if config::is_pass(ops) || unsafe { kind(m) } & GLIBC_ONLY != 0 {
        // SAFETY: the state word's place, glibc's `__nusers`: in a mutex
        // handed to glibc by `to_glibc` it counts from `FAILED` up; glibc
        // refuses to destroy it unless it counts from 0.
        let users = unsafe { slot::owner(m.cast::<u8>().add(STATE)) };
        let n = users.load(Ordering::Relaxed);
        if !config::is_pass(ops) && n >= slot::FAILED as i32 {
            users.store(n - slot::FAILED as i32, Ordering::Relaxed);
        }
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_mutex_destroy(m) };
    }
    let base = m.cast::<u8>();
    // A live object of ours: the owner's id, or for the default type its
    // holder's pointer.
    // SAFETY: the kind word of a live object.
    let held = if unsafe { kind(m) } & 3 == 0 {
        // SAFETY: a default-type mutex of ours.
        unsafe { holder(m) }.load(Ordering::Relaxed) != 0
    } else {
        // SAFETY: the owner word of a live object.
        unsafe { slot::owner(base.add(OWNER)) }.load(Ordering::Relaxed) != 0
    };
    if held {
        return libc::EBUSY;
    }
    // SAFETY: POSIX: nobody uses a mutex being destroyed.
    unsafe { slot::tear_down(base.add(STATE), base.add(ROOM), ops.size, ops.align) };
    0
}

/// # Safety
/// POSIX's contract for `pthread_mutex_lock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract; the route is the C library's function
    // or one that stands for it.
    unsafe { (config::LOCK.get())(m) }
}

/// The general path: every object and configuration (counting, the
/// configuration not read yet, recursive and error-checking mutexes, the C
/// library's objects), apart so that the fast paths pay nothing for it.
///
/// # Safety
/// As for the function of the C library it stands for.
#[inline(never)]
pub unsafe extern "C" fn lock_general(m: *mut pthread_mutex_t) -> c_int {
    let ops = config::mutex();
    if profile::on() {
        if !config::is_pass(ops) {
            // SAFETY: POSIX: a live mutex; `ops` is the chosen lock.
            return unsafe { (ops.c_lock_counted)(m) };
        }
        // SAFETY: POSIX: a live mutex.
        return unsafe { profiled_lock(m, ops, How::Block) };
    }
    // SAFETY: POSIX: a live mutex.
    match unsafe { classify(m, ops) } {
        // SAFETY: passed through as is.
        Mutex::Glibc => unsafe { real::__pthread_mutex_lock(m) },
        // SAFETY: ours, live.
        Mutex::Ours(cell, ty) => unsafe { lock_ours(m, cell, ty, ops) },
    }
}

/// # Safety
/// POSIX's contract for `pthread_mutex_trylock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract; the route is the C library's function
    // or one that stands for it.
    unsafe { (config::TRYLOCK.get())(m) }
}

/// See [`lock_general`].
///
/// # Safety
/// As for the function of the C library it stands for.
#[inline(never)]
pub unsafe extern "C" fn trylock_general(m: *mut pthread_mutex_t) -> c_int {
    let ops = config::mutex();
    if profile::on() {
        if !config::is_pass(ops) {
            // SAFETY: POSIX: a live mutex; `ops` is the chosen lock.
            return unsafe { (ops.c_trylock_counted)(m) };
        }
        // SAFETY: POSIX: a live mutex.
        return unsafe { profiled_lock(m, ops, How::Try) };
    }
    // SAFETY: POSIX: a live mutex.
    match unsafe { classify(m, ops) } {
        // SAFETY: passed through as is.
        Mutex::Glibc => unsafe { real::__pthread_mutex_trylock(m) },
        // SAFETY: ours, live.
        Mutex::Ours(cell, ty) => unsafe { try_ours(m, cell, ty, ops) },
    }
}

/// The timed forms over an object of ours: try at once, then poll until
/// the deadline.
///
/// # Safety
/// As for `lock_ours`; `abs` readable.
unsafe fn timed_ours(
    m: *mut pthread_mutex_t,
    cell: *mut u8,
    ty: i32,
    ops: &MutexOps,
    clock: libc::clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { try_ours(m, cell, ty, ops) } {
        libc::EBUSY => {}
        r => return r,
    }
    if ty == ERRORCHECK
        // SAFETY: the owner word of a live object.
        && unsafe { slot::owner(m.cast::<u8>().add(OWNER)) }.load(Ordering::Relaxed) == slot::tid()
    {
        return libc::EDEADLK;
    }
    // SAFETY: the caller's contract.
    let deadline = match unsafe { slot::deadline(clock, abs) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    // SAFETY: as above.
    slot::poll_until(deadline, || unsafe { try_ours(m, cell, ty, ops) } == 0)
}

/// # Safety
/// POSIX's contract for `pthread_mutex_timedlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_mutex_timedlock(
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    let ops = config::mutex();
    if profile::on() {
        // SAFETY: POSIX: a live mutex, a readable deadline.
        return unsafe { profiled_lock(m, ops, How::Timed(libc::CLOCK_REALTIME, abs, false)) };
    }
    // SAFETY: POSIX: a live mutex.
    match unsafe { classify(m, ops) } {
        // SAFETY: passed through as is.
        Mutex::Glibc => unsafe { real::mutex_timedlock(m, abs) },
        // SAFETY: ours, live.
        Mutex::Ours(cell, ty) => unsafe { timed_ours(m, cell, ty, ops, libc::CLOCK_REALTIME, abs) },
    }
}

/// # Safety
/// glibc's contract for `pthread_mutex_clocklock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_mutex_clocklock(
    m: *mut pthread_mutex_t,
    clock: libc::clockid_t,
    abs: *const timespec,
) -> c_int {
    let ops = config::mutex();
    if profile::on() {
        // SAFETY: POSIX: a live mutex, a readable deadline.
        return unsafe { profiled_lock(m, ops, How::Timed(clock, abs, true)) };
    }
    // SAFETY: POSIX: a live mutex.
    match unsafe { classify(m, ops) } {
        // SAFETY: passed through as is.
        Mutex::Glibc => unsafe { real::mutex_clocklock(m, clock, abs) },
        // SAFETY: ours, live.
        Mutex::Ours(cell, ty) => unsafe { timed_ours(m, cell, ty, ops, clock, abs) },
    }
}

/// # Safety
/// POSIX's contract for `pthread_mutex_unlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract; the route is the C library's function
    // or one that stands for it.
    unsafe { (config::UNLOCK.get())(m) }
}

/// See [`lock_general`].
///
/// # Safety
/// As for the function of the C library it stands for.
#[inline(never)]
pub unsafe extern "C" fn unlock_general(m: *mut pthread_mutex_t) -> c_int {
    let ops = config::mutex();
    if profile::on() {
        if !config::is_pass(ops) {
            // SAFETY: POSIX: a live mutex; `ops` is the chosen lock.
            return unsafe { (ops.c_unlock_counted)(m) };
        }
        // SAFETY: POSIX: a live mutex.
        return unsafe { profiled_unlock(m, ops) };
    }
    // SAFETY: POSIX: a live mutex.
    match unsafe { classify(m, ops) } {
        // SAFETY: passed through as is.
        Mutex::Glibc => unsafe { real::__pthread_mutex_unlock(m) },
        // SAFETY: ours, live.
        Mutex::Ours(cell, ty) => match unsafe { unlock_ours(m, cell, ty, ops, false) } {
            Ok(_) => 0,
            Err(e) => e,
        },
    }
}

// ------------------------------------------------------------ profiled

/// How a profiled acquisition waits.
#[derive(Clone, Copy)]
enum How {
    /// `lock`.
    Block,
    /// `trylock`.
    Try,
    /// `timedlock` (the clock, the deadline, and whether the caller named
    /// the clock: `clocklock`).
    Timed(libc::clockid_t, *const timespec, bool),
}

/// An acquisition without counting, as the unprofiled functions make it.
///
/// # Safety
/// `m` live, `t` its [`classify`]; a `Timed` deadline readable.
unsafe fn plain_lock(m: *mut pthread_mutex_t, ops: &MutexOps, t: Mutex, how: How) -> c_int {
    // SAFETY: the caller's contract, call by call.
    unsafe {
        match (t, how) {
            (Mutex::Glibc, How::Block) => real::__pthread_mutex_lock(m),
            (Mutex::Glibc, How::Try) => real::__pthread_mutex_trylock(m),
            (Mutex::Glibc, How::Timed(_, abs, false)) => real::mutex_timedlock(m, abs),
            (Mutex::Glibc, How::Timed(clock, abs, true)) => real::mutex_clocklock(m, clock, abs),
            (Mutex::Ours(c, ty), How::Block) => lock_ours(m, c, ty, ops),
            (Mutex::Ours(c, ty), How::Try) => try_ours(m, c, ty, ops),
            (Mutex::Ours(c, ty), How::Timed(clock, abs, _)) => {
                timed_ours(m, c, ty, ops, clock, abs)
            }
        }
    }
}

/// The type (normal, recursive, error-checking) of `m`: ours keep it in
/// [`Mutex::Ours`], the C library's in the low bits of its kind word
/// (3, adaptive, is a normal mutex).
///
/// # Safety
/// `m` live.
unsafe fn type_of(m: *mut pthread_mutex_t, t: Mutex) -> i32 {
    match t {
        Mutex::Ours(_, ty) => ty,
        // SAFETY: the caller's contract.
        Mutex::Glibc => (unsafe { kind(m) }) & 3,
    }
}

/// Whether the calling thread's hold of a recursive `m` is its outermost:
/// the count is at offset 4 in ours and in the C library's.
///
/// # Safety
/// `m` live, held by the caller.
unsafe fn outermost(m: *mut pthread_mutex_t, ty: i32) -> bool {
    // SAFETY: the holder's own count word.
    ty != RECURSIVE || unsafe { *m.cast::<u8>().add(COUNT).cast::<u32>() } <= 1
}

/// A profiled `lock`, `trylock` or timed form ([`profile::exclusive`]).
///
/// # Safety
/// As for the function it stands for.
#[inline(never)]
unsafe fn profiled_lock(m: *mut pthread_mutex_t, ops: &MutexOps, how: How) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { kind(m) } & GLIBC_ONLY != 0 {
        profile::glibc_only();
        // SAFETY: the C library's object.
        return unsafe { plain_lock(m, ops, Mutex::Glibc, how) };
    }
    // SAFETY: the caller's contract.
    let t = unsafe { classify(m, ops) };
    let Some(e) = profile::entry(m as usize, profile::MUTEX) else {
        // SAFETY: as above.
        return unsafe { plain_lock(m, ops, t, how) };
    };
    // SAFETY: as above.
    let ty = unsafe { type_of(m, t) };
    // SAFETY: as above (each closure runs at most once, on this thread).
    let attempt = || unsafe { plain_lock(m, ops, t, How::Try) };
    // SAFETY: called only once the caller holds `m`.
    let fresh = || unsafe { outermost(m, ty) };
    match how {
        How::Try => profile::exclusive(e, attempt, None::<fn() -> c_int>, fresh),
        // SAFETY: as above.
        _ => profile::exclusive(
            e,
            attempt,
            Some(|| unsafe { plain_lock(m, ops, t, how) }),
            fresh,
        ),
    }
}

/// A profiled `unlock`: the hold ends (if it is the caller's outermost),
/// then the release.
///
/// # Safety
/// As for `pthread_mutex_unlock`.
#[inline(never)]
unsafe fn profiled_unlock(m: *mut pthread_mutex_t, ops: &MutexOps) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { kind(m) } & GLIBC_ONLY != 0 {
        profile::glibc_only();
        // SAFETY: the C library's object.
        return unsafe { real::__pthread_mutex_unlock(m) };
    }
    // SAFETY: the caller's contract.
    let t = unsafe { classify(m, ops) };
    if let Some(e) = profile::find(m as usize) {
        // SAFETY: as above.
        let ty = unsafe { type_of(m, t) };
        let checked = ty == RECURSIVE || ty == ERRORCHECK;
        // The owner's id: ours at offset 0, the C library's `__owner` at 8;
        // a default-type mutex of ours keeps its holder's pointer.
        let at = if matches!(t, Mutex::Glibc) { 8 } else { OWNER };
        let mine = match t {
            Mutex::Ours(..) if !checked => {
                // SAFETY: a default-type mutex of ours.
                unsafe { holder(m) }.load(Ordering::Relaxed) & !OWES == profile::thread_pointer()
            }
            _ => {
                !checked
                    // SAFETY: a word of the live object.
                    || unsafe { slot::owner(m.cast::<u8>().add(at)) }.load(Ordering::Relaxed)
                        == slot::tid()
            }
        };
        // SAFETY: read only if the caller holds it.
        if mine && unsafe { outermost(m, ty) } {
            profile::release(e);
        }
    }
    match t {
        // SAFETY: passed through as is.
        Mutex::Glibc => unsafe { real::__pthread_mutex_unlock(m) },
        // SAFETY: ours, live.
        Mutex::Ours(cell, ty) => match unsafe { unlock_ours(m, cell, ty, ops, false) } {
            Ok(_) => 0,
            Err(e) => e,
        },
    }
}

// ------------------------------------------------------------ fast paths

/// The cell of a default-type mutex of ours under lock type `R`, or `None`
/// for any other object (the C library's, recursive, error-checking),
/// which takes the general path.
///
/// # Safety
/// `m` points to a live `pthread_mutex_t`, and `R` is the chosen lock.
#[inline(always)]
unsafe fn typed_cell<R: lock_api::RawMutex>(m: *mut pthread_mutex_t) -> Option<*mut u8> {
    // SAFETY: the caller's contract.
    if unsafe { kind(m) } != 0 {
        return None;
    }
    let base = m.cast::<u8>();
    // SAFETY: the state word and the room are inside the object, aligned;
    // every call on it under this configuration passes `R`'s cell.
    let cell = unsafe {
        slot::cell(
            base.add(STATE),
            base.add(ROOM),
            core::mem::size_of::<MutexCell<R>>(),
            core::mem::align_of::<MutexCell<R>>(),
            mutex_init::<R>,
        )
    };
    // No memory for its cell: the general path hands it to the C library.
    (!cell.is_null()).then_some(cell)
}

/// `pthread_mutex_lock` under lock type `R` (see [`MutexOps::c_lock`]).
///
/// # Safety
/// POSIX's contract for `pthread_mutex_lock`; `R` is the chosen lock.
pub unsafe extern "C" fn typed_lock<R: lock_api::RawMutex>(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { typed_cell::<R>(m) } {
        Some(cell) => {
            // SAFETY: a cell of `R`; then a default-type mutex of ours,
            // acquired.
            unsafe {
                mutex_lock::<R>(cell);
                now_held(m);
            }
            0
        }
        // SAFETY: as above.
        None => unsafe { lock_general(m) },
    }
}

/// `pthread_mutex_trylock` under lock type `R`.
///
/// # Safety
/// As for [`typed_lock`].
pub unsafe extern "C" fn typed_trylock<R: lock_api::RawMutex>(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    match unsafe { typed_cell::<R>(m) } {
        // SAFETY: a cell of `R`.
        Some(cell) => match unsafe { mutex_try_lock::<R>(cell) } {
            true => {
                // SAFETY: a default-type mutex of ours, acquired.
                unsafe { now_held(m) };
                0
            }
            false => libc::EBUSY,
        },
        // SAFETY: as above.
        None => unsafe { trylock_general(m) },
    }
}

/// `pthread_mutex_unlock` under lock type `R`.
///
/// # Safety
/// As for [`typed_lock`].
pub unsafe extern "C" fn typed_unlock<R: lock_api::RawMutex>(m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { kind(m) } != 0 {
        // SAFETY: as above.
        return unsafe { unlock_general(m) };
    }
    // SAFETY: a default-type mutex of ours. Held by the caller, its cell
    // is set up (the caller's lock did it), so the state word need not be
    // read again; a mutex the caller does not hold is refused untouched.
    unsafe {
        finish_release(m, release_held(m), || {
            mutex_unlock::<R>(slot::set_up_cell(
                m.cast::<u8>().add(ROOM),
                core::mem::size_of::<MutexCell<R>>(),
                core::mem::align_of::<MutexCell<R>>(),
            ))
        })
    }
}

/// `pthread_mutex_lock` under lock type `R`, counted: a default-type
/// mutex of ours with the lock's code inlined ([`profile::exclusive`]),
/// anything else through `profiled_lock`.
///
/// # Safety
/// As for [`typed_lock`].
pub unsafe extern "C" fn typed_lock_counted<R: lock_api::RawMutex>(
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(cell) = (unsafe { typed_cell::<R>(m) }) else {
        // SAFETY: as above.
        return unsafe { profiled_lock(m, config::mutex(), How::Block) };
    };
    let Some(e) = profile::entry(m as usize, profile::MUTEX) else {
        // SAFETY: a cell of `R`; then a default-type mutex of ours, held.
        unsafe {
            mutex_lock::<R>(cell);
            now_held(m);
        }
        return 0;
    };
    profile::exclusive(
        e,
        // SAFETY: a cell of `R` (each closure runs at most once).
        || match unsafe { mutex_try_lock::<R>(cell) } {
            true => {
                // SAFETY: a default-type mutex of ours, acquired.
                unsafe { now_held(m) };
                0
            }
            false => libc::EBUSY,
        },
        Some(|| {
            // SAFETY: as above.
            unsafe {
                mutex_lock::<R>(cell);
                now_held(m);
            }
            0
        }),
        || true,
    )
}

/// `pthread_mutex_trylock` under lock type `R`, counted.
///
/// # Safety
/// As for [`typed_lock`].
pub unsafe extern "C" fn typed_trylock_counted<R: lock_api::RawMutex>(
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(cell) = (unsafe { typed_cell::<R>(m) }) else {
        // SAFETY: as above.
        return unsafe { profiled_lock(m, config::mutex(), How::Try) };
    };
    // SAFETY: a cell of `R`.
    let attempt = || match unsafe { mutex_try_lock::<R>(cell) } {
        true => {
            // SAFETY: a default-type mutex of ours, acquired.
            unsafe { now_held(m) };
            0
        }
        false => libc::EBUSY,
    };
    match profile::entry(m as usize, profile::MUTEX) {
        Some(e) => profile::exclusive(e, attempt, None::<fn() -> c_int>, || true),
        None => attempt(),
    }
}

/// `pthread_mutex_unlock` under lock type `R`, counted.
///
/// # Safety
/// As for [`typed_lock`].
pub unsafe extern "C" fn typed_unlock_counted<R: lock_api::RawMutex>(
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's contract.
    let Some(cell) = (unsafe { typed_cell::<R>(m) }) else {
        // SAFETY: as above.
        return unsafe { profiled_unlock(m, config::mutex()) };
    };
    // SAFETY: a default-type mutex of ours.
    let held = unsafe { release_held(m) };
    if held != Release::NotHeld {
        if let Some(e) = profile::find(m as usize) {
            profile::release(e);
        }
    }
    // SAFETY: the caller holds it, if `held` says so.
    unsafe { finish_release(m, held, || mutex_unlock::<R>(cell)) }
}
