//! Model checks beyond `harness.rs`, for the spin locks: mutual exclusion
//! under a fixed preemption bound (one for three threads, three for two), and
//! `try_acquire` after a whole critical section of another thread.
//!
//! # Three threads with one preemption
//!
//! With two waiters spinning while a third thread holds the lock, loom's
//! preemption-bounded search does not end: every `spin_loop()` is a yield,
//! a switch at a yield costs no preemption, and bounded DPOR conservatively
//! adds a backtrack point at the last switch before each conflict, so it
//! keeps exploring schedules in which the two waiters hand the CPU to each
//! other once more than last time (measured on a two-field ticket lock,
//! three threads, bound 2: 200 000 executions in 5½ minutes with about 14
//! executions for every spin count up to thousands, cut off only by
//! `max_branches`; `harness::mutual_exclusion::<L>(3, 1)` was stopped after
//! 400 s for `ticket` and after 60 s for `ttas`). With bound 1 the same
//! models end in milliseconds.
//!
//! # Two threads with three preemptions
//!
//! Two threads have at most one spinning waiter, so a deeper bound stays
//! cheap, and some windows need it: in `k42`, a new holder that finds no
//! successor must clear the lock's `next` *before* swinging `tail` back to
//! `HELD`; with the two steps swapped, `harness::mutual_exclusion::<L>(2, 2)`
//! passes at bound 2 and fails at bound 3 (the newcomer's link is erased and
//! the next release spins for ever, which loom reports as "exceeded maximum
//! number of branches").
//!
//! # `try_acquire` after another thread's critical section
//!
//! `harness::try_against_lock` starts the attempt right after spawning the
//! other thread. Loom's DPOR compares each access only with the *last*
//! dependent one, so it never reverses "the attempt reads the lock word,
//! later the other thread releases": the schedule in which the other thread
//! finishes its whole critical section before the attempt is not explored,
//! and with it the one case where the attempt's `Acquire` matters
//! (weakening the `Acquire` read in `RawTicket::try_acquire` to `Relaxed`
//! went unnoticed there). [`try_after_critical`] yields first, so that
//! schedule is the default one.

use crate::harness::{self, ModelLock};
use loom::cell::UnsafeCell;
use loom::sync::Arc;

struct Shared<L> {
    lock: L,
    data: UnsafeCell<usize>,
}

impl<L: ModelLock> Shared<L> {
    fn new() -> Arc<Self> {
        Arc::new(Shared {
            lock: L::new(),
            data: UnsafeCell::new(0),
        })
    }

    /// Read and write in separate accesses, as in `harness`: a broken lock
    /// lets loom see the other thread's unordered access between them.
    fn bump(&self) {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let v = self.data.with(|p| unsafe { *p });
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.data.with_mut(|p| unsafe { *p = v + 1 });
    }

    fn critical(&self) {
        let t = self.lock.acquire();
        self.bump();
        self.lock.release(t);
    }

    fn total(&self) -> usize {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.data.with(|p| unsafe { *p })
    }
}

/// `harness::mutual_exclusion` with a fixed preemption bound: `threads`
/// threads each take the lock `rounds` times; no overlapping access, no
/// lost update, and the lock free at the end.
pub fn mutual_exclusion_bounded<L: ModelLock>(threads: usize, rounds: usize, preemptions: u8) {
    let mut b = harness::builder();
    b.preemption_bound = Some(preemptions.into());
    b.check(move || {
        let s = Shared::<L>::new();
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || {
                    for _ in 0..rounds {
                        s.critical();
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(s.total(), threads * rounds, "lost update");
        assert!(
            s.lock.try_acquire().map(|t| s.lock.release(t)).is_some(),
            "left locked"
        );
    });
}

/// The other thread's critical section, then (usually) ours by
/// `try_acquire`: the data must stay exclusive and the count exact.
pub fn try_after_critical<L: ModelLock>() {
    harness::builder().check(|| {
        let s = Shared::<L>::new();
        let s2 = s.clone();
        let h = loom::thread::spawn(move || s2.critical());
        loom::thread::yield_now();
        let mut mine = 0;
        if let Some(t) = s.lock.try_acquire() {
            s.bump();
            s.lock.release(t);
            mine = 1;
        }
        h.join().unwrap();
        assert_eq!(s.total(), 1 + mine, "lost update");
    });
}
