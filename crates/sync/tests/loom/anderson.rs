use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::{RawAnderson, Ticket};

// Two slots, so that three threads outnumber them and two tickets wait on
// one slot.
impl ModelLock for RawAnderson<2> {
    type Token = Ticket;
    fn new() -> Self {
        RawAnderson::with_slots()
    }
    fn acquire(&self) -> Ticket {
        RawAnderson::acquire(self)
    }
    fn try_acquire(&self) -> Option<Ticket> {
        RawAnderson::try_acquire(self)
    }
    fn release(&self, ticket: Ticket) {
        // SAFETY: the harness releases only what it acquired, with its ticket.
        unsafe { RawAnderson::release(self, ticket) }
    }
}

#[test]
fn anderson_two_threads_twice() {
    harness::mutual_exclusion::<RawAnderson<2>>(2, 2);
}

// Three threads on two slots: tickets 0 and 2 share slot 0. One preemption
// (see `extra`).
#[test]
fn anderson_three_threads_on_two_slots() {
    extra::mutual_exclusion_bounded::<RawAnderson<2>>(3, 1, 1);
}

#[test]
fn anderson_try_against_lock() {
    harness::try_against_lock::<RawAnderson<2>>();
}

#[test]
fn anderson_try_after_critical() {
    extra::try_after_critical::<RawAnderson<2>>();
}

#[test]
fn anderson_nested_two() {
    harness::nested_two::<RawAnderson<2>>();
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn anderson_two_threads_thrice_deeper() {
    crate::extra::mutual_exclusion_bounded::<RawAnderson<2>>(2, 3, 3);
}

// Three threads, two rounds each: a thread's second acquisition may queue
// behind a thread that queued behind its first.
#[test]
fn anderson_three_threads_twice() {
    crate::extra::mutual_exclusion_bounded::<RawAnderson<2>>(3, 2, 1);
}
