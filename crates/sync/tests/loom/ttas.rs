use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::RawTtas;

impl ModelLock for RawTtas {
    type Token = ();
    fn new() -> Self {
        RawTtas::new()
    }
    fn acquire(&self) {
        RawTtas::acquire(self)
    }
    fn try_acquire(&self) -> Option<()> {
        RawTtas::try_acquire(self).then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { RawTtas::release(self) }
    }
}

#[test]
fn ttas_two_threads_twice() {
    harness::mutual_exclusion::<RawTtas>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn ttas_three_threads_once() {
    extra::mutual_exclusion_bounded::<RawTtas>(3, 1, 1);
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn ttas_two_threads_thrice_deeper() {
    extra::mutual_exclusion_bounded::<RawTtas>(2, 3, 3);
}

#[test]
fn ttas_try_against_lock() {
    harness::try_against_lock::<RawTtas>();
}

#[test]
fn ttas_try_after_critical() {
    extra::try_after_critical::<RawTtas>();
}
