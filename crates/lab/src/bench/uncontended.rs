//! `bench uncontended`: one thread, nanoseconds per acquire+release, for
//! every lock and peer and for the physical floor (see `peers::Floor`),
//! measured in the same process so their ratio is meaningful.
//!
//! A second thread is kept alive throughout (the caller spawns it with
//! [`Companion`]): glibc skips the atomic instructions of `pthread_mutex`
//! while a process is single-threaded, which would flatter that peer.

use crate::lablock::LabLock;
use crate::results::Rep;
use serde::Serialize;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Parameters of the uncontended benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// Target seconds per repetition (the iteration count is sized to it).
    pub secs: f64,
}

/// An idle second thread, alive until dropped.
pub struct Companion {
    tx: Option<std::sync::mpsc::Sender<()>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Companion {
    /// Starts the idle thread.
    pub fn start() -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let handle = std::thread::Builder::new()
            .name("companion".into())
            .spawn(move || {
                let _ = rx.recv();
            })
            .expect("spawning the companion thread");
        Companion {
            tx: Some(tx),
            handle: Some(handle),
        }
    }
}

impl Drop for Companion {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[inline(never)]
fn batch<L: LabLock>(lock: &L, n: u64) {
    for _ in 0..n {
        lock.with(|| black_box(()));
    }
}

/// One repetition: ns per acquire+release on a fresh lock.
pub fn run_rep<L: LabLock>(cfg: &Config) -> Rep {
    let lock = L::new();
    // Warm up and size the batch to ~1/10 of the target time.
    let mut n = 1_000u64;
    loop {
        let t = Instant::now();
        batch(&lock, n);
        if t.elapsed() >= Duration::from_secs_f64(cfg.secs / 10.0) || n >= 1 << 34 {
            break;
        }
        n *= 2;
    }
    // Best of ten batches: on a shared machine interruptions only ever add
    // time, so the fastest batch is the least disturbed estimate.
    let cpu0 = crate::clock::thread_cpu_s();
    let mut best = f64::INFINITY;
    let mut wall_s = 0.0;
    for _ in 0..10 {
        let t = Instant::now();
        batch(&lock, n);
        let s = t.elapsed().as_secs_f64();
        wall_s += s;
        best = best.min(s * 1e9 / n as f64);
    }
    Rep {
        ns_per_op: best,
        ..Rep::one_thread(0, wall_s, crate::clock::thread_cpu_s() - cpu0, n * 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::Floor;

    #[test]
    fn measures_a_positive_finite_cost() {
        let _c = Companion::start();
        let r = run_rep::<Floor>(&Config { secs: 0.02 });
        assert!(r.ns_per_op.is_finite() && r.ns_per_op > 0.0);
        assert_eq!(r.thread_ops, vec![r.total_ops]);
    }
}
