use crate::harness::{self, ModelLock};
use locklab::RawTas;

impl ModelLock for RawTas {
    type Token = ();
    fn new() -> Self {
        RawTas::new()
    }
    fn acquire(&self) {
        RawTas::acquire(self)
    }
    fn try_acquire(&self) -> Option<()> {
        RawTas::try_acquire(self).then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { RawTas::release(self) }
    }
}

// `RawTas::acquire` is `while !try_acquire() { spin }`: its waiting is a loop
// of swaps, which loom cannot exhaust (see `harness::try_only`), so the
// model drives the same swap through bounded attempts.

#[test]
fn tas_two_threads() {
    harness::try_only::<RawTas>(2, 2);
}

#[test]
fn tas_three_threads() {
    harness::try_only::<RawTas>(3, 2);
}
