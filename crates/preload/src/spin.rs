//! `pthread_spin_*` over the chosen mutex, where it fits: a
//! `pthread_spinlock_t` is one `int`, and `pthread_spin_init` is always
//! called, so a lock that only spins (no futex: it must also work between
//! processes) and whose cell fits in 4 bytes (`tas`, `ttas`, `backoff`,
//! `qspin`, and their `spin-yield` forms) stands in for it. Under any
//! other mutex, spin locks stay the C library's.

use crate::config;
use crate::ops::MutexOps;
use crate::{profile, real};
use core::ffi::c_int;
use libc::pthread_spinlock_t;

/// Whether spin locks are ours under `ops`.
fn ours(ops: &MutexOps) -> bool {
    !config::is_pass(ops)
        && ops.spins
        && ops.size <= core::mem::size_of::<pthread_spinlock_t>()
        && ops.align <= core::mem::align_of::<pthread_spinlock_t>()
}

/// # Safety
/// POSIX's contract for `pthread_spin_init`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_spin_init(s: *mut pthread_spinlock_t, pshared: c_int) -> c_int {
    let ops = config::mutex();
    if !ours(ops) {
        // SAFETY: passed through as is.
        return unsafe { real::spin_init(s, pshared) };
    }
    // SAFETY: POSIX: an object to initialize, big enough (checked above).
    unsafe { (ops.init)(s.cast::<u8>()) };
    // Set up as one of locklab's: the interposer took effect (once; out
    // of every lock's path).
    crate::mark::used();
    0
}

/// # Safety
/// POSIX's contract for `pthread_spin_destroy`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_spin_destroy(s: *mut pthread_spinlock_t) -> c_int {
    if !ours(config::mutex()) {
        // SAFETY: passed through as is.
        return unsafe { real::spin_destroy(s) };
    }
    0
}

/// # Safety
/// POSIX's contract for `pthread_spin_lock`.
unsafe fn lock_plain(s: *mut pthread_spinlock_t) -> c_int {
    let ops = config::mutex();
    if !ours(ops) {
        // SAFETY: passed through as is.
        return unsafe { real::spin_lock(s) };
    }
    // SAFETY: initialized by `pthread_spin_init` above.
    unsafe { (ops.lock)(s.cast::<u8>()) };
    0
}

/// # Safety
/// POSIX's contract for `pthread_spin_trylock`.
unsafe fn trylock_plain(s: *mut pthread_spinlock_t) -> c_int {
    let ops = config::mutex();
    if !ours(ops) {
        // SAFETY: passed through as is.
        return unsafe { real::spin_trylock(s) };
    }
    // SAFETY: initialized by `pthread_spin_init` above.
    if unsafe { (ops.try_lock)(s.cast::<u8>()) } {
        0
    } else {
        libc::EBUSY
    }
}

/// # Safety
/// POSIX's contract for `pthread_spin_unlock`.
unsafe fn unlock_plain(s: *mut pthread_spinlock_t) -> c_int {
    let ops = config::mutex();
    if !ours(ops) {
        // SAFETY: passed through as is.
        return unsafe { real::spin_unlock(s) };
    }
    // SAFETY: POSIX: the caller holds it.
    unsafe { (ops.unlock)(s.cast::<u8>()) };
    0
}

/// # Safety
/// POSIX's contract for `pthread_spin_lock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_spin_lock(s: *mut pthread_spinlock_t) -> c_int {
    if profile::on() {
        if let Some(e) = profile::entry(s as usize, profile::SPIN) {
            return profile::exclusive(
                e,
                // SAFETY: the caller's contract.
                || unsafe { trylock_plain(s) },
                // SAFETY: as above.
                Some(|| unsafe { lock_plain(s) }),
                || true,
            );
        }
    }
    // SAFETY: the caller's contract.
    unsafe { lock_plain(s) }
}

/// # Safety
/// POSIX's contract for `pthread_spin_trylock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_spin_trylock(s: *mut pthread_spinlock_t) -> c_int {
    if profile::on() {
        if let Some(e) = profile::entry(s as usize, profile::SPIN) {
            return profile::exclusive(
                e,
                // SAFETY: the caller's contract.
                || unsafe { trylock_plain(s) },
                None::<fn() -> c_int>,
                || true,
            );
        }
    }
    // SAFETY: the caller's contract.
    unsafe { trylock_plain(s) }
}

/// # Safety
/// POSIX's contract for `pthread_spin_unlock`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_spin_unlock(s: *mut pthread_spinlock_t) -> c_int {
    if profile::on() {
        if let Some(e) = profile::find(s as usize) {
            profile::release(e);
        }
    }
    // SAFETY: the caller's contract.
    unsafe { unlock_plain(s) }
}
