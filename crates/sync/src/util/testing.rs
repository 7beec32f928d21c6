//! Test shapes shared by the lock algorithms' unit tests (the loom checks
//! and torture tests are the thorough ones), written against
//! `lock_api::RawMutex` (and `RawRwLock` for the reader-writer family) so
//! every lock runs the same checks; [`fifo_order`] takes a fair lock's
//! inherent API instead.
//!
//! Each multi-threaded check runs under a watchdog: a lock that hangs aborts
//! the test process with a message instead of hanging CI.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use lock_api::{Mutex, RawMutex, RawRwLock, RwLock};

use super::thread_index;

/// How long any one check may take before it counts as hung (already
/// scaled by [`limit`]).
pub const HANG: Duration = limit(Duration::from_secs(120));

/// How much slower Miri runs a test than native code: its sizes shrink by
/// this much ([`iters`]) and its time limits grow by it ([`limit`]). Miri
/// interprets every step (some hundred times slower) and, in isolation, its
/// clock is virtual: it advances with the work interpreted, so a time limit
/// made for native speed runs out after a fraction of the work it was
/// meant for.
const MIRI_SLOWER: u32 = if cfg!(miri) { 100 } else { 1 };

/// How much smaller [`iters`] makes a loop under Miri: twice
/// [`MIRI_SLOWER`], so that the library's Miri run in CI fits its budget
/// (each interleaving a loop samples costs Miri about as much as a
/// hundred natively; half as many of them per test still exercise every
/// path the tests name, and `-Zmiri-many-seeds` samples others).
const MIRI_SHRINK: u64 = 2 * MIRI_SLOWER as u64;

/// The size of a test's loop: `native` natively; under Miri a
/// two-hundredth of it ([`MIRI_SHRINK`]), at most [`MIRI_MAX_ITERS`] (the
/// longest native loops run half a million times), and never below `native.min(8)`, so a loop
/// of a few iterations keeps them all. What a test asserts about the
/// result (an exact count, an invariant in every section) holds for any
/// size; only the number of interleavings one run samples shrinks, and
/// Miri's schedules (`-Zmiri-many-seeds`) sample them differently anyway.
pub const fn iters(native: u64) -> u64 {
    if !cfg!(miri) {
        return native;
    }
    let scaled = native / MIRI_SHRINK;
    let floor = if native < 8 { native } else { 8 };
    if scaled > MIRI_MAX_ITERS {
        MIRI_MAX_ITERS
    } else if scaled > floor {
        scaled
    } else {
        floor
    }
}

/// The most iterations [`iters`] gives a loop under Miri.
const MIRI_MAX_ITERS: u64 = 250;

/// The number of threads for a contention test: `native` natively, at
/// most 3 under Miri (still more than two contenders, so queues form
/// behind a waiter, not only behind the holder), where every thread
/// multiplies the interpreted work.
pub const fn threads(native: usize) -> usize {
    if cfg!(miri) && native > 3 {
        3
    } else {
        native
    }
}

/// The length of a table a test scans (a lock's reader slots, one per
/// possible thread): `native` natively, at most [`MIRI_MAX_TABLE`] under
/// Miri. Under Tree Borrows (`-Zmiri-tree-borrows`) a scan of a table
/// costs about the square of its length (measured; presumably because every
/// element is reached through a new reference, whose tag joins the table's
/// borrow tree, and an access visits the tags beside it): a brlock test
/// that scans 16383 padded slots a few times took 8 s under Stacked Borrows
/// and did not end in 8 minutes under Tree Borrows (4096 slots: 35 s; 1024:
/// under 2 s). A test that needs the
/// table to cover every index that can occur (for example every live
/// thread's) asserts that it did; under Miri only a few threads live.
pub const fn table(native: usize) -> usize {
    if cfg!(miri) && native > MIRI_MAX_TABLE {
        MIRI_MAX_TABLE
    } else {
        native
    }
}

/// The longest table [`table`] gives a test under Miri.
const MIRI_MAX_TABLE: usize = 1024;

/// A time limit (a watchdog, a give-up deadline): `native` natively, a
/// hundred times longer under Miri (see [`iters`]). Not for times a test
/// measures: a test of timing cannot mean anything under Miri.
pub const fn limit(native: Duration) -> Duration {
    native.saturating_mul(MIRI_SLOWER)
}

/// Aborts the process if not dropped within `limit`.
pub struct Watchdog(Option<mpsc::Sender<()>>);

impl Watchdog {
    /// Starts watching `what`, run by the calling thread (whose name, under
    /// libtest, is the test's).
    pub fn new(what: &'static str, limit: Duration) -> Self {
        let (tx, rx) = mpsc::channel::<()>();
        let test = std::thread::current()
            .name()
            .unwrap_or("an unnamed thread")
            .to_owned();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                // Straight to fd 2, not `eprintln!`: libtest captures the
                // macros' output of a test's threads and would lose it in
                // the abort, leaving CI's log without the test's name.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "watchdog: `{what}` in {test} still running after {limit:?}: hung lock?"
                );
                std::process::abort();
            }
        });
        Self(Some(tx))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Dropping the sender wakes the watcher with `Disconnected`.
        self.0.take();
    }
}

/// Shared data whose invariant (`a == b`) breaks if two critical sections
/// overlap, plus a plain counter that loses updates if they do.
#[derive(Default)]
struct Shadow {
    a: u64,
    b: u64,
}

fn critical(s: &mut Shadow) {
    assert_eq!(s.a, s.b, "two critical sections overlapped");
    s.a += 1;
    // Widen the window in which an overlapping section would be caught.
    for _ in 0..8 {
        std::hint::spin_loop();
    }
    s.b = s.a;
}

/// `threads` threads each take the lock `iters` times; the count must come
/// out exact, the shadow invariant must hold throughout, and the lock must
/// be free (and takeable) at the end.
///
/// Both sizes are native ones: under Miri they shrink by [`threads`] and
/// [`iters`].
pub fn hammer<R: RawMutex + Sync>(threads: usize, iters: u64) {
    hammer_raw("hammer", R::INIT, threads, iters, false);
}

/// [`hammer`] on a given (for example specially initialised) raw lock, each
/// thread yielding after each release.
///
/// The yield is for the fair spin locks run with many iterations: with more
/// spinning threads than free cores (four threads, a two-core machine, other
/// tests in parallel), a FIFO lock hands over to preempted waiters while the
/// running ones spin out their time slices: without the yield a run of the
/// fair locks took minutes (waiter preemption: seed 001 notes that fair
/// locks are more sensitive to preemption, since the waiters behind a
/// preempted next-in-line wait for it to be scheduled again). The
/// yield lets a granted waiter run; the threads still contend.
pub fn hammer_yielding<R: RawMutex + Sync>(raw: R, threads: usize, iters: u64) {
    hammer_raw("hammer_yielding", raw, threads, iters, true);
}

/// [`hammer`] for the FIFO spin locks run with more threads than cores:
/// each thread yields after each release, as in [`hammer_yielding`] (whose
/// documentation says why). Without the yield, `anderson`'s six threads
/// ran past the watchdog in one CI run on two cores (beside other spinning
/// tests), where alone they take a fifth of a second.
pub fn hammer_fifo<R: RawMutex + Sync>(threads: usize, iters: u64) {
    hammer_raw("hammer_fifo", R::INIT, threads, iters, true);
}

fn hammer_raw<R: RawMutex + Sync>(
    what: &'static str,
    raw: R,
    threads: usize,
    iters: u64,
    yield_after_release: bool,
) {
    let (threads, iters) = (self::threads(threads), self::iters(iters));
    let _w = Watchdog::new(what, HANG);
    let m: Mutex<R, Shadow> = Mutex::from_raw(raw, Shadow::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..iters {
                    critical(&mut m.lock());
                    if yield_after_release {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    let a = m.lock().a;
    assert_eq!(a, threads as u64 * iters, "lost update");
    assert!(!m.is_locked(), "left locked");
}

/// `try_lock` fails while another thread holds the lock and succeeds once
/// it is free again; the lock is free afterwards.
pub fn try_lock_while_held<R: RawMutex + Sync>() {
    let m: Mutex<R, ()> = Mutex::new(());
    let g = m.lock();
    assert!(m.is_locked());
    std::thread::scope(|s| {
        s.spawn(|| assert!(m.try_lock().is_none()));
    });
    drop(g);
    assert!(m.try_lock().is_some());
    assert!(!m.is_locked());
}

/// FIFO check for fair locks, without timing: while this thread holds
/// the lock, three threads arrive one after another, each started only
/// once `arrivals` (an observable that changes when a waiter has taken
/// its place: the ticket counter, the queue tail) shows the previous one
/// queued. After the release they must enter in arrival order.
pub fn fifo_order<L, T>(
    lock: &L,
    arrivals: impl Fn(&L) -> usize + Sync,
    acquire: impl Fn(&L) -> T + Sync,
    release: impl Fn(&L, T) + Sync,
) where
    L: Sync,
{
    let _w = Watchdog::new("fifo_order", HANG);
    let order = std::sync::Mutex::new(Vec::new());
    let held = acquire(lock);
    std::thread::scope(|s| {
        for i in 0..3 {
            let before = arrivals(lock);
            let (order, acquire, release) = (&order, &acquire, &release);
            s.spawn(move || {
                let t = acquire(lock);
                order.lock().unwrap().push(i);
                release(lock, t);
            });
            until(|| arrivals(lock) != before);
        }
        release(lock, held);
    });
    assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
}

/// One thread takes `n` different locks, holds them all while another
/// thread per lock queues up behind it, then releases them in an order that
/// is not the reverse of acquisition (odd positions first, then even, both
/// ascending).
pub fn nested_non_lifo<R: RawMutex + Sync>(n: usize) {
    let _w = Watchdog::new("nested_non_lifo", HANG);
    let locks: Vec<Mutex<R, Shadow>> = (0..n).map(|_| Mutex::new(Shadow::default())).collect();
    let started = AtomicU64::new(0);
    std::thread::scope(|s| {
        let mut guards: Vec<_> = locks.iter().map(|l| Some(l.lock())).collect();
        for g in guards.iter_mut() {
            critical(g.as_mut().unwrap());
        }
        for l in &locks {
            let started = &started;
            s.spawn(move || {
                started.fetch_add(1, Ordering::Relaxed);
                critical(&mut l.lock());
            });
        }
        while started.load(Ordering::Relaxed) < n as u64 {
            std::thread::yield_now();
        }
        // Give the contenders time to queue behind us.
        std::thread::sleep(Duration::from_millis(20));
        let order = (1..n).step_by(2).chain((0..n).step_by(2));
        for i in order {
            drop(guards[i].take());
        }
    });
    for (i, l) in locks.into_iter().enumerate() {
        assert_eq!(l.into_inner().a, 2, "lock {i}: lost update");
    }
}

/// Two long-lived threads keep taking the lock while short-lived threads
/// come, take it a few times and exit, one after another, so their thread
/// indexes (and node rows) are recycled under a busy lock.
pub fn churn_threads<R: RawMutex + Sync>() {
    const SHORT: usize = if cfg!(miri) { 4 } else { 12 };
    const SHORT_ITERS: u64 = iters(20);
    let _w = Watchdog::new("churn_threads", HANG);
    let m: Mutex<R, Shadow> = Mutex::new(Shadow::default());
    let stop = AtomicBool::new(false);
    let long_total = AtomicU64::new(0);
    let mut indexes = Vec::new();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut mine = 0;
                while !stop.load(Ordering::Relaxed) {
                    critical(&mut m.lock());
                    mine += 1;
                }
                long_total.fetch_add(mine, Ordering::Relaxed);
            });
        }
        for _ in 0..SHORT {
            let h = s.spawn(|| {
                for _ in 0..SHORT_ITERS {
                    critical(&mut m.lock());
                }
                thread_index::current()
            });
            indexes.push(h.join().unwrap());
        }
        stop.store(true, Ordering::Relaxed);
    });
    let total = m.into_inner().a;
    assert_eq!(
        total,
        long_total.into_inner() + SHORT as u64 * SHORT_ITERS,
        "lost update"
    );
    indexes.sort_unstable();
    indexes.dedup();
    assert!(
        indexes.len() < SHORT,
        "no thread index was recycled among {SHORT} threads run one after another"
    );
}

/// Waits (yielding) until `cond` holds; the caller's watchdog ends a wait
/// that never does.
pub fn until(cond: impl Fn() -> bool) {
    while !cond() {
        std::thread::yield_now();
    }
}

/// Data whose invariant `a == b` a reader sees broken if it overlaps a
/// writer, and whose count a writer loses if it overlaps another.
#[derive(Default)]
pub struct RwShadow {
    /// Bumped first by a writer.
    pub a: u64,
    /// Set equal to `a` last by a writer.
    pub b: u64,
}

/// A write section on [`RwShadow`]: checks and keeps the invariant.
pub fn rw_write_section(s: &mut RwShadow) {
    assert_eq!(s.a, s.b, "two writers overlapped");
    s.a += 1;
    for _ in 0..16 {
        std::hint::spin_loop();
    }
    s.b = s.a;
}

/// A read section on [`RwShadow`]: checks the invariant.
pub fn rw_read_section(s: &RwShadow) {
    let a = s.a;
    for _ in 0..16 {
        std::hint::spin_loop();
    }
    assert_eq!(a, s.b, "a reader overlapped a writer");
}

/// `threads` threads take the reader-writer lock `iters` times each, one
/// access in four a write (in a pattern that differs between threads),
/// yielding now and then: the invariant must hold in every read and the
/// write count must come out exact. The yields leave gaps between readers
/// (so writers get into locks that let them starve) and let a granted
/// waiter run when threads outnumber cores. Sizes are native ones, scaled
/// as in [`hammer`].
pub fn rw_mix<R: RawRwLock + Sync>(threads: u64, iters: u64) {
    let threads = self::threads(threads as usize) as u64;
    // A multiple of 4, so that the writes' count below is exact.
    let iters = self::iters(iters).next_multiple_of(4);
    let _w = Watchdog::new("rw_mix", HANG);
    let l: RwLock<R, RwShadow> = RwLock::new(RwShadow::default());
    let writes = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (l, writes) = (&l, &writes);
            s.spawn(move || {
                for i in 0..iters {
                    if (i + t) % 4 == 0 {
                        rw_write_section(&mut l.write());
                        writes.fetch_add(1, Ordering::Relaxed);
                    } else {
                        rw_read_section(&l.read());
                    }
                    if i % 64 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    let s = l.into_inner();
    assert_eq!(s.a, writes.into_inner(), "lost update");
    assert_eq!(s.a, threads * iters / 4);
}

/// Two readers hold the lock at once: each waits inside its read section
/// for the other, which ends only if both are inside together.
pub fn rw_readers_share<R: RawRwLock + Sync>() {
    let _w = Watchdog::new("rw_readers_share", HANG);
    let l: RwLock<R, u64> = RwLock::new(7);
    let both_inside = std::sync::Barrier::new(2);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let g = l.read();
                both_inside.wait();
                assert_eq!(*g, 7);
            });
        }
    });
    assert!(!l.is_locked());
}

/// The try-locks against a write-held, a read-held and a free lock.
pub fn rw_try_locks<R: RawRwLock>() {
    let l: RwLock<R, u32> = RwLock::new(0);
    assert!(!l.is_locked());
    {
        let mut w = l.try_write().expect("free lock");
        *w += 1;
        assert!(l.is_locked() && l.is_locked_exclusive());
        assert!(l.try_read().is_none(), "try_read while write-held");
        assert!(l.try_write().is_none(), "try_write while write-held");
    }
    {
        let r1 = l.try_read().expect("free lock");
        let r2 = l.try_read().expect("read-held lock admits readers");
        assert_eq!(*r1 + *r2, 2);
        assert!(l.is_locked() && !l.is_locked_exclusive());
        assert!(l.try_write().is_none(), "try_write while read-held");
    }
    assert!(!l.is_locked());
    let _w = l.try_write().expect("free again");
}

/// A write guard keeps a reader on another thread out, and what it wrote
/// is what that reader reads afterwards.
pub fn rw_writer_excludes_another_threads_reader<R: RawRwLock + Sync>() {
    let _w = Watchdog::new("rw_writer_excludes", HANG);
    let l: RwLock<R, u32> = RwLock::new(0);
    let mut g = l.write();
    std::thread::scope(|s| {
        s.spawn(|| assert!(l.try_read().is_none(), "try_read while write-held"));
    });
    *g = 1;
    drop(g);
    std::thread::scope(|s| {
        s.spawn(|| assert_eq!(*l.try_read().expect("free lock"), 1));
    });
}

/// Runs this test binary again as a child with `args` (test filters and
/// flags) and `env` set, asserts that it succeeded and returns its
/// standard output. For tests of a path that an environment variable read
/// once per process selects. Miri starts no process: the tests that call
/// this are ignored there (they are compiled, so that they are listed).
pub fn run_in_child(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Runs the test `test` (its full path) alone in a child as on a machine
/// with one CPU online (`LOCKLAB_CPUS=1`), with `LOCKLAB_CPUS_CHILD` set so
/// that it does its work there, and asserts that it ran: it prints
/// `one-cpu-child-ran` at its end.
pub fn run_as_one_cpu(test: &str) {
    let text = run_in_child(
        &["--exact", test, "--nocapture", "--test-threads=1"],
        &[
            ("LOCKLAB_CPUS_CHILD", "1"),
            (crate::topology::CPUS_VAR, "1"),
        ],
    );
    assert!(
        text.contains("one-cpu-child-ran"),
        "the child ran no test: {text}"
    );
}

// ===================================================== NUMA-aware locks
//
// The known-answer test of the NUMA-aware locks (`crate::numa`): one shape
// for all of them.

/// One critical section of a [`numa_log`] run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumaEntry {
    /// The thread's number in the run, `0..threads`.
    pub thread: usize,
    /// The node the thread claimed (`thread % 2`).
    pub node: usize,
    /// The lock's own account, read by the holder: it got the lock by a
    /// hand-over within its node of the kind the lock's bound limits.
    pub local: bool,
}

/// The critical sections of a [`numa_log`] run, in the order they ran.
#[derive(Debug)]
pub struct NumaLog {
    /// One entry per critical section.
    pub entries: Vec<NumaEntry>,
}

/// Threads on two nodes (thread `i` claims node `i % 2` with
/// `topology::set_thread_node`) take `lock` `iters` times each; inside
/// each critical section the holder appends an entry to a log that the
/// lock itself protects: its thread, its node, and `local(lock, token)`,
/// the lock's word on whether this holder got the lock by a local
/// hand-over that counts against its bound. Checks that every thread
/// finished its count (the watchdog ends a starved run) and that both
/// nodes appear, and returns the log for [`NumaLog::assert_local_runs`].
///
/// Why the lock's word and not only the nodes: a run of holders from one
/// node may be any length without breaking any bound, whenever no thread
/// of the other node is queued (they are between critical sections, or
/// descheduled: 4 threads on 2 cores), and who is queued cannot be seen
/// from outside the lock. What each lock bounds is its own count of
/// local hand-overs; the log checks that count against the nodes it
/// records and against the bound.
///
/// Sizes are native ones, scaled as in [`hammer`] (but at least 40
/// sections a thread under Miri).
pub fn numa_log<L, T>(
    lock: &L,
    threads: usize,
    iters: u64,
    acquire: impl Fn(&L) -> T + Sync,
    release: impl Fn(&L, T) + Sync,
    local: impl Fn(&L, &T) -> bool + Sync,
) -> NumaLog
where
    L: Sync,
{
    struct Log(std::cell::UnsafeCell<Vec<NumaEntry>>);
    // SAFETY: the vector is touched only inside the lock's critical
    // sections, and after the threads are joined.
    unsafe impl Sync for Log {}

    // Under Miri at least `NUMA_MIRI_ITERS` each: the known answer needs
    // a few runs of contended hand-overs, and a few dozen sections may
    // hold none.
    let threads = self::threads(threads);
    let iters = if cfg!(miri) {
        self::iters(iters).max(NUMA_MIRI_ITERS)
    } else {
        iters
    };
    assert!(threads >= 2, "two nodes need two threads");
    let _w = Watchdog::new("numa_log", HANG);
    let log = Log(std::cell::UnsafeCell::new(Vec::with_capacity(
        threads * iters as usize,
    )));
    // Threads that asked for the lock and have not got it yet; threads
    // that are done.
    let waiting = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let start = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for thread in 0..threads {
            let (log, acquire, release, local) = (&log, &acquire, &release, &local);
            let (start, waiting, done) = (&start, &waiting, &done);
            s.spawn(move || {
                let node = thread % 2;
                crate::topology::set_thread_node(Some(node));
                start.wait();
                for _ in 0..iters {
                    waiting.fetch_add(1, Ordering::Relaxed);
                    let t = acquire(lock);
                    waiting.fetch_sub(1, Ordering::Relaxed);
                    let local = local(lock, &t);
                    // SAFETY: under the lock (see `Log`).
                    unsafe { &mut *log.0.get() }.push(NumaEntry {
                        thread,
                        node,
                        local,
                    });
                    gather(waiting, done, threads as u64 - 1);
                    release(lock, t);
                }
                done.fetch_add(1, Ordering::Relaxed);
            });
        }
    });
    let entries = log.0.into_inner();
    for t in 0..threads {
        let n = entries.iter().filter(|e| e.thread == t).count();
        assert_eq!(n as u64, iters, "thread {t} entered {n} times");
    }
    assert!(
        entries.iter().any(|e| e.node == 0) && entries.iter().any(|e| e.node == 1),
        "one node never entered"
    );
    NumaLog { entries }
}

/// Inside a [`numa_log`] critical section: lets the other threads queue
/// behind it before it ends. Without this, threads started together
/// still run one after another for a while (a thread's few hundred
/// sections fit in one time slice, before the next is even scheduled),
/// and a run shows nothing about hand-overs. So the holder waits until
/// each of the `others` has asked for the lock again or is done
/// (spinning, then yielding so that a thread descheduled before it asked
/// gets a CPU; given up after a while, since nothing is asserted about
/// it), then a little more, so that a thread that has just asked has
/// also queued.
fn gather(waiting: &AtomicU64, done: &AtomicU64, others: u64) {
    let deadline = std::time::Instant::now() + limit(Duration::from_millis(5));
    let mut spins = 0u32;
    while waiting.load(Ordering::Relaxed) + done.load(Ordering::Relaxed) < others {
        spins += 1;
        if spins < 256 {
            std::hint::spin_loop();
        } else if std::time::Instant::now() < deadline {
            std::thread::yield_now();
        } else {
            break;
        }
    }
    for _ in 0..NUMA_SECTION_SPINS {
        std::hint::spin_loop();
    }
}

/// The fewest sections per thread of a [`numa_log`] run under Miri.
const NUMA_MIRI_ITERS: u64 = 40;

/// `spin_loop` hints at the end of each [`numa_log`] critical section;
/// under Miri none (its threads interleave at every spin anyway).
const NUMA_SECTION_SPINS: u32 = if cfg!(miri) { 0 } else { 64 };

impl NumaLog {
    /// The lengths of the maximal runs of consecutive entries from one
    /// node.
    pub fn runs(&self) -> Vec<usize> {
        Self::lengths(&self.entries, |a, b| a.node == b.node, |_| true)
    }

    /// The lengths of the maximal runs of consecutive `local` entries.
    pub fn local_runs(&self) -> Vec<usize> {
        Self::lengths(&self.entries, |_, _| true, |e| e.local)
    }

    fn lengths(
        entries: &[NumaEntry],
        same: impl Fn(&NumaEntry, &NumaEntry) -> bool,
        counts: impl Fn(&NumaEntry) -> bool,
    ) -> Vec<usize> {
        let mut out = Vec::new();
        let mut run = 0;
        for (i, e) in entries.iter().enumerate() {
            if !counts(e) {
                if run > 0 {
                    out.push(run);
                }
                run = 0;
            } else if run > 0 && same(&entries[i - 1], e) {
                run += 1;
            } else {
                if run > 0 {
                    out.push(run);
                }
                run = 1;
            }
        }
        if run > 0 {
            out.push(run);
        }
        out
    }

    /// The known answer for a lock that hands over within a node at most
    /// `bound` times in a row:
    ///
    /// - every local hand-over comes from a holder on the same node (the
    ///   entry before it has its node);
    /// - no run of local hand-overs is longer than `bound` (the locks'
    ///   counts are exact, so there is no slack: each lock says why);
    /// - some run reaches `bound`: the lock does keep the lock on a node
    ///   while it may.
    pub fn assert_local_runs(&self, bound: usize) {
        let e = &self.entries;
        for i in 0..e.len() {
            if e[i].local {
                assert!(i > 0, "the first holder cannot have been handed the lock");
                assert_eq!(
                    e[i - 1].node,
                    e[i].node,
                    "entry {i}: a local hand-over from another node: {:?}",
                    &e[i.saturating_sub(4)..(i + 2).min(e.len())]
                );
            }
        }
        let local = self.local_runs();
        let longest = local.iter().copied().max().unwrap_or(0);
        let reached = local.iter().filter(|&&r| r == bound).count();
        // For the eye (--nocapture): how the nodes took turns.
        eprintln!(
            "numa_log: {} sections, longest run of one node {}, runs of local hand-overs {} (longest {longest}, {reached} of {bound})",
            e.len(),
            self.runs().into_iter().max().unwrap_or(0),
            local.len(),
        );
        assert!(
            longest <= bound,
            "{longest} local hand-overs in a row, bound {bound}"
        );
        assert!(
            reached > 0,
            "no run of local hand-overs reached the bound {bound} (longest {longest}): the lock does not keep hand-overs local"
        );
    }
}
