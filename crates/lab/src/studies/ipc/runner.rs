//! `bench ipc`: the emulated microkernel's IPC benchmarks of seeds 000 and
//! 002, under each kernel concurrency control.
//!
//! - `single`: one core, one client/server pair, no delay: the one-way IPC
//!   cost of each variant and its overhead over `none` (seed 002 Fig. 3
//!   measured one-way IPC too; seed 000 Fig. 1 measured the round trip).
//! - `multi`: one pair per core on its own endpoint, the server working an
//!   exponential delay between receiving and replying (seed 002 §5.1.2):
//!   total IPC throughput against cores for each delay.
//! - `shared`: every core's client calls one endpoint that every core's
//!   server receives on, so fine-grained locks contend too.
//! - `hold`: the `multi` set-up at the first delay with every kernel
//!   critical section timed (seed 002 measured 164 cycles on one core and
//!   323–613 at four or more threads for its big lock).
//!
//! After every repetition the kernel's invariants are checked; a broken one
//! fails the run.

use crate::core::clock::ns_to_ticks;
use crate::core::results::{Rep, StudyMetrics};
use crate::studies::shared::kernel::{
    check_run, windowed, KernelRun, KernelVariant, Variant, Windowed,
};
use locklab_kernel::cc::PolicyChoice;
use locklab_kernel::stats::CoreStats;
use locklab_kernel::{Config, Kernel, System};
use serde::Deserialize;
use serde::Serialize;
use std::sync::Arc;

/// Which measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One core, one pair, no delay.
    Single,
    /// One pair per core, own endpoints, exponential delay.
    Multi,
    /// Every client calls one endpoint served by every core's server.
    Shared,
    /// `Multi` with every kernel critical section timed.
    Hold,
}

impl Mode {
    /// Every mode, in the order a run measures them.
    pub const ALL: [Mode; 4] = [Mode::Single, Mode::Multi, Mode::Shared, Mode::Hold];

    /// The CLI and stored name.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Single => "single",
            Mode::Multi => "multi",
            Mode::Shared => "shared",
            Mode::Hold => "hold",
        }
    }

    /// The mode a stored name stands for.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.name() == s)
    }
}

/// What every point of an `ipc` run shares.
#[derive(Debug, Clone, Serialize)]
pub struct IpcConfig {
    /// Measured seconds per repetition.
    pub secs: f64,
    /// Context-switch hardware work, ns.
    pub switch_ns: u64,
    /// Whether that work runs inside the kernel's critical section.
    pub switch_inside: bool,
    /// Pin emulated core i to CPU i mod CPUs.
    pub pin: bool,
}

/// One point: a mode at a core count and delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpcPoint {
    /// The measurement.
    pub mode: Mode,
    /// Emulated cores.
    pub cores: u32,
    /// Mean server delay between receiving and replying, ns.
    pub delay_ns: u64,
}

/// One repetition of one point under one variant: a measurement, or why the
/// kernel failed (broken invariants, a hang).
pub type IpcRun = fn(&IpcConfig, &IpcPoint, PolicyChoice) -> std::result::Result<Rep, String>;

/// The system a point boots.
fn system(pt: &IpcPoint) -> System {
    let delay_ticks = ns_to_ticks(pt.delay_ns) as f64;
    match pt.mode {
        Mode::Single => System::pingpong(1, 0.0, 0x1bc),
        Mode::Multi | Mode::Hold => System::pingpong(pt.cores, delay_ticks, 0x1bc),
        Mode::Shared => System::shared_endpoint(pt.cores, delay_ticks, 0x1bc),
    }
}

/// One repetition of `pt` under variant `C`.
pub fn run_rep<C: Variant>(
    cfg: &IpcConfig,
    pt: &IpcPoint,
    choice: PolicyChoice,
) -> std::result::Result<Rep, String> {
    let sys = system(pt);
    let kcfg = Config {
        switch_ticks: ns_to_ticks(cfg.switch_ns),
        switch_inside: cfg.switch_inside,
        measure_hold: pt.mode == Mode::Hold,
    };
    let k = Arc::new(Kernel::boot(C::make(choice), &sys, kcfg).map_err(|e| e.0)?);
    let (w, run) = windowed(&k, &sys, cfg.secs, cfg.pin, || ())?;
    check_run(&k, &run, "IPC results")?;
    Ok(rep_of(&w, pt.cores))
}

/// A repetition from a window of the ping-pong system on `cores` cores.
/// The kernel's counters were read at the controller's two sets of reads,
/// so every rate divides by the interval between them (`w.wall_s`, as
/// `bench kv` does), not by the window's published instants: a controller
/// that reads late, preempted on a busy host, would otherwise count more
/// IPCs than the time it divides by.
fn rep_of(w: &Windowed<()>, cores: u32) -> Rep {
    let (span, per_core) = (&w.span, &w.per_core);
    let total = per_core
        .iter()
        .copied()
        .fold(CoreStats::default(), CoreStats::plus);
    let wall_s = w.wall_s;
    let thread_ops: Vec<u64> = per_core.iter().map(|c| c.syscalls).collect();
    let ipcs = total.syscalls;
    let mut rep = Rep {
        // Time one core spends per one-way IPC.
        ns_per_op: if ipcs == 0 {
            f64::INFINITY
        } else {
            wall_s * 1e9 * f64::from(cores) / ipcs as f64
        },
        ..Rep::counted(wall_s, span.cpu_total_s(), thread_ops)
    };
    rep.set_metrics(&IpcMetrics {
        ticks: w.ticks,
        transfers: total.transfers,
        switches: total.switches,
        holds: total.holds,
        hold_ticks: total.hold_ticks,
        idle_entries: total.idle_entries,
        preemptions: total.preemptions,
        elided: total.elided,
        fallbacks: total.fallbacks,
        aborts: total.aborts,
        abort_lock_busy: total.abort_lock_busy,
        abort_conflict: total.abort_conflict,
        abort_capacity: total.abort_capacity,
        abort_retry_clear: total.abort_retry_clear,
        abort_other: total.abort_other,
        skipped: total.skipped,
        host_wait: span.waited_frac(),
    });
    rep
}

/// TSC cycles per one-way IPC on one core, from a repetition.
pub fn cycles_per_ipc(r: &Rep, cores: u32) -> f64 {
    match &r.metrics_of::<IpcMetrics>() {
        Some(m) if r.total_ops > 0 => m.ticks as f64 * f64::from(cores) / r.total_ops as f64,
        _ => f64::NAN,
    }
}

/// Mean kernel critical-section length of a repetition, in ticks (NaN if
/// not measured).
pub fn hold_ticks(r: &Rep) -> f64 {
    match &r.metrics_of::<IpcMetrics>() {
        Some(m) if m.holds > 0 => m.hold_ticks as f64 / m.holds as f64,
        _ => f64::NAN,
    }
}

/// `bench ipc`'s repetition.
pub struct IpcRuns;

impl KernelRun for IpcRuns {
    type Run = IpcRun;
    fn of<C: Variant>() -> IpcRun {
        run_rep::<C>
    }
}

/// A kernel variant of `bench ipc`.
pub type IpcVariant = KernelVariant<IpcRun>;

/// One repetition's emulated-kernel counters over the measured window (see
/// [`super`]). `Rep::total_ops` counts one-way IPCs (system calls) and
/// `Rep::ns_per_op` is the time one core spends per one-way IPC.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IpcMetrics {
    /// Time-stamp ticks (TSC cycles) the counts cover: from the
    /// controller's reads at the window's opening to those at its closing.
    pub ticks: u64,
    /// Messages moved (replies included).
    pub transfers: u64,
    /// Context switches.
    pub switches: u64,
    /// Kernel critical sections timed (0 unless the point measured hold
    /// times) and their total length in ticks.
    pub holds: u64,
    /// See `holds`.
    pub hold_ticks: u64,
    /// Times an idle core scheduled.
    pub idle_entries: u64,
    /// Timer preemptions.
    pub preemptions: u64,
    /// Kernel entries run as hardware transactions (elision).
    pub elided: u64,
    /// Kernel entries that took the fall-back lock (elision).
    pub fallbacks: u64,
    /// Transactions aborted (elision).
    pub aborts: u64,
    /// Of those, the ones whose transaction found the lock busy (absent
    /// from runs stored before causes were counted, like the rest below).
    #[serde(default)]
    pub abort_lock_busy: u64,
    /// Of those, conflicts with another core.
    #[serde(default)]
    pub abort_conflict: u64,
    /// Of those, capacity overflows.
    #[serde(default)]
    pub abort_capacity: u64,
    /// Of those, other aborts with the retry bit clear.
    #[serde(default)]
    pub abort_retry_clear: u64,
    /// Of those, the rest.
    #[serde(default)]
    pub abort_other: u64,
    /// Kernel entries that took the fall-back lock without attempting
    /// (counted in `fallbacks` too; the adaptive policy).
    #[serde(default)]
    pub skipped: u64,
    /// Per core: the time its thread was ready to run but waiting for a
    /// host CPU, as a fraction of the window (absent from runs stored
    /// before it was measured).
    #[serde(default)]
    pub host_wait: Vec<f64>,
}

impl StudyMetrics for IpcMetrics {
    const KEY: &'static str = "ipc";
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::{ns_to_ticks, ticks_to_s};
    use crate::core::measure::Span;

    /// The counters were read 50 ms after the window closed (a controller
    /// preempted on a busy host): the rate divides the IPCs by the interval
    /// the reads cover, 150 ms, not by the window's 100 ms. A harness that
    /// divides by the window's instants reports 1.5 times the rate.
    #[test]
    fn a_late_read_divides_by_the_interval_the_counts_cover() {
        let window = ns_to_ticks(100_000_000);
        let covered = ns_to_ticks(150_000_000);
        let span = Span {
            open: 1_000,
            close: 1_000 + window,
            wall_s: ticks_to_s(window),
            cpu_s: vec![0.1, 0.1],
            waited_s: vec![0.0, 0.0],
            interrupted: false,
        };
        let core = |syscalls| CoreStats {
            syscalls,
            ..CoreStats::default()
        };
        let w = Windowed {
            span,
            ticks: covered,
            wall_s: ticks_to_s(covered),
            utilisation: vec![1.0, 1.0],
            per_core: vec![core(90_000), core(60_000)],
            samples: ((), ()),
        };
        let r = rep_of(&w, 2);
        let want = 150_000.0 / ticks_to_s(covered);
        assert!(
            (r.throughput_ops_s / want - 1.0).abs() < 1e-9,
            "{} IPC/s, want {want}",
            r.throughput_ops_s
        );
        // Each core's time per IPC: 2 cores × 150 ms / 150 000 IPCs.
        let ns = 2.0 * ticks_to_s(covered) * 1e9 / 150_000.0;
        assert!((r.ns_per_op / ns - 1.0).abs() < 1e-9, "{} ns", r.ns_per_op);
        let cycles = cycles_per_ipc(&r, 2);
        let want_cycles = covered as f64 * 2.0 / 150_000.0;
        assert!((cycles / want_cycles - 1.0).abs() < 1e-9, "{cycles} cycles");
        assert_eq!(r.thread_ops, vec![90_000, 60_000]);
    }
}
