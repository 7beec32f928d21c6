//! `rwsem` under loom: writers exclude writers and readers (non-atomic data
//! that loom checks for unordered accesses), readers run beside readers,
//! and no sleeper is left asleep once the lock is free (a lost wake-up shows
//! as loom's "deadlock": every thread blocked in the modelled futex).
//!
//! Under loom a writer spins one round, sleeps untimed, and a waiter counts
//! as starved after one futex wait that did not get it the lock, so the
//! handoff paths are explored too.
//!
//! Teeth, checked by breaking `rwsem.rs` on purpose once each: a `Relaxed`
//! writer release (CAS and `fetch_and`) and a `Relaxed` reader `fetch_sub`
//! give "Causality violation" on the data; dropping the reader wake in the
//! writer's unlock, or the last reader's writer wake, gives "deadlock";
//! dropping the woken writer's re-assertion of `W_WAIT`, or waking only one
//! writer while a writer's handoff is pending, gives "deadlock" in
//! `rwsem_two_sleeping_writers`; a reader handoff owner that does not clear
//! the handoff leaves the lock unusable ("left locked").

use crate::harness;
use locklab::RawRwSem;
use loom::cell::UnsafeCell;
use loom::sync::Arc;

struct Shared {
    lock: RawRwSem,
    data: UnsafeCell<usize>,
}

impl Shared {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            lock: RawRwSem::new(),
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
        self.lock.acquire_shared();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let v = self.data.with(|p| unsafe { *p });
        // SAFETY: taken above.
        unsafe { self.lock.release_shared() };
        v
    }

    fn total(&self) -> usize {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.data.with(|p| unsafe { *p })
    }

    /// The lock is free: a writer gets it without waiting.
    fn assert_free(&self) {
        assert!(self.lock.try_acquire_exclusive(), "left locked");
        // SAFETY: taken just above.
        unsafe { self.lock.release_exclusive() };
    }
}

#[test]
fn rwsem_writer_vs_writer() {
    harness::builder().check(|| {
        let s = Shared::new();
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
fn rwsem_writer_vs_reader() {
    harness::builder().check(|| {
        let s = Shared::new();
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

#[test]
fn rwsem_two_readers_one_writer() {
    harness::builder().check(|| {
        let s = Shared::new();
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

/// A writer holds the lock while a reader and a writer arrive and (in most
/// schedules) go to sleep; its release must wake both sides, and the woken
/// writer's release whatever the readers still need.
#[test]
fn rwsem_no_lost_wake_up() {
    harness::builder().check(|| {
        let s = Shared::new();
        s.lock.acquire_exclusive();
        let (r, w) = (s.clone(), s.clone());
        let reader = loom::thread::spawn(move || r.read());
        let writer = loom::thread::spawn(move || w.write());
        loom::thread::yield_now();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        s.data.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: taken above.
        unsafe { s.lock.release_exclusive() };
        let seen = reader.join().unwrap();
        writer.join().unwrap();
        assert!((1..=2).contains(&seen));
        assert_eq!(s.total(), 2);
        s.assert_free();
    });
}

/// A reader holds the lock while a writer arrives and sleeps: the last
/// reader out must wake it.
#[test]
fn rwsem_last_reader_wakes_writer() {
    harness::builder().check(|| {
        let s = Shared::new();
        s.lock.acquire_shared();
        let w = s.clone();
        let writer = loom::thread::spawn(move || w.write());
        loom::thread::yield_now();
        // SAFETY: taken above.
        unsafe { s.lock.release_shared() };
        writer.join().unwrap();
        assert_eq!(s.total(), 1);
        s.assert_free();
    });
}

/// Two writers sleep behind a third; each release wakes only one writer, so
/// the woken one must leave `W_WAIT` set for the other. The third then
/// writes again, stealing from the woken writer, which (starved) claims the
/// handoff: the next release must wake that owner, not just the oldest
/// sleeper.
#[test]
fn rwsem_two_sleeping_writers() {
    harness::builder().check(|| {
        let s = Shared::new();
        s.lock.acquire_exclusive();
        let ws: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || s.write())
            })
            .collect();
        loom::thread::yield_now();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        s.data.with_mut(|p| unsafe { *p += 1 });
        // SAFETY: taken above.
        unsafe { s.lock.release_exclusive() };
        // Steal the lock back from the woken writer, which then counts as
        // starved and claims the handoff.
        s.write();
        for h in ws {
            h.join().unwrap();
        }
        assert_eq!(s.total(), 4);
        s.assert_free();
    });
}
