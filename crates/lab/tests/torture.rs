//! The torture test must pass for every lock and must catch a broken one.

use locklab_lab::lablock::{LabLock, LabRwLock};
use locklab_lab::registry;
use locklab_lab::torture::{self, TortureConfig};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

fn cfg(secs: f64) -> TortureConfig {
    TortureConfig {
        threads: 8,
        secs,
        watchdog_s: 20.0,
        read_pct: 80,
    }
}

#[test]
fn every_lock_survives_a_short_torture() {
    for e in registry::all() {
        let r = (e.torture)(&cfg(0.25));
        assert!(r.ok(), "{}: {r:?}", e.info.name);
        assert!(r.acquisitions > 0, "{}: no progress", e.info.name);
        assert_eq!(r.per_thread.len(), 8);
    }
}

#[test]
fn every_rwlock_survives_a_short_torture_and_lets_readers_share() {
    for e in registry::rw_all() {
        let r = (e.torture)(&cfg(0.25));
        assert!(r.ok(), "{}: {r:?}", e.info.name);
        assert!(r.acquisitions > 0, "{}: no progress", e.info.name);
        // Readers yield inside their sections now and then, so other
        // readers get in beside them unless the lock keeps them out.
        assert!(
            r.max_readers >= 2,
            "{}: readers never shared: {r:?}",
            e.info.name
        );
    }
}

/// Readers take nothing at all; writers exclude only each other.
struct ReadersDoNotLock(std::sync::Mutex<()>);

impl LabRwLock for ReadersDoNotLock {
    fn new() -> Self {
        ReadersDoNotLock(std::sync::Mutex::new(()))
    }
    fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        f()
    }
    fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        let _g = self.0.lock().unwrap();
        f()
    }
}

#[test]
fn rw_torture_catches_readers_that_do_not_wait_for_writers() {
    let r = torture::run_rw::<ReadersDoNotLock>(&cfg(1.0));
    assert!(!r.ok(), "the broken lock passed: {r:?}");
    assert!(r.violations > 0, "{r:?}");
}

/// A mutex posing as a reader-writer lock: correct, but readers never share.
struct ReadersExclude(std::sync::Mutex<()>);

impl LabRwLock for ReadersExclude {
    fn new() -> Self {
        ReadersExclude(std::sync::Mutex::new(()))
    }
    fn read<R>(&self, f: impl FnOnce() -> R) -> R {
        let _g = self.0.lock().unwrap();
        f()
    }
    fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        let _g = self.0.lock().unwrap();
        f()
    }
}

#[test]
fn rw_torture_reports_readers_that_never_share() {
    let r = torture::run_rw::<ReadersExclude>(&cfg(0.5));
    assert!(r.ok(), "{r:?}");
    assert_eq!(r.max_readers, 1, "{r:?}");
}

/// Test, then set, as two separate steps: two threads can both see the flag
/// clear and both enter.
struct CheckThenSet(AtomicBool);

impl LabLock for CheckThenSet {
    fn new() -> Self {
        CheckThenSet(AtomicBool::new(false))
    }
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        while self.0.load(Ordering::Acquire) {
            std::hint::spin_loop();
        }
        // Widen the gap between check and set the way a preemption would:
        // another thread runs between our check and our set.
        std::thread::yield_now();
        self.0.store(true, Ordering::Release);
        let r = f();
        self.0.store(false, Ordering::Release);
        r
    }
}

#[test]
fn torture_catches_a_lock_that_does_not_exclude() {
    let r = torture::run::<CheckThenSet>(&cfg(2.0));
    assert!(!r.ok(), "the broken lock passed: {r:?}");
    assert!(r.violations > 0, "{r:?}");
}

/// Never lets anyone in after the first holder (release is forgotten).
/// Waiters sleep, so the threads it leaves behind cost nothing.
struct NeverReleases(AtomicBool);

impl LabLock for NeverReleases {
    fn new() -> Self {
        NeverReleases(AtomicBool::new(false))
    }
    fn with<R>(&self, f: impl FnOnce() -> R) -> R {
        while self.0.swap(true, Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(5));
        }
        f()
    }
}

#[test]
fn torture_reports_a_hang_instead_of_hanging() {
    let r = torture::run::<NeverReleases>(&TortureConfig {
        threads: 4,
        secs: 30.0,
        watchdog_s: 0.5,
        read_pct: 80,
    });
    assert!(r.hung, "{r:?}");
    assert!(!r.ok());
    assert!(
        r.wall_s < 10.0,
        "the watchdog should end the run long before --secs"
    );
}
