use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::RawBackoff;

impl ModelLock for RawBackoff {
    type Token = ();
    fn new() -> Self {
        RawBackoff::new()
    }
    fn acquire(&self) {
        RawBackoff::acquire(self)
    }
    fn try_acquire(&self) -> Option<()> {
        RawBackoff::try_acquire(self).then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { RawBackoff::release(self) }
    }
}

#[test]
fn backoff_two_threads_twice() {
    harness::mutual_exclusion::<RawBackoff>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn backoff_three_threads_once() {
    extra::mutual_exclusion_bounded::<RawBackoff>(3, 1, 1);
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn backoff_two_threads_thrice_deeper() {
    extra::mutual_exclusion_bounded::<RawBackoff>(2, 3, 3);
}

#[test]
fn backoff_try_against_lock() {
    harness::try_against_lock::<RawBackoff>();
}

#[test]
fn backoff_try_after_critical() {
    extra::try_after_critical::<RawBackoff>();
}
