use crate::harness::{self, ModelLock};
use locklab::{ClhToken, RawClh};

impl ModelLock for RawClh {
    type Token = ClhToken;
    fn new() -> Self {
        RawClh::new()
    }
    fn acquire(&self) -> ClhToken {
        RawClh::acquire(self)
    }
    fn try_acquire(&self) -> Option<ClhToken> {
        RawClh::try_acquire(self)
    }
    fn release(&self, token: ClhToken) {
        // SAFETY: the harness releases what it acquired.
        unsafe { RawClh::release(self, token) }
    }
}

#[test]
fn clh_two_threads_twice() {
    harness::mutual_exclusion::<RawClh>(2, 2);
}

#[test]
fn clh_three_threads() {
    crate::extra::mutual_exclusion_bounded::<RawClh>(3, 1, 1);
}

#[test]
fn clh_try_against_lock() {
    harness::try_against_lock::<RawClh>();
}

#[test]
fn clh_nested_two() {
    harness::nested_two::<RawClh>();
}
