//! `bench spin`: the contention benchmark of seed 001's spinlock
//! microbenchmark. N threads take one lock in a loop; inside, busy work that
//! writes shared cache lines; outside, a constant or exponential delay. Per
//! repetition: throughput, per-thread acquisitions and Jain's index, the
//! acquire-latency distribution and CPU time.

use super::workload::{DelayDist, SharedLines, Work};
use crate::clock::{thread_cpu_s, ticks};
use crate::lablock::LabLock;
use crate::results::Rep;
use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

/// Parameters of one contention point (all but the thread count).
#[derive(Debug, Clone, Serialize)]
pub struct SpinConfig {
    /// Busy work inside the critical section, ns.
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section.
    pub cs_lines: usize,
    /// Mean delay between acquisitions, ns.
    pub delay_ns: u64,
    /// Distribution of that delay.
    pub delay_dist: DelayDist,
    /// Measured seconds per repetition.
    pub secs: f64,
    /// Pin thread i to CPU i mod cores.
    pub pin: bool,
    /// Every this many acquisitions, each thread blocks inside its critical
    /// section for `stall_ns` (an owner off its CPU, as on I/O or a page
    /// fault under the lock); 0 = never. Left out of the stored parameters
    /// when 0, so runs without stalls compare with older runs.
    #[serde(skip_serializing_if = "is_zero")]
    pub stall_every: u64,
    /// How long a stalled holder blocks, ns (0 unless `stall_every` is set).
    #[serde(skip_serializing_if = "is_zero")]
    pub stall_ns: u64,
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Number of CPUs this process may run on.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

struct ThreadResult {
    ops: u64,
    hist: Histogram<u64>,
    cpu_s: f64,
}

/// Sleeps for `d`, waking early if `crate::interrupt` fires.
fn sleep_interruptible(d: Duration) {
    let end = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= end || crate::interrupt::requested() {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(20)));
    }
}

/// Runs one repetition with `threads` threads on a fresh lock.
pub fn run_rep<L: LabLock>(cfg: &SpinConfig, threads: u32) -> Rep {
    let n = threads as usize;
    // The lock and the stop flag each get cache lines of their own: in
    // small allocations they could share one with each other (a lock of one
    // byte and a flag of one byte land in the same size class), and every
    // acquisition would then evict the flag all threads poll, an effect of
    // the harness that would vary with each lock's size.
    let lock = Arc::new(CachePadded::new(L::new()));
    let lines = Arc::new(SharedLines::new(cfg.cs_lines));
    let stop = Arc::new(CachePadded::new(AtomicBool::new(false)));
    let start = Arc::new(Barrier::new(n + 1));
    let ncpu = cores();
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (lock, lines, stop, start) =
                (lock.clone(), lines.clone(), stop.clone(), start.clone());
            let cfg = cfg.clone();
            std::thread::Builder::new()
                .name(format!("spin-{i}"))
                .spawn(move || {
                    if cfg.pin {
                        // Best effort: an unpinnable thread runs where it may.
                        crate::machine::pin(i % ncpu);
                    }
                    let mut work = Work::new(
                        cfg.cs_ns,
                        cfg.delay_ns,
                        cfg.delay_dist,
                        0x5eed ^ (i as u64) << 17,
                    );
                    let mut hist =
                        Histogram::<u64>::new(2).expect("2 significant figures is valid");
                    let mut ops = 0u64;
                    let stall = Duration::from_nanos(cfg.stall_ns);
                    let mut until_stall = cfg.stall_every;
                    start.wait();
                    let cpu0 = thread_cpu_s();
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = ticks();
                        let stall_now = until_stall == 1;
                        until_stall = if stall_now {
                            cfg.stall_every
                        } else {
                            until_stall.saturating_sub(1)
                        };
                        let t1 = lock.with(|| {
                            let t1 = ticks();
                            lines.touch();
                            work.inside();
                            if stall_now {
                                std::thread::sleep(stall);
                            }
                            t1
                        });
                        // An acquisition that ends after the window closed is
                        // not part of the measurement.
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        ops += 1;
                        hist.saturating_record(t1.saturating_sub(t0));
                        work.outside();
                    }
                    ThreadResult {
                        ops,
                        hist,
                        cpu_s: thread_cpu_s() - cpu0,
                    }
                })
                .expect("spawning a benchmark thread")
        })
        .collect();
    start.wait();
    let t = Instant::now();
    sleep_interruptible(Duration::from_secs_f64(cfg.secs));
    stop.store(true, Ordering::Relaxed);
    let wall_s = t.elapsed().as_secs_f64();
    let results: Vec<ThreadResult> = handles
        .into_iter()
        .map(|h| h.join().expect("benchmark thread panicked"))
        .collect();
    super::rep_of(
        wall_s,
        results.iter().map(|r| r.cpu_s).sum(),
        results.iter().map(|r| r.ops).collect(),
        results.iter().map(|r| &r.hist),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lablock::Raw;

    #[test]
    fn a_short_repetition_counts_every_threads_acquisitions() {
        let cfg = SpinConfig {
            cs_ns: 50,
            cs_lines: 2,
            delay_ns: 100,
            delay_dist: DelayDist::Exp,
            secs: 0.05,
            pin: false,
            stall_every: 0,
            stall_ns: 0,
        };
        let r = run_rep::<Raw<parking_lot::RawMutex>>(&cfg, 3);
        assert_eq!(r.thread_ops.len(), 3);
        assert_eq!(r.total_ops, r.thread_ops.iter().sum::<u64>());
        assert!(r.total_ops > 0);
        assert!(r.p50_ns <= r.p99_ns && r.p99_ns <= r.p999_ns && r.p999_ns <= r.max_ns);
        assert!(r.jain > 0.0 && r.jain <= 1.0 + 1e-12);
        assert!((r.throughput_ops_s - r.total_ops as f64 / r.wall_s).abs() < 1e-6);
    }
}
