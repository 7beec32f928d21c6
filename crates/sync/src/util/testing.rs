//! Test shapes shared by the lock algorithms' unit tests, written against
//! `lock_api::RawMutex` so every lock runs the same checks.
//!
//! Each check runs under a watchdog: a lock that hangs aborts the test
//! process with a message instead of hanging CI.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use lock_api::{Mutex, RawMutex};

use super::thread_index;

/// How long any one check may take before it counts as hung.
pub const HANG: Duration = Duration::from_secs(120);

/// Aborts the process if not dropped within `limit`.
pub struct Watchdog(Option<mpsc::Sender<()>>);

impl Watchdog {
    /// Starts watching `what`.
    pub fn new(what: &'static str, limit: Duration) -> Self {
        let (tx, rx) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
                eprintln!("watchdog: `{what}` still running after {limit:?}: hung lock?");
                std::process::abort();
            }
        });
        Self(Some(tx))
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        // Dropping the sender wakes the watcher with `Disconnected`.
        self.0.take();
    }
}

/// Shared data whose invariant (`a == b`) breaks if two critical sections
/// overlap, plus a plain counter that loses updates if they do.
#[derive(Default)]
struct Shadow {
    a: u64,
    b: u64,
}

fn critical(s: &mut Shadow) {
    assert_eq!(s.a, s.b, "two critical sections overlapped");
    s.a += 1;
    // Widen the window in which an overlapping section would be caught.
    for _ in 0..8 {
        std::hint::spin_loop();
    }
    s.b = s.a;
}

/// `threads` threads each take the lock `iters` times; the count must come
/// out exact and the shadow invariant must hold throughout.
pub fn hammer<R: RawMutex + Sync>(threads: usize, iters: u64) {
    let _w = Watchdog::new("hammer", HANG);
    let m: Mutex<R, Shadow> = Mutex::new(Shadow::default());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..iters {
                    critical(&mut m.lock());
                }
            });
        }
    });
    let s = m.into_inner();
    assert_eq!(s.a, threads as u64 * iters, "lost update");
}

/// One thread takes `n` different locks, holds them all while another
/// thread per lock queues up behind it, then releases them in an order that
/// is not the reverse of acquisition (odd positions first, then even, both
/// ascending).
pub fn nested_non_lifo<R: RawMutex + Sync>(n: usize) {
    let _w = Watchdog::new("nested_non_lifo", HANG);
    let locks: Vec<Mutex<R, Shadow>> = (0..n).map(|_| Mutex::new(Shadow::default())).collect();
    let started = AtomicU64::new(0);
    std::thread::scope(|s| {
        let mut guards: Vec<_> = locks.iter().map(|l| Some(l.lock())).collect();
        for g in guards.iter_mut() {
            critical(g.as_mut().unwrap());
        }
        for l in &locks {
            let started = &started;
            s.spawn(move || {
                started.fetch_add(1, Ordering::Relaxed);
                critical(&mut l.lock());
            });
        }
        while started.load(Ordering::Relaxed) < n as u64 {
            std::thread::yield_now();
        }
        // Give the contenders time to queue behind us.
        std::thread::sleep(Duration::from_millis(20));
        let order = (1..n).step_by(2).chain((0..n).step_by(2));
        for i in order {
            drop(guards[i].take());
        }
    });
    for (i, l) in locks.into_iter().enumerate() {
        assert_eq!(l.into_inner().a, 2, "lock {i}: lost update");
    }
}

/// Two long-lived threads keep taking the lock while short-lived threads
/// come, take it a few times and exit, one after another, so their thread
/// indexes (and node rows) are recycled under a busy lock.
pub fn churn_threads<R: RawMutex + Sync>() {
    const SHORT: usize = 12;
    const SHORT_ITERS: u64 = 20;
    let _w = Watchdog::new("churn_threads", HANG);
    let m: Mutex<R, Shadow> = Mutex::new(Shadow::default());
    let stop = AtomicBool::new(false);
    let long_total = AtomicU64::new(0);
    let mut indexes = Vec::new();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut mine = 0;
                while !stop.load(Ordering::Relaxed) {
                    critical(&mut m.lock());
                    mine += 1;
                }
                long_total.fetch_add(mine, Ordering::Relaxed);
            });
        }
        for _ in 0..SHORT {
            let h = s.spawn(|| {
                for _ in 0..SHORT_ITERS {
                    critical(&mut m.lock());
                }
                thread_index::current()
            });
            indexes.push(h.join().unwrap());
        }
        stop.store(true, Ordering::Relaxed);
    });
    let total = m.into_inner().a;
    assert_eq!(
        total,
        long_total.into_inner() + SHORT as u64 * SHORT_ITERS,
        "lost update"
    );
    indexes.sort_unstable();
    indexes.dedup();
    assert!(
        indexes.len() < SHORT,
        "no thread index was recycled among {SHORT} threads run one after another"
    );
}
