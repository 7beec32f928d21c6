//! Which locks the program runs under: `LOCKLAB_LOCK` (a mutex of the
//! registry, or `pthread` for the C library's own) and `LOCKLAB_RWLOCK` (a
//! reader-writer lock, or `pthread-rw`, the default). Read once, at load
//! time (or at the first lock call, if that comes first), without
//! allocating: an allocator that takes pthread mutexes may be what calls.
//! A bad value ends the program with one line and exit code 2.

use crate::ops::{mutex_ops, rw_ops, rw_ops_past, MutexOps, RwOps};
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use locklab::*;

/// Every mutex of the registry, by name.
static MUTEXES: &[MutexOps] = &[
    mutex_ops::<RawTas>(),
    mutex_ops::<RawTtas>(),
    mutex_ops::<RawBackoff>(),
    mutex_ops::<RawTicket>(),
    mutex_ops::<RawTicketBackoff>(),
    mutex_ops::<RawK42>(),
    mutex_ops::<RawMcs>(),
    mutex_ops::<RawClh>(),
    mutex_ops::<RawQspin>(),
    mutex_ops::<RawHybridMutex<AdaptiveSpin>>(),
    mutex_ops::<RawHybridMutex<FixedSpin>>(),
    mutex_ops::<RawFutex3>(),
    mutex_ops::<RawCboMcs>(),
    mutex_ops::<RawHmcs>(),
    mutex_ops::<RawCna>(),
    mutex_ops::<RawMalthusian>(),
    mutex_ops::<RawMcsTp>(),
    mutex_ops::<RawHemlock>(),
    mutex_ops::<RawTwa>(),
    mutex_ops::<RawAnderson>(),
    mutex_ops::<SpinYield<RawTas>>(),
    mutex_ops::<SpinPark<RawTas>>(),
    mutex_ops::<SpinYield<RawTtas>>(),
    mutex_ops::<SpinPark<RawTtas>>(),
    mutex_ops::<SpinYield<RawBackoff>>(),
    mutex_ops::<SpinPark<RawBackoff>>(),
    mutex_ops::<SpinYield<RawTicket>>(),
    mutex_ops::<SpinPark<RawTicket>>(),
    mutex_ops::<SpinYield<RawTicketBackoff>>(),
    mutex_ops::<SpinPark<RawTicketBackoff>>(),
    mutex_ops::<SpinYield<RawK42>>(),
    mutex_ops::<SpinPark<RawK42>>(),
    mutex_ops::<SpinYield<RawMcs>>(),
    mutex_ops::<SpinPark<RawMcs>>(),
    mutex_ops::<SpinYield<RawClh>>(),
    mutex_ops::<SpinPark<RawClh>>(),
    mutex_ops::<SpinYield<RawQspin>>(),
    mutex_ops::<SpinPark<RawQspin>>(),
];

/// Every reader-writer lock of the registry, by name.
static RWLOCKS: &[RwOps] = &[
    rw_ops::<RawRwReader>(),
    rw_ops_past::<RawRwWriter>(),
    rw_ops_past::<RawRwFair>(),
    rw_ops::<RawBrLock>(),
    rw_ops_past::<RawRwSem>(),
];

/// A "mutex" that excludes nothing, for the test that must catch it
/// (accepted only with `LOCKLAB_TEST_BROKEN=1`).
pub struct Broken;

// SAFETY: it is not a lock at all; it exists to show that the interposer's
// test program fails on a lock that does not exclude. It never touches
// memory, so nothing unsound happens in Rust; the C program's data races
// are what the test detects.
unsafe impl lock_api::RawMutex for Broken {
    const INIT: Self = Broken;
    type Guard = ();
    fn lock(&self) {}
    fn try_lock(&self) -> Option<()> {
        Some(())
    }
    unsafe fn unlock(&self, _: ()) {}
    fn is_locked(&self) -> bool {
        false
    }
}

impl Described for Broken {
    const INFO: LockInfo = LockInfo {
        name: "broken",
        family: Family::Spin,
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "locklab-preload's test",
        summary: "excludes nothing (tests only)",
    };
}

static BROKEN: MutexOps = mutex_ops::<Broken>();

/// `pthread_mutex_lock`, `_trylock` or `_unlock`, or a function that stands
/// for one.
pub type MutexFn = unsafe extern "C" fn(*mut libc::pthread_mutex_t) -> core::ffi::c_int;

/// Where one of the mutex calls goes: set once at load ([`set_fast`]) when
/// nothing is counted, to the C library's own function (`pthread`) or the
/// chosen lock's ([`MutexOps::c_lock`] and its siblings, which handle a
/// default-type mutex with the lock's code inlined); until then, and when
/// profiling, the general path, which also reads the configuration. The
/// exported function is one load and a jump: `pthread_mutex_lock` under
/// the passthrough costs a program that, and the jump into the C library.
pub struct Route(AtomicPtr<()>);

impl Route {
    const fn new(f: MutexFn) -> Self {
        Route(AtomicPtr::new(f as *mut ()))
    }

    /// The function calls go to.
    #[inline(always)]
    pub fn get(&self) -> MutexFn {
        // SAFETY: only `MutexFn`s are stored (`new`, `set`).
        unsafe { core::mem::transmute::<*mut (), MutexFn>(self.0.load(Ordering::Relaxed)) }
    }

    fn set(&self, f: MutexFn) {
        self.0.store(f as *mut (), Ordering::Relaxed);
    }
}

/// Where `pthread_mutex_lock` goes ([`Route`]).
pub(crate) static LOCK: Route = Route::new(crate::mutex::lock_general);
/// Where `pthread_mutex_trylock` goes.
pub(crate) static TRYLOCK: Route = Route::new(crate::mutex::trylock_general);
/// Where `pthread_mutex_unlock` goes.
pub(crate) static UNLOCK: Route = Route::new(crate::mutex::unlock_general);

/// Whether every reader-writer lock call goes straight to the C library.
static FAST_PASS_RW: AtomicBool = AtomicBool::new(false);

/// `FAST_PASS_RW`.
#[inline(always)]
pub fn fast_pass_rw() -> bool {
    FAST_PASS_RW.load(Ordering::Relaxed)
}

/// Sets the fast paths once the configuration and the profile are known.
pub fn set_fast(profiling: bool) {
    let ops = mutex();
    if profiling {
        // The general path (as at start-up).
    } else if is_pass(ops) {
        LOCK.set(crate::real::__pthread_mutex_lock);
        TRYLOCK.set(crate::real::__pthread_mutex_trylock);
        UNLOCK.set(crate::real::__pthread_mutex_unlock);
    } else {
        LOCK.set(ops.c_lock);
        TRYLOCK.set(ops.c_trylock);
        UNLOCK.set(ops.c_unlock);
    }
    FAST_PASS_RW.store(is_pass_rw(rwlock()) && !profiling, Ordering::Relaxed);
}

/// The mutex chosen (null: not yet read; [`PASS`]: the C library's).
static MUTEX: AtomicPtr<MutexOps> = AtomicPtr::new(core::ptr::null_mut());
/// The reader-writer lock chosen (null: not yet read; [`PASS_RW`]).
static RWLOCK: AtomicPtr<RwOps> = AtomicPtr::new(core::ptr::null_mut());

/// The C library's mutex (`pthread`): every call passes through.
pub static PASS: MutexOps = MutexOps {
    name: "pthread",
    ..mutex_ops::<Broken>()
};

/// The C library's reader-writer lock (`pthread-rw`).
pub static PASS_RW: RwOps = RwOps {
    name: "pthread-rw",
    ..rw_ops::<RawRwReader>()
};

/// The mutex the program runs under.
#[inline]
pub fn mutex() -> &'static MutexOps {
    let p = MUTEX.load(Ordering::Acquire);
    if p.is_null() {
        load();
        // SAFETY: `load` stored a pointer to a static or ended the process.
        return unsafe { &*MUTEX.load(Ordering::Acquire) };
    }
    // SAFETY: only pointers to statics are stored.
    unsafe { &*p }
}

/// The reader-writer lock the program runs under.
#[inline]
pub fn rwlock() -> &'static RwOps {
    let p = RWLOCK.load(Ordering::Acquire);
    if p.is_null() {
        load();
        // SAFETY: as in `mutex`.
        return unsafe { &*RWLOCK.load(Ordering::Acquire) };
    }
    // SAFETY: only pointers to statics are stored.
    unsafe { &*p }
}

/// Whether `ops` is the C library's mutex.
#[inline]
pub fn is_pass(ops: &MutexOps) -> bool {
    core::ptr::eq(ops, &PASS)
}

/// Whether `ops` is the C library's reader-writer lock.
#[inline]
pub fn is_pass_rw(ops: &RwOps) -> bool {
    core::ptr::eq(ops, &PASS_RW)
}

/// An environment variable's value, without allocating.
fn env(name: &core::ffi::CStr) -> Option<&'static [u8]> {
    // SAFETY: `getenv` returns null or a NUL-terminated string that lives
    // as long as the environment is not changed; it is read at start-up.
    let p = unsafe { libc::getenv(name.as_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string, as above.
    Some(unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes())
}

/// Reads both variables and stores the choice (idempotent: racing threads
/// store the same pointers).
fn load() {
    let broken_ok = env(c"LOCKLAB_TEST_BROKEN") == Some(b"1");
    let m: &'static MutexOps = match env(c"LOCKLAB_LOCK") {
        None => fail(b"LOCKLAB_LOCK is not set", b"LOCKLAB_LOCK", mutex_names()),
        Some(b"pthread") => &PASS,
        Some(b"broken") if broken_ok => &BROKEN,
        Some(v) => match MUTEXES.iter().find(|o| o.name.as_bytes() == v) {
            Some(o) => o,
            None => fail(v, b"LOCKLAB_LOCK", mutex_names()),
        },
    };
    let r: &'static RwOps = match env(c"LOCKLAB_RWLOCK") {
        None | Some(b"pthread-rw") => &PASS_RW,
        Some(v) => match RWLOCKS.iter().find(|o| o.name.as_bytes() == v) {
            Some(o) => o,
            None => fail(v, b"LOCKLAB_RWLOCK", rw_names()),
        },
    };
    MUTEX.store(m as *const MutexOps as *mut MutexOps, Ordering::Release);
    RWLOCK.store(r as *const RwOps as *mut RwOps, Ordering::Release);
}

fn mutex_names() -> impl Iterator<Item = &'static str> {
    core::iter::once("pthread").chain(MUTEXES.iter().map(|o| o.name))
}

fn rw_names() -> impl Iterator<Item = &'static str> {
    core::iter::once("pthread-rw").chain(RWLOCKS.iter().map(|o| o.name))
}

/// Writes `locklab-preload: VAR='value' is not a lock: allowed a, b, …` (or
/// the message alone when `value` is the whole message) to stderr and ends
/// the process with exit code 2, without allocating or unwinding.
fn fail(value: &[u8], var: &[u8], allowed: impl Iterator<Item = &'static str>) -> ! {
    let out = |b: &[u8]| {
        let mut rest = b;
        while !rest.is_empty() {
            // SAFETY: writes from a live slice to stderr.
            let n = unsafe { libc::write(2, rest.as_ptr().cast(), rest.len()) };
            if n <= 0 {
                break;
            }
            rest = &rest[n as usize..];
        }
    };
    out(b"locklab-preload: ");
    if value.starts_with(var) {
        out(value);
        out(b"; allowed ");
    } else {
        out(var);
        out(b"='");
        out(value);
        out(b"' is not a lock: allowed ");
    }
    for (i, n) in allowed.enumerate() {
        if i > 0 {
            out(b", ");
        }
        out(n.as_bytes());
    }
    out(b" (see `locklab locks`)\n");
    // SAFETY: ends the process at once; nothing to unwind.
    unsafe { libc::_exit(2) }
}

/// Reads the configuration as the library is loaded, so a bad value ends
/// the program before it runs (even one that never takes a lock).
pub extern "C" fn at_load() {
    load();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slot::fits;

    fn mutex_fits(name: &str) -> bool {
        let o = MUTEXES.iter().find(|o| o.name == name).unwrap();
        fits(o.size, o.align)
    }

    fn rw_fits(name: &str) -> bool {
        let o = RWLOCKS.iter().find(|o| o.name == name).unwrap();
        fits(o.size, o.align)
    }

    /// docs/programs.md and `slot`'s documentation say which locks live in the
    /// C object and which beside it.
    #[test]
    fn cells_live_where_the_docs_say() {
        for name in [
            "tas", "ttas", "backoff", "ticket", "k42", "clh", "qspin", "futex3",
        ] {
            assert!(mutex_fits(name), "{name} does not fit in the object");
        }
        for name in ["mutex", "mcs"] {
            assert!(!mutex_fits(name), "{name} fits in the object");
        }
        for name in ["rw-reader", "rw-writer", "rw-fair", "rwsem"] {
            assert!(rw_fits(name), "{name} does not fit in the object");
        }
        assert!(!rw_fits("brlock"));
        // Spin locks: only spinning locks of an int's size.
        for o in MUTEXES {
            let spin_ok = o.spins && o.size <= 4 && o.align <= 4;
            let named = ["tas", "ttas", "backoff", "qspin"]
                .iter()
                .any(|b| o.name == *b || o.name == format!("spin-yield({b})"));
            assert_eq!(spin_ok, named, "{}", o.name);
        }
    }

    /// Names are unique, and `pthread` and `pthread-rw` are not among the
    /// registry's (they pass through).
    #[test]
    fn names_are_unique() {
        let mut names: Vec<&str> = mutex_names().chain(rw_names()).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        assert_eq!(MUTEXES.len(), 38);
    }
}
