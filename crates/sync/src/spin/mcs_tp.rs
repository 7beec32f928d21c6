//! `mcs-tp`: a time-published MCS lock, which passes over waiters that
//! look preempted.
//!
//! A FIFO queue lock hands the lock to its next waiter whether or not that
//! waiter is running. With more threads than processors the next waiter is
//! often preempted, and then the lock sits idle, owned by nobody, while
//! every waiter behind it waits for the scheduler too (the collapse of the
//! queue locks beyond the cores in the crate documentation's table). A
//! time-published lock has every waiter publish a timestamp at regular
//! intervals while it spins. The releaser reads its successor's stamp: if
//! it is older than a threshold, the successor has not run for a while and
//! is presumably preempted, so the releaser marks its node removed and
//! looks at the next one, handing the lock to the first that looks alive.
//! A removed waiter that runs again finds itself removed and queues anew.
//! Source: B. He, W. N. Scherer III and M. L. Scott, "Preemption Adaptivity
//! in Time-Published Queue-Based Spin Locks", HiPC 2005 (its MCS-based
//! lock; the paper's waiters can also give up after a time limit, which
//! this file leaves out).
//!
//! ```text
//!   tail ──────────────────────────────────────────┐
//!                                                  ▼
//!   [holder] ─next─► [a: stale] ─► [b: stale] ─► [c: fresh] ─► …
//!                     REMOVED       REMOVED        GRANTED
//!
//!   node: next | state | stamp (the waiter's last published tick)
//!   state:  WAITING ──grant──► GRANTED        (the waiter holds the lock)
//!              └─────remove──► REMOVED ──waiter──► WAITING (queued anew)
//! ```
//!
//! # The stamp
//!
//! A waiter sets its stamp to [`ticks`](crate::sys::ticks) when it links
//! behind a predecessor (an acquisition that finds the lock free reads no
//! clock) and, while it spins, publishes the clock again whenever a quarter of
//! the threshold has passed since its last stamp, so a running waiter's
//! stamp is never older than about a quarter of the threshold. The
//! releaser reads the clock and the stamp; an age above the threshold
//! (converted with [`ticks_per_ns`](crate::sys::ticks_per_ns)) means the
//! waiter has not run for that long. A stamp newer than the releaser's
//! clock reading (published meanwhile, or another processor's counter a
//! little ahead) counts as fresh. The default threshold,
//! [`DEFAULT_THRESHOLD_NS`], is far below a scheduler's time slice (a few
//! milliseconds) and far above a spinning waiter's publishing interval; a
//! waiter passed over by mistake (delayed by an interrupt) loses only its
//! place. Under loom there is no clock: a waiter looks preempted from the
//! moment it links until its first look at its state, when it publishes.
//!
//! # Node lifetimes
//!
//! Nodes live in a `node_table!` (as `mcs.rs`; spares past four locks held
//! at once, from `util::spares`): the memory is never
//! freed. What matters is when a node may be *reused*, reset and queued
//! again, by its thread. Who can touch a queued node `n` besides its
//! thread: its successor, which writes `n.next` once, after swapping
//! itself into `tail` in place of `n`; and the one releaser whose walk
//! reaches `n`, which reads `n.stamp` and `n.next` and writes `n.state`.
//! The protocol:
//!
//! 1. A releaser removes `n` only once nobody can link behind it any
//!    more: it has read a non-null `n.next` (the successor linked; `tail`
//!    has moved past `n` for good), or it has swung `tail` from `n` to
//!    null with a CAS (nobody ever will). If neither, because `n` is the
//!    tail's old value and a newcomer has swapped in but not linked yet,
//!    it waits for the link, as MCS's release does.
//! 2. Storing `REMOVED` is the releaser's *last* access to `n`: it has
//!    read everything it needs (`n.next`) before. After it, it walks on
//!    from `n.next` and never comes back through `n`.
//! 3. The waiter reuses `n` only after reading `REMOVED`, with Acquire
//!    against the store's Release: everything the releaser did to `n`
//!    happens before the waiter resets it. From then on `n` is the
//!    waiter's alone, exactly as a freshly claimed node is, and it queues
//!    it again. (A later walk can reach `n` again, but only through its new
//!    predecessor's `next`, after the new link.)
//! 4. A granted node is the holder's until its release, which gives it
//!    back after reading its `next` (or swinging `tail` to null), as in
//!    MCS. A removed waiter's old predecessor still points at it, but
//!    nobody walks from a node whose release is over.
//!
//! # Orderings
//!
//! - As in MCS: the tail swap is `AcqRel`, linking Release against the
//!   releaser's Acquire read of `next`, and freeing the lock (whether from
//!   the holder's node or, after passing over every waiter, from the last
//!   removed one) a Release CAS picked up by the next swap's Acquire.
//! - `GRANTED` is stored with Release and read with Acquire: the critical
//!   section's hand-over.
//! - `REMOVED` is stored with Release and read with Acquire: the
//!   releaser's reads of the node happen before the waiter's reset of it
//!   (rule 3), so they cannot read the reset.
//! - Stamps are Relaxed: a stamp is a hint, and a stale or early value
//!   costs only a wrong guess (a pass-over, or a grant to a waiter that
//!   has just been preempted). The reset stamp of a re-queued node is
//!   published to the releaser by the link's Release, like its `next` and
//!   `state`.

use core::ptr::{self, NonNull};

use crate::info::{Described, Family, LockInfo};
use crate::util::spares::{Claimed, Spares};
use crate::util::sync::{spin_loop, AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// The waiter holds the lock.
const GRANTED: u32 = 0;
/// Queued, spinning and publishing.
const WAITING: u32 = 1;
/// Passed over by a releaser; the node is its thread's again.
const REMOVED: u32 = 2;

/// How long a waiter may go without publishing before a releaser passes
/// it over, in nanoseconds, for [`RawMcsTp::new`]: 50 µs.
pub const DEFAULT_THRESHOLD_NS: u64 = 50_000;

/// A waiter's queue node.
#[derive(Debug, Default)]
struct McsTpNode {
    next: AtomicPtr<McsTpNode>,
    state: AtomicU32,
    /// The waiter's last published clock reading.
    stamp: AtomicU64,
}

crate::node_table!(static NODES: McsTpNode);
static SPARES: Spares<McsTpNode> = Spares::new();

/// The clock the stamps are read from.
mod clock {
    /// Now.
    #[cfg(not(loom))]
    #[inline]
    pub(super) fn now() -> u64 {
        crate::sys::ticks()
    }

    /// A newly queued waiter's stamp.
    #[cfg(not(loom))]
    #[inline]
    pub(super) fn queued() -> u64 {
        now()
    }

    /// `ns` nanoseconds in ticks; `u64::MAX` stays infinite.
    #[cfg(not(loom))]
    #[inline]
    pub(super) fn ticks(ns: u64) -> u64 {
        if ns == u64::MAX {
            u64::MAX
        } else {
            // A float-to-int cast saturates.
            (ns as f64 * crate::sys::ticks_per_ns()) as u64
        }
    }

    // Under loom, a clock that stands still at 1, queued stamps of 0 and
    // a threshold of 0 (unless infinite): a waiter looks preempted until
    // it has published once. Deterministic, as loom needs.

    #[cfg(loom)]
    pub(super) fn now() -> u64 {
        1
    }

    #[cfg(loom)]
    pub(super) fn queued() -> u64 {
        0
    }

    #[cfg(loom)]
    pub(super) fn ticks(ns: u64) -> u64 {
        if ns == u64::MAX {
            u64::MAX
        } else {
            0
        }
    }
}

/// One acquisition of a [`RawMcsTp`]: its queue node. Not `Send`: a table
/// node must be given back by the thread that claimed it.
#[derive(Debug)]
pub struct McsTpToken {
    node: Claimed<McsTpNode>,
}

// SAFETY: a shared `&McsTpToken` exposes nothing but its fields' values;
// the node is used only through `release`, which takes the token by value
// on the owning thread.
unsafe impl Sync for McsTpToken {}

impl McsTpToken {
    #[inline]
    fn claim() -> Self {
        Self {
            node: Claimed::claim(&NODES, &SPARES),
        }
    }

    #[inline]
    fn node(&self) -> &McsTpNode {
        self.node.node()
    }

    /// Gives the node back. Only once no other thread will touch it.
    #[inline]
    fn free(self) {
        // Claimed by `claim` on this thread (the token is not `Send`),
        // given back once (the token is consumed); the callers free it
        // only when nobody reaches the node.
        self.node.free(&NODES, &SPARES);
    }
}

/// Time-published MCS lock. See the module documentation.
#[derive(Debug)]
pub struct RawMcsTp {
    tail: AtomicPtr<McsTpNode>,
    /// A waiter whose stamp is older than this looks preempted.
    threshold_ns: u64,
}

impl RawMcsTp {
    crate::loom_const_fn! {
        /// An unlocked lock with the [`DEFAULT_THRESHOLD_NS`] threshold.
        pub fn new() -> Self {
            Self::with_threshold_ns(DEFAULT_THRESHOLD_NS)
        }
    }

    crate::loom_const_fn! {
        /// An unlocked lock that passes over a waiter whose stamp is older
        /// than `ns` nanoseconds; `u64::MAX` never passes anyone over (a
        /// plain MCS lock with stamps).
        pub fn with_threshold_ns(ns: u64) -> Self {
            Self { tail: AtomicPtr::new(ptr::null_mut()), threshold_ns: ns }
        }
    }

    /// The threshold this lock was made with, in nanoseconds.
    pub fn threshold_ns(&self) -> u64 {
        self.threshold_ns
    }

    /// Queues up and spins, publishing, until the lock is ours; queues
    /// again whenever a releaser passes this thread over.
    #[inline]
    pub fn acquire(&self) -> McsTpToken {
        let me = McsTpToken::claim();
        let node = me.node();
        loop {
            node.next.store(ptr::null_mut(), Ordering::Relaxed);
            node.state.store(WAITING, Ordering::Relaxed);
            let pred = self.tail.swap(me.node.as_ptr(), Ordering::AcqRel);
            let Some(pred) = NonNull::new(pred) else {
                return me;
            };
            // Stamped only now, so that an uncontended acquisition reads no
            // clock: a releaser reads the stamp only after reaching this
            // node through the link below, whose Release publishes it.
            let stamp = clock::queued();
            node.stamp.store(stamp, Ordering::Relaxed);
            // SAFETY: the predecessor's node cannot be reused before we
            // link: a holder gives its node back only after reading our
            // link, and a releaser removes a waiter only after reading its
            // link (rule 1 of the module documentation).
            unsafe { pred.as_ref() }
                .next
                .store(me.node.as_ptr(), Ordering::Release);
            #[cfg(all(test, not(loom)))]
            hooks::queued();
            if self.wait(node, stamp) {
                return me;
            }
            // Passed over: the node is ours alone again (rule 3).
        }
    }

    /// Spins until granted (`true`) or removed (`false`), publishing the
    /// clock every quarter threshold.
    #[inline(never)]
    fn wait(&self, node: &McsTpNode, mut stamp: u64) -> bool {
        let every = clock::ticks(self.threshold_ns) / 4;
        loop {
            match node.state.load(Ordering::Acquire) {
                GRANTED => return true,
                REMOVED => return false,
                _ => {}
            }
            let now = clock::now();
            if now != stamp && now.wrapping_sub(stamp) >= every {
                node.stamp.store(now, Ordering::Relaxed);
                stamp = now;
            }
            spin_loop();
        }
    }

    /// Takes the lock if nobody holds it or waits for it right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<McsTpToken> {
        if !self.tail.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let me = McsTpToken::claim();
        let node = me.node();
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.state.store(WAITING, Ordering::Relaxed);
        match self.tail.compare_exchange(
            ptr::null_mut(),
            me.node.as_ptr(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) {
            Ok(_) => Some(me),
            Err(_) => {
                // Never published: nobody else saw the node.
                me.free();
                None
            }
        }
    }

    /// Hands the lock to the first waiter that does not look preempted,
    /// removing the ones before it, or frees it.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock, on this thread.
    #[inline]
    pub unsafe fn release(&self, token: McsTpToken) {
        let next = token.node().next.load(Ordering::Acquire);
        if next.is_null()
            && self
                .tail
                .compare_exchange(
                    token.node.as_ptr(),
                    ptr::null_mut(),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            token.free();
            return;
        }
        self.hand_over(token, next);
    }

    /// The release with a successor (linked as `next`, or about to link
    /// if `next` is null): the walk of the module documentation.
    #[cold]
    #[inline(never)]
    fn hand_over(&self, token: McsTpToken, mut next: *mut McsTpNode) {
        let node = token.node();
        while next.is_null() {
            // A successor has swapped itself in and is about to link.
            spin_loop();
            next = node.next.load(Ordering::Acquire);
        }
        let threshold = clock::ticks(self.threshold_ns);
        // SAFETY: a linked waiter's node stays claimed until the waiter
        // reads GRANTED or REMOVED, which only this walk writes.
        let mut cur = unsafe { &*next };
        loop {
            if !Self::looks_preempted(cur, threshold) {
                cur.state.store(GRANTED, Ordering::Release);
                break;
            }
            // Pass `cur` over, once nobody can link behind it (rule 1).
            let mut after = cur.next.load(Ordering::Acquire);
            if after.is_null() {
                if self
                    .tail
                    .compare_exchange(
                        ptr::from_ref(cur).cast_mut(),
                        ptr::null_mut(),
                        Ordering::Release,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    // Nobody else waits: the lock is free. Last access
                    // (rule 2).
                    cur.state.store(REMOVED, Ordering::Release);
                    break;
                }
                while after.is_null() {
                    spin_loop();
                    after = cur.next.load(Ordering::Acquire);
                }
            }
            // Last access to `cur` (rule 2).
            cur.state.store(REMOVED, Ordering::Release);
            // SAFETY: as for the first waiter.
            cur = unsafe { &*after };
        }
        // Our node: the successor linked before we read it, and nobody
        // else has it.
        token.free();
    }

    /// Whether `n`'s stamp is older than `threshold` ticks.
    #[inline]
    fn looks_preempted(n: &McsTpNode, threshold: u64) -> bool {
        if threshold == u64::MAX {
            return false;
        }
        let stamp = n.stamp.load(Ordering::Relaxed);
        // Signed: a stamp from after our clock reading is fresh.
        let age = clock::now().wrapping_sub(stamp) as i64;
        age > 0 && age as u64 > threshold
    }

    /// Whether some thread holds or waits for the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }

    /// The tail's address, for tests that watch arrivals.
    #[cfg(all(test, not(loom)))]
    fn tail_addr(&self) -> usize {
        self.tail.load(Ordering::Relaxed) as usize
    }
}

impl Default for RawMcsTp {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawMcsTp {
    const INFO: LockInfo = LockInfo {
        name: "mcs-tp",
        family: Family::Queue,
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "He, Scherer & Scott, Preemption Adaptivity in Time-Published Queue-Based Spin Locks, HiPC 2005",
        summary: "MCS whose waiters publish timestamps; the releaser passes over waiters that look preempted, which queue again",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{McsTpToken, RawMcsTp};

    // SAFETY: `acquire` returns only after a grant (a Release store of
    // `GRANTED` into our node, read with Acquire) or on an empty queue (an
    // AcqRel swap that found a null tail, after the Release CAS that freed
    // the lock), and a release grants at most one waiter, as its last
    // act, or frees the lock; removed waiters hold nothing and queue anew.
    // So at most one token is outstanding and the critical sections are
    // ordered. `McsTpToken` is `!Send`, so `unlock` runs on the thread that
    // claimed the node, as the node table requires.
    unsafe impl lock_api::RawMutex for RawMcsTp {
        const INIT: Self = Self::new();
        type Guard = McsTpToken;

        #[inline]
        fn lock(&self) -> McsTpToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<McsTpToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: McsTpToken) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    /// A mutex protected by a time-published MCS lock.
    pub type McsTpMutex<T> = lock_api::Mutex<RawMcsTp, T>;
}

#[cfg(not(loom))]
pub use raw::McsTpMutex;

/// Test hook: the next time this thread has linked into a queue, it runs
/// a closure first (which may block, keeping the waiter off its spin loop:
/// no spinning, no publishing). Compiled only for the unit tests.
#[cfg(all(test, not(loom)))]
mod hooks {
    use std::cell::RefCell;

    type Hook = Box<dyn FnOnce()>;

    std::thread_local! {
        static STALL: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// Runs `f` at this thread's next queued wait.
    pub(super) fn stall_next_wait(f: Hook) {
        STALL.with(|s| *s.borrow_mut() = Some(f));
    }

    pub(super) fn queued() {
        let f = STALL.with(|s| s.borrow_mut().take());
        if let Some(f) = f {
            f();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::nodes::DEPTH;
    use crate::util::testing::{
        churn_threads, fifo_order, hammer_fifo, hammer_yielding, iters, limit, nested_non_lifo,
        Watchdog, HANG,
    };
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawMcsTp>(6, 500);
    }

    /// With a 2 µs threshold waiters are passed over all the time (any
    /// wait for the processor is longer), so most hand-overs take the
    /// removal path and removed waiters queue again and again.
    #[test]
    fn six_threads_count_exactly_when_waiters_are_passed_over_all_the_time() {
        hammer_yielding(RawMcsTp::with_threshold_ns(2_000), 6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        nested_non_lifo::<RawMcsTp>(3);
    }

    #[test]
    fn six_locks_at_once_overflow_to_spare_nodes() {
        const N: usize = 6;
        const { assert!(N > DEPTH) };
        nested_non_lifo::<RawMcsTp>(N);
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let m = McsTpMutex::new(());
        let g = m.lock();
        assert!(m.is_locked());
        std::thread::scope(|s| {
            s.spawn(|| assert!(m.try_lock().is_none()));
        });
        drop(g);
        assert!(m.try_lock().is_some());
        assert!(!m.is_locked());
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawMcsTp>();
    }

    /// FIFO among running waiters: with a threshold no spinning waiter
    /// reaches (10 s) nobody looks preempted, and the queue is MCS's.
    #[test]
    fn waiters_that_keep_publishing_enter_in_arrival_order() {
        let lock = RawMcsTp::with_threshold_ns(10_000_000_000);
        fifo_order(
            &lock,
            RawMcsTp::tail_addr,
            RawMcsTp::acquire,
            // SAFETY: `fifo_order` releases what it acquired, on the same
            // thread.
            |l, t| unsafe { l.release(t) },
        );
    }

    #[test]
    fn metadata() {
        let i = RawMcsTp::INFO;
        assert_eq!(i.name, "mcs-tp");
        assert_eq!(i.family, Family::Queue);
        assert_eq!((i.fair, i.blocking, i.numa_aware), (false, false, false));
        assert_eq!(RawMcsTp::new().threshold_ns(), DEFAULT_THRESHOLD_NS);
    }

    /// What happened around a waiter kept off its spin loop.
    #[derive(Debug)]
    struct Stall {
        /// Acquisitions by the other threads while it was stalled.
        during: u64,
        /// Acquisitions by the other threads before it entered.
        before_it_entered: u64,
    }

    /// While this thread holds `lock`, a thread S queues right behind it
    /// and stalls in the test hook (no spinning, no publishing) until told
    /// to go on. Once S's stamp is older than the lock's threshold, two
    /// more threads start, `rounds` acquisitions each, and this thread
    /// releases. It counts their acquisitions until they are all done or
    /// `patience` has passed, then lets S go; all finish.
    fn stalled_waiter(lock: &RawMcsTp, rounds: u64, patience: Duration) -> Stall {
        const OTHERS: u64 = 2;
        let _w = Watchdog::new("mcs-tp stall", HANG);
        let done = AtomicU64::new(0);
        let stalled_entered = AtomicBool::new(false);
        let (queued_tx, queued_rx) = mpsc::channel::<()>();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let held = lock.acquire();
        let mut during = 0;
        let mut before_it_entered = 0;
        std::thread::scope(|s| {
            let (done_ref, entered) = (&done, &stalled_entered);
            let stalled = s.spawn(move || {
                hooks::stall_next_wait(Box::new(move || {
                    queued_tx.send(()).unwrap();
                    go_rx.recv().unwrap();
                }));
                let t = lock.acquire();
                let before = done_ref.load(Ordering::Relaxed);
                entered.store(true, Ordering::Relaxed);
                // SAFETY: acquired above, on this thread.
                unsafe { lock.release(t) };
                before
            });
            queued_rx.recv().unwrap();
            // S is linked behind us and stalled. Let its stamp age past
            // the threshold (three times over, for the clock's calibration
            // error; sleeping advances Miri's virtual clock too).
            if lock.threshold_ns() != u64::MAX {
                std::thread::sleep(Duration::from_nanos(3 * lock.threshold_ns()));
            }
            for _ in 0..OTHERS {
                s.spawn(|| {
                    for _ in 0..rounds {
                        let t = lock.acquire();
                        done.fetch_add(1, Ordering::Relaxed);
                        // SAFETY: acquired above, on this thread.
                        unsafe { lock.release(t) };
                    }
                });
            }
            // SAFETY: acquired at the top, on this thread.
            unsafe { lock.release(held) };
            let give_up = Instant::now() + patience;
            while done.load(Ordering::Relaxed) < OTHERS * rounds && Instant::now() < give_up {
                std::thread::sleep(Duration::from_micros(200));
            }
            during = done.load(Ordering::Relaxed);
            assert!(
                !stalled_entered.load(Ordering::Relaxed),
                "the stalled waiter entered while stalled"
            );
            go_tx.send(()).unwrap();
            before_it_entered = stalled.join().unwrap();
        });
        assert_eq!(done.into_inner(), OTHERS * rounds, "lost acquisitions");
        assert!(!lock.is_held());
        Stall {
            during,
            before_it_entered,
        }
    }

    /// Known answer: a queued waiter kept off its processor does not hold
    /// up the others. The releaser passes it over, the other two threads
    /// complete all their acquisitions while it is stalled, and when it
    /// runs again it finds itself removed, queues anew and enters last.
    #[test]
    fn a_stalled_waiter_is_passed_over_and_the_others_keep_acquiring() {
        let rounds = iters(1_000);
        let lock = RawMcsTp::with_threshold_ns(DEFAULT_THRESHOLD_NS);
        let st = stalled_waiter(&lock, rounds, limit(Duration::from_secs(60)));
        assert_eq!(st.during, 2 * rounds, "{st:?}");
        assert_eq!(st.before_it_entered, 2 * rounds, "{st:?}");
    }

    /// The contrast: with passing over disabled (an infinite threshold)
    /// the stalled waiter is granted the lock and everybody queued behind
    /// it waits: no acquisition at all while it is stalled (however long
    /// we wait), then it enters first.
    #[test]
    fn without_passing_over_a_stalled_waiter_holds_up_everyone() {
        let rounds = iters(1_000);
        let lock = RawMcsTp::with_threshold_ns(u64::MAX);
        let patience = Duration::from_micros(if cfg!(miri) { 500 } else { 100_000 });
        let st = stalled_waiter(&lock, rounds, patience);
        assert_eq!(st.during, 0, "{st:?}");
        assert_eq!(st.before_it_entered, 0, "{st:?}");
    }
}
