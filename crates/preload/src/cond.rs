//! `pthread_cond_*` over locklab's condition variable
//! ([`locklab::Condvar`]), which works with any mutex: it releases the
//! mutex, sleeps on a sequence word of its own, and takes the mutex back
//! (no lost wake-ups: the waiter reads the word before releasing), and its
//! broadcast wakes the waiters one at a time, each as the previous one
//! holds the mutex, instead of sending them all onto it at once.
//!
//! The object is glibc's `pthread_cond_t` (48 bytes). The condition
//! variable takes its first bytes, whose all-zero state is
//! `PTHREAD_COND_INITIALIZER`'s; the clock of the timed waits (from
//! `pthread_condattr_setclock`) is kept at offset 40. A process-shared
//! condition variable is glibc's: glibc marks it in bit 0 of its
//! `__wrefs` word (offset 36), which ours leaves 0.

use crate::mutex::{classify, relock_ours, unlock_ours, Mutex};
use crate::{config, profile, real, slot};
use core::ffi::c_int;
use core::sync::atomic::{AtomicU32, Ordering};
use libc::{clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, timespec};
use locklab::Condvar;
use std::time::Instant;

const GLIBC_WREFS: usize = 36;
const CLOCK: usize = 40;

const _: () = assert!(core::mem::size_of::<Condvar>() <= GLIBC_WREFS);
const _: () = assert!(core::mem::align_of::<Condvar>() <= 8);

/// Whether glibc keeps this condition variable (all of them under
/// `pthread`, and process-shared ones).
///
/// # Safety
/// `c` points to a live `pthread_cond_t`.
unsafe fn glibc_keeps(c: *mut pthread_cond_t) -> bool {
    config::is_pass(config::mutex())
        // SAFETY: a word of the live object.
        || unsafe { &*c.cast::<u8>().add(GLIBC_WREFS).cast::<AtomicU32>() }.load(Ordering::Relaxed) & 1 != 0
}

/// # Safety
/// `c` is a live object of ours.
unsafe fn condvar<'a>(c: *mut pthread_cond_t) -> &'a Condvar {
    // SAFETY: the first bytes of the object are a `Condvar` (all zero is
    // a fresh one).
    unsafe { &*c.cast::<Condvar>() }
}

/// # Safety
/// POSIX's contract for `pthread_cond_init`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut pthread_cond_t,
    attr: *const pthread_condattr_t,
) -> c_int {
    let mut shared = libc::PTHREAD_PROCESS_PRIVATE;
    let mut clock = libc::CLOCK_REALTIME;
    if !attr.is_null() {
        // SAFETY: a live attribute object, read by the C library.
        unsafe {
            libc::pthread_condattr_getpshared(attr, &mut shared);
            libc::pthread_condattr_getclock(attr, &mut clock);
        }
    }
    if config::is_pass(config::mutex()) || shared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: passed through as is.
        return unsafe { real::cond_init(c, attr) };
    }
    // SAFETY: POSIX: `c` points to an object to initialize.
    unsafe {
        c.cast::<u8>()
            .write_bytes(0, core::mem::size_of::<pthread_cond_t>());
        *c.cast::<u8>().add(CLOCK).cast::<clockid_t>() = clock;
    }
    0
}

/// # Safety
/// POSIX's contract for `pthread_cond_destroy`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: POSIX: a live object.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_destroy(c) };
    }
    0
}

/// # Safety
/// POSIX's contract for `pthread_cond_signal`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: POSIX: a live object.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_signal(c) };
    }
    // SAFETY: ours.
    unsafe { condvar(c) }.notify_one();
    0
}

/// # Safety
/// POSIX's contract for `pthread_cond_broadcast`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: POSIX: a live object.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_broadcast(c) };
    }
    // SAFETY: ours.
    unsafe { condvar(c) }.notify_all();
    0
}

/// Waits on a condition variable of ours with `m` (until `deadline`).
///
/// # Safety
/// `c` ours and live; `m` a live mutex the caller holds.
unsafe fn wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    deadline: Option<Instant>,
) -> c_int {
    let ops = config::mutex();
    // SAFETY: the caller's contract.
    let cv = unsafe { condvar(c) };
    // SAFETY: the caller's contract.
    let target = unsafe { classify(m, ops) };
    let mut failed = 0;
    let r = cv.try_wait_with(m as *const (), deadline, |sleep| match target {
        Mutex::Glibc => {
            // SAFETY: the caller holds `m`, a glibc mutex.
            failed = unsafe { real::__pthread_mutex_unlock(m) };
            if failed == 0 {
                sleep();
                // SAFETY: take it back, as POSIX requires.
                unsafe { real::__pthread_mutex_lock(m) };
            }
        }
        // SAFETY: ours: release it (whatever its recursion count),
        // sleep, take it back with the same count.
        Mutex::Ours(cell, ty) => match unsafe { unlock_ours(m, cell, ty, ops, true) } {
            Ok(count) => {
                sleep();
                // SAFETY: as above.
                unsafe { relock_ours(m, cell, ty, ops, count) };
            }
            Err(e) => failed = e,
        },
    });
    match r {
        // Waiters on one condition variable with two mutexes at once:
        // undefined in POSIX; an error here (the mutex was not released).
        Err(_) => libc::EINVAL,
        Ok(_) if failed != 0 => failed,
        Ok(r) if r.timed_out() => libc::ETIMEDOUT,
        Ok(_) => 0,
    }
}

/// # Safety
/// POSIX's contract for `pthread_cond_wait`.
unsafe fn wait_plain(c: *mut pthread_cond_t, m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: POSIX: live objects.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_wait(c, m) };
    }
    // SAFETY: POSIX: the caller holds `m`.
    unsafe { wait(c, m, None) }
}

/// # Safety
/// POSIX's contract for `pthread_cond_timedwait`.
unsafe fn timedwait_plain(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: POSIX: live objects.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_timedwait(c, m, abs) };
    }
    // SAFETY: ours: its clock word.
    let clock = unsafe { *c.cast::<u8>().add(CLOCK).cast::<clockid_t>() };
    // SAFETY: POSIX: `abs` readable.
    match unsafe { slot::deadline(clock, abs) } {
        // SAFETY: POSIX: the caller holds `m`.
        Ok(d) => unsafe { wait(c, m, Some(d)) },
        Err(e) => e,
    }
}

/// # Safety
/// glibc's contract for `pthread_cond_clockwait`.
unsafe fn clockwait_plain(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: POSIX: live objects.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_clockwait(c, m, clock, abs) };
    }
    // SAFETY: `abs` readable.
    match unsafe { slot::deadline(clock, abs) } {
        // SAFETY: POSIX: the caller holds `m`.
        Ok(d) => unsafe { wait(c, m, Some(d)) },
        Err(e) => e,
    }
}

/// # Safety
/// POSIX's contract for `pthread_cond_wait`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's contract.
    let wait = || unsafe { wait_plain(c, m) };
    if profile::on() {
        return profile::cond_wait(m as usize, wait);
    }
    wait()
}

/// # Safety
/// POSIX's contract for `pthread_cond_timedwait`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    let wait = || unsafe { timedwait_plain(c, m, abs) };
    if profile::on() {
        return profile::cond_wait(m as usize, wait);
    }
    wait()
}

/// # Safety
/// glibc's contract for `pthread_cond_clockwait`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    let wait = || unsafe { clockwait_plain(c, m, clock, abs) };
    if profile::on() {
        return profile::cond_wait(m as usize, wait);
    }
    wait()
}
