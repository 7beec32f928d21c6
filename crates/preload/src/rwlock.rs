//! `pthread_rwlock_*` over the chosen reader-writer lock: readers share
//! it for real (an exclusive lock in a reader-writer lock's clothes would
//! serialize them), and the try and timed forms work.
//!
//! The object is glibc's `pthread_rwlock_t` (56 bytes). glibc's
//! `__shared` word (offset 28) keeps its meaning: a process-shared lock is
//! glibc's, and every call goes back to it. The rest is ours:
//!
//! | offset | glibc          | here                                     |
//! |--------|----------------|------------------------------------------|
//! | 16     | `__pad3`       | state word of the cell ([`crate::slot`]) |
//! | 24     | `__cur_writer` | the writer's thread id                   |
//! | 28     | `__shared`     | process-shared (then glibc's)            |
//! | 32..48 | `__pad1/2`     | the cell, or its block's address         |
//!
//! | 0      | `__readers`    | waiting writers and their top priority   |
//!
//! `pthread_rwlock_unlock` does not say which side it releases: the writer
//! id tells. A reader's guard that carries something (`brlock`'s slot) is
//! kept per thread, in a small table: a thread holding read locks on more
//! than [`READ_HELD`] such locks at once gets `EAGAIN` (the POSIX error
//! for "too many read locks").
//!
//! **Real-time readers.** POSIX (with the Thread Execution Scheduling
//! option) says that a reader whose policy is `SCHED_FIFO` or `SCHED_RR`
//! acquires the lock unless a writer holds it or a writer of higher or
//! equal priority waits for it: a writer-preferring or fair lock must let
//! it pass the waiting writers of lower priority. Passing every real-time
//! thread's calls to the C library instead is not possible (one object
//! cannot be under two implementations), so the rule is honoured here,
//! for the locks that can let a reader in past waiting writers
//! ([`RwOps::shared_past_waiters`]: `rw-writer`, `rw-fair` and `rwsem`;
//! `rw-reader` lets every reader pass anyway). A writer that has to wait counts itself
//! in the object's first word with its priority (0 unless real-time); a
//! reader that cannot enter at once asks for its own scheduling policy
//! (two system calls, only then) and, if it is real-time and of higher
//! priority than every waiting writer, enters as soon as no writer holds
//! the lock (polling, as the timed forms do), giving way as soon as a
//! writer of its priority or above comes to wait. The top priority is
//! kept until the last waiting writer has left (a reader may wait when it
//! need not, never the other way round). Threads that are not real-time
//! keep each lock's own order. `brlock` cannot let a reader pass: its
//! writer takes each CPU's lock in turn, and holds some of them while it
//! waits for the others.

use crate::config;
use crate::ops::RwOps;
use crate::{profile, real, slot};
use core::cell::Cell;
use core::ffi::c_int;
use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use libc::{clockid_t, pthread_rwlock_t, pthread_rwlockattr_t, timespec};
use std::time::{Duration, Instant};

const WRITERS: usize = 0;
const STATE: usize = 16;
const WRITER: usize = 24;
const SHARED: usize = 28;
const ROOM: usize = 32;

/// Read locks with a token a thread may hold at once.
pub const READ_HELD: usize = 16;

thread_local! {
    /// This thread's read locks that carry a token: (object, token).
    static TOKENS: [Cell<(usize, u64)>; READ_HELD] = const { [const { Cell::new((0, 0)) }; READ_HELD] };
}

/// How a call treats an object: glibc's, or ours with its cell.
enum Rw {
    Glibc,
    Ours(*mut u8),
}

/// Whether glibc set `l` up as process-shared (then it keeps it).
///
/// # Safety
/// `l` points to a live `pthread_rwlock_t`.
unsafe fn process_shared(l: *mut pthread_rwlock_t) -> bool {
    // SAFETY: glibc's `__shared` word of the live object.
    unsafe { slot::owner(l.cast::<u8>().add(SHARED)) }.load(Ordering::Relaxed) != 0
}

/// # Safety
/// `l` points to a live `pthread_rwlock_t`.
unsafe fn classify(l: *mut pthread_rwlock_t, ops: &RwOps) -> Rw {
    let base = l.cast::<u8>();
    // SAFETY: the caller's contract.
    if config::is_pass_rw(ops) || unsafe { process_shared(l) } {
        return Rw::Glibc;
    }
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
        // No memory for its cell (a statically initialized rwlock first
        // used with the address space exhausted, whose lock call can
        // report no error): from now on (until `destroy`) the C library's,
        // marked process-shared, which glibc handles as any rwlock (its
        // futexes are merely not private) and which every call here
        // recognizes. All zeros is its initializer's state too.
        // SAFETY: glibc's `__shared` word of the live object.
        unsafe { slot::owner(base.add(SHARED)) }.store(1, Ordering::Relaxed);
        return Rw::Glibc;
    }
    Rw::Ours(cell)
}

/// # Safety
/// `l` is live.
unsafe fn writer<'a>(l: *mut pthread_rwlock_t) -> &'a AtomicI32 {
    // SAFETY: a word of the live object.
    unsafe { slot::owner(l.cast::<u8>().add(WRITER)) }
}

/// The waiting writers of an object of ours: bits 0..8 the highest
/// priority among them, the rest how many.
///
/// # Safety
/// `l` is live.
unsafe fn waiting_writers<'a>(l: *mut pthread_rwlock_t) -> &'a AtomicU32 {
    // SAFETY: a word of the live object.
    unsafe { &*l.cast::<u8>().add(WRITERS).cast::<AtomicU32>() }
}

/// The calling thread's priority if its policy is real-time.
fn realtime_priority() -> Option<u32> {
    // SAFETY: no preconditions; 0 is the calling thread.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy != libc::SCHED_FIFO && policy != libc::SCHED_RR {
        return None;
    }
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: a live sched_param to write.
    unsafe { libc::sched_getparam(0, &mut p) };
    Some(p.sched_priority.clamp(0, 255) as u32)
}

/// Runs `wait` (a writer's blocking acquisition of `l`) counted among the
/// waiting writers with its priority, when the lock lets real-time readers
/// pass them.
///
/// # Safety
/// `l` ours, live.
unsafe fn as_waiting_writer<T>(
    l: *mut pthread_rwlock_t,
    ops: &RwOps,
    wait: impl FnOnce() -> T,
) -> T {
    if ops.shared_past_waiters.is_none() {
        return wait();
    }
    let prio = realtime_priority().unwrap_or(0);
    // SAFETY: the caller's contract.
    let w = unsafe { waiting_writers(l) };
    let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some((((v >> 8) + 1) << 8) | (v & 255).max(prio))
    });
    let r = wait();
    let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        let n = (v >> 8).saturating_sub(1);
        Some(if n == 0 { 0 } else { (n << 8) | (v & 255) })
    });
    r
}

/// A real-time reader's acquisition past waiting writers of lower
/// priority (see the module documentation), for a reader that could not
/// enter at once and is not the writer: `Some` result if the rule applied
/// (0, or `ETIMEDOUT` at the deadline), `None` if the caller waits as any
/// reader (not real-time, a lock that cannot, or a writer of its priority
/// or above waits). `wait`: `None` for the try form, else the deadline
/// (`None`: none).
///
/// # Safety
/// `l` ours with `cell`, live.
unsafe fn realtime_read(
    l: *mut pthread_rwlock_t,
    cell: *mut u8,
    ops: &RwOps,
    wait: Option<Option<Instant>>,
) -> Option<c_int> {
    let past = ops.shared_past_waiters?;
    let prio = realtime_priority()?;
    // SAFETY: the caller's contract.
    let w = unsafe { waiting_writers(l) };
    let outranks = || {
        let v = w.load(Ordering::Relaxed);
        v >> 8 == 0 || prio > v & 255
    };
    let mut gave_way = false;
    let mut attempt = || {
        if !outranks() {
            gave_way = true;
            return true;
        }
        // SAFETY: a cell of `ops`.
        unsafe { past(cell) }
    };
    let got = match wait {
        None => attempt(),
        Some(deadline) => {
            let d = deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 32));
            slot::poll_until(d, attempt) == 0
        }
    };
    match (gave_way, got, wait) {
        (true, _, _) | (false, false, None) => None,
        (false, true, _) => Some(0),
        (false, false, Some(_)) => Some(libc::ETIMEDOUT),
    }
}

/// Keeps a reader's token; false if the table is full.
fn keep(l: usize, token: u64) -> bool {
    TOKENS.with(|t| match t.iter().find(|c| c.get().0 == 0) {
        Some(c) => {
            c.set((l, token));
            true
        }
        None => false,
    })
}

/// Takes back a reader's token of `l`.
fn take(l: usize) -> Option<u64> {
    TOKENS.with(|t| {
        t.iter().find(|c| c.get().0 == l).map(|c| {
            let token = c.get().1;
            c.set((0, 0));
            token
        })
    })
}

/// A shared acquisition of ours by `attempt` (which returns the token, or
/// `None` if the lock is not free): `EDEADLK` for the writer itself.
///
/// # Safety
/// `l` ours with `cell`, live.
unsafe fn read_ours(
    l: *mut pthread_rwlock_t,
    cell: *mut u8,
    ops: &RwOps,
    attempt: impl FnOnce() -> Option<u64>,
) -> c_int {
    // SAFETY: the caller's contract.
    if unsafe { writer(l) }.load(Ordering::Relaxed) == slot::tid() {
        return libc::EDEADLK;
    }
    let Some(token) = attempt() else {
        return libc::EBUSY;
    };
    if ops.reader_token && !keep(l as usize, token) {
        // SAFETY: just acquired with this token.
        unsafe { (ops.unlock_shared)(cell, token) };
        return libc::EAGAIN;
    }
    0
}

/// An exclusive acquisition of ours by `attempt`: `EDEADLK` for the writer
/// itself.
///
/// # Safety
/// `l` ours, live.
unsafe fn write_ours(l: *mut pthread_rwlock_t, attempt: impl FnOnce() -> bool) -> c_int {
    // SAFETY: the caller's contract.
    let w = unsafe { writer(l) };
    let me = slot::tid();
    if w.load(Ordering::Relaxed) == me {
        return libc::EDEADLK;
    }
    if !attempt() {
        return libc::EBUSY;
    }
    w.store(me, Ordering::Relaxed);
    0
}

/// The try forms say `EBUSY` where the others say `EDEADLK` (the writer
/// asking again), as the C library does: the lock is busy, with itself.
fn try_form(r: c_int) -> c_int {
    if r == libc::EDEADLK {
        libc::EBUSY
    } else {
        r
    }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_init`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_init(
    l: *mut pthread_rwlock_t,
    attr: *const pthread_rwlockattr_t,
) -> c_int {
    let ops = config::rwlock();
    let mut shared = libc::PTHREAD_PROCESS_PRIVATE;
    if !attr.is_null() {
        // SAFETY: a live attribute object, read by the C library.
        unsafe { libc::pthread_rwlockattr_getpshared(attr, &mut shared) };
    }
    if config::is_pass_rw(ops) || shared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_rwlock_init(l, attr) };
    }
    // SAFETY: POSIX: an object to initialize.
    unsafe {
        l.cast::<u8>()
            .write_bytes(0, core::mem::size_of::<pthread_rwlock_t>())
    };
    // SAFETY: the object just written; its state word and room.
    unsafe {
        slot::reserve_at_init(
            l.cast::<u8>(),
            core::mem::size_of::<pthread_rwlock_t>(),
            STATE,
            ROOM,
            ops.size,
            ops.align,
            ops.init,
        )
    }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_destroy`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int {
    let ops = config::rwlock();
    let base = l.cast::<u8>();
    // SAFETY: POSIX: a live object.
    if config::is_pass_rw(ops) || unsafe { process_shared(l) } {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_rwlock_destroy(l) };
    }
    // SAFETY: POSIX: nobody uses it any more.
    unsafe { slot::tear_down(base.add(STATE), base.add(ROOM), ops.size, ops.align) };
    0
}

macro_rules! rw_fn {
    ($name:ident, $glibc:expr, $ours:expr) => {
        /// The function of this name without `pthread_` (not profiled).
        ///
        /// # Safety
        /// POSIX's contract for it.
        unsafe fn $name(l: *mut pthread_rwlock_t) -> c_int {
            let ops = config::rwlock();
            // SAFETY: POSIX: a live object.
            match unsafe { classify(l, ops) } {
                // SAFETY: passed through as is.
                Rw::Glibc => unsafe { $glibc(l) },
                Rw::Ours(cell) => ($ours)(l, cell, ops),
            }
        }
    };
}

rw_fn!(
    plain_rdlock,
    real::__pthread_rwlock_rdlock,
    |l, cell, ops: &RwOps| {
        // SAFETY: ours (the macro's caller).
        unsafe {
            match read_ours(l, cell, ops, || (ops.try_lock_shared)(cell)) {
                libc::EBUSY => {}
                r => return r,
            }
            if let Some(r) = realtime_read(l, cell, ops, Some(None)) {
                return r;
            }
            read_ours(l, cell, ops, || Some((ops.lock_shared)(cell)))
        }
    }
);
rw_fn!(
    plain_tryrdlock,
    real::__pthread_rwlock_tryrdlock,
    |l, cell, ops: &RwOps| {
        // SAFETY: ours.
        unsafe {
            match try_form(read_ours(l, cell, ops, || (ops.try_lock_shared)(cell))) {
                libc::EBUSY => realtime_read(l, cell, ops, None).unwrap_or(libc::EBUSY),
                r => r,
            }
        }
    }
);
rw_fn!(
    plain_wrlock,
    real::__pthread_rwlock_wrlock,
    |l, cell, ops: &RwOps| {
        // SAFETY: ours.
        unsafe {
            write_ours(l, || {
                if !(ops.try_lock_exclusive)(cell) {
                    as_waiting_writer(l, ops, || (ops.lock_exclusive)(cell));
                }
                true
            })
        }
    }
);
rw_fn!(
    plain_trywrlock,
    real::__pthread_rwlock_trywrlock,
    |l, cell, ops: &RwOps| {
        // SAFETY: ours.
        unsafe { try_form(write_ours(l, || (ops.try_lock_exclusive)(cell))) }
    }
);
rw_fn!(
    plain_unlock,
    real::__pthread_rwlock_unlock,
    |l, cell, ops: &RwOps| {
        // SAFETY: ours.
        let w = unsafe { writer(l) };
        if w.load(Ordering::Relaxed) == slot::tid() {
            w.store(0, Ordering::Relaxed);
            // SAFETY: we hold it exclusive.
            unsafe { (ops.unlock_exclusive)(cell) };
            return 0;
        }
        let token = if ops.reader_token {
            match take(l as usize) {
                Some(t) => t,
                None => return libc::EPERM,
            }
        } else {
            0
        };
        // SAFETY: POSIX: the caller holds it shared (with this token).
        unsafe { (ops.unlock_shared)(cell, token) };
        0
    }
);

/// The timed forms over an object of ours: try at once, then poll.
///
/// # Safety
/// `l` ours with `cell`, live; `abs` readable.
unsafe fn timed(
    l: *mut pthread_rwlock_t,
    cell: *mut u8,
    ops: &RwOps,
    write: bool,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    let attempt = || {
        if write {
            // SAFETY: ours.
            unsafe { write_ours(l, || (ops.try_lock_exclusive)(cell)) }
        } else {
            // SAFETY: ours.
            unsafe { read_ours(l, cell, ops, || (ops.try_lock_shared)(cell)) }
        }
    };
    match attempt() {
        libc::EBUSY => {}
        r => return r,
    }
    // SAFETY: the caller's contract.
    let deadline = match unsafe { slot::deadline(clock, abs) } {
        Ok(d) => d,
        Err(e) => return e,
    };
    if !write {
        // SAFETY: ours, and not the writer (the attempt said EBUSY).
        if let Some(r) = unsafe { realtime_read(l, cell, ops, Some(Some(deadline))) } {
            return r;
        }
    }
    let mut result = 0;
    let mut poll = || {
        slot::poll_until(deadline, || match attempt() {
            libc::EBUSY => false,
            r => {
                result = r;
                true
            }
        })
    };
    let r = if write {
        // SAFETY: ours.
        unsafe { as_waiting_writer(l, ops, poll) }
    } else {
        poll()
    };
    if r == 0 {
        result
    } else {
        r
    }
}

macro_rules! rw_timed_fn {
    ($name:ident, $write:expr) => {
        /// The timed form without `pthread_` (not profiled).
        ///
        /// # Safety
        /// POSIX's contract for it.
        unsafe fn $name(l: *mut pthread_rwlock_t, abs: *const timespec) -> c_int {
            let ops = config::rwlock();
            // SAFETY: POSIX: a live object.
            match unsafe { classify(l, ops) } {
                Rw::Glibc => {
                    if $write {
                        // SAFETY: passed through as is.
                        unsafe { real::rwlock_timedwrlock(l, abs) }
                    } else {
                        // SAFETY: passed through as is.
                        unsafe { real::rwlock_timedrdlock(l, abs) }
                    }
                }
                // SAFETY: ours, live.
                Rw::Ours(cell) => unsafe { timed(l, cell, ops, $write, libc::CLOCK_REALTIME, abs) },
            }
        }
    };
}

macro_rules! rw_clock_fn {
    ($name:ident, $write:expr) => {
        /// The clock form without `pthread_` (not profiled).
        ///
        /// # Safety
        /// glibc's contract for it.
        unsafe fn $name(l: *mut pthread_rwlock_t, clock: clockid_t, abs: *const timespec) -> c_int {
            let ops = config::rwlock();
            // SAFETY: POSIX: a live object.
            match unsafe { classify(l, ops) } {
                Rw::Glibc => {
                    if $write {
                        // SAFETY: passed through as is.
                        unsafe { real::rwlock_clockwrlock(l, clock, abs) }
                    } else {
                        // SAFETY: passed through as is.
                        unsafe { real::rwlock_clockrdlock(l, clock, abs) }
                    }
                }
                // SAFETY: ours, live.
                Rw::Ours(cell) => unsafe { timed(l, cell, ops, $write, clock, abs) },
            }
        }
    };
}

rw_timed_fn!(plain_timedrdlock, false);
rw_timed_fn!(plain_timedwrlock, true);
rw_clock_fn!(plain_clockrdlock, false);
rw_clock_fn!(plain_clockwrlock, true);

// ------------------------------------------------------------ the C names

/// An acquisition, counted when profiling: `attempt` at once, then `wait`
/// (none for the try forms).
///
/// # Safety
/// `l` live; the closures are the plain forms on it.
#[inline]
unsafe fn acquire(
    l: *mut pthread_rwlock_t,
    write: bool,
    attempt: impl FnOnce() -> c_int,
    wait: Option<impl FnOnce() -> c_int>,
) -> c_int {
    let e = if !profile::on() {
        None
    // SAFETY: the caller's contract.
    } else if unsafe { process_shared(l) } {
        profile::glibc_only();
        None
    } else {
        profile::entry(l as usize, profile::RWLOCK)
    };
    match (e, wait) {
        (None, Some(w)) => w(),
        (None, None) => attempt(),
        (Some(e), w) if write => profile::exclusive(e, attempt, w, || true),
        (Some(e), w) => profile::shared(e, l as usize, attempt, w),
    }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_rdlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int {
    if config::fast_pass_rw() {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_rwlock_rdlock(l) };
    }
    // SAFETY: the caller's contract (each closure is a plain form on `l`).
    unsafe { acquire(l, false, || plain_tryrdlock(l), Some(|| plain_rdlock(l))) }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_tryrdlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int {
    if config::fast_pass_rw() {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_rwlock_tryrdlock(l) };
    }
    // SAFETY: as above.
    unsafe { acquire(l, false, || plain_tryrdlock(l), None::<fn() -> c_int>) }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_wrlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int {
    if config::fast_pass_rw() {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_rwlock_wrlock(l) };
    }
    // SAFETY: as above.
    unsafe { acquire(l, true, || plain_trywrlock(l), Some(|| plain_wrlock(l))) }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_trywrlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int {
    if config::fast_pass_rw() {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_rwlock_trywrlock(l) };
    }
    // SAFETY: as above.
    unsafe { acquire(l, true, || plain_trywrlock(l), None::<fn() -> c_int>) }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_timedrdlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_timedrdlock(
    l: *mut pthread_rwlock_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        acquire(
            l,
            false,
            || plain_tryrdlock(l),
            Some(|| plain_timedrdlock(l, abs)),
        )
    }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_timedwrlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_timedwrlock(
    l: *mut pthread_rwlock_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        acquire(
            l,
            true,
            || plain_trywrlock(l),
            Some(|| plain_timedwrlock(l, abs)),
        )
    }
}

/// # Safety
/// glibc's contract for `pthread_rwlock_clockrdlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_clockrdlock(
    l: *mut pthread_rwlock_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        acquire(
            l,
            false,
            || plain_tryrdlock(l),
            Some(|| plain_clockrdlock(l, clock, abs)),
        )
    }
}

/// # Safety
/// glibc's contract for `pthread_rwlock_clockwrlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_clockwrlock(
    l: *mut pthread_rwlock_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: as above.
    unsafe {
        acquire(
            l,
            true,
            || plain_trywrlock(l),
            Some(|| plain_clockwrlock(l, clock, abs)),
        )
    }
}

/// # Safety
/// POSIX's contract for `pthread_rwlock_unlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int {
    if config::fast_pass_rw() {
        // SAFETY: passed through as is.
        return unsafe { real::__pthread_rwlock_unlock(l) };
    }
    if profile::on() {
        if let Some(e) = profile::find(l as usize) {
            // The writer's id is at offset 24 in ours and in the C
            // library's (`__cur_writer`).
            // SAFETY: the caller's contract.
            if unsafe { writer(l) }.load(Ordering::Relaxed) == slot::tid() {
                profile::release(e);
            } else {
                profile::release_shared(e, l as usize);
            }
        }
    }
    // SAFETY: the caller's contract.
    unsafe { plain_unlock(l) }
}
