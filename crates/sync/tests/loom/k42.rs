use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::RawK42;

impl ModelLock for RawK42 {
    type Token = ();
    fn new() -> Self {
        RawK42::new()
    }
    fn acquire(&self) {
        RawK42::acquire(self)
    }
    fn try_acquire(&self) -> Option<()> {
        RawK42::try_acquire(self).then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { RawK42::release(self) }
    }
}

#[test]
fn k42_two_threads_twice() {
    harness::mutual_exclusion::<RawK42>(2, 2);
}

// Two waiters spinning at once: one preemption (see `extra`).
#[test]
fn k42_three_threads_once() {
    extra::mutual_exclusion_bounded::<RawK42>(3, 1, 1);
}

// One waiter at a time: three preemptions (see `extra`).
#[test]
fn k42_two_threads_thrice_deeper() {
    extra::mutual_exclusion_bounded::<RawK42>(2, 3, 3);
}

#[test]
fn k42_try_against_lock() {
    harness::try_against_lock::<RawK42>();
}

#[test]
fn k42_try_after_critical() {
    extra::try_after_critical::<RawK42>();
}

// A queue lock's waiter must not depend on per-thread state that a second
// lock held by the same thread could disturb (K42 keeps none: its node lives
// in `acquire`'s frame).
#[test]
fn k42_nested_two() {
    harness::nested_two::<RawK42>();
}
