use crate::harness::{self, ModelLock};
use locklab::RawQspin;

impl ModelLock for RawQspin {
    type Token = ();
    fn new() -> Self {
        RawQspin::new()
    }
    fn acquire(&self) {
        RawQspin::acquire(self)
    }
    fn try_acquire(&self) -> Option<()> {
        RawQspin::try_acquire(self).then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { RawQspin::release(self) }
    }
}

// Two threads reach the fast path and the pending path; the queue path
// needs a third contender.

#[test]
fn qspin_two_threads_twice() {
    harness::mutual_exclusion::<RawQspin>(2, 2);
}

#[test]
fn qspin_three_threads() {
    crate::extra::mutual_exclusion_bounded::<RawQspin>(3, 1, 1);
}

#[test]
fn qspin_try_against_lock() {
    harness::try_against_lock::<RawQspin>();
}

#[test]
fn qspin_nested_two() {
    harness::nested_two::<RawQspin>();
}
