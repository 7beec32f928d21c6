use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::{RawTicketBackoff, Ticket};

impl ModelLock for RawTicketBackoff {
    type Token = Ticket;
    fn new() -> Self {
        RawTicketBackoff::new()
    }
    fn acquire(&self) -> Ticket {
        RawTicketBackoff::acquire(self)
    }
    fn try_acquire(&self) -> Option<Ticket> {
        RawTicketBackoff::try_acquire(self)
    }
    fn release(&self, ticket: Ticket) {
        // SAFETY: the harness releases only what it acquired, with its ticket.
        unsafe { RawTicketBackoff::release(self, ticket) }
    }
}

#[test]
fn ticket_backoff_two_threads_twice() {
    harness::mutual_exclusion::<RawTicketBackoff>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn ticket_backoff_three_threads_once() {
    extra::mutual_exclusion_bounded::<RawTicketBackoff>(3, 1, 1);
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn ticket_backoff_two_threads_thrice_deeper() {
    extra::mutual_exclusion_bounded::<RawTicketBackoff>(2, 3, 3);
}

#[test]
fn ticket_backoff_try_against_lock() {
    harness::try_against_lock::<RawTicketBackoff>();
}

#[test]
fn ticket_backoff_try_after_critical() {
    extra::try_after_critical::<RawTicketBackoff>();
}
