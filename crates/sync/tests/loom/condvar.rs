//! `Condvar` under loom: no lost wake-up for `notify_one` and `notify_all`
//! (a lost wake-up leaves a waiter asleep for ever, which loom reports as a
//! deadlock), a broadcast's chain reaching both of two waiters, two
//! `notify_one`s reaching both (the count of sleepers that notifiers keep
//! skips neither), and the
//! data the waiters read ordered by the mutex taken back after the wait
//! (loom reports an unordered access otherwise).
//!
//! The lock_api layer is not compiled under loom, so the checks drive the
//! condvar's core, [`Condvar::wait_with`], with a locklab raw lock's own
//! `acquire`/`release`: `RawTtas`, whose waiting is a loop of plain loads
//! that loom can exhaust (unlike `RawTas`'s loop of swaps, see `tas.rs`).

use crate::harness;
use locklab::{Condvar, RawTtas};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// A flag guarded by a raw lock, and the condvar to wait for it on.
struct Shared {
    lock: RawTtas,
    /// Set by the notifier; the waiters count themselves out in `woken`.
    flag: UnsafeCell<bool>,
    woken: UnsafeCell<usize>,
    cv: Condvar,
}

impl Shared {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            lock: RawTtas::new(),
            flag: UnsafeCell::new(false),
            woken: UnsafeCell::new(0),
            cv: Condvar::new(),
        })
    }

    fn release(&self) {
        // SAFETY: every caller here holds the lock.
        unsafe { self.lock.release() }
    }

    /// Takes the lock, waits until the flag is set, counts itself.
    fn wait_for_flag(&self) {
        self.lock.acquire();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        while !self.flag.with(|p| unsafe { *p }) {
            self.cv
                .wait_with(&self.lock as *const RawTtas as *const (), None, |sleep| {
                    self.release();
                    sleep();
                    self.lock.acquire();
                });
        }
        // Read and write apart: an unordered access in between is caught.
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        let n = self.woken.with(|p| unsafe { *p });
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.woken.with_mut(|p| unsafe { *p = n + 1 });
        self.release();
    }

    /// Sets the flag under the lock, then notifies outside it.
    fn set_flag(&self, all: bool) {
        self.lock.acquire();
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.flag.with_mut(|p| unsafe { *p = true });
        self.release();
        if all {
            self.cv.notify_all();
        } else {
            self.cv.notify_one();
        }
    }

    fn woken(&self) -> usize {
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        self.woken.with(|p| unsafe { *p })
    }
}

#[test]
fn condvar_notify_one_is_never_lost() {
    harness::builder().check(|| {
        let s = Shared::new();
        let n = s.clone();
        let notifier = thread::spawn(move || n.set_flag(false));
        s.wait_for_flag();
        notifier.join().unwrap();
        assert_eq!(s.woken(), 1);
    });
}

#[test]
fn condvar_notify_all_under_the_lock_is_never_lost() {
    harness::builder().check(|| {
        let s = Shared::new();
        let n = s.clone();
        // Notifying with the lock held is allowed as well.
        let notifier = thread::spawn(move || {
            n.lock.acquire();
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            n.flag.with_mut(|p| unsafe { *p = true });
            n.cv.notify_all();
            n.release();
        });
        s.wait_for_flag();
        notifier.join().unwrap();
        assert_eq!(s.woken(), 1);
    });
}

// Three threads with one preemption: with two, loom does not end (over 200 s
// measured; the two waiters spinning on the lock word is the blow-up that
// `extra.rs` describes). The first waiter is the main thread, so that it
// runs first without spending the preemption.
#[test]
fn condvar_notify_all_wakes_two_waiters() {
    let mut b = harness::builder();
    b.preemption_bound = Some(1);
    b.check(|| {
        let s = Shared::new();
        let w = s.clone();
        let waiter = thread::spawn(move || w.wait_for_flag());
        let n = s.clone();
        let notifier = thread::spawn(move || n.set_flag(true));
        s.wait_for_flag();
        waiter.join().unwrap();
        notifier.join().unwrap();
        assert_eq!(s.woken(), 2);
    });
}

// Two waiters, two `notify_one`s: the notifier counts out of `sleepers`
// the waiter its first wake took, and only that one, so the second notify
// still finds the other (counting out two, as a planted bug did, left it
// asleep: loom reported the deadlock). Three threads, one preemption, as
// above.
#[test]
fn condvar_two_notify_ones_wake_two_waiters() {
    let mut b = harness::builder();
    b.preemption_bound = Some(1);
    b.check(|| {
        let s = Shared::new();
        let w = s.clone();
        let waiter = thread::spawn(move || w.wait_for_flag());
        let n = s.clone();
        let notifier = thread::spawn(move || {
            n.lock.acquire();
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            n.flag.with_mut(|p| unsafe { *p = true });
            n.release();
            n.cv.notify_one();
            n.cv.notify_one();
        });
        s.wait_for_flag();
        waiter.join().unwrap();
        notifier.join().unwrap();
        assert_eq!(s.woken(), 2);
    });
}

// A waiter that gives up pays the chain on its way out, like every waiter,
// perhaps with the payment the other waiter's wake needed: the waiter that
// stays must still be woken. (Under loom a timed wait never sleeps, it times
// out at once unless the word changed, so this does not cover a moved
// sleeper's timeout; the argument in `condvar.rs` does.)
#[test]
fn condvar_a_timed_out_waiter_does_not_break_the_chain() {
    let mut b = harness::builder();
    b.preemption_bound = Some(1);
    b.check(|| {
        let s = Shared::new();
        let t = s.clone();
        let quitter = thread::spawn(move || {
            t.lock.acquire();
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            if !t.flag.with(|p| unsafe { *p }) {
                let deadline = Some(std::time::Instant::now());
                t.cv.wait_with(&t.lock as *const RawTtas as *const (), deadline, |sleep| {
                    t.release();
                    sleep();
                    t.lock.acquire();
                });
            }
            t.release();
        });
        let n = s.clone();
        let notifier = thread::spawn(move || n.set_flag(true));
        s.wait_for_flag();
        quitter.join().unwrap();
        notifier.join().unwrap();
        assert_eq!(s.woken(), 1);
    });
}

// The two-step notify of a notifier that holds the lock (`choose_one` or
// `choose_all` under it, `wake_chosen` after the release): the waiter is
// never left asleep.
#[test]
fn condvar_a_wake_chosen_under_the_lock_and_paid_after_it_is_never_lost() {
    for all in [false, true] {
        harness::builder().check(move || {
            let s = Shared::new();
            let n = s.clone();
            let notifier = thread::spawn(move || {
                n.lock.acquire();
                // SAFETY: loom checks this access; the lock under test is held, or the others joined.
                n.flag.with_mut(|p| unsafe { *p = true });
                let chosen = if all {
                    n.cv.choose_all() > 0
                } else {
                    n.cv.choose_one()
                };
                n.release();
                if chosen {
                    n.cv.wake_chosen();
                }
            });
            s.wait_for_flag();
            notifier.join().unwrap();
            assert_eq!(s.woken(), 1);
        });
    }
}
