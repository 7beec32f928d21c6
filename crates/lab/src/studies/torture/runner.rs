//! `locklab torture`: does the lock really exclude, and does it never hang?
//!
//! More threads than cores (4× by default, so lock holders get preempted)
//! hammer one lock. Inside the critical section each thread checks and
//! updates shadow data that is deliberately *not* atomic: two counters that
//! must be equal on entry, written one after the other with a pause between,
//! plus an owner word claimed on entry and handed back on exit. Any overlap
//! of two critical sections breaks one of these and is counted as a
//! violation; a final count that differs from the number of acquisitions is
//! a lost update. A watchdog ends the run as hung if no thread acquires the
//! lock for `watchdog_s` seconds, or if the threads still waiting when the
//! run ends cannot all get the lock once within `watchdog_s` (so a run ends
//! within about its length plus twice the watchdog, at any thread count).
//!
//! Reader-writer locks ([`run_rw`]) get the same writers plus readers (a
//! share of `read_pct` of the operations): a reader counts itself in on
//! entry, checks that no writer is inside and that the two counters are
//! equal and stay unchanged across its section, and counts itself out; a
//! writer checks that no reader is inside. The report also gives the most
//! readers seen inside together, which shows whether readers really share.

use crate::core::clock::{ns_to_ticks, spin_ticks, ticks};
use crate::core::lablock::{LabMutex, LabRwLock};
use crate::core::measure::{Measured, Phase, Window};
use crate::core::results::jain;
use crossbeam_utils::CachePadded;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};
use serde::Serialize;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Parameters of a torture run.
#[derive(Debug, Clone, Serialize)]
pub struct TortureConfig {
    /// Threads hammering the lock.
    pub threads: u32,
    /// How long.
    pub secs: f64,
    /// Seconds without any acquisition after which the lock counts as hung.
    pub watchdog_s: f64,
    /// Reader-writer locks only: the percentage of operations that read.
    pub read_pct: u32,
}

/// What a torture run found.
#[derive(Debug, Clone, Serialize)]
pub struct TortureReport {
    /// Lock name (filled in by the caller).
    pub lock: String,
    /// Threads used.
    pub threads: u32,
    /// Acquisitions by all threads.
    pub acquisitions: u64,
    /// Overlapping critical sections seen (shadow data or owner word broken).
    pub violations: u64,
    /// Write acquisitions minus the final shadow count (updates lost to
    /// overlap).
    pub lost_updates: u64,
    /// Most readers seen inside together (reader-writer locks; 0 for
    /// mutexes).
    pub max_readers: u64,
    /// Acquisitions per thread in the window (from the moment every thread
    /// ran to the end of the run; `acquisitions` counts every one).
    pub per_thread: Vec<u64>,
    /// Jain's fairness index of `per_thread`.
    pub jain: f64,
    /// The longest any thread waited to acquire in the window, ns (a wait
    /// still open at its closing counts with what it had lasted).
    pub longest_wait_ns: u64,
    /// Whether the watchdog fired (no acquisition for `watchdog_s`, or
    /// waiters not drained within `watchdog_s` of the run's end).
    pub hung: bool,
    /// Seconds the window lasted.
    pub wall_s: f64,
}

impl TortureReport {
    /// Whether the lock passed.
    pub fn ok(&self) -> bool {
        self.violations == 0 && self.lost_updates == 0 && !self.hung
    }
}

/// The data the lock protects, shared without atomics on purpose.
struct Shadow {
    a: UnsafeCell<u64>,
    b: UnsafeCell<u64>,
}

struct Shared<L> {
    lock: L,
    shadow: Shadow,
    owner: AtomicU64,
    /// Readers inside now, and the most seen together.
    readers: AtomicU64,
    max_readers: AtomicU64,
    violations: AtomicU64,
    counts: Vec<CachePadded<AtomicU64>>,
    writes: AtomicU64,
    read_pct: u32,
}

// SAFETY: `shadow` is only touched inside the lock's critical section; that
// is exactly the property under test. If the lock is broken the accesses
// race, and the race is what the checks detect (volatile accesses keep the
// compiler from folding them away).
unsafe impl<L: Sync> Sync for Shared<L> {}

/// A write section: the only place the shadow counters change.
fn critical<L>(s: &Shared<L>, me: u64, pause_ticks: u64, yield_now: bool) {
    if s.owner.swap(me, Ordering::Relaxed) != 0 || s.readers.load(Ordering::Relaxed) != 0 {
        s.violations.fetch_add(1, Ordering::Relaxed);
    }
    // SAFETY: see `Shared`: exclusive if the lock works.
    let (a, b) = unsafe {
        (
            core::ptr::read_volatile(s.shadow.a.get()),
            core::ptr::read_volatile(s.shadow.b.get()),
        )
    };
    if a != b {
        s.violations.fetch_add(1, Ordering::Relaxed);
    }
    // SAFETY: as above.
    unsafe { core::ptr::write_volatile(s.shadow.a.get(), a + 1) };
    spin_ticks(pause_ticks);
    if yield_now {
        // Get preempted while holding the lock now and then: the hand-over
        // paths of queue locks must survive a holder that is not running.
        std::thread::yield_now();
    }
    // SAFETY: as above.
    unsafe { core::ptr::write_volatile(s.shadow.b.get(), a + 1) };
    if s.owner
        .compare_exchange(me, 0, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
        || s.readers.load(Ordering::Relaxed) != 0
    {
        s.violations.fetch_add(1, Ordering::Relaxed);
    }
}

/// A read section: no writer inside, and the counters equal and unchanged
/// from its start to its end.
fn reading<L>(s: &Shared<L>, pause_ticks: u64, yield_now: bool) {
    let inside = s.readers.fetch_add(1, Ordering::Relaxed) + 1;
    s.max_readers.fetch_max(inside, Ordering::Relaxed);
    // SAFETY: see `Shared`: no writer runs beside readers if the lock works
    // (concurrent reads of the counters are no race).
    let read = || unsafe {
        (
            core::ptr::read_volatile(s.shadow.a.get()),
            core::ptr::read_volatile(s.shadow.b.get()),
        )
    };
    let before = read();
    if s.owner.load(Ordering::Relaxed) != 0 || before.0 != before.1 {
        s.violations.fetch_add(1, Ordering::Relaxed);
    }
    spin_ticks(pause_ticks);
    if yield_now {
        std::thread::yield_now();
    }
    if s.owner.load(Ordering::Relaxed) != 0 || read() != before {
        s.violations.fetch_add(1, Ordering::Relaxed);
    }
    s.readers.fetch_sub(1, Ordering::Relaxed);
}

/// One operation of a torture thread whose wait began at the given tick:
/// acquire, run a checked section, release. Returns whether it wrote and
/// the tick at which it acquired.
type Op<L> = fn(&Shared<L>, u64, &mut SmallRng, u64) -> (bool, u64);

/// Tortures a fresh mutex `L`. Never hangs itself: a hung lock's threads are
/// left behind (still spinning or sleeping) and the report says `hung`.
/// The section takes its thread's mark and its pause as values, so under
/// the delegation lock it runs, unchanged, on the combiner's thread.
pub fn run<L: LabMutex>(cfg: &TortureConfig) -> TortureReport {
    drive(cfg, L::new(), |s, me, rng, _t0| {
        let pause = ns_to_ticks(rng.random_range(0..200));
        let yield_now = rng.random_ratio(1, 64);
        let t1 = s.lock.execute(move || {
            let t1 = ticks();
            critical(s, me, pause, yield_now);
            t1
        });
        (true, t1)
    })
}

/// Tortures a fresh reader-writer lock `L` with `cfg.read_pct` % reads.
pub fn run_rw<L: LabRwLock>(cfg: &TortureConfig) -> TortureReport {
    drive(cfg, L::new(), |s, me, rng, _t0| {
        let pause = ns_to_ticks(rng.random_range(0..200));
        let yield_now = rng.random_ratio(1, 64);
        if rng.random_range(0..100) < s.read_pct {
            let t1 = s.lock.read(|| {
                let t1 = ticks();
                reading(s, pause, yield_now);
                t1
            });
            (false, t1)
        } else {
            let t1 = s.lock.write(|| {
                let t1 = ticks();
                critical(s, me, pause, yield_now);
                t1
            });
            (true, t1)
        }
    })
}

fn drive<L: Send + Sync + 'static>(cfg: &TortureConfig, lock: L, op: Op<L>) -> TortureReport {
    let n = cfg.threads as usize;
    let shared = Arc::new(Shared {
        lock,
        shadow: Shadow {
            a: UnsafeCell::new(0),
            b: UnsafeCell::new(0),
        },
        owner: AtomicU64::new(0),
        readers: AtomicU64::new(0),
        max_readers: AtomicU64::new(0),
        violations: AtomicU64::new(0),
        counts: (0..n)
            .map(|_| CachePadded::new(AtomicU64::new(0)))
            .collect(),
        writes: AtomicU64::new(0),
        read_pct: cfg.read_pct.min(100),
    });
    // The threads are timed through the lab's window: it opens when every
    // thread runs and closes at the end of the run; each thread's
    // acquisitions and waits in it are what the report's per-thread
    // counts and longest wait describe (the checks count every
    // acquisition, before, in and after the window).
    let window = Arc::new(Window::new(n));
    let handles: Vec<_> = (0..n)
        .map(|i| {
            let (s, window) = (shared.clone(), window.clone());
            std::thread::Builder::new()
                .name(format!("torture-{i}"))
                .spawn(move || {
                    let mut rng = SmallRng::seed_from_u64(0x70e7 + i as u64);
                    let me = i as u64 + 1;
                    let mut rec = window.enter(i);
                    loop {
                        let t0 = ticks();
                        if rec.phase(t0) == Phase::Closed {
                            break;
                        }
                        let (wrote, t1) = op(&s, me, &mut rng, t0);
                        if wrote {
                            s.writes.fetch_add(1, Ordering::Relaxed);
                        }
                        s.counts[i].fetch_add(1, Ordering::Relaxed);
                        if !rec.op(t0, t1) {
                            break;
                        }
                        spin_ticks(ns_to_ticks(rng.random_range(0..400)));
                    }
                    rec.finish()
                })
                .expect("spawning a torture thread")
        })
        .collect();

    let total = |s: &Shared<L>| {
        s.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let mut hung = false;
    let watchdog = Duration::from_secs_f64(cfg.watchdog_s);
    // Every thread must get running; one that cannot is a hang too.
    let t = Instant::now();
    while !window.wait_running_for(Duration::from_millis(20)) {
        if t.elapsed() >= watchdog || crate::core::interrupt::requested() {
            hung = !crate::core::interrupt::requested();
            break;
        }
    }
    let (open, _) = window.open_now();
    let t = Instant::now();
    let mut last = (total(&shared), Instant::now());
    let end = Duration::from_secs_f64(cfg.secs);
    while !hung && t.elapsed() < end && !crate::core::interrupt::requested() {
        std::thread::sleep(Duration::from_millis(20).min(end));
        let now = total(&shared);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() >= watchdog {
            hung = true;
        }
    }
    let (close, _) = window.close_now();
    // Threads still waiting for the lock must get it once to see the
    // closing. They get one watchdog period in all for it, progress or
    // not, so that a run ends in bounded time whatever the thread count (a
    // FIFO spin lock with hundreds of threads on a few cores hands over a
    // few times a second; its queue would drain for minutes).
    let mut measured: Vec<Measured> = Vec::new();
    let mut pending = handles;
    let closed_at = Instant::now();
    let mut drained_at = (total(&shared), Instant::now());
    while !pending.is_empty() {
        let (done, rest): (Vec<_>, Vec<_>) = pending.into_iter().partition(|h| h.is_finished());
        for h in done {
            if let Ok(m) = h.join() {
                measured.push(m);
            }
        }
        pending = rest;
        if pending.is_empty() {
            break;
        }
        let now = total(&shared);
        if now != drained_at.0 {
            drained_at = (now, Instant::now());
        } else if drained_at.1.elapsed() >= watchdog {
            hung = true;
            // Leave the stuck threads behind; they only hold Arcs.
            break;
        }
        if closed_at.elapsed() >= watchdog {
            hung = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let lat = crate::core::measure::latency(&measured).unwrap_or_default();
    let per_thread: Vec<u64> = measured.iter().map(|m| m.ops).collect();
    let acquisitions = total(&shared);
    let lost_updates = if hung {
        0 // threads may still be inside; the count is not final
    } else {
        // SAFETY: every thread has been joined; nothing else touches it.
        let a = unsafe { *shared.shadow.a.get() };
        shared.writes.load(Ordering::Relaxed).abs_diff(a)
    };
    TortureReport {
        lock: String::new(),
        threads: cfg.threads,
        acquisitions,
        violations: shared.violations.load(Ordering::Relaxed),
        lost_updates,
        max_readers: shared.max_readers.load(Ordering::Relaxed),
        jain: jain(&per_thread),
        per_thread,
        longest_wait_ns: lat.max_ns.max(lat.censored_ns),
        hung,
        wall_s: crate::core::clock::ticks_to_s(close - open),
    }
}
