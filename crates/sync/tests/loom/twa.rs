use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::{RawTwa, Ticket};

// Under loom the waiting array has four slots and ignores the lock's
// address: every lock's ticket `t` shares a slot with every other lock's
// `t` and with its own `t + 4`, so the models see collisions.
impl ModelLock for RawTwa {
    type Token = Ticket;
    fn new() -> Self {
        RawTwa::new()
    }
    fn acquire(&self) -> Ticket {
        RawTwa::acquire(self)
    }
    fn try_acquire(&self) -> Option<Ticket> {
        RawTwa::try_acquire(self)
    }
    fn release(&self, ticket: Ticket) {
        // SAFETY: the harness releases only what it acquired, with its ticket.
        unsafe { RawTwa::release(self, ticket) }
    }
}

#[test]
fn twa_two_threads_twice() {
    harness::mutual_exclusion::<RawTwa>(2, 2);
}

// Two waiters at once, so one of them (two from the head) waits on the
// array: one preemption (see `extra`).
#[test]
fn twa_three_threads() {
    extra::mutual_exclusion_bounded::<RawTwa>(3, 1, 1);
}

#[test]
fn twa_try_against_lock() {
    harness::try_against_lock::<RawTwa>();
}

#[test]
fn twa_try_after_critical() {
    extra::try_after_critical::<RawTwa>();
}

// Two locks whose tickets share the array's slots.
#[test]
fn twa_nested_two() {
    harness::nested_two::<RawTwa>();
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn twa_two_threads_thrice_deeper() {
    crate::extra::mutual_exclusion_bounded::<RawTwa>(2, 3, 3);
}

// Three threads, two rounds each: a thread's second acquisition may queue
// behind a thread that queued behind its first.
#[test]
fn twa_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<RawTwa>(3, 2, 1);
}
