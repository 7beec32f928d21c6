//! `rw-writer`: the writer-preferring spinning reader-writer lock.
//!
//! # Idea
//!
//! One 32-bit word holds a writer bit, a count of *waiting* writers and a
//! reader count. A writer that cannot enter at once announces itself by
//! adding one to the waiting count; from then on no new reader enters, the
//! readers inside drain, and the writer takes the lock (taking its
//! announcement back in the same CAS). Readers enter only while no writer
//! holds the lock *or waits for it*. This is the *writers' priority*
//! solution of Courtois, Heymans & Parnas, "Concurrent control with
//! 'readers' and 'writers'" (CACM 14(10), 1971), problem 2 ("once a writer
//! is ready to write, he performs his write as soon as possible"), kept in
//! one word in the manner of the centralised locks of Mellor-Crummey &
//! Scott, "Scalable reader-writer synchronization for shared-memory
//! multiprocessors" (PPoPP 1991), which also give a writer-preference
//! variant (of their queue-based lock).
//!
//! # Readers can starve
//!
//! While writers keep coming (each announcing itself before the previous
//! one leaves), the waiting count never drops to zero and no reader gets
//! in: the test `overlapping_writers_keep_a_reader_out` shows it
//! deterministically. Seed 001 (Bueso) names the trade-off: preferring one
//! side suits some read/write mixes and starves the other side in others.
//!
//! # Recursive read while a writer waits: deadlock
//!
//! A thread that holds a read lock and asks for another one while a writer
//! waits deadlocks: the writer waits for the first read lock to go, the
//! second read waits for the writer. Never take a read lock recursively
//! (the same rule as Linux's `rw_semaphore` and `parking_lot::RwLock`).
//!
//! # Waiting
//!
//! An uncontended reader enters with one `fetch_add` of a reader unit. If
//! the value it replaced shows a writer holding or waiting, it takes the
//! unit back at once (a writer waits for the reader count to reach zero,
//! so it must not linger) and waits by reading the word, served from its
//! own cached copy, until no writer holds or waits; then it makes one CAS
//! attempt from the value it read. So a reader makes at most one
//! add-and-undo pair per acquisition plus one CAS per time the lock looked
//! enterable, never a loop of RMWs while a writer is around. A waiting
//! writer likewise reads until the lock is free of readers and writers,
//! then makes one CAS attempt, with bounded randomized backoff after a
//! failure (another writer won).
//!
//! # State word
//!
//! ```text
//!  bit 0       WRITER     held by a writer
//!  bits 1..15  waiting    writers that announced themselves (max 2^15-1)
//!  bits 16..30 readers    read holders, plus fast-path readers about to
//!                         take their unit back
//!  bit 31      OVERFLOW   set once 2^15 readers are counted: more panic
//! ```
//!
//! The word is only ever changed by read-modify-write operations, never by
//! a plain store.
//!
//! # Orderings
//!
//! - Entering is `Acquire`: the reader's `fetch_add` or CAS, the writer's
//!   CAS. It reads a value in the release sequence of the last unlock (every
//!   later value is, since only RMWs change the word), so the new section
//!   sees the previous write section, and a writer's section begins after
//!   every earlier reader's last read.
//! - Leaving is `Release`: the reader's `fetch_sub`, the writer's `fetch_sub`
//!   of its bit (an RMW, since readers' transient units and announcements of
//!   other writers may be in the word).
//! - Announcing a waiting writer, a reader taking back a unit it did not
//!   enter with, spin reads and failed CASes carry no data: `Relaxed`. Their
//!   effect on others (a reader turned away, a writer delayed) comes from the
//!   atomicity of RMWs on one word, not from ordering.

use crate::info::{Described, Family, LockInfo};
use crate::util::backoff::Backoff;
use crate::util::sync::{spin_loop, AtomicU32, Ordering};

const WRITER: u32 = 1 << 0;
const WAITER: u32 = 1 << 1;
const WAITERS: u32 = 0x7fff << 1;
const READER_SHIFT: u32 = 16;
const READER: u32 = 1 << READER_SHIFT;
const READERS: u32 = 0x7fff << READER_SHIFT;
const OVERFLOW: u32 = 1 << 31;

/// Anything in the word that keeps a new reader out.
const READ_BLOCK: u32 = WRITER | WAITERS | OVERFLOW;

/// Writer-preferring spinning reader-writer lock: a waiting writer turns new
/// readers away, so readers can starve. See the module documentation.
///
/// Never take a read lock on a `RawRwWriter` whose read lock this thread
/// already holds: if a writer starts waiting in between, that deadlocks.
#[derive(Debug)]
pub struct RawRwWriter {
    state: AtomicU32,
}

impl RawRwWriter {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { state: AtomicU32::new(0) }
        }
    }

    /// Takes a read lock, spinning while a writer holds the lock or waits
    /// for it.
    #[inline]
    pub fn acquire_shared(&self) {
        let prev = self.state.fetch_add(READER, Ordering::Acquire);
        if prev & READ_BLOCK != 0 {
            self.acquire_shared_slow(prev);
        }
    }

    #[cold]
    fn acquire_shared_slow(&self, prev: u32) {
        // Not in: take the unit back at once, a waiting writer counts on the
        // readers draining. It carries nothing, so `Relaxed`.
        self.state.fetch_sub(READER, Ordering::Relaxed);
        if prev & OVERFLOW != 0 {
            panic!("rw-writer: too many readers");
        }
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & READ_BLOCK != 0 {
                spin_loop();
                continue;
            }
            if s & READERS == READERS {
                panic!("rw-writer: too many readers");
            }
            if self
                .state
                .compare_exchange(s, s + READER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    /// Takes a read lock if no writer holds or waits right now.
    #[inline]
    pub fn try_acquire_shared(&self) -> bool {
        self.try_add_reader(READ_BLOCK)
    }

    /// Takes a read lock if no writer *holds* it, even while writers wait:
    /// for a caller entitled to pass waiting writers (POSIX's rule for a
    /// real-time reader of higher priority than every waiting writer, which
    /// `locklab-preload` keeps). A waiting writer takes the lock only by a
    /// CAS that finds no reader counted, so it only waits longer; the
    /// release is the usual one.
    #[inline]
    pub fn try_acquire_shared_past_waiters(&self) -> bool {
        self.try_add_reader(WRITER | OVERFLOW)
    }

    /// Counts one more reader unless a bit of `blocked` is set or the
    /// count is full.
    #[inline]
    fn try_add_reader(&self, blocked: u32) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        while s & blocked == 0 && s & READERS != READERS {
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

    /// Takes the write lock: one CAS if free, else announce, wait for the
    /// readers inside to drain and for other writers, and take it.
    #[inline]
    pub fn acquire_exclusive(&self) {
        if self
            .state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.acquire_exclusive_slow();
        }
    }

    #[cold]
    fn acquire_exclusive_slow(&self) {
        let prev = self.state.fetch_add(WAITER, Ordering::Relaxed);
        if prev & WAITERS == WAITERS {
            // The count carried into the readers: undo and refuse.
            self.state.fetch_sub(WAITER, Ordering::Relaxed);
            panic!("rw-writer: too many waiting writers");
        }
        let mut backoff = Backoff::new();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & (WRITER | READERS) != 0 {
                spin_loop();
                continue;
            }
            // No writer, no reader: take the lock and our announcement back.
            if self
                .state
                .compare_exchange(s, s - WAITER + WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            backoff.wait();
        }
    }

    /// Takes the write lock if no reader and no writer is inside right now
    /// (waiting writers do not stop it: they have no order among
    /// themselves).
    #[inline]
    pub fn try_acquire_exclusive(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        while s & (WRITER | READERS) == 0 {
            match self
                .state
                .compare_exchange(s, s | WRITER, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(x) => s = x,
            }
        }
        false
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The caller must hold the write lock on `self` (taken by any thread).
    #[inline]
    pub unsafe fn release_exclusive(&self) {
        self.state.fetch_sub(WRITER, Ordering::Release);
    }

    /// Whether anyone holds the lock (a momentary snapshot; a reader about
    /// to back out of a failed fast path counts).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) & (WRITER | READERS) != 0
    }

    /// Whether a writer holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }

    /// The number of writers that announced themselves, for tests that
    /// watch writers arrive.
    #[cfg(all(test, not(loom)))]
    fn waiting_writers(&self) -> u32 {
        (self.state.load(Ordering::SeqCst) & WAITERS) >> 1
    }
}

impl Default for RawRwWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawRwWriter {
    const INFO: LockInfo = LockInfo {
        name: "rw-writer",
        family: Family::ReaderWriter,
        // Readers starve while writers keep coming.
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "writers' priority: Courtois, Heymans & Parnas, CACM 14(10) 1971 (problem 2); Mellor-Crummey & Scott, PPoPP 1991 (writer-preference variant); Bueso (seed 001) on reader-writer fairness",
        summary: "reader count + waiting-writer count + writer bit in one word; a waiting writer turns new readers away; readers can starve",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawRwWriter;

    // SAFETY: a writer enters only by a CAS from a value with no writer bit
    // and no reader counted, and a reader only by an RMW that counts it on
    // a value without the writer bit (a fast-path reader that saw a writer
    // holding or waiting takes its unit off again without entering, and no
    // writer can enter while that unit is counted). So a write guard
    // excludes every other guard. Entering is `Acquire`, leaving `Release`,
    // on one word changed only by RMWs.
    crate::guardless_raw_rwlock!(RawRwWriter);

    /// A reader-writer lock protected by a [`RawRwWriter`]: writers are
    /// preferred, so readers can starve while writers keep coming.
    ///
    /// Do not take a read lock recursively: if a writer starts waiting in
    /// between, the second read waits for the writer, which waits for the
    /// first read.
    pub type RwWriterLock<T> = lock_api::RwLock<RawRwWriter, T>;
}

#[cfg(not(loom))]
pub use raw::RwWriterLock;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{self, until, Watchdog, HANG};
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use std::time::Duration;

    /// A reader entitled to pass waiting writers gets in while a writer
    /// waits, not while one holds; the writer enters once both readers
    /// have left.
    #[test]
    fn a_reader_past_waiters_enters_unless_a_writer_holds() {
        let _w = Watchdog::new("a_reader_past_waiters_enters_unless_a_writer_holds", HANG);
        let l = RawRwWriter::new();
        l.acquire_shared();
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                l.acquire_exclusive();
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| l.waiting_writers() == 1);
            assert!(
                !l.try_acquire_shared(),
                "a plain reader got past a waiting writer"
            );
            let past = l.try_acquire_shared_past_waiters();
            if past {
                // SAFETY: taken just above.
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
    }

    #[test]
    fn six_threads_mixing_readers_and_writers_count_exactly() {
        testing::rw_mix::<RawRwWriter>(6, 20_000);
    }

    #[test]
    fn readers_share() {
        testing::rw_readers_share::<RawRwWriter>();
    }

    #[test]
    fn try_locks() {
        testing::rw_try_locks::<RawRwWriter>();
    }

    #[test]
    fn a_writer_excludes_a_reader_from_another_thread() {
        testing::rw_writer_excludes_another_threads_reader::<RawRwWriter>();
    }

    /// A reader holds; a writer announces itself. From then on a new reader
    /// is turned away (`try_acquire_shared` fails, deterministically), and
    /// one that asks with `acquire_shared` gets in only after the writer,
    /// although the lock was read-held when it asked.
    #[test]
    fn a_waiting_writer_turns_new_readers_away() {
        let _w = Watchdog::new("a_waiting_writer_turns_new_readers_away", HANG);
        let l = RawRwWriter::new();
        let order = AtomicU64::new(0);
        let (reader_at, writer_at) = (AtomicU64::new(0), AtomicU64::new(0));
        let tried_in = AtomicBool::new(false);
        l.acquire_shared();
        std::thread::scope(|s| {
            s.spawn(|| {
                l.acquire_exclusive();
                writer_at.store(order.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| l.waiting_writers() == 1);
            // Release before asserting, so that a failure ends the test
            // instead of leaving the writer waiting.
            if l.try_acquire_shared() {
                tried_in.store(true, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_shared() };
            }
            s.spawn(|| {
                l.acquire_shared();
                reader_at.store(order.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_shared() };
            });
            // Give a broken lock time to let the new reader in beside us.
            std::thread::sleep(Duration::from_millis(5));
            // SAFETY: taken above by this thread.
            unsafe { l.release_shared() };
        });
        assert!(
            !tried_in.into_inner(),
            "try_acquire_shared got past a waiting writer"
        );
        let (r, w) = (reader_at.into_inner(), writer_at.into_inner());
        assert!(r > 0 && w > 0, "both got in");
        assert!(w < r, "a new reader went before a waiting writer");
        assert!(!l.is_held());
    }

    /// Reader starvation, deterministically: a reader waits while writer
    /// after writer takes the lock, each announcing itself before the
    /// previous one leaves. At every step a writer holds or waits, so the
    /// reader cannot have got in; only when the chain stops does it.
    #[test]
    fn overlapping_writers_keep_a_reader_out() {
        let _w = Watchdog::new("overlapping_writers_keep_a_reader_out", HANG);
        let l = RawRwWriter::new();
        let reader_started = AtomicBool::new(false);
        let reader_done = AtomicBool::new(false);
        // Writer `i` holds the lock when `held` shows `i`, and leaves when
        // `go` reaches `i`.
        let held = AtomicU64::new(0);
        let go = AtomicU64::new(0);
        const WRITERS: u64 = 20;
        let mut got_in_at = None;
        l.acquire_exclusive();
        std::thread::scope(|s| {
            s.spawn(|| {
                reader_started.store(true, Ordering::SeqCst);
                l.acquire_shared();
                reader_done.store(true, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_shared() };
            });
            until(|| reader_started.load(Ordering::SeqCst));
            // Let the reader reach its wait loop.
            std::thread::sleep(Duration::from_millis(5));
            for i in 1..=WRITERS {
                let (held, go) = (&held, &go);
                let l = &l;
                s.spawn(move || {
                    l.acquire_exclusive();
                    held.store(i, Ordering::SeqCst);
                    until(|| go.load(Ordering::SeqCst) >= i);
                    // SAFETY: taken just above.
                    unsafe { l.release_exclusive() };
                });
                // Writer `i` is waiting behind writer `i - 1` (or us).
                until(|| l.waiting_writers() == 1);
                if i == 1 {
                    // SAFETY: taken above by this thread.
                    unsafe { l.release_exclusive() };
                } else {
                    go.store(i - 1, Ordering::SeqCst);
                }
                until(|| held.load(Ordering::SeqCst) == i);
                // Note rather than assert, so that a failure lets every
                // writer finish instead of hanging the test.
                if reader_done.load(Ordering::SeqCst) && got_in_at.is_none() {
                    got_in_at = Some(i);
                }
            }
            go.store(WRITERS, Ordering::SeqCst);
        });
        assert_eq!(
            got_in_at, None,
            "the reader got in between overlapping writers (at writer {got_in_at:?})"
        );
        assert!(reader_done.into_inner());
        assert!(!l.is_held());
    }
}
