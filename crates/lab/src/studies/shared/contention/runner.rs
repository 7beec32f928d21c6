//! `bench spin`: the contention benchmark, a generalization of seed 001's
//! spinlock microbenchmark (threads that only acquire and release one lock,
//! a million times in a tight loop). N threads take one lock in a loop;
//! inside, busy work that writes shared cache lines; outside, a constant or
//! exponential delay. Per repetition: throughput, per-thread acquisitions
//! and Jain's index, the acquire-latency distribution and CPU time; and
//! where the topology has more than one NUMA node (the machine's, or a
//! virtual one from `LOCKLAB_TOPOLOGY`), how many hand-overs stayed within
//! a node ([`Handovers`]).
//!
//! The lock is any [`LabMutex`]: a lock, whose holder runs its own critical
//! section, or the delegation lock `combining`, whose combiner runs the
//! section of whichever thread asked. The section is the same either way
//! (the same lines written, the same busy work, the same stall), built
//! from values the asking thread passes in. What is recorded of an
//! acquisition belongs to the thread that asked, when its request returns:
//! its count, and its wait from before the request to the moment its
//! section began (stamped inside the section, on the thread that ran it;
//! the time-stamp counter is one clock for every core). An acquisition
//! counts in the window where that moment falls, for every lock alike.
//!
//! Every repetition checks that the sections excluded each other: each
//! touch of a shared line is a plain load and store, so overlapping
//! sections lose updates, and the lines must have counted every section
//! that ran (warm-up and window alike) exactly; a repetition where they
//! did not fails.

use super::workload::{DelayDist, SharedLines, Work};
use crate::core::clock::ticks;
use crate::core::lablock::LabMutex;
use crate::core::measure::{settle_for, Hooks, Measured, Phase, Window};
use crate::core::results::{Rep, StudyMetrics};
use crossbeam_utils::CachePadded;
use serde::{Deserialize, Serialize};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

thread_local! {
    /// Under a delegation lock, on a topology of nodes: this benchmark
    /// thread's [`holder`] record as of its latest request, which the
    /// sections it runs as the combiner (its own and others') read to say
    /// who ran them. Written only by its own thread, before each request.
    static RUNNER: Cell<u64> = const { Cell::new(0) };
}

/// Hand-overs in the window by where they went, on a topology of more than
/// one node: an acquisition whose previous holder was another thread is a
/// hand-over, within the node if that thread ran on the acquirer's node
/// (each as `locklab::topology::current_node` said just before its
/// acquisition). A thread that takes the lock again after itself hands
/// nothing over and counts in neither. The NUMA-aware locks exist to raise
/// `same_node`'s share; any other lock shows what chance gives.
///
/// The holder is the thread that *ran* the critical section, the one the
/// protected data went to: under a delegation lock the combiner, not the
/// thread that asked. A combiner running a batch of requests keeps the
/// data, so the requests after its first hand nothing over; only a new
/// combiner takes a hand-over, counted for the request it runs first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handovers {
    /// From a holder on the acquirer's node.
    pub same_node: u64,
    /// From a holder on another node.
    pub cross_node: u64,
}

impl StudyMetrics for Handovers {
    const KEY: &'static str = "handovers";
}

impl Handovers {
    /// The share of hand-overs within a node; `None` without any.
    pub fn same_share(&self) -> Option<f64> {
        let all = self.same_node + self.cross_node;
        (all > 0).then(|| self.same_node as f64 / all as f64)
    }
}

/// The holder record of the hand-over count: `thread + 1` in the high
/// bits, the node in the low 16 (0 before the first acquisition).
fn holder(thread: usize, node: usize) -> u64 {
    ((thread as u64 + 1) << 16) | (node as u64 & 0xffff)
}

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
    /// The NUMA topology the locks see, where it has more than one node
    /// ([`topology_param`]); left out on one node, so such runs compare
    /// with older runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topology: Option<String>,
}

/// The topology as a run's parameter: `Some` (its one-line description,
/// `2 nodes (virtual): 0 | 1`) where the locks see more than one node, and
/// the hand-overs are counted by node.
pub fn topology_param() -> Option<String> {
    (locklab::topology::node_count() > 1)
        .then(|| locklab::topology::Topology::current().to_string())
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Runs one repetition with `threads` threads on a fresh lock: the
/// threads start together, run a settle period on this lock (the warm-up,
/// discarded), and are measured over one window ([`crate::core::measure`]).
/// `Err` if the critical sections did not exclude each other (see the
/// module documentation).
pub fn run_rep<L: LabMutex>(cfg: &SpinConfig, threads: u32) -> Result<Rep, String> {
    let n = threads as usize;
    // The lock and the window each get cache lines of their own: in small
    // allocations the lock could share one with what every thread polls,
    // and every acquisition would then evict it, an effect of the harness
    // that would vary with each lock's size.
    let lock = CachePadded::new(L::new());
    let lines = SharedLines::new(cfg.cs_lines);
    let window = Window::new(n);
    let ncpu = crate::core::machine::cpus();
    // Written only under the lock (the previous holder), so plain loads and
    // stores; on its own line, as the lines the work touches.
    let last = CachePadded::new(AtomicU64::new(0));
    let numa = locklab::topology::node_count() > 1;
    let (span, measured) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (lock, lines, window, last) = (&lock, &lines, &window, &last);
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
                        let inside = work.inside();
                        let mut handovers = Handovers::default();
                        // Critical sections this thread asked for and got
                        // back, in and out of the window.
                        let mut ran = 0u64;
                        let mut rec = window.enter(i);
                        loop {
                            // Where this thread runs, asked before its wait
                            // starts (not timed), and only on a topology
                            // with nodes to tell apart.
                            let me = if numa {
                                holder(i, locklab::topology::current_node())
                            } else {
                                0
                            };
                            if numa && L::DELEGATES {
                                RUNNER.set(me);
                            }
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
                            // Everything the section needs is a value or
                            // data every thread shares: it may run on the
                            // combiner's thread.
                            let (t1, prev, ran_by) = lock.execute(move || {
                                let t1 = ticks();
                                let (prev, ran_by) = if numa {
                                    // Who runs this section: this thread
                                    // under a lock, the combiner (read on
                                    // its own thread) under delegation.
                                    let ran_by = if L::DELEGATES { RUNNER.get() } else { me };
                                    let prev = last.load(Ordering::Relaxed);
                                    last.store(ran_by, Ordering::Relaxed);
                                    (prev, ran_by)
                                } else {
                                    (0, 0)
                                };
                                lines.touch();
                                inside.run();
                                if stall_now {
                                    std::thread::sleep(stall);
                                }
                                (t1, prev, ran_by)
                            });
                            ran += 1;
                            if numa
                                && prev >> 16 != 0
                                && prev >> 16 != ran_by >> 16
                                && rec.phase(t1) == Phase::Open
                            {
                                if prev & 0xffff == ran_by & 0xffff {
                                    handovers.same_node += 1;
                                } else {
                                    handovers.cross_node += 1;
                                }
                            }
                            if !rec.op(t0, t1) {
                                break;
                            }
                            work.outside();
                        }
                        (rec.finish(), handovers, ran)
                    })
                    .expect("spawning a benchmark thread")
            })
            .collect();
        let span = window.measure(settle_for(cfg.secs), cfg.secs, Hooks::default());
        let measured: Vec<(Measured, Handovers, u64)> = handles
            .into_iter()
            .map(|h| h.join().expect("benchmark thread panicked"))
            .collect();
        (span, measured)
    });
    let ran: u64 = measured.iter().map(|m| m.2).sum();
    excluded(ran, &lines.counts())?;
    let (measured, handovers): (Vec<Measured>, Vec<Handovers>) =
        measured.into_iter().map(|(m, h, _)| (m, h)).unzip();
    let mut rep = crate::core::sweep::rep_of(&span, &measured)?;
    if numa {
        let sum = handovers
            .iter()
            .fold(Handovers::default(), |a, h| Handovers {
                same_node: a.same_node + h.same_node,
                cross_node: a.cross_node + h.cross_node,
            });
        rep.set_metrics(&sum);
    }
    Ok(rep)
}

/// Whether `ran` critical sections excluded each other, by the counts of
/// the shared lines they all touched (none to judge by without a line).
fn excluded(ran: u64, lines: &[u64]) -> Result<(), String> {
    match lines.iter().find(|&&c| c != ran) {
        None => Ok(()),
        Some(c) => Err(format!(
            "the critical sections overlapped: {ran} ran, but a line they all write counted {c} \
             (updates lost to a section running beside another)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::lablock::{Combining, Raw};

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
            topology: None,
        };
        let r = run_rep::<Raw<parking_lot::RawMutex>>(&cfg, 3).unwrap();
        assert_eq!(r.thread_ops.len(), 3);
        assert_eq!(r.total_ops, r.thread_ops.iter().sum::<u64>());
        assert!(r.total_ops > 0);
        assert!(r.p50_ns <= r.p99_ns && r.p99_ns <= r.p999_ns && r.p999_ns <= r.max_ns);
        assert!(r.jain > 0.0 && r.jain <= 1.0 + 1e-12);
        assert!((r.throughput_ops_s - r.total_ops as f64 / r.wall_s).abs() < 1e-6);
        let c = run_rep::<Combining>(&cfg, 3).unwrap();
        assert_eq!(c.thread_ops.len(), 3);
        assert_eq!(c.total_ops, c.thread_ops.iter().sum::<u64>());
    }

    #[test]
    fn lines_that_missed_a_section_fail_the_repetition() {
        assert!(excluded(7, &[7, 7]).is_ok());
        assert!(excluded(7, &[]).is_ok());
        let e = excluded(7, &[7, 6]).unwrap_err();
        assert!(
            e.contains("overlapped") && e.contains("7 ran") && e.contains("counted 6"),
            "{e}"
        );
    }
}
