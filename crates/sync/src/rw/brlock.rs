//! `brlock`: the big-reader lock.
//!
//! # Idea
//!
//! A reader-writer lock for data that is read very often and written
//! rarely. Each reader touches only its own cache line: it counts itself in
//! its *slot* (one padded counter among `SLOTS`), so readers on different
//! slots never write a shared line and read locking scales with the number
//! of cores. A writer pays for it: it raises the writer flag and then visits
//! every slot, waiting for each to drain, O(`SLOTS`) cache-line transfers per
//! write lock.
//!
//! Sources: Linux 2.4's `brlock` (`include/linux/brlock.h`, `lib/brlock.c`)
//! kept one reader counter per CPU per lock; its reader incremented its own
//! CPU's counter, issued a full barrier and, if the writer's spinlock was
//! held, backed out and waited; a writer held that spinlock and went on
//! only once every CPU's counter was zero. McKenney's RCU paper (seed 003)
//! measures that brlock: the only one of its read-side primitives that
//! scaled linearly, but slow on a single CPU, and replaced by RCU in 2.5.
//! Its successor `lglock` (`include/linux/lglock.h` from 2.6.36, later
//! `kernel/locking/lglock.c`, removed in the 4.x series) kept a per-CPU
//! spinlock instead, the writer taking all of them. Peters et al. (seed 000)
//! replace seL4's big kernel lock with a big reader lock (after Corbet),
//! which lets every core take the read side touching only local state; the
//! IPC path, which writes thread control blocks and endpoints, runs under
//! the read side with fine-grained ticket locks on those objects, and the
//! less frequent system calls take the writer side. Hsieh &
//! Weihl, "Scalable reader-writer locks for parallel systems" (IPPS 1992),
//! give the per-processor-reader-lock design and its writer cost. Seed 001
//! (Bueso) names the trade-off all of these make: read-mostly primitives keep
//! the readers' side as cheap as possible and make the writers pay.
//!
//! # Protocol
//!
//! Reader: add one to its slot, full fence (`SeqCst`), read the writer flag.
//! If the flag is clear it holds the lock. If it is set, it takes its unit
//! off again, waits (reading only) until the flag is clear, and retries.
//!
//! Writer: set the writer flag with a compare-exchange (that also serializes
//! writers), full fence, then read every slot until it reads zero. It then
//! holds the lock. Unlock clears the flag.
//!
//! A read guard ([`BrReadToken`]) carries the slot it counted itself in, so
//! it is released on that slot even if the guard moved to another thread.
//!
//! Writers are preferred: once the flag is set, new readers back out and
//! wait, and the readers inside drain. So a thread that holds a read lock
//! and asks for another one deadlocks if a writer starts waiting in between
//! (the writer waits for the first read lock, the second read waits for the
//! writer): never take a read lock recursively. Readers are not protected
//! from a stream of writers (the flag may be set again before a waiting
//! reader sees it clear), so the lock is not fair.
//!
//! # Slots: a fixed number of padded counters, not one per thread
//!
//! The classic lock has one slot per CPU, and the issue asks for one per
//! thread. User threads have no stable CPU (they migrate between the
//! increment and the decrement; Linux disabled preemption instead), and
//! locklab's compact thread indexes (`util::thread_index`) go up to
//! `MAX_THREADS` = 16383: a full table of
//! padded slots would be 2 MiB per lock, and a writer would have to visit
//! all of them. Lazily allocated chunks of slots would bound memory by the
//! threads actually seen, but put an allocation (and its synchronization) on
//! the reader's first acquisition, and the writer would still scan every
//! chunk ever allocated.
//!
//! So a lock has `SLOTS` slots fixed at compile time (default
//! [`DEFAULT_SLOTS`] = 64) and a reader uses slot `thread index % SLOTS`.
//! A slot is a *counter*, not a flag, so two threads that share a slot (more
//! live threads than slots, or a guard released on another thread) stay
//! correct: the count is zero only when no reader on that slot is inside.
//! Sharing only costs speed (those readers bounce one line between them).
//! Compact indexes make sharing rare: while at most `SLOTS` threads that
//! hold an index are alive, each has a slot of its own. The cost:
//! `(SLOTS + 1) * size_of::<CachePadded<_>>()` of memory (65 × 128 B, about
//! 8 KiB, with 64 slots and x86-64's 128-byte padding, which covers the
//! adjacent-line prefetcher), and a writer reads `SLOTS` lines
//! even when few readers exist. Big-reader locks are for a few global,
//! read-mostly structures, where that is the right price; pick
//! `RawBrLock::<N>` for another size.
//!
//! # Orderings
//!
//! - The heart is a store-load (Dekker) handshake: the reader writes its
//!   slot and then reads the flag; the writer writes the flag and then reads
//!   the slots. Each side puts a `fence(SeqCst)` between its write and its
//!   read. The fences are totally ordered; if the reader's comes first, the
//!   writer's slot read sees the reader's increment (or later) and waits for
//!   it; if the writer's comes first, the reader's flag read sees the flag
//!   set (or a later value) and backs out. So a reader and a writer can never
//!   both go in. Anything weaker than `SeqCst` (`AcqRel` fences, or
//!   `Acquire`/`Release` accesses) allows both reads to return the old value
//!   (store buffering), and both would enter. The loom model of this lock
//!   fails if the fence is weakened or the flag is read before the slot is
//!   written. `SeqCst` *accesses* without fences would do too, but loom treats
//!   them as `AcqRel` and would report false races; the fences keep the
//!   proof checkable. (On x86 the reader's locked increment is already a full
//!   barrier, but Rust has no way to say so portably.)
//! - The reader's flag read is `Acquire`: if it reads `false`, that value
//!   was stored by the last writer's `Release` unlock (or is the initial
//!   value), so the read section sees that write section.
//! - The reader's release is a `Release` `fetch_sub`, and the writer's slot
//!   reads are `Acquire`. Every change to a slot is a read-modify-write, so
//!   the zero the writer reads is in the release sequence of every earlier
//!   reader's decrement on that slot: the writer sees all their reads done.
//!   A slot cannot read zero while a reader on it is inside, because a
//!   thread's decrement follows its own increment in the slot's modification
//!   order, and every other thread's decrement follows its own increment.
//! - The reader's increment and back-out decrement carry no data: `Relaxed`
//!   (the fence gives the increment its ordering).
//! - The writer's flag compare-exchange is `Acquire`, pairing with the
//!   previous writer's `Release` unlock (the `SeqCst` fence right after it
//!   is an acquire fence too, so this is belt and braces: loom finds no
//!   fault with a `Relaxed` exchange). A writer that gives up in
//!   [`try_acquire_exclusive`](RawBrLock::try_acquire_exclusive) clears the
//!   flag with a `Release` store. A reader may read that `false`, and must
//!   then see the previous write section, whose release sequence a plain
//!   store does not continue; the quitter acquired from the previous writer,
//!   so a reader that synchronizes with the quitter sees that section
//!   through it. Here too the quitter's `SeqCst` fence, before the store, is
//!   a release fence already; the `Release` keeps the store right on its
//!   own.
//! - Spin-reads only decide when to retry: `Relaxed`.

use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{fence, spin_loop, AtomicBool, AtomicUsize, Ordering};
use crate::util::{thread_index, CachePadded};

/// The number of reader slots of a [`RawBrLock`] unless chosen otherwise.
pub const DEFAULT_SLOTS: usize = 64;

/// Big-reader lock with `SLOTS` padded reader counters. See the module
/// documentation.
///
/// Never take a read lock on a `RawBrLock` whose read lock this thread
/// already holds: a writer that starts waiting in between deadlocks both.
#[derive(Debug)]
pub struct RawBrLock<const SLOTS: usize = DEFAULT_SLOTS> {
    /// Set by a writer that holds the lock or is draining the slots.
    writer: CachePadded<AtomicBool>,
    /// Reader counts; a reader uses slot `thread index % SLOTS`.
    slots: [CachePadded<AtomicUsize>; SLOTS],
}

/// A read lock's guard: the slot the reader counted itself in. Releasing
/// takes the unit off that slot, whichever thread releases.
#[derive(Debug, PartialEq, Eq)]
pub struct BrReadToken {
    slot: usize,
}

impl BrReadToken {
    /// The slot this reader is counted in.
    pub const fn slot(&self) -> usize {
        self.slot
    }
}

impl RawBrLock {
    /// An unlocked lock with [`DEFAULT_SLOTS`] reader slots.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::with_slots()
    }

    /// An unlocked lock with [`DEFAULT_SLOTS`] reader slots.
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::with_slots()
    }
}

impl<const SLOTS: usize> RawBrLock<SLOTS> {
    /// An unlocked lock with `SLOTS` reader slots: `RawBrLock::<8>::with_slots()`.
    #[cfg(not(loom))]
    pub const fn with_slots() -> Self {
        const { assert!(SLOTS > 0, "a big-reader lock needs at least one slot") };
        Self {
            writer: CachePadded::new(AtomicBool::new(false)),
            slots: [const { CachePadded::new(AtomicUsize::new(0)) }; SLOTS],
        }
    }

    /// An unlocked lock with `SLOTS` reader slots: `RawBrLock::<8>::with_slots()`.
    #[cfg(loom)]
    pub fn with_slots() -> Self {
        const { assert!(SLOTS > 0, "a big-reader lock needs at least one slot") };
        Self {
            writer: CachePadded::new(AtomicBool::new(false)),
            slots: core::array::from_fn(|_| CachePadded::new(AtomicUsize::new(0))),
        }
    }

    /// How many reader slots the lock has.
    pub const fn slots(&self) -> usize {
        SLOTS
    }

    /// The calling thread's slot.
    #[inline]
    fn my_slot() -> usize {
        thread_index::current() as usize % SLOTS
    }

    /// Counts a reader in `slot` and checks for a writer; on seeing one,
    /// takes the unit off again and returns false.
    #[inline]
    fn try_enter(&self, slot: usize) -> bool {
        let s = &self.slots[slot];
        s.fetch_add(1, Ordering::Relaxed);
        // The reader's half of the store-load handshake: the increment is
        // ordered before the flag read for every writer (module docs).
        fence(Ordering::SeqCst);
        if !self.writer.load(Ordering::Acquire) {
            return true;
        }
        // A writer is in or draining: back out, so it can drain.
        s.fetch_sub(1, Ordering::Relaxed);
        false
    }

    /// Takes a read lock, waiting while a writer holds or waits for it.
    #[inline]
    pub fn acquire_shared(&self) -> BrReadToken {
        let slot = Self::my_slot();
        if !self.try_enter(slot) {
            self.acquire_shared_contended(slot);
        }
        BrReadToken { slot }
    }

    #[cold]
    fn acquire_shared_contended(&self, slot: usize) {
        loop {
            while self.writer.load(Ordering::Relaxed) {
                spin_loop();
            }
            if self.try_enter(slot) {
                return;
            }
        }
    }

    /// Takes a read lock if no writer holds or waits for it right now.
    #[inline]
    pub fn try_acquire_shared(&self) -> Option<BrReadToken> {
        let slot = Self::my_slot();
        self.try_enter(slot).then_some(BrReadToken { slot })
    }

    /// Releases a read lock.
    ///
    /// # Safety
    /// `token` must come from a read acquisition of this lock that has not
    /// been released yet.
    #[inline]
    pub unsafe fn release_shared(&self, token: BrReadToken) {
        self.slots[token.slot].fetch_sub(1, Ordering::Release);
    }

    /// Raises the writer flag (the only writer to do so until it clears it).
    #[inline]
    fn try_flag(&self) -> bool {
        self.writer
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the write lock: waits for other writers, then for every slot
    /// to drain.
    #[inline]
    pub fn acquire_exclusive(&self) {
        while !self.try_flag() {
            while self.writer.load(Ordering::Relaxed) {
                spin_loop();
            }
        }
        // The writer's half of the handshake: the flag is ordered before the
        // slot reads for every reader (module docs).
        fence(Ordering::SeqCst);
        for s in &self.slots {
            while s.load(Ordering::Acquire) != 0 {
                spin_loop();
            }
        }
    }

    /// Takes the write lock if no writer holds it and no reader is inside
    /// right now (a reader that is just backing out also counts).
    #[inline]
    pub fn try_acquire_exclusive(&self) -> bool {
        if !self.try_flag() {
            return false;
        }
        fence(Ordering::SeqCst);
        if self.slots.iter().all(|s| s.load(Ordering::Acquire) == 0) {
            return true;
        }
        // `Release`: a reader may read this `false` (module docs).
        self.writer.store(false, Ordering::Release);
        false
    }

    /// Releases the write lock.
    ///
    /// # Safety
    /// The caller must hold the write lock.
    #[inline]
    pub unsafe fn release_exclusive(&self) {
        self.writer.store(false, Ordering::Release);
    }

    /// Whether a writer holds the lock or is waiting for readers to drain
    /// (a momentary snapshot).
    #[inline]
    pub fn is_held_exclusive(&self) -> bool {
        self.writer.load(Ordering::Relaxed)
    }

    /// Whether the lock is held or being taken in any mode (a momentary
    /// snapshot; a reader backing out from a writer counts for a moment).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.is_held_exclusive() || self.slots.iter().any(|s| s.load(Ordering::Relaxed) != 0)
    }
}

impl Default for RawBrLock {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SLOTS: usize> Described for RawBrLock<SLOTS> {
    const INFO: LockInfo = LockInfo {
        name: "brlock",
        family: Family::ReaderWriter,
        // Writers are preferred, and a stream of writers can starve readers.
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "Linux 2.4 brlock (include/linux/brlock.h) and lglock (kernel/locking/lglock.c); Hsieh & Weihl, IPPS 1992; McKenney, Using RCU in the Linux 2.5 Kernel (seed 003); Peters et al. (seed 000)",
        summary: "a reader counts itself in its own padded slot, fences and checks the writer flag; a writer raises the flag and waits for every slot to drain",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{BrReadToken, RawBrLock};
    use lock_api::GuardSend;

    // SAFETY: a reader holds the lock only after its slot increment, a
    // `SeqCst` fence, and a read of the writer flag that found it clear; a
    // writer holds it only after setting the flag (by a compare-exchange
    // from false, so one writer at a time), a `SeqCst` fence, and reading
    // every slot as zero. By the fences' total order, one of the two sees the
    // other and does not enter, so a write guard excludes every read guard
    // and every other write guard. Read guards carry their slot and release
    // there; the counts make shared slots safe. Entering is `Acquire`
    // (flag read, slot reads, flag CAS), leaving `Release` (slot `fetch_sub`,
    // flag store).
    unsafe impl<const SLOTS: usize> lock_api::RawRwLock for RawBrLock<SLOTS> {
        const INIT: Self = Self::with_slots();
        type SharedGuard = BrReadToken;
        type ExclusiveGuard = GuardSend;

        #[inline]
        fn lock_shared(&self) -> BrReadToken {
            self.acquire_shared()
        }

        #[inline]
        fn try_lock_shared(&self) -> Option<BrReadToken> {
            self.try_acquire_shared()
        }

        #[inline]
        unsafe fn unlock_shared(&self, guard: BrReadToken) {
            // SAFETY: the caller passes the guard of a held read lock.
            unsafe { self.release_shared(guard) }
        }

        #[inline]
        fn lock_exclusive(&self) -> GuardSend {
            self.acquire_exclusive();
            GuardSend::new()
        }

        #[inline]
        fn try_lock_exclusive(&self) -> Option<GuardSend> {
            self.try_acquire_exclusive().then(GuardSend::new)
        }

        #[inline]
        unsafe fn unlock_exclusive(&self, _: GuardSend) {
            // SAFETY: the caller holds the write lock.
            unsafe { self.release_exclusive() }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }

        #[inline]
        fn is_locked_exclusive(&self) -> bool {
            self.is_held_exclusive()
        }
    }

    /// A reader-writer lock protected by a big-reader lock with
    /// [`DEFAULT_SLOTS`](super::DEFAULT_SLOTS) reader slots.
    ///
    /// Do not take a read lock recursively: if a writer starts waiting in
    /// between, the second read waits for the writer, which waits for the
    /// first read.
    pub type BrLock<T> = lock_api::RwLock<RawBrLock, T>;
}

#[cfg(not(loom))]
pub use raw::BrLock;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{self, Watchdog, HANG};
    use std::sync::atomic::AtomicU64;
    use std::sync::Barrier;

    /// Waits (yielding) until `cond` holds; the caller's watchdog ends a
    /// wait that never does.
    fn until(cond: impl Fn() -> bool) {
        while !cond() {
            std::thread::yield_now();
        }
    }

    #[test]
    fn readers_on_different_threads_hold_at_once() {
        let _w = Watchdog::new("readers_on_different_threads_hold_at_once", HANG);
        let l = BrLock::new(7u64);
        // Each reader waits inside its read section for the others: this
        // ends only if all are inside at once.
        let all_inside = Barrier::new(3);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    let g = l.read();
                    all_inside.wait();
                    assert_eq!(*g, 7);
                });
            }
        });
        assert!(!l.is_locked());
    }

    #[test]
    fn try_locks() {
        let l = BrLock::new(0u32);
        assert!(!l.is_locked());
        {
            let mut w = l.try_write().expect("free lock");
            *w += 1;
            assert!(l.is_locked() && l.is_locked_exclusive());
            assert!(l.try_read().is_none(), "try_read while write-held");
            assert!(l.try_write().is_none(), "try_write while write-held");
        }
        assert!(!l.is_locked());
        {
            let r1 = l.try_read().expect("free lock");
            let r2 = l.try_read().expect("read-held lock admits readers");
            assert_eq!(*r1 + *r2, 2);
            assert!(l.is_locked() && !l.is_locked_exclusive());
            assert!(l.try_write().is_none(), "try_write while read-held");
            // A failed try_write leaves the flag clear for readers.
            assert!(!l.is_locked_exclusive());
            assert!(l.try_read().is_some());
        }
        assert!(!l.is_locked());
        let _w = l.try_write().expect("free again");
    }

    /// A reader on another thread (so, with a fresh thread index, most
    /// likely another slot) also keeps a writer out.
    #[test]
    fn a_reader_on_another_thread_keeps_try_write_out() {
        let _w = Watchdog::new("a_reader_on_another_thread_keeps_try_write_out", HANG);
        let l = BrLock::new(0u32);
        let (held, done) = (Barrier::new(2), Barrier::new(2));
        std::thread::scope(|s| {
            s.spawn(|| {
                let _g = l.read();
                held.wait();
                done.wait();
            });
            held.wait();
            assert!(l.try_write().is_none(), "try_write past a reader");
            done.wait();
        });
        assert!(l.try_write().is_some());
    }

    #[test]
    fn a_waiting_writer_turns_new_readers_away_and_gets_in() {
        let _w = Watchdog::new("a_waiting_writer_turns_new_readers_away", HANG);
        let l = BrLock::new(0u32);
        let r = l.read();
        std::thread::scope(|s| {
            s.spawn(|| *l.write() += 1);
            until(|| l.is_locked_exclusive());
            assert!(l.try_read().is_none(), "try_read got past a waiting writer");
            assert_eq!(*r, 0, "the writer went in past a held read lock");
            drop(r);
        });
        assert_eq!(*l.read(), 1);
    }

    /// The guard carries its slot: released on another thread, it still
    /// takes the unit off the slot it was counted in. (Were it released on
    /// the releasing thread's slot, the reader's slot would stay at 1 and the
    /// other would wrap, and no writer could ever get in again.) The lock has
    /// one slot per possible thread index, so that two live threads surely
    /// use different slots; at 2 MiB it is a static, not on a stack. Under
    /// Miri it has 1024 ([`testing::table`]: Tree Borrows scans a long table
    /// in quadratic time), still more than Miri's few live threads; the
    /// test asserts that the two threads' slots differed.
    #[test]
    fn a_read_guard_released_on_another_thread() {
        const SLOTS: usize = testing::table(thread_index::MAX_THREADS);
        static L: lock_api::RwLock<RawBrLock<SLOTS>, u32> = lock_api::RwLock::new(5);
        let _w = Watchdog::new("a_read_guard_released_on_another_thread", HANG);
        let g = L.read();
        let mine = thread_index::current() as usize;
        let (tx, rx) = std::sync::mpsc::channel::<lock_api::RwLockReadGuard<'_, _, _>>();
        let other = std::thread::scope(|s| {
            let h = s.spawn(move || {
                let g = rx.recv().unwrap();
                assert_eq!(*g, 5);
                drop(g);
                thread_index::current() as usize
            });
            tx.send(g).unwrap();
            h.join().unwrap()
        });
        assert_ne!(mine, other, "two live threads had one index");
        assert_ne!(mine % SLOTS, other % SLOTS, "two live threads had one slot");
        assert!(!L.is_locked(), "a slot was left counted");
        *L.try_write().expect("free after the moved guard's release") += 1;
        assert_eq!(*L.read(), 6);
    }

    /// The token names the slot of the thread that took the read lock.
    #[test]
    fn the_token_carries_the_readers_slot() {
        let l = RawBrLock::<4>::with_slots();
        let t = l.acquire_shared();
        assert_eq!(t.slot(), thread_index::current() as usize % 4);
        assert!(l.is_held() && !l.is_held_exclusive());
        // SAFETY: taken just above.
        unsafe { l.release_shared(t) };
        assert!(!l.is_held());
    }

    /// Data whose invariant `a == b` a reader sees broken if it overlaps a
    /// writer, and whose count a writer loses if it overlaps another.
    #[derive(Default)]
    struct Shadow {
        a: u64,
        b: u64,
    }

    fn write_section(s: &mut Shadow) {
        assert_eq!(s.a, s.b, "two writers overlapped");
        s.a += 1;
        for _ in 0..16 {
            std::hint::spin_loop();
        }
        s.b = s.a;
    }

    fn read_section(s: &Shadow) -> u64 {
        let a = s.a;
        for _ in 0..16 {
            std::hint::spin_loop();
        }
        assert_eq!(a, s.b, "a reader overlapped a writer");
        a
    }

    /// `threads` threads on a lock with `SLOTS` slots mix reads and writes
    /// (one in `write_every` is a write); the writes must all count, and
    /// every reader sees the invariant hold and the count never go back.
    /// Sizes are native ones, scaled down under Miri (where the threads
    /// still outnumber the slots if they do natively).
    fn torture<const SLOTS: usize>(threads: u64, iters: u64, write_every: u64) {
        let native = threads as usize;
        let mut threads = testing::threads(native);
        if native > SLOTS {
            threads = threads.max(SLOTS + 1);
        }
        let threads = threads as u64;
        // A multiple of `write_every`, so that the writes' count is exact.
        let iters = testing::iters(iters).next_multiple_of(write_every);
        let _w = Watchdog::new("brlock torture", HANG);
        let l: lock_api::RwLock<RawBrLock<SLOTS>, Shadow> =
            lock_api::RwLock::from_raw(RawBrLock::with_slots(), Shadow::default());
        let writes = AtomicU64::new(0);
        let reads = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..threads {
                let (l, writes, reads) = (&l, &writes, &reads);
                s.spawn(move || {
                    let mut last = 0;
                    for i in 0..iters {
                        if (i + t) % write_every == 0 {
                            write_section(&mut l.write());
                            writes.fetch_add(1, Ordering::Relaxed);
                        } else {
                            let seen = read_section(&l.read());
                            assert!(seen >= last, "a reader saw the count go back");
                            last = seen;
                            reads.fetch_add(1, Ordering::Relaxed);
                        }
                        if i % 64 == 0 {
                            // Let preempted writers and readers run on a
                            // machine with fewer cores than threads.
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        assert!(!l.is_locked());
        let s = l.into_inner();
        let (writes, reads) = (writes.into_inner(), reads.into_inner());
        assert_eq!(s.a, writes, "lost update");
        assert_eq!(writes, threads * iters / write_every);
        assert_eq!(writes + reads, threads * iters);
    }

    #[test]
    fn eight_threads_mixing_readers_and_writers_count_exactly() {
        torture::<DEFAULT_SLOTS>(8, 20_000, 8);
    }

    /// Fewer slots than threads: threads share slots (all of them, with one
    /// slot), and the counters must keep them correct.
    #[test]
    fn shared_slots_count_exactly() {
        torture::<1>(4, 20_000, 8);
        torture::<3>(8, 10_000, 4);
    }
}
