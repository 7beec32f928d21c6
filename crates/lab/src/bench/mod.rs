//! The benchmarks and the loop that runs their points: repetitions of every
//! lock interleaved (so drift on a shared machine hits all locks alike),
//! each repetition measured by [`crate::measure`] (its own warm-up on its
//! own lock and threads, then one window), progress with an ETA, and each
//! finished point handed to a sink (the results store) at once, so an
//! interrupted sweep keeps what it finished.

pub mod hash;
pub mod ipc;
pub mod spin;
pub mod uncontended;
pub mod workload;

use crate::error::{LabError, Result};
use crate::measure::{Measured, Span};
use crate::peers::{Floor, Floor2Rmw};
use crate::registry::Entry;
use crate::results::{Point, Rep};
use hash::strategies::Strategy;
use hash::HashConfig;
use spin::SpinConfig;

pub use crate::progress::Progress;

/// The contention sweep: every lock at every thread count.
pub struct SpinPlan {
    /// The name the points are stored under: `spin`, or `lhp` for the
    /// oversubscription sweep of the lock-holder-preemption experiment.
    pub bench: &'static str,
    /// Locks, in display order.
    pub locks: Vec<&'static Entry>,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Repetitions per point.
    pub reps: u32,
    /// Everything else.
    pub cfg: SpinConfig,
}

/// One repetition of the uncontended benchmark for one lock.
pub type UncontendedRep = fn(&uncontended::Config) -> std::result::Result<Rep, String>;

/// The references every uncontended comparison measures besides the locks:
/// the physical floor (which ratios refer to) and the two-RMW floor.
pub const UNCONTENDED_REFERENCES: [(&str, UncontendedRep); 2] = [
    (crate::report::FLOOR, uncontended::run_rep::<Floor>),
    ("floor-2rmw", uncontended::run_rep::<Floor2Rmw>),
];

/// The uncontended comparison: every lock, plus the references.
pub struct UncontendedPlan {
    /// Locks, in display order.
    pub locks: Vec<&'static Entry>,
    /// Repetitions per lock.
    pub reps: u32,
    /// Target seconds per repetition.
    pub cfg: uncontended::Config,
}

impl SpinPlan {
    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        (self.locks.len() * self.threads.len()) as u64 * self.reps as u64
    }

    /// Rough duration in seconds, for progress and planning.
    pub fn estimate_s(&self) -> f64 {
        let settle = crate::measure::settle_for(self.cfg.secs).as_secs_f64();
        self.units() as f64 * (self.cfg.secs + settle) * 1.1
    }
}

impl UncontendedPlan {
    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        (self.locks.len() + UNCONTENDED_REFERENCES.len()) as u64 * self.reps as u64
    }
}

/// One repetition from its window and what its workers measured in it:
/// operations per worker, CPU seconds and latencies over the same window.
/// `Err` names a latency beyond the histograms' range.
pub(crate) fn rep_of(
    span: &Span,
    measured: &[Measured],
    hash: Option<crate::results::HashMetrics>,
) -> std::result::Result<Rep, String> {
    let lat = crate::measure::latency(measured)?;
    let thread_ops: Vec<u64> = measured.iter().map(|m| m.ops).collect();
    let total_ops: u64 = thread_ops.iter().sum();
    let wall_s = span.wall_s;
    Ok(Rep {
        rep: 0,
        wall_s,
        cpu_s: span.cpu_total_s(),
        total_ops,
        throughput_ops_s: total_ops as f64 / wall_s,
        ns_per_op: if total_ops == 0 {
            f64::INFINITY
        } else {
            wall_s * 1e9 / total_ops as f64
        },
        jain: crate::results::jain(&thread_ops),
        thread_ops,
        p50_ns: lat.p50_ns,
        p99_ns: lat.p99_ns,
        p999_ns: lat.p999_ns,
        max_ns: lat.max_ns,
        censored: lat.censored,
        censored_ns: lat.censored_ns,
        hash,
        ipc: None,
        sim: None,
    })
}

fn stamp(mut reps: Vec<Rep>) -> Vec<Rep> {
    for (i, r) in reps.iter_mut().enumerate() {
        r.rep = i as u32;
    }
    reps
}

/// Runs the uncontended comparison. Returns `Ok(false)` if interrupted.
pub fn run_uncontended(
    plan: &UncontendedPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    let _companion = uncontended::Companion::start();
    let params = serde_json::to_value(&plan.cfg).expect("config serialises");
    let mut references: Vec<Vec<Rep>> = vec![Vec::new(); UNCONTENDED_REFERENCES.len()];
    let mut per_lock: Vec<Vec<Rep>> = vec![Vec::new(); plan.locks.len()];
    for _ in 0..plan.reps {
        for ((name, run), reps) in UNCONTENDED_REFERENCES.iter().zip(&mut references) {
            progress.step(format!("uncontended: {name}"));
            let r = run(&plan.cfg);
            if crate::interrupt::requested() {
                return Ok(false);
            }
            reps.push(r.map_err(|e| LabError::failed(format!("bench uncontended: {name}: {e}")))?);
            progress.done_one();
        }
        for (i, e) in plan.locks.iter().enumerate() {
            if crate::interrupt::requested() {
                return Ok(false);
            }
            progress.step(format!("uncontended: {}", e.info.name));
            let r = (e.uncontended)(&plan.cfg);
            if crate::interrupt::requested() {
                return Ok(false);
            }
            per_lock[i].push(r.map_err(|err| {
                LabError::failed(format!("bench uncontended: {}: {err}", e.info.name))
            })?);
            progress.done_one();
        }
    }
    let point = |lock: &str, reps: Vec<Rep>| Point {
        bench: "uncontended".into(),
        lock: lock.into(),
        threads: 1,
        params: params.clone(),
        reps: stamp(reps),
    };
    for ((name, _), reps) in UNCONTENDED_REFERENCES.iter().zip(references) {
        sink(point(name, reps))?;
    }
    for (e, reps) in plan.locks.iter().zip(per_lock) {
        sink(point(e.info.name, reps))?;
    }
    Ok(true)
}

/// Runs the contention sweep. Returns `Ok(false)` if interrupted.
pub fn run_spin(
    plan: &SpinPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    let params = serde_json::to_value(&plan.cfg).expect("config serialises");
    for &threads in &plan.threads {
        let mut per_lock: Vec<Vec<Rep>> = vec![Vec::new(); plan.locks.len()];
        for rep in 0..plan.reps {
            for (i, e) in plan.locks.iter().enumerate() {
                if crate::interrupt::requested() {
                    return Ok(false);
                }
                progress.step(format!(
                    "spin: {} × {threads} threads, rep {}",
                    e.info.name,
                    rep + 1
                ));
                let r = (e.spin)(&plan.cfg, threads);
                // A repetition cut short by Ctrl-C is not a measurement.
                if crate::interrupt::requested() {
                    return Ok(false);
                }
                per_lock[i].push(r.map_err(|err| {
                    LabError::failed(format!(
                        "bench {}: {} × {threads} threads: {err}",
                        plan.bench, e.info.name
                    ))
                })?);
                progress.done_one();
            }
        }
        for (e, reps) in plan.locks.iter().zip(per_lock) {
            sink(Point {
                bench: plan.bench.into(),
                lock: e.info.name.into(),
                threads,
                params: params.clone(),
                reps: stamp(reps),
            })?;
        }
    }
    Ok(true)
}

/// The hash-table study: every strategy at every update fraction and
/// thread count.
pub struct HashPlan {
    /// Strategies, in display order.
    pub strategies: Vec<Strategy>,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Update fractions in percent, ascending.
    pub update_pcts: Vec<u32>,
    /// Repetitions per point.
    pub reps: u32,
    /// The table and the repetition length.
    pub cfg: HashConfig,
}

impl HashPlan {
    /// The strategies that run at `pct` % updates: all but the read-only
    /// one where there are updates.
    pub fn runs_at(&self, pct: u32) -> impl Iterator<Item = &Strategy> {
        self.strategies
            .iter()
            .filter(move |s| pct == 0 || !s.read_only)
    }

    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        let per_threads: usize = self
            .update_pcts
            .iter()
            .map(|&u| self.runs_at(u).count())
            .sum();
        (per_threads * self.threads.len()) as u64 * u64::from(self.reps)
    }
}

/// Runs the hash-table study. Returns `Ok(false)` if interrupted; a
/// strategy that breaks its table is a failed check (exit code 1), after
/// the points finished before it are stored.
pub fn run_hash(
    plan: &HashPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    let failed = |s: &Strategy, threads: u32, pct: u32, e: String| {
        LabError::failed(format!(
            "bench hash: {} at {threads} threads and {pct} % updates broke its table: {e}",
            s.name
        ))
    };
    for &pct in &plan.update_pcts {
        let mut params = serde_json::to_value(&plan.cfg).expect("config serialises");
        params["update_pct"] = pct.into();
        let strategies: Vec<&Strategy> = plan.runs_at(pct).collect();
        for &threads in &plan.threads {
            let mut per: Vec<Vec<Rep>> = vec![Vec::new(); strategies.len()];
            for rep in 0..plan.reps {
                for (i, s) in strategies.iter().enumerate() {
                    if crate::interrupt::requested() {
                        return Ok(false);
                    }
                    progress.step(format!(
                        "hash: {} × {threads} threads, {pct} % updates, rep {}",
                        s.name,
                        rep + 1
                    ));
                    let r =
                        (s.run)(&plan.cfg, threads, pct).map_err(|e| failed(s, threads, pct, e))?;
                    if crate::interrupt::requested() {
                        return Ok(false);
                    }
                    per[i].push(r);
                    progress.done_one();
                }
            }
            for (s, reps) in strategies.iter().zip(per) {
                sink(Point {
                    bench: "hash".into(),
                    lock: s.name.clone(),
                    threads,
                    params: params.clone(),
                    reps: stamp(reps),
                })?;
            }
        }
    }
    Ok(true)
}

/// The kernel IPC benchmarks: every variant at every point of every mode.
pub struct IpcPlan {
    /// Kernel variants, in display order.
    pub variants: Vec<ipc::IpcVariant>,
    /// Measurements, in order.
    pub modes: Vec<ipc::Mode>,
    /// Core counts of `multi`, `shared` and `hold`.
    pub cores: Vec<u32>,
    /// Server delays of `multi`, ns; `shared` and `hold` use the first.
    pub delays_ns: Vec<u64>,
    /// Repetitions per point.
    pub reps: u32,
    /// Shared by every point.
    pub cfg: ipc::IpcConfig,
}

impl IpcPlan {
    /// Every point, in the order they run.
    pub fn points(&self) -> Vec<ipc::IpcPoint> {
        use ipc::{IpcPoint, Mode};
        let first = self.delays_ns.first().copied().unwrap_or(0);
        let mut out = Vec::new();
        for &mode in &self.modes {
            match mode {
                Mode::Single => out.push(IpcPoint {
                    mode,
                    cores: 1,
                    delay_ns: 0,
                }),
                Mode::Multi => {
                    for &delay_ns in &self.delays_ns {
                        for &cores in &self.cores {
                            out.push(IpcPoint {
                                mode,
                                cores,
                                delay_ns,
                            });
                        }
                    }
                }
                Mode::Shared | Mode::Hold => {
                    for &cores in &self.cores {
                        out.push(IpcPoint {
                            mode,
                            cores,
                            delay_ns: first,
                        });
                    }
                }
            }
        }
        out
    }

    /// The variants that run at a point: all but `none` where cores share
    /// an endpoint (it has no synchronization).
    pub fn runs_at(&self, pt: &ipc::IpcPoint) -> impl Iterator<Item = &ipc::IpcVariant> {
        let shared = pt.mode == ipc::Mode::Shared;
        self.variants
            .iter()
            .filter(move |v| !(shared && v.name == "none"))
    }

    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        self.points()
            .iter()
            .map(|p| self.runs_at(p).count() as u64)
            .sum::<u64>()
            * u64::from(self.reps)
    }
}

/// Runs the kernel IPC benchmarks. Returns `Ok(false)` if interrupted; a
/// kernel whose invariants break (or that hangs) is a failed check (exit
/// code 1), after the points finished before it are stored.
pub fn run_ipc(
    plan: &IpcPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    for pt in plan.points() {
        let mut params = serde_json::to_value(&plan.cfg).expect("config serialises");
        params["mode"] = pt.mode.name().into();
        params["delay_ns"] = pt.delay_ns.into();
        let variants: Vec<&ipc::IpcVariant> = plan.runs_at(&pt).collect();
        let at = format!(
            "{} × {} cores, delay {} ns",
            pt.mode.name(),
            pt.cores,
            pt.delay_ns
        );
        let failed = |e: String| LabError::failed(format!("bench ipc: {at}: {e}"));
        let mut per: Vec<Vec<Rep>> = vec![Vec::new(); variants.len()];
        for rep in 0..plan.reps {
            for (i, v) in variants.iter().enumerate() {
                if crate::interrupt::requested() {
                    return Ok(false);
                }
                progress.step(format!("ipc: {} {at}, rep {}", v.name, rep + 1));
                let r = (v.run)(&plan.cfg, &pt).map_err(failed)?;
                if crate::interrupt::requested() {
                    return Ok(false);
                }
                per[i].push(r);
                progress.done_one();
            }
        }
        for (v, reps) in variants.iter().zip(per) {
            sink(Point {
                bench: "ipc".into(),
                lock: v.name.clone(),
                threads: pt.cores,
                params: params.clone(),
                reps: stamp(reps),
            })?;
        }
    }
    Ok(true)
}
