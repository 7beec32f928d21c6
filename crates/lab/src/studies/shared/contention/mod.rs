//! The contention benchmark that `bench spin`, `bench lhp`, `advise` and
//! the suite run: threads take one lock in a loop with work inside and a
//! delay outside ([`workload`]); [`runner`] measures one repetition at a
//! thread count, and [`run`] sweeps the thread counts, every lock's
//! repetitions interleaved; [`report`] and [`verdict`] are the tables and
//! the verdict of its points.

pub mod args;
pub mod report;
pub mod runner;
pub mod verdict;
pub mod workload;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::registry::{self, Entry};
use crate::core::results::{Point, Rep};
use crate::core::sweep::{Group, RepRun};
use args::Workload;
use runner::SpinConfig;
use workload::DelayDist;

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

impl SpinPlan {
    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        (self.locks.len() * self.threads.len()) as u64 * self.reps as u64
    }
}

/// One repetition of the contention benchmark at a thread count.
pub type SpinRun = fn(&SpinConfig, u32) -> std::result::Result<Rep, String>;

struct Runs;
impl registry::MutexMaker<SpinRun> for Runs {
    fn make<L: crate::core::lablock::LabMutex>(&self) -> SpinRun {
        runner::run_rep::<L>
    }
}

/// The repetition of every mutex, in the registry's order.
fn runs() -> &'static [SpinRun] {
    static RUNS: std::sync::OnceLock<Vec<SpinRun>> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| registry::per_mutex(Runs))
}

/// Runs the contention sweep. Returns `Ok(false)` if interrupted.
pub fn run(
    plan: &SpinPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    let params = serde_json::to_value(&plan.cfg).expect("config serialises");
    for &threads in &plan.threads {
        let group = Group {
            bench: plan.bench,
            threads,
            params: params.clone(),
            reps: plan.reps,
            contenders: plan
                .locks
                .iter()
                .map(|e| {
                    let run = runs()[e.index];
                    let cfg = &plan.cfg;
                    (
                        e.info.name.to_string(),
                        Box::new(move || run(cfg, threads)) as RepRun<'_>,
                    )
                })
                .collect(),
        };
        let done = group.run(
            progress,
            |lock, rep| format!("spin: {lock} × {threads} threads, rep {rep}"),
            |lock, err| {
                LabError::failed(format!(
                    "bench {}: {lock} × {threads} threads: {err}",
                    plan.bench
                ))
            },
            sink,
        )?;
        if !done {
            return Ok(false);
        }
    }
    Ok(true)
}

/// How long a stalled holder blocks unless `--stall-ns` says otherwise.
const DEFAULT_STALL_NS: u64 = 50_000;

/// The stall of the workload: `--stall-ns` only means something with
/// `--stall-every`, and is refused without it rather than ignored.
fn stall(every: u64, ns: Option<u64>) -> Result<(u64, u64)> {
    match (every, ns) {
        (0, Some(_)) => Err(LabError::input(
            "--stall-ns needs --stall-every N (stall every N acquisitions of each thread)",
        )),
        (0, None) => Ok((0, 0)),
        (n, ns) => Ok((n, ns.unwrap_or(DEFAULT_STALL_NS))),
    }
}

/// The contention workload of `bench spin` and `bench lhp`. A delay
/// distribution without a delay to draw is refused rather than ignored.
pub fn spin_cfg(w: &Workload, delay_ns: u64, secs: f64) -> Result<SpinConfig> {
    let (stall_every, stall_ns) = stall(w.stall_every, w.stall_ns)?;
    // A virtual topology the library would ignore is refused here, in one
    // line, rather than measured as the machine's.
    locklab::topology::Topology::from_env().map_err(LabError::input)?;
    if let (0, Some(d)) = (delay_ns, w.delay_dist) {
        return Err(LabError::input(format!(
            "--delay-dist {}: there is no delay to draw at --delay-ns 0; give --delay-ns N (more than 0) \
             or leave --delay-dist out",
            d.as_str()
        )));
    }
    Ok(SpinConfig {
        cs_ns: w.cs_ns,
        cs_lines: w.cs_lines,
        delay_ns,
        delay_dist: w.delay_dist.unwrap_or(DelayDist::Exp),
        secs,
        pin: w.pin,
        stall_every,
        stall_ns,
        topology: runner::topology_param(),
    })
}
