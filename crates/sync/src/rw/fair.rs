//! `rw-fair`: a queued, fair spinning reader-writer lock in the manner of
//! Linux's qrwlock.
//!
//! # Idea
//!
//! A 32-bit state word (writer-holds bit, writer-waiting bit, reader count)
//! plus a FIFO spin lock, the *wait queue*, here a [`RawTicket`]:
//!
//! - **Fast paths.** A reader adds its unit with one `fetch_add` and is in
//!   if the value it replaced shows no writer holding and none waiting. A
//!   writer takes a completely idle lock with one CAS from 0.
//! - **Queue.** Anyone else queues on the wait queue. A reader first takes
//!   its fast-path unit back. The thread that holds the wait queue is the
//!   *head*; everybody behind it waits in arrival order.
//! - **Reader at the head**: adds its unit again, waits (reading) until the
//!   writer inside, if any, leaves, and then passes the wait queue on at
//!   once. Its unit is counted while it waits, so no writer can enter
//!   before it. If the next in line is a reader too, it finds no writer and
//!   passes straight through: consecutive queued readers enter together.
//! - **Writer at the head**: takes an idle lock at once; otherwise sets the
//!   waiting bit, which turns new fast-path readers (and fast-path writers)
//!   away, waits until the readers inside have drained and the writer
//!   inside has left, and then turns "waiting" into "holds" in one CAS.
//!   Only then does it pass the wait queue on.
//!
//! So readers and writers are served in the order they queued: a writer
//! waits at most for the threads queued before it and the readers already
//! inside, a reader for the threads before it and the one writer inside.
//! Neither side starves. The one exception to strict FIFO is the fast
//! paths: a reader gets in without queueing while no writer holds or waits
//! at the head of the queue, and a writer while the word is 0, even if
//! threads are queued behind the head (between two queued threads, or
//! while a queued writer has not yet reached the head). As in Linux, this
//! keeps the uncontended cost at one RMW and is bounded: a queued writer
//! that reaches the head stops it.
//!
//! Source: Linux `kernel/locking/qrwlock.c` and
//! `include/asm-generic/qrwlock.h` (Waiman Long, 2014), which replaced the
//! reader-preferring `rwlock_t` (see [`reader_pref`](super::reader_pref));
//! it queues on the architecture's spin lock (qspinlock), where this lock
//! uses the crate's ticket lock, equally FIFO. The fairness goal is that of
//! the fair reader-writer locks of Mellor-Crummey & Scott, "Scalable
//! reader-writer synchronization for shared-memory multiprocessors" (PPoPP
//! 1991), whose queued version likewise lets consecutive readers in the
//! queue enter together; the reader- and writer-preference policies it
//! avoids are Courtois, Heymans & Parnas (CACM 1971). Seed 001 (Bueso)
//! describes ticket and MCS/qspinlock queueing and the reader-writer
//! fairness problem; seed 003 (McKenney) measured that a starvation-free
//! rwlock costs more per acquisition than a simple one, and that any
//! counter-based rwlock pays a cache-line transfer per read acquisition.
//!
//! Differences from Linux: the kernel's writer-holds flag is a whole byte
//! so that unlock can be a byte store; Rust has no sound mixed-size atomics
//! (see [`RawQspin`](crate::RawQspin)), so here it is one bit and unlock is
//! a `fetch_sub`. Linux lets readers in interrupt context skip the queue
//! (below); here every thread queues.
//!
//! # Recursive read while a writer waits: deadlock
//!
//! A thread that holds a read lock and asks for another one while a writer
//! is at the head of the queue deadlocks: the second read finds the waiting
//! bit set and queues behind the writer, which waits for the first read to
//! go. That is the price of FIFO. Linux has the same rule for process
//! context and lets only interrupt-context readers bypass the queue
//! (waiting only for a *holding* writer, keeping their unit), because an
//! interrupt handler may take a read lock that the interrupted code already
//! holds. Never take a read lock recursively here; the test
//! `recursive_read_queues_behind_a_waiting_writer` shows the behaviour
//! without hanging.
//!
//! # State word
//!
//! ```text
//!  bit 0      LOCKED     held by a writer
//!  bit 1      WAITING    the writer at the head of the queue waits
//!  bits 2..30 readers    read holders, the queue head's unit while it
//!                        waits, and fast-path readers about to back out
//!  bit 31     OVERFLOW   set once 2^29 readers are counted: more panic
//! ```
//!
//! `WAITING` is set and cleared only by the holder of the wait queue, so one
//! bit is enough. The word is only ever changed by read-modify-write
//! operations, never by a plain store.
//!
//! # Orderings
//!
//! - Entering is ordered after the previous release by an `Acquire` read
//!   of a value in the release sequence of the last unlock (every later
//!   value is, since only RMWs change the word): the reader's fast-path
//!   `fetch_add`, the queued reader's wait loop (its `Acquire` load that
//!   sees `LOCKED` clear synchronizes with the writer's `Release` unlock),
//!   the writer's CASes. So a read section sees the last write section,
//!   and a write section begins after every earlier reader's last read.
//! - Leaving is `Release`: the reader's `fetch_sub`, the writer's `fetch_sub`
//!   of `LOCKED` (queued readers' units and `WAITING` may be in the word).
//! - The queued reader's re-added unit, a fast-path reader's undo, setting
//!   `WAITING`, spin reads and failed CASes carry no data: `Relaxed`. That a
//!   unit or the waiting bit is seen by the other side's RMW follows from
//!   the atomicity and coherence of RMWs on one word, not from ordering.
//! - The wait queue orders only the waiters among themselves (its own
//!   `Acquire`/`Release`); exclusion rests on the state word alone.

use crate::info::{Described, Family, LockInfo};
use crate::spin::RawTicket;
use crate::util::sync::{spin_loop, AtomicU32, Ordering};

const LOCKED: u32 = 1 << 0;
const WAITING: u32 = 1 << 1;
const READER: u32 = 1 << 2;
const OVERFLOW: u32 = 1 << 31;

/// Anything in the word that sends a fast-path reader to the queue.
const READ_BLOCK: u32 = LOCKED | WAITING | OVERFLOW;

/// Queued, FIFO spinning reader-writer lock (Linux's qrwlock design). See
/// the module documentation.
///
/// Never take a read lock on a `RawRwFair` whose read lock this thread
/// already holds: if a writer reaches the head of the queue in between,
/// that deadlocks.
#[derive(Debug)]
pub struct RawRwFair {
    state: AtomicU32,
    /// The wait queue: its holder is the head of the line.
    wait: RawTicket,
}

impl RawRwFair {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { state: AtomicU32::new(0), wait: RawTicket::new() }
        }
    }

    /// Takes a read lock: at once if no writer holds or waits at the head,
    /// else in queue order.
    #[inline]
    pub fn acquire_shared(&self) {
        let prev = self.state.fetch_add(READER, Ordering::Acquire);
        if prev & READ_BLOCK != 0 {
            self.acquire_shared_slow(prev);
        }
    }

    #[cold]
    fn acquire_shared_slow(&self, prev: u32) {
        // Take the fast-path unit back: a writer at the head waits for the
        // readers to drain. It carries nothing.
        self.state.fetch_sub(READER, Ordering::Relaxed);
        if prev & OVERFLOW != 0 {
            panic!("rw-fair: too many readers");
        }
        let ticket = self.wait.acquire();
        // At the head. Count ourselves: from now on no writer can enter, so
        // only the one inside (if any) is ahead of us.
        let prev = self.state.fetch_add(READER, Ordering::Relaxed);
        if prev & OVERFLOW != 0 {
            self.state.fetch_sub(READER, Ordering::Relaxed);
            // SAFETY: taken above by this thread.
            unsafe { self.wait.release(ticket) };
            panic!("rw-fair: too many readers");
        }
        while self.state.load(Ordering::Acquire) & LOCKED != 0 {
            spin_loop();
        }
        // In. Let the next in line try at once: if it is a reader it enters
        // beside us.
        // SAFETY: taken above by this thread.
        unsafe { self.wait.release(ticket) };
    }

    /// Takes a read lock if no writer holds or waits at the head right now.
    #[inline]
    pub fn try_acquire_shared(&self) -> bool {
        self.try_add_reader(READ_BLOCK)
    }

    /// Takes a read lock if no writer *holds* it, even while a writer waits
    /// at the head of the queue: for a caller entitled to pass waiting
    /// writers (POSIX's rule for a real-time reader of higher priority than
    /// every waiting writer, which `locklab-preload` keeps). The waiting
    /// writer cannot enter while this unit is counted (its CAS from
    /// `WAITING` wants no reader), so it only waits longer; the release is
    /// the usual one.
    #[inline]
    pub fn try_acquire_shared_past_waiters(&self) -> bool {
        self.try_add_reader(LOCKED | OVERFLOW)
    }

    /// Counts one more reader unless a bit of `blocked` is set.
    #[inline]
    fn try_add_reader(&self, blocked: u32) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        while s & blocked == 0 {
            match self
                .state
                .compare_exchange(s, s + READER, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
        false
    }

    /// Releases a read lock.
    ///
    /// # Safety
    /// The caller must hold a read lock on `self` (taken by any thread).
    #[inline]
    pub unsafe fn release_shared(&self) {
        self.state.fetch_sub(READER, Ordering::Release);
    }

    /// Takes the write lock: one CAS if the lock is idle, else in queue
    /// order.
    #[inline]
    pub fn acquire_exclusive(&self) {
        if self
            .state
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.acquire_exclusive_slow();
        }
    }

    #[cold]
    fn acquire_exclusive_slow(&self) {
        let ticket = self.wait.acquire();
        // At the head. Idle now? Then take it without raising the flag.
        if !(self.state.load(Ordering::Relaxed) == 0
            && self
                .state
                .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok())
        {
            // Turn new readers away, then wait for those inside and for
            // the writer inside to leave. Only we can clear `WAITING`, and
            // no one else can take the lock while it is set.
            self.state.fetch_or(WAITING, Ordering::Relaxed);
            loop {
                while self.state.load(Ordering::Relaxed) != WAITING {
                    spin_loop();
                }
                if self
                    .state
                    .compare_exchange(WAITING, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
                {
                    break;
                }
            }
        }
        // SAFETY: taken above by this thread.
        unsafe { self.wait.release(ticket) };
    }

    /// Takes the write lock if the lock is idle right now (no holder, no
    /// writer waiting at the head).
    #[inline]
    pub fn try_acquire_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) == 0
            && self
                .state
                .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The caller must hold the write lock on `self` (taken by any thread).
    #[inline]
    pub unsafe fn release_exclusive(&self) {
        self.state.fetch_sub(LOCKED, Ordering::Release);
    }

    /// Whether anyone holds the lock (a momentary snapshot; the queue
    /// head's unit while it waits for a writer, and a fast-path reader about
    /// to back out, count).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) & !WAITING != 0
    }

    /// Whether a writer holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & LOCKED != 0
    }

    /// The state word, for tests that watch waiters arrive.
    #[cfg(all(test, not(loom)))]
    fn bits(&self) -> u32 {
        self.state.load(Ordering::SeqCst)
    }

    /// How many threads have joined the wait queue so far, for tests that
    /// watch waiters arrive.
    #[cfg(all(test, not(loom)))]
    fn queued(&self) -> u32 {
        self.wait.drawn()
    }
}

impl Default for RawRwFair {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawRwFair {
    const INFO: LockInfo = LockInfo {
        name: "rw-fair",
        family: Family::ReaderWriter,
        // FIFO among queued threads; the fast paths overtake the queue only
        // while no writer waits at its head.
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "Linux kernel/locking/qrwlock.c (Waiman Long, 2014); Mellor-Crummey & Scott, PPoPP 1991 (fair reader-writer locks); Courtois, Heymans & Parnas, CACM 1971; Bueso (seed 001)",
        summary: "reader count + writer bits in one word, fast paths of one RMW; otherwise queue FIFO on a ticket lock, the head waits its turn, consecutive readers enter together",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawRwFair;

    // SAFETY: a writer enters only by a CAS from 0 or from `WAITING` alone
    // (no reader counted, no writer), and a reader only once its unit is
    // counted and it has read the word without `LOCKED` after counting it
    // (a fast-path reader that saw a writer takes its unit off again
    // without entering); while any unit is counted no writer's CAS can
    // succeed, and while `LOCKED` is set no reader enters. So a write guard
    // excludes every other guard. Entering is `Acquire`, leaving `Release`,
    // on one word changed only by RMWs. The wait queue only orders waiters.
    crate::guardless_raw_rwlock!(RawRwFair);

    /// A reader-writer lock protected by a [`RawRwFair`]: readers and
    /// writers are served in arrival order once they queue.
    ///
    /// Do not take a read lock recursively: if a writer reaches the head of
    /// the queue in between, the second read waits for the writer, which
    /// waits for the first read.
    pub type RwFairLock<T> = lock_api::RwLock<RawRwFair, T>;
}

#[cfg(not(loom))]
pub use raw::RwFairLock;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{self, until, Watchdog, HANG};
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::time::{Duration, Instant};

    #[test]
    fn six_threads_mixing_readers_and_writers_count_exactly() {
        testing::rw_mix::<RawRwFair>(6, 20_000);
    }

    #[test]
    fn readers_share() {
        testing::rw_readers_share::<RawRwFair>();
    }

    #[test]
    fn try_locks() {
        testing::rw_try_locks::<RawRwFair>();
    }

    #[test]
    fn a_writer_excludes_a_reader_from_another_thread() {
        testing::rw_writer_excludes_another_threads_reader::<RawRwFair>();
    }

    /// Waits (yielding) until `cond` holds; false if it does not within
    /// 20 s (longer under Miri), so that the caller can release what it holds and fail instead
    /// of hanging.
    fn within_20s(cond: impl Fn() -> bool) -> bool {
        let give_up = Instant::now() + testing::limit(Duration::from_secs(20));
        while !cond() {
            if Instant::now() >= give_up {
                return false;
            }
            std::thread::yield_now();
        }
        true
    }

    /// While this thread holds the write lock, a reader, a writer and a
    /// reader queue one after another (each started once the previous one
    /// has joined the queue). After the release they enter in that order:
    /// the second reader waits for the queued writer, where a
    /// reader-preferring lock would have let it in beside the first reader.
    #[test]
    fn queued_readers_and_writers_enter_in_arrival_order() {
        let _w = Watchdog::new("queued_in_arrival_order", HANG);
        let l = RawRwFair::new();
        let order = std::sync::Mutex::new(Vec::new());
        l.acquire_exclusive();
        std::thread::scope(|s| {
            for (i, writer) in [false, true, false].into_iter().enumerate() {
                let before = l.queued();
                let (l, order) = (&l, &order);
                s.spawn(move || {
                    if writer {
                        l.acquire_exclusive();
                        order.lock().unwrap().push(i);
                        // Stay a while, so a broken lock could let the
                        // reader behind in beside us.
                        std::thread::sleep(Duration::from_millis(2));
                        // SAFETY: taken just above.
                        unsafe { l.release_exclusive() };
                    } else {
                        l.acquire_shared();
                        order.lock().unwrap().push(i);
                        std::thread::sleep(Duration::from_millis(2));
                        // SAFETY: taken just above.
                        unsafe { l.release_shared() };
                    }
                });
                until(|| l.queued() != before);
            }
            // SAFETY: taken above by this thread.
            unsafe { l.release_exclusive() };
        });
        assert_eq!(*order.lock().unwrap(), [0, 1, 2]);
        assert!(!l.is_held());
    }

    /// Readers queued behind a writer enter together once it leaves: each
    /// waits inside its read section until all are inside.
    #[test]
    fn consecutive_queued_readers_enter_together() {
        const READERS: usize = 3;
        let _w = Watchdog::new("consecutive_queued_readers_enter_together", HANG);
        let l = RawRwFair::new();
        let inside = AtomicUsize::new(0);
        let all_met = AtomicUsize::new(0);
        l.acquire_exclusive();
        std::thread::scope(|s| {
            for _ in 0..READERS {
                let before = l.queued();
                s.spawn(|| {
                    l.acquire_shared();
                    inside.fetch_add(1, Ordering::SeqCst);
                    if within_20s(|| inside.load(Ordering::SeqCst) == READERS) {
                        all_met.fetch_add(1, Ordering::SeqCst);
                    }
                    // SAFETY: taken just above.
                    unsafe { l.release_shared() };
                });
                until(|| l.queued() != before);
            }
            // SAFETY: taken above by this thread.
            unsafe { l.release_exclusive() };
        });
        assert_eq!(
            all_met.into_inner(),
            READERS,
            "queued readers did not hold the lock together"
        );
        assert!(!l.is_held());
    }

    /// A writer at the head of the queue turns new readers away
    /// (deterministically: it has set `WAITING` while a reader holds), even
    /// though a reader is inside.
    #[test]
    fn a_writer_at_the_head_turns_new_readers_away() {
        let _w = Watchdog::new("a_writer_at_the_head_turns_new_readers_away", HANG);
        let l = RawRwFair::new();
        l.acquire_shared();
        let got_in = std::thread::scope(|s| {
            s.spawn(|| {
                l.acquire_exclusive();
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| l.bits() & WAITING != 0);
            let got_in = s.spawn(|| l.try_acquire_shared()).join().unwrap();
            // Release before asserting, so a failure ends the test.
            if got_in {
                // SAFETY: taken by the helper thread just above.
                unsafe { l.release_shared() };
            }
            // SAFETY: taken above by this thread.
            unsafe { l.release_shared() };
            got_in
        });
        assert!(
            !got_in,
            "a new reader got past a writer waiting at the head"
        );
        assert!(!l.is_held());
    }

    /// A reader entitled to pass waiting writers gets in while the writer
    /// at the head waits for the readers inside, not while a writer holds;
    /// the writer enters once both readers have left.
    #[test]
    fn a_reader_past_waiters_enters_unless_a_writer_holds() {
        let _w = Watchdog::new("a_reader_past_waiters_enters_unless_a_writer_holds", HANG);
        let l = RawRwFair::new();
        l.acquire_shared();
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                l.acquire_exclusive();
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| l.bits() & WAITING != 0);
            let past = s
                .spawn(|| l.try_acquire_shared_past_waiters())
                .join()
                .unwrap();
            if past {
                // SAFETY: taken by the helper thread just above.
                unsafe { l.release_shared() };
            }
            // SAFETY: taken above by this thread.
            unsafe { l.release_shared() };
            w.join().unwrap();
            assert!(
                past,
                "a reader past waiters was kept out by a waiting writer"
            );
        });
        assert!(l.try_acquire_exclusive());
        assert!(
            !l.try_acquire_shared_past_waiters(),
            "got past a holding writer"
        );
        // SAFETY: taken just above.
        unsafe { l.release_exclusive() };
        assert!(!l.is_held());
    }

    /// The documented deadlock, observed without hanging: this thread holds
    /// a read lock, a writer reaches the head of the queue, and this
    /// thread's second read then queues behind it (`try_acquire_shared`
    /// already refuses). A helper sees the second read queued, gives it a
    /// moment, and releases the first read on this thread's behalf; the
    /// writer must get in before the second read does.
    #[test]
    fn recursive_read_queues_behind_a_waiting_writer() {
        let _w = Watchdog::new("recursive_read_queues_behind_a_waiting_writer", HANG);
        let l = RawRwFair::new();
        let writer_done = AtomicBool::new(false);
        let second_done = AtomicBool::new(false);
        l.acquire_shared();
        std::thread::scope(|s| {
            s.spawn(|| {
                l.acquire_exclusive();
                writer_done.store(true, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| l.bits() & WAITING != 0);
            let tried_in = l.try_acquire_shared();
            if tried_in {
                // SAFETY: taken just above; give it back before going on.
                unsafe { l.release_shared() };
            }
            let observer = s.spawn(|| {
                // The writer drew ticket 0; the second read draws ticket 1.
                until(|| l.queued() == 2 || second_done.load(Ordering::SeqCst));
                std::thread::sleep(Duration::from_millis(5));
                let blocked = !second_done.load(Ordering::SeqCst);
                let writer_waited = !writer_done.load(Ordering::SeqCst);
                // Release before asserting, so a failure ends the test
                // instead of leaving the writer waiting for ever.
                // SAFETY: the first read lock of the main thread, which
                // never releases it itself; read guards are not tied to a
                // thread.
                unsafe { l.release_shared() };
                (blocked, writer_waited)
            });
            l.acquire_shared();
            second_done.store(true, Ordering::SeqCst);
            let writer_first = writer_done.load(Ordering::SeqCst);
            // SAFETY: taken just above.
            unsafe { l.release_shared() };
            let (blocked, writer_waited) = observer.join().unwrap();
            assert!(
                !tried_in,
                "try_acquire_shared got past a writer waiting at the head"
            );
            assert!(blocked, "the recursive read got in while a writer waited");
            assert!(writer_waited, "the writer got in past a held read lock");
            assert!(writer_first, "the second read did not wait for the writer");
        });
        assert!(!l.is_held());
    }
}
