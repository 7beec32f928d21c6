//! `bench spin`: the contention benchmark, a generalization of seed 001's
//! spinlock microbenchmark (threads that only acquire and release one lock,
//! a million times in a tight loop). N threads take one lock in a loop;
//! inside, busy work that writes shared cache lines; outside, a constant or
//! exponential delay. Per repetition: throughput, per-thread acquisitions
//! and Jain's index, the acquire-latency distribution and CPU time.

use super::workload::{DelayDist, SharedLines, Work};
use crate::core::clock::ticks;
use crate::core::lablock::LabLock;
use crate::core::measure::{settle_for, Hooks, Measured, Phase, Window};
use crate::core::results::Rep;
use crossbeam_utils::CachePadded;
use serde::Serialize;
use std::time::Duration;

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

/// Runs one repetition with `threads` threads on a fresh lock: the
/// threads start together, run a settle period on this lock (the warm-up,
/// discarded), and are measured over one window ([`crate::core::measure`]).
pub fn run_rep<L: LabLock>(cfg: &SpinConfig, threads: u32) -> Result<Rep, String> {
    let n = threads as usize;
    // The lock and the window each get cache lines of their own: in small
    // allocations the lock could share one with what every thread polls,
    // and every acquisition would then evict it, an effect of the harness
    // that would vary with each lock's size.
    let lock = CachePadded::new(L::new());
    let lines = SharedLines::new(cfg.cs_lines);
    let window = Window::new(n);
    let ncpu = crate::core::machine::cpus();
    let (span, measured) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (lock, lines, window) = (&lock, &lines, &window);
                std::thread::Builder::new()
                    .name(format!("spin-{i}"))
                    .spawn_scoped(s, move || {
                        if cfg.pin {
                            // Best effort: an unpinnable thread runs where it may.
                            crate::core::machine::pin(i % ncpu);
                        }
                        let mut work = Work::new(
                            cfg.cs_ns,
                            cfg.delay_ns,
                            cfg.delay_dist,
                            0x5eed ^ (i as u64) << 17,
                        );
                        let stall = Duration::from_nanos(cfg.stall_ns);
                        let mut until_stall = cfg.stall_every;
                        let mut rec = window.enter(i);
                        loop {
                            let t0 = ticks();
                            if rec.phase(t0) == Phase::Closed {
                                break;
                            }
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
                            if !rec.op(t0, t1) {
                                break;
                            }
                            work.outside();
                        }
                        rec.finish()
                    })
                    .expect("spawning a benchmark thread")
            })
            .collect();
        let span = window.measure(settle_for(cfg.secs), cfg.secs, Hooks::default());
        let measured: Vec<Measured> = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect();
        (span, measured)
    });
    crate::core::sweep::rep_of(&span, &measured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::lablock::Raw;

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
        let r = run_rep::<Raw<parking_lot::RawMutex>>(&cfg, 3).unwrap();
        assert_eq!(r.thread_ops.len(), 3);
        assert_eq!(r.total_ops, r.thread_ops.iter().sum::<u64>());
        assert!(r.total_ops > 0);
        assert!(r.p50_ns <= r.p99_ns && r.p99_ns <= r.p999_ns && r.p999_ns <= r.max_ns);
        assert!(r.jain > 0.0 && r.jain <= 1.0 + 1e-12);
        assert!((r.throughput_ops_s - r.total_ops as f64 / r.wall_s).abs() < 1e-6);
    }
}
