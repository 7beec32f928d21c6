use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::{RawTicket, Ticket};

impl ModelLock for RawTicket {
    type Token = Ticket;
    fn new() -> Self {
        RawTicket::new()
    }
    fn acquire(&self) -> Ticket {
        RawTicket::acquire(self)
    }
    fn try_acquire(&self) -> Option<Ticket> {
        RawTicket::try_acquire(self)
    }
    fn release(&self, ticket: Ticket) {
        // SAFETY: the harness releases only what it acquired, with its ticket.
        unsafe { RawTicket::release(self, ticket) }
    }
}

#[test]
fn ticket_two_threads_twice() {
    harness::mutual_exclusion::<RawTicket>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn ticket_three_threads_once() {
    extra::mutual_exclusion_bounded::<RawTicket>(3, 1, 1);
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn ticket_two_threads_thrice_deeper() {
    extra::mutual_exclusion_bounded::<RawTicket>(2, 3, 3);
}

#[test]
fn ticket_try_against_lock() {
    harness::try_against_lock::<RawTicket>();
}

#[test]
fn ticket_try_after_critical() {
    extra::try_after_critical::<RawTicket>();
}
