use crate::harness::{self, ModelLock};
use locklab::{McsToken, RawMcs};

impl ModelLock for RawMcs {
    type Token = McsToken;
    fn new() -> Self {
        RawMcs::new()
    }
    fn acquire(&self) -> McsToken {
        RawMcs::acquire(self)
    }
    fn try_acquire(&self) -> Option<McsToken> {
        RawMcs::try_acquire(self)
    }
    fn release(&self, token: McsToken) {
        // SAFETY: the harness releases what it acquired, on the same thread.
        unsafe { RawMcs::release(self, token) }
    }
}

#[test]
fn mcs_two_threads_twice() {
    harness::mutual_exclusion::<RawMcs>(2, 2);
}

#[test]
fn mcs_three_threads() {
    crate::extra::mutual_exclusion_bounded::<RawMcs>(3, 1, 1);
}

#[test]
fn mcs_try_against_lock() {
    harness::try_against_lock::<RawMcs>();
}

#[test]
fn mcs_nested_two() {
    harness::nested_two::<RawMcs>();
}
