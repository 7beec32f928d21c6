//! `brlock` under loom: writers exclude writers and readers (non-atomic data
//! that loom checks for unordered accesses), readers run beside readers, on
//! separate slots and on a shared one, and a writer that gives up in
//! `try_acquire_exclusive` still leaves the readers ordered after the last
//! writer. The locks have two slots (one for the shared-slot model), so a
//! writer's drain is short; thread indexes under loom are handed out in
//! order of first use, so which readers share a slot varies by schedule.
//!
//! The three-thread models with two readers run with one preemption (see
//! `builder_three_threads`); the others with `LOOM_MAX_PREEMPTIONS`.
//!
//! Teeth, checked by breaking `brlock.rs` on purpose once each (and then
//! restoring it); each failed as "Causality violation" on the data in
//! `brlock_writer_vs_reader`, `brlock_two_readers_one_writer`,
//! `brlock_two_readers_one_writer_one_slot`, `brlock_try_read_vs_writer` and
//! `brlock_try_writer_gives_up`:
//! - the reader reading the writer flag *before* incrementing its slot (the
//!   reader sees no writer, the writer sees an empty slot, both go in);
//! - both `fence(SeqCst)`s weakened to `fence(AcqRel)` (a `Relaxed` fence
//!   does not exist in Rust: it panics): store buffering, each side's read
//!   misses the other's write;
//! - the reader's flag read made `Relaxed` (the read section is not ordered
//!   after the last write section);
//! - the reader's release `fetch_sub` made `Relaxed` (the writer's write is
//!   not ordered after the reader's read).
//!
//! Two weakenings pass, and rightly: the writer's flag compare-exchange
//! made `Relaxed`, and the giving-up writer's flag store made `Relaxed`. In
//! both cases the `SeqCst` fence next to them (after the exchange, before
//! the store) supplies the acquire or release ordering; see the module
//! documentation of `brlock.rs`.

use crate::harness;
use locklab::RawBrLock;
use loom::cell::UnsafeCell;
use loom::sync::Arc;

struct Shared<const SLOTS: usize> {
    lock: RawBrLock<SLOTS>,
    data: UnsafeCell<usize>,
}

impl<const SLOTS: usize> Shared<SLOTS> {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            lock: RawBrLock::with_slots(),
            data: UnsafeCell::new(0),
        })
    }

    /// A write section: read and write in separate accesses, so a broken
    /// lock lets loom see another thread's access between them.
    fn write(&self) {
        self.lock.acquire_exclusive();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let v = self.data.with(|p| unsafe { *p });
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.data.with_mut(|p| unsafe { *p = v + 1 });
        // SAFETY: taken above.
        unsafe { self.lock.release_exclusive() };
    }

    /// A read section; returns what it read.
    fn read(&self) -> usize {
        let t = self.lock.acquire_shared();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let v = self.data.with(|p| unsafe { *p });
        // SAFETY: taken above, released with its token.
        unsafe { self.lock.release_shared(t) };
        v
    }

    fn total(&self) -> usize {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.data.with(|p| unsafe { *p })
    }

    /// The lock is free: a writer gets it without waiting.
    fn assert_free(&self) {
        assert!(!self.lock.is_held(), "left held");
        assert!(self.lock.try_acquire_exclusive(), "left locked");
        // SAFETY: taken just above.
        unsafe { self.lock.release_exclusive() };
    }
}

#[test]
fn brlock_writer_vs_writer() {
    harness::builder().check(|| {
        let s = Shared::<2>::new();
        let s2 = s.clone();
        let h = loom::thread::spawn(move || {
            s2.write();
            s2.write();
        });
        s.write();
        s.write();
        h.join().unwrap();
        assert_eq!(s.total(), 4, "lost update");
        s.assert_free();
    });
}

#[test]
fn brlock_writer_vs_reader() {
    harness::builder().check(|| {
        let s = Shared::<2>::new();
        let s2 = s.clone();
        let h = loom::thread::spawn(move || {
            s2.write();
            s2.write();
        });
        let first = s.read();
        let second = s.read();
        h.join().unwrap();
        assert!(first <= second && second <= 2);
        assert_eq!(s.total(), 2);
        s.assert_free();
    });
}

/// A model builder with one preemption, for the three-thread models: with
/// two threads spinning at once (a reader backing off from the writer flag
/// while the writer drains), bound 2 does not end, as `extra.rs` explains
/// for the spin locks; bound 1 ends in well under a second.
fn builder_three_threads() -> loom::model::Builder {
    let mut b = harness::builder();
    b.preemption_bound = Some(1);
    b
}

fn two_readers_one_writer<const SLOTS: usize>() {
    builder_three_threads().check(|| {
        let s = Shared::<SLOTS>::new();
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || s.read())
            })
            .collect();
        s.write();
        for h in readers {
            assert!(h.join().unwrap() <= 1);
        }
        assert_eq!(s.total(), 1);
        s.assert_free();
    });
}

#[test]
fn brlock_two_readers_one_writer() {
    two_readers_one_writer::<2>();
}

/// All three threads on one slot: the counter must keep two readers (and a
/// reader backing out from the writer) apart.
#[test]
fn brlock_two_readers_one_writer_one_slot() {
    two_readers_one_writer::<1>();
}

/// Two readers hold the lock at once (each waits inside for the other to
/// be inside too), and a writer gets in after both.
#[test]
fn brlock_readers_share() {
    harness::builder().check(|| {
        let s = Shared::<2>::new();
        let inside = Arc::new(loom::sync::atomic::AtomicUsize::new(0));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (s, inside) = (s.clone(), inside.clone());
                loom::thread::spawn(move || {
                    let t = s.lock.acquire_shared();
                    inside.fetch_add(1, loom::sync::atomic::Ordering::Relaxed);
                    while inside.load(loom::sync::atomic::Ordering::Relaxed) < 2 {
                        loom::thread::yield_now();
                    }
                    // SAFETY: taken above.
                    unsafe { s.lock.release_shared(t) };
                })
            })
            .collect();
        for h in readers {
            h.join().unwrap();
        }
        s.write();
        assert_eq!(s.total(), 1);
        s.assert_free();
    });
}

/// A writer writes; a second writer tries and (in some schedules) gives up
/// because a reader's unit is counted; the reader then reads the flag value
/// the quitter stored, and must still see the first writer's write.
#[test]
fn brlock_try_writer_gives_up() {
    harness::builder().check(|| {
        let s = Shared::<2>::new();
        let (w, t) = (s.clone(), s.clone());
        let writer = loom::thread::spawn(move || w.write());
        let trier = loom::thread::spawn(move || {
            if t.lock.try_acquire_exclusive() {
                // SAFETY: loom checks this access; the lock under test is
                // held, or the others joined.
                let v = t.data.with(|p| unsafe { *p });
                // SAFETY: loom checks this access; the lock under test is
                // held, or the others joined.
                t.data.with_mut(|p| unsafe { *p = v + 1 });
                // SAFETY: taken just above.
                unsafe { t.lock.release_exclusive() };
                1
            } else {
                0
            }
        });
        let seen = s.read();
        writer.join().unwrap();
        let tried = trier.join().unwrap();
        assert!(seen <= 1 + tried);
        assert_eq!(s.total(), 1 + tried);
        s.assert_free();
    });
}

/// Non-blocking readers against a writer: a read either gets in (and then
/// sees 0 or 1 consistently) or is turned away, and the lock ends free.
#[test]
fn brlock_try_read_vs_writer() {
    harness::builder().check(|| {
        let s = Shared::<2>::new();
        let w = s.clone();
        let writer = loom::thread::spawn(move || w.write());
        let mut got = 0;
        for _ in 0..2 {
            if let Some(t) = s.lock.try_acquire_shared() {
                // SAFETY: loom checks this access; the lock under test is
                // held, or the others joined.
                got = s.data.with(|p| unsafe { *p });
                // SAFETY: taken just above.
                unsafe { s.lock.release_shared(t) };
            }
        }
        writer.join().unwrap();
        assert!(got <= 1);
        assert_eq!(s.total(), 1);
        s.assert_free();
    });
}
