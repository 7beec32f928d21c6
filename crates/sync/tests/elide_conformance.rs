//! Every mutex of the library behaves as a mutex when elided: each raw
//! mutex the lab's registry lists (`crates/lab/src/registry.rs`,
//! `visit_mutexes`: locklab's own, the spin-yield and spin-park adapters)
//! wrapped in `Elided<R>` under both policies (`elide(R)`, seed 002's
//! Fig. 1, and `elide-adaptive(R)`, glibc's), through real RTM:
//!
//! - mutual exclusion and progress: several threads mix short sections
//!   (which commit as transactions) with sections that write more than a
//!   transaction can hold (which abort every transaction, so they run on
//!   the fall-back lock while the others elide); a pair that must stay
//!   equal and a count that must come out exact, under a watchdog;
//! - `try_lock`: fails while another thread holds the lock and while this
//!   one does, succeeds on a free lock;
//! - guards: dropped out of order across two locks, dropped while
//!   unwinding, each leaves its lock free for another thread.
//!
//! Elision needs RTM: where the CPU has none (`rtm_available()` false)
//! these checks are skipped with a note, since every acquisition would be
//! the fall-back lock's own (which its own tests check). The list of locks
//! is checked against the registry everywhere.

use lock_api::{Mutex, RawMutex};
use locklab::elide::{lock_mutex_with_outcome, Adaptive, Elided, Fixed, Path, Policy};
use locklab::{
    rtm_available, AdaptiveSpin, Described, FixedSpin, RawAnderson, RawBackoff, RawCboMcs, RawClh,
    RawCna, RawFutex3, RawHemlock, RawHmcs, RawHybridMutex, RawK42, RawMalthusian, RawMcs,
    RawMcsTp, RawQspin, RawTas, RawTicket, RawTicketBackoff, RawTtas, RawTwa, Rtm, SpinPark,
    SpinYield,
};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Barrier};
use std::time::Duration;

/// Calls `$check!(Type)` for every raw mutex of the registry, in its
/// order.
macro_rules! for_each_raw_mutex {
    ($check:ident) => {
        $check!(RawTas);
        $check!(RawTtas);
        $check!(RawBackoff);
        $check!(RawTicket);
        $check!(RawTicketBackoff);
        $check!(RawK42);
        $check!(RawMcs);
        $check!(RawClh);
        $check!(RawQspin);
        $check!(RawHybridMutex<AdaptiveSpin>);
        $check!(RawHybridMutex<FixedSpin>);
        $check!(RawFutex3);
        $check!(RawCboMcs);
        $check!(RawHmcs);
        $check!(RawCna);
        $check!(RawMalthusian);
        $check!(RawMcsTp);
        $check!(RawHemlock);
        $check!(RawTwa);
        $check!(RawAnderson);
        $check!(SpinYield<RawTas>);
        $check!(SpinPark<RawTas>);
        $check!(SpinYield<RawTtas>);
        $check!(SpinPark<RawTtas>);
        $check!(SpinYield<RawBackoff>);
        $check!(SpinPark<RawBackoff>);
        $check!(SpinYield<RawTicket>);
        $check!(SpinPark<RawTicket>);
        $check!(SpinYield<RawTicketBackoff>);
        $check!(SpinPark<RawTicketBackoff>);
        $check!(SpinYield<RawK42>);
        $check!(SpinPark<RawK42>);
        $check!(SpinYield<RawMcs>);
        $check!(SpinPark<RawMcs>);
        $check!(SpinYield<RawClh>);
        $check!(SpinPark<RawClh>);
        $check!(SpinYield<RawQspin>);
        $check!(SpinPark<RawQspin>);
    };
}

/// Runs `$f::<R, P>()` for every raw mutex `R` and both policies `P`,
/// then fails naming every elided lock whose check panicked.
macro_rules! for_each_elided {
    ($f:ident) => {{
        let mut failed: Vec<&str> = Vec::new();
        macro_rules! both {
            ($r:ty) => {
                let (fixed, adaptive) = (
                    std::panic::catch_unwind(|| $f::<$r, Fixed>()),
                    std::panic::catch_unwind(|| $f::<$r, Adaptive>()),
                );
                if fixed.is_err() {
                    failed.push(E::<$r, Fixed>::INFO.name);
                }
                if adaptive.is_err() {
                    failed.push(E::<$r, Adaptive>::INFO.name);
                }
            };
        }
        for_each_raw_mutex!(both);
        assert!(failed.is_empty(), "{} failed: {failed:?}", stringify!($f));
    }};
}

/// How long any one check may take before it counts as hung.
const HANG: Duration = Duration::from_secs(120);

/// Aborts the process if not dropped in time: a hung lock fails the test
/// instead of hanging CI.
struct Watchdog(Option<mpsc::Sender<()>>);

impl Watchdog {
    fn new(what: String) -> Self {
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(HANG) {
                // To fd 2 itself: libtest would capture `eprintln!` here and
                // lose it in the abort.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "watchdog: `{what}` still running after {HANG:?}: hung lock?"
                );
                std::process::abort();
            }
        });
        Self(Some(tx))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.0.take();
    }
}

/// Whether to run; prints the note once per test when not.
fn with_rtm(test: &str) -> bool {
    let yes = rtm_available();
    if !yes {
        eprintln!("note: {test} skipped: this CPU has no RTM, so nothing is elided");
    }
    yes
}

/// A raw mutex of the library, as these checks wrap it.
trait Fallback: RawMutex + Described + Send + Sync + 'static {}
impl<R: RawMutex + Described + Send + Sync + 'static> Fallback for R {}

/// A policy, as these checks use it.
trait Pol: Policy + Send + Sync + 'static {}
impl<P: Policy + Send + Sync + 'static> Pol for P {}

/// `R` elided under `P`.
type E<R, P> = Elided<R, Rtm, P>;

/// More threads than the adaptive policy's default skips (3), so that
/// while a big section holds the lock some of the others still elide.
const THREADS: usize = 5;
const ITERS: u64 = 1_000;
/// Every this many sections is a big one (see [`overflow`]) ...
const BIG_EVERY: u64 = 8;
/// ... and every this many also sleeps holding the lock.
const SLEEP_EVERY: u64 = 64;
/// More than any L1 data cache holds: RTM tracks a transaction's writes
/// there, so writing this much aborts it for capacity, every time.
const BIG: usize = 128 << 10;

/// How long a big section holds the lock after its overflow.
const HOLD: Duration = Duration::from_micros(50);

/// Writes a byte in each cache line of `buf` (a section that no
/// transaction can hold), then holds the lock for [`HOLD`]: asleep if
/// `sleep`, so that the other threads run meanwhile even on a machine
/// whose other CPUs are busy (a lock that lets them in shows), spinning
/// otherwise.
///
/// Only under seed 002's policy do holders sleep. The adaptive policy
/// takes the fall-back lock as soon as it finds it busy (glibc's rule), so
/// while a holder sleeps every other thread queues on it; with a FIFO spin
/// lock and more threads than CPUs, that convoys (preempted waiters are
/// handed the lock in turn) and one lock's run took over 30 s here, where
/// seed 002's waiters, who wait outside the queue, took 0.3 s.
fn overflow(buf: &mut [u8], sleep: bool) {
    for line in buf.chunks_mut(64) {
        line[0] = line[0].wrapping_add(1);
    }
    std::hint::black_box(buf);
    if sleep {
        std::thread::sleep(HOLD);
    } else {
        let t = std::time::Instant::now();
        while t.elapsed() < HOLD {
            std::hint::spin_loop();
        }
    }
}

/// The protected data: a pair that every section keeps equal, on cache
/// lines of its own, so that only reading the lock (not sitting beside
/// it) puts the lock in a transaction's read set.
#[derive(Debug, Default, Clone, Copy)]
#[repr(align(128))]
struct Pair(u64, u64);

/// Sections per path, summed over the threads.
#[derive(Debug, Default, Clone, Copy)]
struct Paths {
    transaction: u64,
    fallback: u64,
    skipped: u64,
    /// A section that saw the pair unequal, or the count change under it,
    /// and committed or held the lock: two sections overlapped.
    overlaps: u64,
}

fn exclusion_and_progress<R: Fallback, P: Pol>() {
    let name = E::<R, P>::INFO.name;
    let sleeps = P::NAME == Fixed::NAME;
    let _w = Watchdog::new(format!("{name}: exclusion and progress"));
    let t0 = std::time::Instant::now();
    let m: Mutex<E<R, P>, Pair> = Mutex::new(Pair(0, 0));
    let start = Barrier::new(THREADS);
    let per_thread: Vec<(u64, Paths)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let (mut done, mut paths) = (0, Paths::default());
                    let mut buf = vec![0u8; BIG];
                    for i in 0..ITERS {
                        let (mut g, o) = lock_mutex_with_outcome(&m);
                        // Counted only if the section commits or holds
                        // the lock: an aborted transaction rolls it back.
                        let seen = *g;
                        if i % BIG_EVERY == 0 {
                            // Read, write what no transaction can hold,
                            // read again and write back: a section that
                            // ran meanwhile shows, and would be lost.
                            overflow(&mut buf, sleeps && i % SLEEP_EVERY == 0);
                            paths.overlaps += u64::from(g.0 != seen.0);
                            g.0 = seen.0 + 1;
                        } else {
                            g.0 += 1;
                            for k in 0..16 {
                                std::hint::black_box(k);
                            }
                        }
                        g.1 = g.0;
                        drop(g);
                        paths.overlaps += u64::from(seen.0 != seen.1);
                        match o.path {
                            Path::Transaction => paths.transaction += 1,
                            Path::Fallback => paths.fallback += 1,
                            Path::Skipped => paths.skipped += 1,
                            Path::Unavailable => {}
                        }
                        done += 1;
                        // Outside the lock, give the CPU away: with more
                        // threads than CPUs, a fair fall-back hands over
                        // to preempted waiters while the running ones spin
                        // out their time slices (under the adaptive policy,
                        // which skips elision and queues, whole runs took
                        // minutes without this). The others contend still,
                        // and a big section often starts while they are
                        // between sections, so that they start theirs
                        // while it holds the lock.
                        std::thread::yield_now();
                    }
                    (done, paths)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let sum = per_thread.iter().fold(Paths::default(), |a, (_, p)| Paths {
        transaction: a.transaction + p.transaction,
        fallback: a.fallback + p.fallback,
        skipped: a.skipped + p.skipped,
        overlaps: a.overlaps + p.overlaps,
    });
    for (t, (done, _)) in per_thread.iter().enumerate() {
        assert_eq!(*done, ITERS, "{name}: thread {t} did not finish");
    }
    let Pair(a, b) = m.into_inner();
    assert_eq!(sum.overlaps, 0, "{name}: sections overlapped: {sum:?}");
    assert_eq!(a, THREADS as u64 * ITERS, "{name}: lost update: {sum:?}");
    assert_eq!(b, a, "{name}: the pair ended unequal");
    assert_eq!(
        sum.transaction + sum.fallback + sum.skipped,
        THREADS as u64 * ITERS,
        "{name}: a section on no path: {sum:?}"
    );
    // The big sections: none of them committed.
    let big = THREADS as u64 * ITERS.div_ceil(BIG_EVERY);
    assert!(
        sum.fallback + sum.skipped >= big,
        "{name}: {sum:?}, yet {big} sections were too big for a transaction"
    );
    eprintln!("{name}: {sum:?} in {:?}", t0.elapsed());
}

#[test]
#[cfg_attr(
    miri,
    ignore = "elision needs RTM, which Miri does not emulate (inline assembly); the lock under `Elided` without RTM is checked in the library's elide tests"
)]
fn every_elided_mutex_excludes_and_progresses() {
    if with_rtm("every_elided_mutex_excludes_and_progresses") {
        for_each_elided!(exclusion_and_progress);
    }
}

fn try_lock_semantics<R: Fallback, P: Pol>() {
    let name = E::<R, P>::INFO.name;
    let _w = Watchdog::new(format!("{name}: try_lock"));
    let m: Mutex<E<R, P>, u64> = Mutex::new(0);
    // Free, uncontended: taken (as a transaction or on the fall-back).
    for _ in 0..100 {
        let mut g = m
            .try_lock()
            .unwrap_or_else(|| panic!("{name}: free, yet try_lock failed"));
        *g += 1;
    }
    // Held by this thread: inside a transaction `try_lock` aborts it, so
    // the section starts again and in the end holds the fall-back lock,
    // where `try_lock` finds the lock busy.
    for _ in 0..10 {
        let mut g = m.lock();
        let again = m.try_lock().is_none();
        assert!(
            again,
            "{name}: try_lock by the holder returned a second guard"
        );
        *g += 1;
    }
    // Held by another thread. Its "held" can be seen only once its section
    // is on the fall-back lock: a transaction's stores show at its commit,
    // which is its release.
    let held = AtomicBool::new(false);
    let tried = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut g = m.lock();
            held.store(true, Ordering::Release);
            while !tried.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            *g += 1;
        });
        while !held.load(Ordering::Acquire) {
            std::thread::yield_now();
        }
        let got = (0..10).filter(|_| m.try_lock().is_some()).count();
        // Before asserting: the holder waits for it.
        tried.store(true, Ordering::Release);
        assert_eq!(
            got, 0,
            "{name}: try_lock succeeded while another thread held the lock"
        );
    });
    assert!(!m.is_locked(), "{name}: left locked");
    assert_eq!(*m.try_lock().expect("free again"), 111, "{name}");
}

fn guards_release_when_dropped<R: Fallback, P: Pol>() {
    let name = E::<R, P>::INFO.name;
    let _w = Watchdog::new(format!("{name}: guard drops"));
    // Two locks, two threads, each section taking both and dropping the
    // guards in the order taken (not the reverse): a thread may release
    // the first lock's fall-back inside the second's transaction.
    let a: Mutex<E<R, P>, u64> = Mutex::new(0);
    let b: Mutex<E<R, P>, u64> = Mutex::new(0);
    const ROUNDS: u64 = 500;
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for i in 0..ROUNDS {
                    let mut ga = a.lock();
                    let mut gb = b.lock();
                    *ga += 1;
                    *gb += 1;
                    drop(ga);
                    drop(gb);
                    if i % BIG_EVERY == 0 {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    assert!(!a.is_locked() && !b.is_locked(), "{name}: left locked");
    assert_eq!((*a.lock(), *b.lock()), (2 * ROUNDS, 2 * ROUNDS), "{name}");

    // A guard dropped while unwinding releases its lock (no poisoning).
    let m: Mutex<E<R, P>, u64> = Mutex::new(0);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut g = m.lock();
        *g += 1;
        std::panic::panic_any(Deliberate);
    }));
    assert!(r.is_err());
    assert!(!m.is_locked(), "{name}: unwinding left the lock held");
    // Another thread takes it, and sees the section's write (it held the
    // fall-back lock when it panicked: a panic aborts every transaction).
    let seen = AtomicU32::new(0);
    std::thread::scope(|s| {
        s.spawn(|| seen.store(*m.lock() as u32, Ordering::Relaxed));
    });
    assert_eq!(seen.load(Ordering::Relaxed), 1, "{name}");
}

/// The payload of the panics `guards_release_when_dropped` provokes; the
/// panic hook stays quiet about them.
struct Deliberate;

fn quiet_deliberate_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<Deliberate>() {
                default(info);
            }
        }));
    });
}

#[test]
#[cfg_attr(
    miri,
    ignore = "elision needs RTM, which Miri does not emulate (inline assembly); the lock under `Elided` without RTM is checked in the library's elide tests"
)]
fn every_elided_mutex_keeps_try_lock_semantics() {
    if with_rtm("every_elided_mutex_keeps_try_lock_semantics") {
        for_each_elided!(try_lock_semantics);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "elision needs RTM, which Miri does not emulate (inline assembly); the lock under `Elided` without RTM is checked in the library's elide tests"
)]
fn every_elided_mutex_releases_on_guard_drop() {
    if with_rtm("every_elided_mutex_releases_on_guard_drop") {
        quiet_deliberate_panics();
        for_each_elided!(guards_release_when_dropped);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "elision needs RTM, which Miri does not emulate (inline assembly); the lock under `Elided` without RTM is checked in the library's elide tests"
)]
fn uncontended_sections_do_elide() {
    // That the checks above test elision at all: alone, with nothing in
    // the section that aborts, some of a thousand sections commit as
    // transactions (`rtm_instructions_when_the_cpu_has_them` asks the
    // same of empty transactions), whatever the fall-back lock.
    fn commits<R: Fallback, P: Pol>() {
        let name = E::<R, P>::INFO.name;
        let m: Mutex<E<R, P>, u64> = Mutex::new(0);
        let mut transactions = 0;
        for _ in 0..1_000 {
            let (mut g, o) = lock_mutex_with_outcome(&m);
            *g += 1;
            drop(g);
            transactions += u32::from(o.path == Path::Transaction);
        }
        assert_eq!(*m.lock(), 1_000, "{name}");
        assert!(
            transactions > 0,
            "{name}: no section of 1000 ran as a transaction"
        );
    }
    if with_rtm("uncontended_sections_do_elide") {
        for_each_elided!(commits);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "reads the lab's registry source, and Miri isolates the file system; a text comparison has no unsafe code to check"
)]
fn the_list_is_the_registrys() {
    // The registry is in the lab, which depends on this crate: read its
    // source rather than depend on it.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../lab/src/registry.rs");
    let Ok(src) = std::fs::read_to_string(path) else {
        eprintln!("note: {path} not found: the list of mutexes was not compared");
        return;
    };
    let body = src
        .split("pub fn visit_mutexes")
        .nth(1)
        .and_then(|b| b.split("\n}").next())
        .expect("visit_mutexes in the registry");
    let squash = |s: &str| s.replace("locklab::", "").replace(char::is_whitespace, "");
    let mut registry = Vec::new();
    for line in body.lines().map(str::trim) {
        for (prefix, wrap) in [("own::<", false), ("adapters::<", true)] {
            if let Some(rest) = line.strip_prefix(prefix) {
                let ty = squash(rest.rsplit_once(", V>").expect("type, V>").0);
                if wrap {
                    registry.push(format!("SpinYield<{ty}>"));
                    registry.push(format!("SpinPark<{ty}>"));
                } else {
                    registry.push(ty);
                }
            }
        }
    }
    let mut here = Vec::new();
    macro_rules! name {
        ($r:ty) => {
            here.push(squash(stringify!($r)));
        };
    }
    for_each_raw_mutex!(name);
    assert!(registry.len() >= 12, "{registry:?}");
    assert_eq!(here, registry, "this test's list and the registry's");
}
