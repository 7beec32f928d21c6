//! Per-thread clean-up at thread exit, without allocating.
//!
//! Two pieces of the library hold per-thread state that must be handed back
//! when a thread ends: the thread's compact index
//! ([`thread_index`](super::thread_index)) and its cache of CLH nodes
//! ([`clh_pool`](super::clh_pool)). The obvious tool, a `thread_local!`
//! whose value implements `Drop`, allocates: Rust registers such a
//! destructor with glibc's `__cxa_thread_atexit_impl`, which `calloc`s a
//! list entry, on the thread's first use of it. That first use is a lock
//! acquisition, and the lock may be one that a `malloc` takes (with the
//! interposer, jemalloc's and tcmalloc's pthread mutexes are locklab
//! locks): the allocator would be re-entered from inside its own mutex and
//! crash or deadlock.
//!
//! So the clean-up runs from one POSIX thread-specific-data key instead:
//! - The key is created once, lazily, lock-free: whoever finds no key
//!   creates one and publishes it with a compare-and-exchange; a thread that
//!   loses that race deletes its own key and uses the winner's. The publish
//!   is Release and the read Acquire, so a key number read from [`KEY`] was
//!   made by a finished `pthread_key_create` (glibc also orders its own key
//!   table; the pair costs nothing on a path taken once per thread).
//! - [`arm`] is called by the first use of either piece of state in a
//!   thread (and is never inlined into the hot paths; see there). A
//!   const-initialised `Cell<bool>` with no destructor (which needs no
//!   registration: it is a plain TLS slot) says whether this thread is
//!   armed; arming sets the key's value to a non-null marker.
//!   `pthread_setspecific` does not allocate for keys below 32 (glibc keeps
//!   those in the thread descriptor; only higher keys need a `calloc`ed
//!   second-level block), and `pthread_key_create` never allocates. The key
//!   is created on the first lock use in the process, normally before a
//!   program has made 32 keys of its own.
//! - At thread exit glibc calls the key's destructor, [`on_thread_exit`],
//!   which clears the armed flag, flushes the thread's CLH node cache to the
//!   global pool, then hands the thread index back, in that order (the flush
//!   needs no index, and the index must be the last thing let go).
//!
//! glibc runs C++ and Rust `thread_local!` destructors (`__call_tls_dtors`)
//! before any key destructor, so a Rust TLS destructor that takes a lock
//! still finds this thread's index and cache. A lock used after the hook ran
//! (from another key's destructor) takes the ordinary first-use path again,
//! which re-arms: glibc notices a key set during its destructor round and
//! runs another round (up to `PTHREAD_DESTRUCTOR_ITERATIONS`, 4), in which
//! the hook runs again. Only a lock used in the very last round can leak
//! (one index and at most one cache of nodes per such thread).
//!
//! The main thread's key destructors do not run when it returns from `main`
//! (the process is ending), which is fine: nothing needs handing back then.
//!
//! Std build only; under loom the state uses `loom::thread_local!`
//! destructors, which loom runs itself.

use super::sync::{AtomicUsize, Ordering};
use core::cell::Cell;
use core::ffi::c_void;

/// [`KEY`] before the key exists (`pthread_key_t` is a `c_uint`, so no
/// real key has this value).
const NO_KEY: usize = usize::MAX;

/// The process's one key whose destructor is [`on_thread_exit`].
static KEY: AtomicUsize = AtomicUsize::new(NO_KEY);

std::thread_local! {
    /// Whether this thread's key value is set (so that [`on_thread_exit`]
    /// will run). Const-initialised and without a destructor: reading it
    /// registers nothing and allocates nothing.
    static ARMED: Cell<bool> = const { Cell::new(false) };
}

/// Makes sure [`on_thread_exit`] runs when this thread ends (again, if it
/// has run already). Called only off the hot path (a thread's first index,
/// an empty node cache), and never inlined: in a shared library every
/// thread-local access may be a call to `__tls_get_addr`, and the compiler
/// would otherwise hoist the one for `ARMED` into the callers' fast paths.
#[cold]
#[inline(never)]
pub(crate) fn arm() {
    if ARMED.get() {
        return;
    }
    // Set first: should anything below take a lock that arms, it returns at
    // once instead of recursing.
    ARMED.set(true);
    let key = key();
    // Any non-null value makes glibc call the destructor; it is never read.
    let marker = core::ptr::without_provenance::<c_void>(1);
    // SAFETY: `key` is a live key (keys are never deleted once published).
    let rc = unsafe { libc::pthread_setspecific(key, marker) };
    if rc != 0 {
        super::abort_with("locklab: pthread_setspecific failed for the thread-exit key\n");
    }
}

/// The key, created on first use.
#[inline]
fn key() -> libc::pthread_key_t {
    let k = KEY.load(Ordering::Acquire);
    if k != NO_KEY {
        return k as libc::pthread_key_t;
    }
    create_key()
}

#[cold]
fn create_key() -> libc::pthread_key_t {
    let mut fresh: libc::pthread_key_t = 0;
    // SAFETY: `fresh` is a valid place for the key, and the destructor is an
    // `extern "C"` function that never unwinds.
    let rc = unsafe { libc::pthread_key_create(&mut fresh, Some(on_thread_exit)) };
    if rc != 0 {
        super::abort_with("locklab: pthread_key_create failed (too many keys?)\n");
    }
    // Release publishes a finished key; Acquire on failure pairs with the
    // winner's Release.
    match KEY.compare_exchange(NO_KEY, fresh as usize, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => fresh,
        Err(winner) => {
            // SAFETY: `fresh` is ours, never published, and no thread has a
            // value set for it.
            unsafe { libc::pthread_key_delete(fresh) };
            winner as libc::pthread_key_t
        }
    }
}

/// The key's destructor: this thread's clean-up, in the order the module
/// documentation gives. glibc has already reset the key's value to null.
unsafe extern "C" fn on_thread_exit(_marker: *mut c_void) {
    ARMED.set(false);
    super::clh_pool::on_thread_exit();
    super::thread_index::on_thread_exit();
}

/// Whether this thread is armed (tests only).
#[cfg(test)]
pub(crate) fn armed() -> bool {
    ARMED.get()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{clh_pool, thread_index};
    use std::sync::Mutex;

    /// What one round of the late user saw: (round, still owned an index,
    /// nodes in the CLH cache, the index it got, that index on the free
    /// list, armed after using the locks' state again).
    type Seen = (u32, bool, usize, u32, bool, bool);

    static SEEN: Mutex<Vec<Seen>> = Mutex::new(Vec::new());
    static LATE_KEY: AtomicUsize = AtomicUsize::new(NO_KEY);

    std::thread_local! {
        static ROUND: Cell<u32> = const { Cell::new(0) };
    }

    /// Rounds in which the late user uses the locks' state again (glibc
    /// runs at most 4).
    const REUSE_ROUNDS: u32 = 2;

    fn use_state() {
        thread_index::current();
        let n = clh_pool::take();
        // SAFETY: ours from `take`, and we are done with it.
        unsafe { clh_pool::give(n) };
    }

    /// A key destructor that uses an index and a CLH node in each of its
    /// first rounds and asks to be called again.
    unsafe extern "C" fn late(_: *mut c_void) {
        let round = ROUND.get() + 1;
        ROUND.set(round);
        let owned = thread_index::owns_index();
        let cached = clh_pool::cached();
        let index = thread_index::current();
        let free = thread_index::is_free(index);
        let mut rearmed = false;
        if round <= REUSE_ROUNDS {
            use_state();
            rearmed = armed();
            let key = LATE_KEY.load(Ordering::Acquire) as libc::pthread_key_t;
            // SAFETY: the test's key is live until the thread is joined.
            unsafe { libc::pthread_setspecific(key, core::ptr::without_provenance(1)) };
        }
        SEEN.lock()
            .unwrap()
            .push((round, owned, cached, index, free, rearmed));
    }

    #[test]
    fn the_hook_runs_again_for_state_used_after_it() {
        // Whichever of the two keys glibc calls first in a round, by the
        // start of the late user's round r >= 2 the hook has run since the
        // late user's use in round r - 1: the index was handed back and the
        // cache flushed, which is what the rounds check.
        let mut k: libc::pthread_key_t = 0;
        // SAFETY: a valid place for the key; `late` never unwinds.
        assert_eq!(unsafe { libc::pthread_key_create(&mut k, Some(late)) }, 0);
        LATE_KEY.store(k as usize, Ordering::Release);
        std::thread::spawn(move || {
            use_state();
            assert!(armed());
            assert!(clh_pool::cached() > 0);
            // SAFETY: a live key.
            unsafe { libc::pthread_setspecific(k, core::ptr::without_provenance(1)) };
        })
        .join()
        .unwrap();
        // SAFETY: the only thread that set it is gone.
        unsafe { libc::pthread_key_delete(k) };
        let seen = core::mem::take(&mut *SEEN.lock().unwrap());
        assert_eq!(seen.len(), REUSE_ROUNDS as usize + 1, "rounds: {seen:?}");
        for (round, owned, cached, index, free, rearmed) in seen {
            assert!(!free, "round {round}: index {index} used while free");
            if round >= 2 {
                assert!(
                    !owned,
                    "round {round}: the hook did not hand the index back"
                );
                assert_eq!(cached, 0, "round {round}: the hook did not flush the cache");
            }
            if round <= REUSE_ROUNDS {
                assert!(rearmed, "round {round}: using the state did not re-arm");
            }
        }
    }
}
