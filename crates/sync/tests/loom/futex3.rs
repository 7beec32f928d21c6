use crate::extra;
use crate::harness::{self, ModelLock};
use locklab::RawFutex3;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use std::time::Instant;

impl ModelLock for RawFutex3 {
    type Token = ();
    fn new() -> Self {
        RawFutex3::new()
    }
    fn acquire(&self) {
        RawFutex3::acquire(self)
    }
    fn try_acquire(&self) -> Option<()> {
        RawFutex3::try_acquire(self).then_some(())
    }
    fn release(&self, _: ()) {
        // SAFETY: the harness releases only what it acquired.
        unsafe { RawFutex3::release(self) }
    }
}

// Waiters sleep instead of spinning, so three threads end under the
// default bound (a lost wake-up shows as a deadlock: every thread blocked).
#[test]
fn futex3_two_threads_twice() {
    harness::mutual_exclusion::<RawFutex3>(2, 2);
}

#[test]
fn futex3_three_threads_once() {
    harness::mutual_exclusion::<RawFutex3>(3, 1);
}

#[test]
fn futex3_try_against_lock() {
    harness::try_against_lock::<RawFutex3>();
}

#[test]
fn futex3_try_after_critical() {
    extra::try_after_critical::<RawFutex3>();
}

/// Two threads lock for good while a third makes a timed attempt, which
/// under loom gives up at its first sleep: giving up must neither break
/// exclusion nor strand a sleeper (a stranded one shows as a deadlock).
#[test]
fn futex3_timed_waiter_gives_up_cleanly() {
    harness::builder().check(|| {
        let s = Arc::new((RawFutex3::new(), UnsafeCell::new(0usize)));
        let bump = |s: &(RawFutex3, UnsafeCell<usize>)| {
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            let v = s.1.with(|p| unsafe { *p });
            // SAFETY: loom checks this access; the lock under test is held, or the others joined.
            s.1.with_mut(|p| unsafe { *p = v + 1 });
        };
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                loom::thread::spawn(move || {
                    s.0.acquire();
                    bump(&s);
                    // SAFETY: taken just above.
                    unsafe { s.0.release() };
                })
            })
            .collect();
        let mut mine = 0;
        if s.0.acquire_until(Instant::now()) {
            bump(&s);
            // SAFETY: taken just above.
            unsafe { s.0.release() };
            mine = 1;
        }
        for h in hs {
            h.join().unwrap();
        }
        // SAFETY: loom checks this access; the lock under test is held, or the others joined.
        assert_eq!(s.1.with(|p| unsafe { *p }), 2 + mine, "lost update");
        assert!(!s.0.is_held(), "left locked");
    });
}
