//! `bench uncontended`: one thread, nanoseconds per acquire+release, for
//! every lock and peer and for the physical floor (see [`super::floor::Floor`]),
//! measured in the same process so their ratio is meaningful.
//!
//! A second thread is kept alive throughout (the caller spawns it with
//! [`Companion`]): glibc skips the atomic instructions of `pthread_mutex`
//! while a process is single-threaded, which would flatter that peer.

use crate::clock::{ticks, ticks_to_s};
use crate::lablock::LabLock;
use crate::measure::{settle_for, Hooks, Window};
use crate::results::Rep;
use serde::Serialize;
use std::hint::black_box;

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

/// One repetition: ns per acquire+release on a fresh lock, on a worker
/// thread measured through [`crate::measure`]. During the settle period
/// the worker warms the lock up and sizes its batches to about a
/// twentieth of the window; in the window it runs batch after batch. The
/// cost is the fastest batch that ran wholly inside the window (on a
/// shared machine interruptions only ever add time, so the fastest batch
/// is the least disturbed estimate), or the window's mean where no batch
/// fitted; throughput and CPU time cover the window itself.
pub fn run_rep<L: LabLock>(cfg: &Config) -> Result<Rep, String> {
    let lock = L::new();
    let window = Window::new(1);
    let target = cfg.secs / 20.0;
    let (span, (measured, best)) = std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("uncontended".into())
            .spawn_scoped(s, || {
                let mut rec = window.enter(0);
                let mut n = 1_000u64;
                loop {
                    let t0 = ticks();
                    batch(&lock, n);
                    let t1 = ticks();
                    // Sizing normally ends in the settle period; a batch
                    // that ran into the window counts there all the same.
                    rec.batch(n, t0, t1);
                    if ticks_to_s(t1 - t0) >= target || n >= 1 << 34 {
                        break;
                    }
                    n *= 2;
                }
                let mut best = f64::INFINITY;
                loop {
                    let t0 = ticks();
                    batch(&lock, n);
                    let t1 = ticks();
                    if rec.share(t0, t1) >= 1.0 {
                        best = best.min(ticks_to_s(t1 - t0) * 1e9 / n as f64);
                    }
                    if !rec.batch(n, t0, t1) {
                        break;
                    }
                }
                (rec.finish(), best)
            })
            .expect("spawning the uncontended worker");
        let span = window.measure(settle_for(cfg.secs), cfg.secs, Hooks::default());
        (
            span,
            worker.join().expect("the uncontended worker panicked"),
        )
    });
    let rep = crate::sweep::rep_of(&span, std::slice::from_ref(&measured))?;
    // A window too short for one whole batch (a tiny --secs on a busy
    // machine) still has its mean cost over the window.
    Ok(Rep {
        ns_per_op: if best.is_finite() {
            best
        } else {
            rep.ns_per_op
        },
        ..rep
    })
}

#[cfg(test)]
mod tests {
    use super::super::floor::Floor;
    use super::*;

    #[test]
    fn measures_a_positive_finite_cost() {
        let _c = Companion::start();
        let r = run_rep::<Floor>(&Config { secs: 0.02 }).unwrap();
        assert!(r.ns_per_op.is_finite() && r.ns_per_op > 0.0);
        assert_eq!(r.thread_ops, vec![r.total_ops]);
    }
}
