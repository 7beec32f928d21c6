//! `bench uncontended`: one thread, nanoseconds per acquire+release, for
//! every lock and peer and for the physical floor (see [`super::floor::Floor`]),
//! measured in the same process so their ratio is meaningful.
//!
//! A second thread is kept alive throughout (the caller spawns it with
//! [`Companion`]): glibc skips the atomic instructions of `pthread_mutex`
//! while a process is single-threaded, which would flatter that peer.

use crate::core::lablock::LabMutex;
use crate::core::results::Rep;
use serde::Serialize;
use std::hint::black_box;

/// The name its points are stored under.
pub const BENCH: &str = "uncontended";

/// The lock name of the physical floor that ratios refer to.
pub const FLOOR: &str = "floor";

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
fn batch<L: LabMutex>(lock: &L, n: u64) {
    for _ in 0..n {
        lock.execute(|| black_box(()));
    }
}

/// One repetition: ns per acquire+release on a fresh lock (per request
/// served, for the delegation lock: with nobody else asking, the caller
/// combines its own), timed in batches on a worker thread
/// ([`crate::core::sweep::batched_cost`]: the fastest batch wholly inside
/// the window).
pub fn run_rep<L: LabMutex>(cfg: &Config) -> Result<Rep, String> {
    let lock = L::new();
    crate::core::sweep::batched_cost(cfg.secs, || (), |_, n| batch(&lock, n))
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
