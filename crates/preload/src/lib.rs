//! `liblocklab_preload.so`: an unmodified program's pthread locks replaced
//! by locklab's. Loaded with `LD_PRELOAD`, it defines the C library's
//! mutex, condition variable, reader-writer lock and spin lock functions,
//! so the program's calls land here:
//!
//! ```text
//! LD_PRELOAD=target/release/liblocklab_preload.so LOCKLAB_LOCK=mcs LOCKLAB_RWLOCK=rw-fair ./program
//! ```
//!
//! `LOCKLAB_LOCK` names the mutex (any of `locklab locks`' mutexes, or
//! `pthread` for the C library's own), `LOCKLAB_RWLOCK` the reader-writer
//! lock (or `pthread-rw`, the default). A bad or missing `LOCKLAB_LOCK`
//! ends the program at start-up with one line naming the value and the
//! valid names, exit code 2 ([`config`]).
//!
//! What stays the C library's: process-shared, robust and
//! priority-protocol mutexes, process-shared condition variables and
//! reader-writer locks (each marked as such in the object by the C
//! library's own init, and recognized on every call); spin locks, unless
//! the chosen mutex only spins and fits in an `int` ([`spin`]).
//!
//! Where a lock's state lives and why there is no table on the lock path:
//! [`slot`]. How a condition variable works with any mutex, and why a
//! signal under the mutex wakes at its release: [`cond`]. What the
//! interposer adds to an uncontended pair, measured in one process beside
//! the C library's pair and `locklab::Mutex`: the `interposer-cost`
//! binary of this package (`src/bin/interposer-cost.rs`).
//! The timed forms poll ([`slot::poll_until`]): `lock_api`'s raw traits
//! have no deadline.
//!
//! With `LOCKLAB_PROFILE=<dir>`, every lock object is counted and the
//! counts written at exit ([`profile`], read by `locklab profile`). With
//! `LOCKLAB_MARK=<dir>`, each process marks there that the interposer
//! loaded and that a lock of locklab's was set up ([`mark`], read by
//! `locklab run`, which ranks no lock that never took effect).
//!
//! Nothing unwinds into C: a condition variable waited on with two
//! mutexes at once (undefined in POSIX) returns `EINVAL` without releasing
//! the mutex, and nothing else on these paths panics (were it to, the
//! `extern "C"` boundary would abort the process, never unwind into C).
//! The one unwinding that crosses the interposer is the C library's own:
//! a thread cancelled in a condition wait, whose functions are therefore
//! `extern "C-unwind"` and leave nothing to undo in their frames ([`cond`]).

// The unit tests build this crate as a program that must not interpose its
// own calls: there the C functions are plain Rust functions, unused.
#![cfg_attr(test, allow(dead_code))]

pub mod cond;
pub mod config;
pub mod mark;
pub mod mutex;
pub mod ops;
pub mod profile;
pub mod real;
pub mod rwlock;
pub mod slot;
pub mod spin;

/// Run as the library is loaded: the configuration is read (a bad value
/// ends the program before it starts), the profile turned on if asked
/// ([`profile`]), the load marked for `locklab run` if asked ([`mark`]),
/// and a forked child forgets its parent's thread id and
/// counts.
extern "C" fn at_load() {
    config::at_load();
    profile::at_load();
    mark::at_load();
    config::set_fast(profile::on());
    // SAFETY: registers a handler that clears thread-local cells and, when
    // profiling, replaces the table with a fresh mapping.
    unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
}

/// After `fork`, in the child.
extern "C" fn in_child() {
    slot::forget_tid_in_child();
    profile::forget_in_child();
}

#[cfg(not(test))]
#[used]
#[link_section = ".init_array"]
static AT_LOAD: extern "C" fn() = at_load;

/// Times `pairs` uncontended lock/unlock pairs of the chosen mutex
/// (`LOCKLAB_LOCK`) used directly from Rust, in this library's own machine
/// code for that lock: what `c/uncontended.c` measures through the C
/// functions, less the interface (it calls this between its own batches).
/// Nanoseconds per pair; -1 under `pthread`, which has no Rust form. For
/// measuring the interface's cost, not for programs.
#[no_mangle]
pub extern "C" fn locklab_direct_ns_per_pair(pairs: u64) -> f64 {
    let ops = config::mutex();
    if config::is_pass(ops) || pairs == 0 {
        return -1.0;
    }
    (ops.direct)(pairs) as f64 / pairs as f64
}
