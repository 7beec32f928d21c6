//! `rw-reader`: the reader-preferring spinning reader-writer lock.
//!
//! # Idea
//!
//! One 32-bit word holds a writer bit and a reader count. A reader adds one
//! to the count with a single `fetch_add` and is in unless a writer holds
//! the lock; a writer enters only by a compare-and-swap from "no reader, no
//! writer" (the word is 0). Readers are never kept out by a waiting writer,
//! only by a writer that holds the lock: this is the *readers' priority*
//! solution of Courtois, Heymans & Parnas, "Concurrent control with
//! 'readers' and 'writers'" (CACM 14(10), 1971), problem 1 ("no reader
//! shall be kept waiting unless a writer has already obtained permission to
//! use the resource"), and the "simple reader-preference lock" of
//! Mellor-Crummey & Scott, "Scalable reader-writer synchronization for
//! shared-memory multiprocessors" (PPoPP 1991). Linux's `rwlock_t` behaved
//! like this until qrwlock (see [`fair`](super::fair)).
//!
//! # Writers can starve
//!
//! A writer needs a moment at which no reader is inside. Readers that keep
//! overlapping (each one entering before the previous one leaves) never
//! leave such a moment, and a writer waiting then waits for ever. That is
//! the price of the preference, and the test
//! `overlapping_readers_keep_a_writer_out` shows it deterministically. Seed
//! 001 (Bueso) warns about exactly this when discussing reader-writer
//! fairness: which side to prefer depends on the workload, and a lock must
//! not let either side starve badly; use [`writer_pref`](super::writer_pref)
//! or [`fair`](super::fair) where writers must get through.
//!
//! A read lock may be taken recursively: only a *holding* writer blocks a
//! reader, and no writer can hold while this thread holds a read lock.
//!
//! # Waiting
//!
//! A reader that finds a writer inside keeps the unit it added and waits by
//! reading the word until the writer bit clears; its one read-modify-write
//! is already done, so the wait is made of loads only, served from the
//! reader's own cached copy of the line until the writer's release
//! invalidates it, and no RMW storm can build up (the old Linux x86
//! rwlock instead took its unit back, waited by reading and retried: two
//! more RMWs per attempt). Keeping the unit also means that every reader
//! that arrived during a write section is in as soon as the writer leaves,
//! before any other writer: no writer can enter while their units are
//! counted. A writer waits by reading until the word is 0 and then makes
//! one CAS attempt, as [`RawTtas`](crate::RawTtas) does, and backs off
//! (bounded, randomized; `util::backoff::Backoff`) after a failed one.
//!
//! Seed 003 (McKenney) measures the cost any such counter lock has: every
//! read acquisition and release is an RMW on the one shared line, so with
//! short read sections readers on different CPUs serialise on the line's
//! transfers and the lock scales no better than a spin lock; it pays off
//! only when read sections are long compared with a cache-line transfer.
//!
//! # State word
//!
//! ```text
//!  bit 0      WRITER     held by a writer
//!  bits 1..30 readers    read holders, plus readers waiting for the writer
//!  bit 31     OVERFLOW   set once 2^30 readers are counted: more panic
//! ```
//!
//! The word is only ever changed by read-modify-write operations, never by
//! a plain store (the writer's release must keep the units of readers that
//! arrived meanwhile).
//!
//! # Orderings
//!
//! - A reader's `fetch_add` is `Acquire`. If the value it replaced has no
//!   writer bit, that read synchronizes with the `Release` of the last
//!   writer's unlock (every later value of the word is in that unlock's
//!   release sequence, since only RMWs follow it), so the read section sees
//!   the last write section. If a writer held, the reader's wait loop reads
//!   with `Acquire` and synchronizes with that writer's `Release` unlock
//!   when it sees the bit clear.
//! - A reader's release is a `Release` `fetch_sub`: it publishes the end of
//!   its reads, so a later writer's `Acquire` CAS (which reads a value in
//!   the release sequence of every reader's `fetch_sub`) writes only after
//!   they are done.
//! - The writer's successful CAS is `Acquire` (the previous writer's writes
//!   and all readers' reads happen before its section); its unlock, a
//!   `fetch_sub` of the writer bit, is `Release`.
//! - The writer's spin reads, failed CASes and snapshots (`is_held`) carry
//!   no data: `Relaxed`; what they lead to is re-validated by an `Acquire`
//!   RMW. So is the reader's undo after an overflow.

use crate::info::{Described, Family, LockInfo};
use crate::util::backoff::Backoff;
use crate::util::sync::{spin_loop, AtomicU32, Ordering};

const WRITER: u32 = 1 << 0;
const READER: u32 = 1 << 1;
const OVERFLOW: u32 = 1 << 31;

/// Reader-preferring spinning reader-writer lock: readers enter whenever no
/// writer holds it, so writers can starve. See the module documentation.
#[derive(Debug)]
pub struct RawRwReader {
    state: AtomicU32,
}

impl RawRwReader {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { state: AtomicU32::new(0) }
        }
    }

    /// Takes a read lock, spinning while a writer holds the lock (not while
    /// one merely waits).
    #[inline]
    pub fn acquire_shared(&self) {
        let prev = self.state.fetch_add(READER, Ordering::Acquire);
        if prev & (WRITER | OVERFLOW) != 0 {
            self.acquire_shared_slow(prev);
        }
    }

    #[cold]
    fn acquire_shared_slow(&self, prev: u32) {
        if prev & OVERFLOW != 0 {
            // Our unit carries nothing: take it back and refuse.
            self.state.fetch_sub(READER, Ordering::Relaxed);
            panic!("rw-reader: too many readers");
        }
        // A writer holds. Our unit stays counted, so no other writer can
        // enter after it: wait by reading until it leaves.
        while self.state.load(Ordering::Acquire) & WRITER != 0 {
            spin_loop();
        }
    }

    /// Takes a read lock if no writer holds the lock right now.
    #[inline]
    pub fn try_acquire_shared(&self) -> bool {
        // Read first: a try that fails must not write (a unit added while a
        // writer holds would be a unit to take back).
        let mut s = self.state.load(Ordering::Relaxed);
        while s & (WRITER | OVERFLOW) == 0 {
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

    /// Takes the write lock, spinning until no reader and no writer is
    /// inside (for ever, if readers keep overlapping).
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
        let mut backoff = Backoff::new();
        loop {
            while self.state.load(Ordering::Relaxed) != 0 {
                spin_loop();
            }
            if self
                .state
                .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            backoff.wait();
        }
    }

    /// Takes the write lock if nobody is inside right now.
    #[inline]
    pub fn try_acquire_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) == 0
            && self
                .state
                .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The caller must hold the write lock on `self` (taken by any thread).
    #[inline]
    pub unsafe fn release_exclusive(&self) {
        // An RMW, not a store of 0: readers that arrived during the write
        // section have their units counted already.
        self.state.fetch_sub(WRITER, Ordering::Release);
    }

    /// Whether anyone holds the lock (a momentary snapshot; readers waiting
    /// for a writer count, as they are in as soon as it leaves).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) != 0
    }

    /// Whether a writer holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held_exclusive(&self) -> bool {
        self.state.load(Ordering::Relaxed) & WRITER != 0
    }

    /// The number of readers counted (holding or waiting for the writer),
    /// for tests that watch readers arrive.
    #[cfg(all(test, not(loom)))]
    fn readers(&self) -> u32 {
        (self.state.load(Ordering::SeqCst) & !OVERFLOW) >> 1
    }
}

impl Default for RawRwReader {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawRwReader {
    const INFO: LockInfo = LockInfo {
        name: "rw-reader",
        family: Family::ReaderWriter,
        // Writers starve while readers overlap.
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "readers' priority: Courtois, Heymans & Parnas, CACM 14(10) 1971 (problem 1); Mellor-Crummey & Scott, PPoPP 1991 (simple reader-preference lock); Bueso (seed 001) on reader-writer fairness",
        summary: "reader count + writer bit in one word; a reader fetch_adds and waits (reading) only while a writer holds; a writer CASes from 0; writers can starve",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawRwReader;

    // SAFETY: a writer enters only by a CAS from 0 (no reader counted, no
    // writer), and a reader counts itself before entering and enters only
    // once it has seen the writer bit clear with its unit counted; while
    // any unit is counted no writer's CAS from 0 can succeed, and while the
    // writer bit is set no counted reader enters. So a write guard excludes
    // every other guard. Entering is `Acquire`, leaving `Release`, on one
    // word changed only by RMWs.
    crate::guardless_raw_rwlock!(RawRwReader);

    /// A reader-writer lock protected by a [`RawRwReader`]: readers are
    /// preferred, so a writer can starve while readers overlap.
    pub type RwReaderLock<T> = lock_api::RwLock<RawRwReader, T>;
}

#[cfg(not(loom))]
pub use raw::RwReaderLock;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{self, until, Watchdog, HANG};
    use std::sync::atomic::{AtomicBool, AtomicU64};
    use std::time::Duration;

    #[test]
    fn six_threads_mixing_readers_and_writers_count_exactly() {
        testing::rw_mix::<RawRwReader>(6, 20_000);
    }

    #[test]
    fn readers_share() {
        testing::rw_readers_share::<RawRwReader>();
    }

    #[test]
    fn try_locks() {
        testing::rw_try_locks::<RawRwReader>();
    }

    #[test]
    fn a_writer_excludes_a_reader_from_another_thread() {
        testing::rw_writer_excludes_another_threads_reader::<RawRwReader>();
    }

    /// Writer starvation, deterministically: a writer waits while reader
    /// after reader enters, each before the previous one leaves. At every
    /// step a reader holds the lock, so the writer cannot have got in, and
    /// `try_acquire_shared` succeeds though a writer waits (with writer
    /// preference it would fail once the writer announced itself, which
    /// the sleep gives it time to do). Only when the chain stops does the
    /// writer get in.
    #[test]
    fn overlapping_readers_keep_a_writer_out() {
        let _w = Watchdog::new("overlapping_readers_keep_a_writer_out", HANG);
        let l = RawRwReader::new();
        let writer_started = AtomicBool::new(false);
        let writer_done = AtomicBool::new(false);
        let (mut kept_out_at, mut writer_in_at) = (None, None);
        l.acquire_shared();
        std::thread::scope(|s| {
            s.spawn(|| {
                writer_started.store(true, Ordering::SeqCst);
                l.acquire_exclusive();
                writer_done.store(true, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| writer_started.load(Ordering::SeqCst));
            // Let the writer reach its wait loop.
            std::thread::sleep(Duration::from_millis(5));
            for round in 0..100 {
                // The next reader, on another thread, enters while the
                // previous read lock is still held; its read lock outlives
                // the thread (read guards are not tied to a thread).
                let entered =
                    std::thread::scope(|s| s.spawn(|| l.try_acquire_shared()).join().unwrap());
                // SAFETY: the previous read lock, released on its taker's
                // behalf now that the next one holds (or, if none got in,
                // so that the writer can finish and the test fail).
                unsafe { l.release_shared() };
                if !entered {
                    kept_out_at = Some(round);
                    break;
                }
                if writer_done.load(Ordering::SeqCst) && writer_in_at.is_none() {
                    writer_in_at = Some(round);
                }
            }
            if kept_out_at.is_none() {
                // SAFETY: the last read lock of the chain.
                unsafe { l.release_shared() };
            }
        });
        assert_eq!(kept_out_at, None, "a new reader was kept out (round)");
        assert_eq!(
            writer_in_at, None,
            "the writer got in past a held read lock (round)"
        );
        assert!(writer_done.into_inner());
        assert!(!l.is_held());
    }

    /// A reader that arrives while a writer holds keeps its place: when the
    /// writer leaves it is in before a writer that was already waiting.
    #[test]
    fn a_reader_that_waited_for_a_writer_goes_before_the_next_writer() {
        let _w = Watchdog::new("a_reader_that_waited_goes_first", HANG);
        let l = RawRwReader::new();
        let order = AtomicU64::new(0);
        let (reader_at, writer_at) = (AtomicU64::new(0), AtomicU64::new(0));
        let writer_started = AtomicBool::new(false);
        l.acquire_exclusive();
        std::thread::scope(|s| {
            s.spawn(|| {
                writer_started.store(true, Ordering::SeqCst);
                l.acquire_exclusive();
                writer_at.store(order.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_exclusive() };
            });
            until(|| writer_started.load(Ordering::SeqCst));
            s.spawn(|| {
                l.acquire_shared();
                reader_at.store(order.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
                // SAFETY: taken just above.
                unsafe { l.release_shared() };
            });
            // The reader is counted (waiting for us) before we leave.
            until(|| l.readers() == 1);
            // SAFETY: taken above by this thread.
            unsafe { l.release_exclusive() };
        });
        let (r, w) = (reader_at.into_inner(), writer_at.into_inner());
        assert!(r > 0 && w > 0, "both got in");
        assert!(r < w, "the waiting writer went before the counted reader");
        assert!(!l.is_held());
    }
}
