//! Tests of lock elision: the protocol against scripted hardware
//! (`Scripted`) over a counting fall-back lock (`Probe`), threads through
//! real RTM or its fall-back, the RTM instructions themselves where the CPU
//! has them, abort decoding and the lock's metadata.

use super::abort::{STATUS_CAPACITY, STATUS_CONFLICT, STATUS_RETRY};
use super::rtm::{parse_rtm_setting, rtm_in_leaf_7};
use super::*;
use crate::info::Described;
use crate::util::testing::{hammer, iters, threads, until, Watchdog, HANG};
use crate::{AdaptiveSpin, RawClh, RawHybridMutex, RawTicket, RawTicketBackoff, RawTtas, SpinPark};
use lock_api::RawMutex;
use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

// The adaptive policy, against the same scripted hardware.
mod adaptive;

const CONFLICT: Abort = Abort::from_status(STATUS_CONFLICT | STATUS_RETRY);
const CAPACITY: Abort = Abort::from_status(STATUS_CAPACITY);
const RETRY: Abort = Abort::from_status(STATUS_RETRY);
const NO_REASON: Abort = Abort::from_status(0);
/// One abort of each kind, as a script of failed `begin`s.
const ABORTS: [Abort; 5] = [CONFLICT, CAPACITY, RETRY, Abort::LOCK_BUSY, NO_REASON];

/// What the scripted hardware saw, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Begin(Result<(), Abort>),
    End,
    AbortLockBusy,
    AbortNested,
    /// A test thread's own step, logged in the same sequence.
    Note(&'static str),
}

thread_local! {
    /// Whether this thread is in a scripted transaction: per thread, as
    /// the hardware's is, and shared by every `Scripted` like it.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
}

/// Hardware whose `begin`s return a script, then `then` for ever, and
/// that logs every call.
struct Scripted {
    available: bool,
    script: Mutex<VecDeque<Result<(), Abort>>>,
    then: Result<(), Abort>,
    log: Mutex<Vec<Event>>,
}

impl Scripted {
    fn new(script: impl IntoIterator<Item = Result<(), Abort>>, then: Result<(), Abort>) -> Self {
        Self {
            available: true,
            script: Mutex::new(script.into_iter().collect()),
            then,
            log: Mutex::new(Vec::new()),
        }
    }

    fn unavailable() -> Self {
        Self {
            available: false,
            ..Self::new([], Err(NO_REASON))
        }
    }

    fn push(&self, e: Event) {
        self.log.lock().unwrap().push(e);
    }

    fn note(&self, what: &'static str) {
        self.push(Event::Note(what));
    }

    fn log(&self) -> Vec<Event> {
        self.log.lock().unwrap().clone()
    }

    fn begins(&self) -> usize {
        let log = self.log.lock().unwrap();
        log.iter().filter(|e| matches!(e, Event::Begin(_))).count()
    }

    fn saw(&self, e: Event) -> bool {
        self.log.lock().unwrap().contains(&e)
    }

    fn hardware(&self) {
        assert!(self.available, "an RTM instruction on a CPU without RTM");
    }
}

// SAFETY: this is no transactional memory: a scripted transaction
// isolates nothing and cannot roll back. The tests use it only where
// that makes no difference: one thread at a time is in a scripted
// transaction, the protected data is not touched, and other threads
// only hold the fall-back lock, which the scripted transaction reads as
// a real one would. An abort inside a transaction returns (as it would
// outside one) after leaving it; `Elided` calls them only after reading
// the lock, so there is nothing to roll back.
unsafe impl Htm for Scripted {
    const INIT: Self = Scripted {
        available: true,
        script: Mutex::new(VecDeque::new()),
        then: Err(NO_REASON),
        log: Mutex::new(Vec::new()),
    };

    fn available(&self) -> bool {
        self.available
    }

    fn begin(&self) -> Result<(), Abort> {
        self.hardware();
        assert!(!INSIDE.get(), "begin inside a transaction");
        let r = self.script.lock().unwrap().pop_front().unwrap_or(self.then);
        INSIDE.set(r.is_ok());
        self.push(Event::Begin(r));
        r
    }

    unsafe fn end(&self) {
        self.hardware();
        assert!(INSIDE.replace(false), "xend outside a transaction");
        self.push(Event::End);
    }

    fn abort_lock_busy(&self) -> Abort {
        self.hardware();
        INSIDE.set(false);
        self.push(Event::AbortLockBusy);
        Abort::LOCK_BUSY
    }

    fn abort_nested(&self) -> Abort {
        self.hardware();
        INSIDE.set(false);
        self.push(Event::AbortNested);
        Abort::xabort(NESTED)
    }

    fn in_transaction(&self) -> bool {
        self.hardware();
        INSIDE.get()
    }
}

/// A fall-back lock that counts what is done to it.
struct Probe<R> {
    inner: R,
    locks: AtomicUsize,
    unlocks: AtomicUsize,
    peeks: AtomicUsize,
}

// SAFETY: forwards to `R`.
unsafe impl<R: RawMutex> RawMutex for Probe<R> {
    const INIT: Self = Probe {
        inner: R::INIT,
        locks: AtomicUsize::new(0),
        unlocks: AtomicUsize::new(0),
        peeks: AtomicUsize::new(0),
    };
    type Guard = R::Guard;

    fn lock(&self) -> R::Guard {
        let g = self.inner.lock();
        self.locks.fetch_add(1, Ordering::Relaxed);
        g
    }

    fn try_lock(&self) -> Option<R::Guard> {
        let g = self.inner.try_lock()?;
        self.locks.fetch_add(1, Ordering::Relaxed);
        Some(g)
    }

    unsafe fn unlock(&self, guard: R::Guard) {
        self.unlocks.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.unlock(guard) }
    }

    fn is_locked(&self) -> bool {
        self.peeks.fetch_add(1, Ordering::Relaxed);
        self.inner.is_locked()
    }
}

impl<R> Probe<R> {
    fn locks(&self) -> usize {
        self.locks.load(Ordering::Relaxed)
    }
    fn unlocks(&self) -> usize {
        self.unlocks.load(Ordering::Relaxed)
    }
    fn peeks(&self) -> usize {
        self.peeks.load(Ordering::Relaxed)
    }
}

type Test = Elided<Probe<RawTicket>, Scripted>;

fn elided(
    script: impl IntoIterator<Item = Result<(), Abort>>,
    then: Result<(), Abort>,
    threshold: u32,
) -> Test {
    Elided::from_parts(Probe::INIT, Scripted::new(script, then)).with_threshold(threshold)
}

/// The outcome of an acquisition on `path` after `aborts`, in order.
fn outcome(path: Path, aborts: &[Abort]) -> Outcome {
    let mut causes = Causes::default();
    aborts.iter().for_each(|&a| causes.count(a));
    Outcome {
        path,
        aborts: aborts.len() as u32,
        last_abort: aborts.last().copied(),
        causes,
    }
}

#[test]
fn the_threshold_is_honoured_and_then_the_fallback_is_held_and_released() {
    for threshold in 1..=ABORTS.len() as u32 {
        let l = elided(ABORTS.map(Err), Err(CONFLICT), threshold);
        let (g, o) = l.lock_with_outcome();
        assert!(!g.is_transaction());
        assert_eq!(o, outcome(Path::Fallback, &ABORTS[..threshold as usize]));
        assert_eq!(o.causes.total(), threshold, "one cause per abort");
        assert_eq!(l.htm.begins(), threshold as usize, "attempts");
        assert!(l.fallback().is_locked());
        assert_eq!(l.fallback().locks(), 1);
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        assert!(!l.fallback().is_locked(), "unlock released the fall-back");
        assert_eq!(l.fallback().unlocks(), 1);
        assert!(!l.htm.saw(Event::End), "no xend without a transaction");
    }
    // 0 acts as 1, as in Fig. 1.
    let l = elided([], Err(CONFLICT), 0);
    let (g, o) = l.lock_with_outcome();
    assert_eq!(o, outcome(Path::Fallback, &[CONFLICT]));
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
}

#[test]
fn after_fewer_aborts_than_the_threshold_the_section_is_a_transaction() {
    for k in 0..ABORTS.len() {
        let l = elided(
            ABORTS[..k].iter().copied().map(Err),
            Ok(()),
            1 + ABORTS.len() as u32,
        );
        let (g, o) = l.lock_with_outcome();
        assert!(g.is_transaction(), "after {k} aborts");
        assert_eq!(o, outcome(Path::Transaction, &ABORTS[..k]));
        assert!(l.htm.in_transaction());
        assert_eq!(l.fallback().locks(), 0, "the fall-back was only read");
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        assert_eq!(l.htm.log().last(), Some(&Event::End), "unlock commits");
        assert!(!l.htm.in_transaction());
        assert_eq!(
            l.fallback().unlocks(),
            0,
            "and does not unlock the fall-back"
        );
    }
}

#[test]
fn a_retry_waits_until_the_fallback_is_free() {
    let _w = Watchdog::new("elide retry waits", HANG);
    // The first attempt aborts (a conflict); the next would start.
    let l = elided([Err(CONFLICT)], Ok(()), 3);
    let (g, o) = std::thread::scope(|s| {
        s.spawn(|| {
            let held = l.fallback().lock();
            l.htm.note("held");
            // Release once the other thread waits (reads the lock
            // while it is held) or has begun again without waiting.
            until(|| l.fallback().peeks() >= 2 || l.htm.begins() >= 2);
            l.htm.note("released");
            // SAFETY: taken above, on this thread.
            unsafe { l.fallback().unlock(held) };
        });
        until(|| l.htm.saw(Event::Note("held")));
        l.lock_with_outcome()
    });
    assert_eq!(
        l.htm.log(),
        [
            Event::Note("held"),
            Event::Begin(Err(CONFLICT)),
            Event::Note("released"),
            Event::Begin(Ok(())),
        ],
        "begun again while the fall-back was held"
    );
    assert!(g.is_transaction());
    assert_eq!(o, outcome(Path::Transaction, &[CONFLICT]));
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
}

/// Locks `l` while another thread holds its fall-back lock, which that
/// thread releases once a transaction of `l` has found it held (`held`
/// and `released` in the log); the guard and the outcome.
fn lock_against_a_holder<P: Policy + Sync>(
    l: &Elided<Probe<RawTicket>, Scripted, P>,
) -> (ElidedGuard<<RawTicket as RawMutex>::Guard>, Outcome) {
    let entered = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let held = l.fallback().lock();
            l.htm.note("held");
            // (Or once the other thread is in, which it must not be.)
            until(|| l.htm.saw(Event::AbortLockBusy) || entered.load(Ordering::Relaxed));
            l.htm.note("released");
            // SAFETY: taken above, on this thread.
            unsafe { l.fallback().unlock(held) };
        });
        until(|| l.htm.saw(Event::Note("held")));
        let r = l.lock_with_outcome();
        entered.store(true, Ordering::Relaxed);
        r
    })
}

#[test]
fn a_transaction_that_finds_the_fallback_held_aborts_with_lock_busy() {
    let _w = Watchdog::new("elide lock busy", HANG);
    // Every attempt starts: only the lock's state decides.
    let l = elided([], Ok(()), 3);
    let (g, o) = lock_against_a_holder(&l);
    assert_eq!(
        l.htm.log(),
        [
            Event::Note("held"),
            Event::Begin(Ok(())),
            Event::AbortLockBusy,
            Event::Note("released"),
            Event::Begin(Ok(())),
        ]
    );
    assert!(g.is_transaction());
    assert_eq!(o, outcome(Path::Transaction, &[Abort::LOCK_BUSY]));
    assert!(o.last_abort.unwrap().is_lock_busy());
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
    assert_eq!(l.fallback().locks(), 1, "only the other thread's");
}

#[test]
fn without_rtm_every_acquisition_goes_straight_to_the_fallback() {
    // `Scripted::unavailable` fails the test on any RTM instruction.
    let l = Elided::from_parts(Probe::<RawTicket>::INIT, Scripted::unavailable());
    let (g, o) = l.lock_with_outcome();
    assert_eq!(o, outcome(Path::Unavailable, &[]));
    assert!(!g.is_transaction());
    assert!(l.fallback().is_locked());
    assert!(l.try_lock_with_outcome().is_none(), "held");
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
    assert_eq!(l.fallback().unlocks(), 1);
    let (g, o) = l.try_lock_with_outcome().expect("free");
    assert_eq!(o, outcome(Path::Unavailable, &[]));
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
    assert_eq!(l.fallback().locks(), 2);
    assert!(l.htm.log().is_empty());
}

#[test]
fn try_lock_makes_one_attempt_then_tries_the_fallback() {
    let l = elided([Ok(()), Err(CAPACITY)], Ok(()), 3);
    let (g, o) = l.try_lock_with_outcome().expect("free");
    assert!(g.is_transaction());
    assert_eq!(o, outcome(Path::Transaction, &[]));
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
    let (g, o) = l.try_lock_with_outcome().expect("free");
    assert_eq!(o, outcome(Path::Fallback, &[CAPACITY]));
    assert!(l.try_lock_with_outcome().is_none(), "held by this thread");
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
    assert_eq!(
        l.htm.log(),
        [
            Event::Begin(Ok(())),
            Event::End,
            Event::Begin(Err(CAPACITY)),
            Event::Begin(Ok(())),
            Event::AbortLockBusy,
        ]
    );
}

#[test]
fn unlock_follows_the_guard_not_xtest() {
    // A ends up on its fall-back, then B elides; A is released first,
    // inside B's transaction.
    let a = elided([], Err(CONFLICT), 1);
    let b = elided([], Ok(()), 3);
    let (ga, oa) = a.lock_with_outcome();
    assert_eq!(oa.path, Path::Fallback);
    let (gb, ob) = b.lock_with_outcome();
    assert_eq!(ob.path, Path::Transaction);
    // SAFETY: held, on this thread.
    unsafe { a.release(ga) };
    assert!(!a.fallback().is_locked(), "A's fall-back released");
    assert!(b.htm.in_transaction(), "B's transaction still runs");
    assert!(!a.htm.saw(Event::End) && !b.htm.saw(Event::End));
    // SAFETY: held, on this thread.
    unsafe { b.release(gb) };
    assert_eq!(b.htm.log().last(), Some(&Event::End));
}

#[test]
fn taking_an_elided_lock_inside_a_transaction_aborts_it() {
    for try_lock in [false, true] {
        let l = elided([], Ok(()), 3);
        let (g, _) = l.lock_with_outcome();
        assert!(g.is_transaction());
        // The same lock again: a real abort would roll back to the
        // first `begin`; the scripted one returns, and `Elided` panics
        // rather than hand out a second guard.
        let again = catch_unwind(AssertUnwindSafe(|| {
            if try_lock {
                l.try_lock_with_outcome().map(|(g, _)| g)
            } else {
                Some(l.lock_with_outcome().0)
            }
        }));
        assert!(again.is_err(), "a second guard for a held lock");
        assert_eq!(l.htm.log(), [Event::Begin(Ok(())), Event::AbortNested]);
        assert_eq!(l.fallback().locks(), 0);
        // The scripted abort left the transaction; there is nothing
        // left to end (and a raw guard releases nothing when dropped).
        let _ = g;
    }
}

#[test]
fn threads_exclude_each_other_through_rtm_or_its_fallback() {
    // On a CPU without RTM (many machines locklab runs on) this runs the
    // fall-back path. With RTM, the torture's spin hints inside the section may
    // abort every transaction: see the next test.
    hammer::<Elided<RawTicket>>(4, 2_000);
    hammer::<Elided<RawClh>>(4, 2_000);
    hammer::<Elided<RawHybridMutex<AdaptiveSpin>>>(4, 2_000);
}

#[test]
fn short_sections_keep_a_pair_equal_and_a_count_exact() {
    // A section with nothing in it that aborts a transaction by itself
    // (no spin hint, no panic path taken), so that with RTM conflicting
    // transactions and fall-back sections mix; without RTM, the
    // fall-back alone. An unfair fall-back, so that preempted waiters
    // do not convoy with more threads than cores.
    const THREADS: usize = threads(4);
    const ITERS: u64 = iters(50_000);
    let _w = Watchdog::new("elide pair", HANG);
    let m = ElidedMutex::<RawTtas, (u64, u64)>::new((0, 0));
    let start = std::sync::Barrier::new(THREADS);
    let per_thread: Vec<(u64, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..THREADS)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    let (mut overlaps, mut transactions) = (0, 0);
                    for _ in 0..ITERS {
                        let (mut g, o) = lock_mutex_with_outcome(&m);
                        // Counted only if the section commits.
                        overlaps += u64::from(g.0 != g.1);
                        g.0 += 1;
                        // Widen the window, without a spin hint.
                        for i in 0..32 {
                            std::hint::black_box(i);
                        }
                        g.1 = g.0;
                        drop(g);
                        transactions += u64::from(o.path == Path::Transaction);
                    }
                    (overlaps, transactions)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let overlaps: u64 = per_thread.iter().map(|t| t.0).sum();
    let transactions: u64 = per_thread.iter().map(|t| t.1).sum();
    let (a, b) = m.into_inner();
    assert_eq!(overlaps, 0, "sections overlapped");
    assert_eq!((a, b), (THREADS as u64 * ITERS, a), "lost update");
    if rtm_available() {
        eprintln!("{transactions} of {a} sections ran as transactions");
    } else {
        assert_eq!(transactions, 0);
    }
}

#[test]
fn rtm_does_nothing_where_the_cpu_lacks_it() {
    if rtm_available() {
        // `rtm_off_child` checks the same with RTM switched off.
        eprintln!("note: skipped: this CPU has RTM; LOCKLAB_RTM=off runs this test");
        return;
    }
    assert!(!Rtm.available());
    assert_eq!(Rtm.begin(), Err(NO_REASON));
    assert!(!Rtm.in_transaction());
    assert_eq!(Rtm.abort_lock_busy(), Abort::LOCK_BUSY);
    let m = ElidedMutex::<RawTicket, u32>::new(1);
    let (g, o) = lock_mutex_with_outcome(&m);
    assert_eq!((*g, o), (1, outcome(Path::Unavailable, &[])));
}

#[test]
fn rtm_instructions_when_the_cpu_has_them() {
    if !rtm_available() {
        eprintln!("no RTM on this CPU: the RTM instructions were not run");
        return;
    }
    assert!(!Rtm.in_transaction());
    // Transactions may abort for no reason of ours: try a few times.
    let mut committed = false;
    for _ in 0..1_000 {
        if Rtm.begin().is_ok() {
            let inside = Rtm.in_transaction();
            // SAFETY: begun just above.
            unsafe { Rtm.end() };
            assert!(inside, "xtest inside a transaction");
            committed = true;
            break;
        }
    }
    assert!(committed, "1000 empty transactions aborted");
    assert!(!Rtm.in_transaction());
    let mut explicit = None;
    for _ in 0..1_000 {
        match Rtm.begin() {
            Ok(()) => {
                Rtm.abort_lock_busy();
                // SAFETY: still inside, if xabort returned.
                unsafe { Rtm.end() };
                panic!("xabort returned inside a transaction");
            }
            Err(a) if a.explicit.is_some() => {
                explicit = Some(a);
                break;
            }
            Err(_) => {}
        }
    }
    assert!(explicit.is_some_and(Abort::is_lock_busy), "{explicit:?}");
    // Outside a transaction xabort does nothing.
    assert_eq!(Rtm.abort_lock_busy(), Abort::LOCK_BUSY);
    let l = Elided::<RawTicket>::new();
    let mut transactions = 0;
    for _ in 0..1_000 {
        let (g, o) = l.lock_with_outcome();
        transactions += u32::from(o.path == Path::Transaction);
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
    }
    eprintln!("RTM: {transactions} of 1000 uncontended sections ran as transactions");
}

#[test]
fn locklab_rtm_reads_off_and_auto_and_nothing_else() {
    use std::ffi::OsStr;
    assert_eq!(parse_rtm_setting(None), Ok(false));
    assert_eq!(parse_rtm_setting(Some(OsStr::new("off"))), Ok(true));
    assert_eq!(parse_rtm_setting(Some(OsStr::new(" off "))), Ok(true));
    assert_eq!(parse_rtm_setting(Some(OsStr::new("auto"))), Ok(false));
    assert_eq!(parse_rtm_setting(Some(OsStr::new(""))), Ok(false));
    for bad in ["on", "OFF", "0", "no"] {
        assert_eq!(
            parse_rtm_setting(Some(OsStr::new(bad))),
            Err(bad.to_string())
        );
    }
}

/// Run by [`locklab_rtm_off_hides_the_cpus_rtm`] in a process of its own
/// (the answer is cached per process): with `LOCKLAB_RTM=off` nothing is
/// elided, whatever the CPU.
#[test]
fn rtm_off_child() {
    if std::env::var_os("LOCKLAB_RTM_CHILD").is_none() {
        return;
    }
    assert!(!rtm_available());
    assert!(!Rtm.available());
    assert_eq!(Rtm.begin(), Err(NO_REASON));
    let m = ElidedMutex::<RawTicket, u32>::new(1);
    let (g, o) = lock_mutex_with_outcome(&m);
    assert_eq!((*g, o), (1, outcome(Path::Unavailable, &[])));
    println!("rtm-off-child-ran");
}

#[test]
#[cfg_attr(
    miri,
    ignore = "starts a child process, which Miri cannot; under Miri RTM is unavailable anyway"
)]
fn locklab_rtm_off_hides_the_cpus_rtm() {
    let text = crate::util::testing::run_in_child(
        &[
            "--exact",
            "elide::tests::rtm_off_child",
            "--nocapture",
            "--test-threads=1",
        ],
        &[("LOCKLAB_RTM_CHILD", "1"), (RTM_VAR, "off")],
    );
    assert!(
        text.contains("rtm-off-child-ran"),
        "the child ran no test: {text}"
    );
}

#[test]
fn rtm_is_bit_11_of_leaf_7_unless_it_always_aborts() {
    assert!(rtm_in_leaf_7(1 << 11, 0));
    assert!(rtm_in_leaf_7(!0, !(1 << 11)));
    assert!(!rtm_in_leaf_7(0, 0));
    assert!(!rtm_in_leaf_7(1 << 4, 0), "HLE is not RTM");
    assert!(!rtm_in_leaf_7(1 << 11, 1 << 11), "RTM_ALWAYS_ABORT");
}

#[test]
fn abort_status_decodes_and_prints() {
    // The bits as Intel's manual numbers them.
    let bit = |n: u32| Abort::from_status(1 << n);
    assert_eq!(bit(0).explicit, Some(0));
    assert!(bit(1).retry && bit(2).conflict && bit(3).capacity);
    assert!(bit(4).debug && bit(5).nested);
    assert_eq!(bit(6), NO_REASON, "reserved");
    let a = Abort::from_status(0x4C00_0001);
    assert_eq!(a.explicit, Some(b'L'));
    assert!(a.is_lock_busy());
    assert_eq!(a, Abort::LOCK_BUSY);
    for status in [0, 1, 2, 4, 8, 16, 32, 0x3e, 0xff00_0001, 0x4E00_0021] {
        assert_eq!(Abort::from_status(status).status(), status);
    }
    assert!(CAPACITY.capacity && !CAPACITY.retry && CAPACITY.explicit.is_none());
    assert_eq!(Abort::LOCK_BUSY.to_string(), "explicit 'L'");
    assert_eq!(CONFLICT.to_string(), "conflict+retry");
    assert_eq!(
        Abort::from_status(0x0100_0021).to_string(),
        "explicit 0x01+nested"
    );
    assert_eq!(NO_REASON.to_string(), "no reason given");
}

#[test]
fn each_abort_has_one_cause_and_tallies_add_up() {
    let nested = Abort::xabort(NESTED);
    let both = Abort::from_status(STATUS_CONFLICT | STATUS_CAPACITY | STATUS_RETRY);
    for (a, cause) in [
        (Abort::LOCK_BUSY, Cause::LockBusy),
        (CONFLICT, Cause::Conflict),
        (both, Cause::Conflict),
        (CAPACITY, Cause::Capacity),
        (NO_REASON, Cause::RetryClear),
        (nested, Cause::RetryClear),
        (RETRY, Cause::Other),
    ] {
        assert_eq!(a.cause(), cause, "{a}");
    }
    let mut c = Causes::default();
    for a in ABORTS.into_iter().chain([nested, both]) {
        c.count(a);
    }
    let expect = Causes {
        lock_busy: 1,
        conflict: 2,
        capacity: 1,
        retry_clear: 2,
        other: 1,
    };
    assert_eq!((c, c.total()), (expect, 7));
}

#[test]
fn metadata_names_the_fallback() {
    assert_eq!(<Elided<RawClh>>::INFO.name, "elide(clh)");
    let clh = <Elided<RawClh>>::INFO;
    assert_eq!(clh.family, RawClh::INFO.family);
    assert_eq!((clh.fair, clh.blocking), (false, false));
    let park = <Elided<SpinPark<RawTicketBackoff>>>::INFO;
    assert_eq!(park.name, "elide(spin-park(ticket-backoff))");
    assert!(park.blocking);
}
