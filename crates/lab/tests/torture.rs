//! The torture test must pass for every lock and must catch a broken one.

use locklab_lab::core::lablock::{LabLock, LabRwLock};
use locklab_lab::studies::torture::locks::{parse_torture_list, Tortured};
use locklab_lab::studies::torture::runner::{self as torture, TortureConfig};
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

/// Every mutex (`rw` false) or every reader-writer lock of the registry,
/// as `locklab torture` takes them.
fn locks(rw: bool) -> Vec<Tortured> {
    let all = parse_torture_list("all", |_| false).expect("every lock");
    all.into_iter().filter(|t| t.rw == rw).collect()
}

#[test]
fn every_lock_survives_a_short_torture() {
    for e in locks(false) {
        let r = (e.run)(&cfg(0.25));
        assert!(r.ok(), "{}: {r:?}", e.info.name);
        assert!(r.acquisitions > 0, "{}: no progress", e.info.name);
        assert_eq!(r.per_thread.len(), 8);
    }
}

#[test]
fn every_rwlock_survives_a_short_torture_and_lets_readers_share() {
    for e in locks(true) {
        // Readers yield inside their sections now and then, so other
        // readers get in beside them unless the lock keeps them out. On a
        // loaded machine a short run may not see it: up to four runs, each
        // of which must be correct, and one of which must see sharing.
        let mut shared = false;
        for _ in 0..4 {
            let r = (e.run)(&cfg(0.25));
            assert!(r.ok(), "{}: {r:?}", e.info.name);
            assert!(r.acquisitions > 0, "{}: no progress", e.info.name);
            if r.max_readers >= 2 {
                shared = true;
                break;
            }
        }
        assert!(shared, "{}: readers never shared in four runs", e.info.name);
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

// ---- RCU (`locklab torture --rcu`) ----

use locklab_lab::studies::torture::rcu::{self as rcutorture, RcuTortureConfig};
use std::process::{Command, Output};

fn rcu_cfg(secs: f64) -> RcuTortureConfig {
    RcuTortureConfig::new(4, secs, 20.0)
}

#[test]
fn every_rcu_flavour_survives_a_short_torture() {
    for f in rcutorture::flavors().iter().filter(|f| !f.hidden) {
        let r = (f.run)(&rcu_cfg(0.4));
        assert!(r.ok(), "{}: {:?}\n{}", f.name, r.failures(), r.text());
        assert!(r.reads > 0 && r.writes > 0, "{}: no progress", f.name);
        assert!(r.flood_ran > 0 && r.map_lookups > 0, "{}", r.text());
        // Every element the writer published went through the whole
        // pipeline or is still on its way; the histogram counts every read.
        assert_eq!(r.pipe.iter().sum::<u64>(), r.reads, "{}", r.text());
    }
}

#[test]
fn rcu_torture_catches_broken_map_rules() {
    // The updater breaks each rule once (a stable key removed for good, a
    // grow key removed, a shrink key re-added); the readers must notice.
    let cfg = RcuTortureConfig {
        sabotage_map: true,
        ..rcu_cfg(0.5)
    };
    let r = rcutorture::run::<locklab::rcu::Rcu>(&cfg, "rcu", false);
    assert!(!r.ok(), "sabotaged map passed:\n{}", r.text());
    assert!(r.map_stable_missing > 0, "{}", r.text());
    assert!(r.failures().iter().any(|f| f.starts_with("hash map")));
}

fn locklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_locklab"))
        .args(args)
        .output()
        .expect("running locklab")
}

#[test]
fn rcu_torture_catches_grace_periods_that_do_not_wait() {
    let o = locklab(&["torture", "--rcu", "--locks", "rcu-broken", "--secs", "1"]);
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{out}{err}");
    assert!(out.contains("too-short grace period"), "{out}");
    assert!(
        err.contains("rcu-broken") && err.contains("too-short grace period"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn rcu_torture_prints_the_reader_pipe_histogram() {
    let o = locklab(&["torture", "--rcu", "--locks", "rcu-qsbr", "--secs", "0.3"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let pipe = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Reader Pipe:"))
        .expect("a Reader Pipe line");
    let counts: Vec<u64> = pipe
        .split_whitespace()
        .map(|n| n.parse().expect("counts"))
        .collect();
    assert_eq!(counts.len(), rcutorture::pipe::PIPE_LEN + 1, "{pipe}");
    assert!(counts[0] > 0, "{pipe}");
    assert!(counts[2..].iter().all(|&c| c == 0), "{pipe}");
    assert!(out.contains("rcu-qsbr") && out.contains("ok"), "{out}");
}

/// `rcu` whose `synchronize` never returns: the watchdog must end the run.
struct NeverSynchronizes(locklab::rcu::Rcu);

impl rcutorture::flavor::TortureRcu for NeverSynchronizes {
    type F = locklab::rcu::General;
    type Reader = locklab::rcu::RcuReader;
    type Cookie = locklab::rcu::GpCookie;
    fn build(f: bool, m: usize, s: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Self {
        NeverSynchronizes(<locklab::rcu::Rcu as rcutorture::flavor::TortureRcu>::build(f, m, s))
    }
    fn domain(&self) -> &locklab::rcu::Rcu {
        &self.0
    }
    fn register(&self) -> Self::Reader {
        self.0.register()
    }
    fn quiesce(_: &mut Self::Reader) {}
    fn idle(_: &mut Self::Reader, f: impl FnOnce()) {
        f()
    }
    fn synchronize(&self) {
        loop {
            std::thread::sleep(Duration::from_secs(1));
        }
    }
    fn call(&self, f: impl FnOnce() + Send + 'static) {
        self.0.call(f)
    }
    fn defer_drop<T: Send + 'static>(&self, b: Box<T>) {
        self.0.defer_drop(b)
    }
    fn barrier(&self) {
        self.0.barrier()
    }
    fn start_poll(&self) -> Self::Cookie {
        self.0.start_poll()
    }
    fn get_state(&self) -> Self::Cookie {
        self.0.get_state()
    }
    fn poll(&self, c: Self::Cookie) -> bool {
        self.0.poll(c)
    }
    fn grace_periods(&self) -> u64 {
        self.0.grace_periods()
    }
    fn stats(&self) -> locklab::rcu::Stats {
        self.0.stats()
    }
    fn fenced(&self) -> bool {
        self.0.is_fenced()
    }
}

#[test]
fn rcu_torture_reports_a_hang_instead_of_hanging() {
    let cfg = RcuTortureConfig::new(2, 30.0, 0.5);
    let r = rcutorture::run::<NeverSynchronizes>(&cfg, "never", false);
    assert!(r.hung.is_some(), "{}", r.text());
    assert!(!r.ok());
    assert!(
        r.wall_s < 10.0,
        "the watchdog should end the run long before --secs"
    );
}

mod common;

/// `--read-pct` means something only where a reader-writer lock is
/// tortured: with mutexes alone it is refused, not ignored.
#[test]
fn read_pct_without_a_reader_writer_lock_is_refused() {
    let (_d, db) = common::tmp();
    for locks in ["ttas", "tas,mcs"] {
        common::assert_bad_input(
            &common::locklab(
                &db,
                &[
                    "torture",
                    "--locks",
                    locks,
                    "--read-pct",
                    "50",
                    "--secs",
                    "0.01",
                ],
            ),
            &format!("--read-pct 50 is for reader-writer locks, and --locks {locks} names none"),
        );
    }
    // With one reader-writer lock among them it is taken.
    let o = common::locklab(
        &db,
        &[
            "torture",
            "--locks",
            "ttas,rwsem",
            "--read-pct",
            "50",
            "--secs",
            "0.05",
            "--threads",
            "2",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", common::stderr(&o));
}

/// A watchdog shorter than a few scheduler periods would take threads
/// waiting for a CPU for a hang: the floor is named with the value.
#[test]
fn the_watchdog_has_a_floor() {
    let (_d, db) = common::tmp();
    for bad in ["0.001", "0.5", "0"] {
        common::assert_bad_input(
            &common::locklab(&db, &["torture", "--watchdog", bad]),
            &format!("'{bad}' seconds is out of range for the watchdog: allowed 1 to 3600"),
        );
        common::assert_bad_input(
            &common::locklab(&db, &["torture", "--rcu", "--watchdog", bad]),
            &format!("'{bad}' seconds is out of range"),
        );
    }
    assert!(!db.exists());
}
