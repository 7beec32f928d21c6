//! `bench ipc`: the emulated microkernel's IPC benchmarks of seeds 000 and
//! 002, under each kernel concurrency control.
//!
//! - `single`: one core, one client/server pair, no delay: the one-way IPC
//!   cost of each variant and its overhead over `none` (seed 000 Fig. 1,
//!   seed 002 Fig. 3).
//! - `multi`: one pair per core on its own endpoint, the server working an
//!   exponential delay between receiving and replying (seed 002 §5.1.2):
//!   total IPC throughput against cores for each delay.
//! - `shared`: every core's client calls one endpoint that every core's
//!   server receives on, so fine-grained locks contend too.
//! - `hold`: the `multi` set-up at the first delay with every kernel
//!   critical section timed (seed 002 measured 164 cycles on one core and
//!   323–613 on several for its big lock).
//!
//! After every repetition the kernel's invariants are checked; a broken one
//! fails the run.

use crate::clock::ns_to_ticks;
use crate::error::{LabError, Result};
use crate::measure::{settle_for, Hooks, Window};
use crate::results::{Rep, StudyMetrics};
use locklab_kernel::cc::{Bkl, Concurrency, Elide, Fine, NoLock};
use locklab_kernel::check::{check_kernel, check_programs};
use locklab_kernel::stats::CoreStats;
use locklab_kernel::{Config, Kernel, System};
use serde::Deserialize;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

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
pub type IpcRun = fn(&IpcConfig, &IpcPoint) -> std::result::Result<Rep, String>;

/// A kernel concurrency control the lab can build by type.
pub trait Variant: Concurrency + Sized {
    /// The control, ready to boot a kernel.
    fn make() -> Self;
}

impl Variant for NoLock {
    fn make() -> Self {
        NoLock
    }
}

impl Variant for Fine {
    fn make() -> Self {
        Fine::new()
    }
}

impl<M> Variant for Bkl<M>
where
    M: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
{
    fn make() -> Self {
        Bkl::new(M::INFO.name)
    }
}

impl<M> Variant for Elide<M>
where
    M: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
{
    fn make() -> Self {
        Elide::new(M::INFO.name)
    }
}

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
pub fn run_rep<C: Variant>(cfg: &IpcConfig, pt: &IpcPoint) -> std::result::Result<Rep, String> {
    let sys = system(pt);
    let kcfg = Config {
        switch_ticks: ns_to_ticks(cfg.switch_ns),
        switch_inside: cfg.switch_inside,
        measure_hold: pt.mode == Mode::Hold,
    };
    let k = Arc::new(Kernel::boot(C::make(), &sys, kcfg).map_err(|e| e.0)?);
    let ncpu = crate::machine::cpus();
    let pin = cfg.pin;
    // Every emulated core's thread enters the window before its loop, so
    // the window opens only when every core runs, after a settle period
    // (the warm-up, on this kernel), and each core's CPU time is read at
    // the instants the kernel's counters are snapshot.
    let window = Arc::new(Window::new(sys.cores as usize));
    let on_start = {
        let window = Arc::clone(&window);
        Arc::new(move |core: u32| {
            if pin {
                // Best effort, as for the other benchmarks.
                crate::machine::pin(core as usize % ncpu);
            }
            window.enter_thread(core as usize);
        })
    };
    let ((span, per_core), run) = k
        .run(sys.programs(), on_start, Duration::from_secs(10), |m| {
            let (mut s0, mut s1) = (Vec::new(), Vec::new());
            let span = window.measure(
                settle_for(cfg.secs),
                cfg.secs,
                Hooks {
                    at_open: Some(&mut || s0 = m.per_core()),
                    at_close: Some(&mut || s1 = m.per_core()),
                    during: None,
                },
            );
            let per_core: Vec<CoreStats> = s1.iter().zip(&s0).map(|(a, b)| a.minus(*b)).collect();
            (span, per_core)
        })
        .map_err(|h| format!("{}: {h}", k.variant()))?;
    let v = check_kernel(&k);
    if !v.is_empty() {
        return Err(format!("{}: kernel invariants broken: {v}", k.variant()));
    }
    let v = check_programs(&k, &run);
    if !v.is_empty() {
        return Err(format!("{}: IPC results wrong: {v}", k.variant()));
    }
    let total = per_core
        .iter()
        .copied()
        .fold(CoreStats::default(), CoreStats::plus);
    let wall_s = span.wall_s;
    let thread_ops: Vec<u64> = per_core.iter().map(|c| c.syscalls).collect();
    let ipcs = total.syscalls;
    let mut rep = Rep {
        rep: 0,
        wall_s,
        cpu_s: span.cpu_total_s(),
        total_ops: ipcs,
        throughput_ops_s: ipcs as f64 / wall_s,
        // Time one core spends per one-way IPC.
        ns_per_op: if ipcs == 0 {
            f64::INFINITY
        } else {
            wall_s * 1e9 * f64::from(pt.cores) / ipcs as f64
        },
        jain: crate::results::jain(&thread_ops),
        thread_ops,
        p50_ns: 0,
        p99_ns: 0,
        p999_ns: 0,
        max_ns: 0,
        censored: 0,
        censored_ns: 0,
        metrics: Default::default(),
    };
    rep.set_metrics(&IpcMetrics {
        ticks: span.close - span.open,
        transfers: total.transfers,
        switches: total.switches,
        holds: total.holds,
        hold_ticks: total.hold_ticks,
        idle_entries: total.idle_entries,
        preemptions: total.preemptions,
        elided: total.elided,
        fallbacks: total.fallbacks,
        aborts: total.aborts,
    });
    Ok(rep)
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

/// The kernel's big lock over one of locklab's own mutexes: plain and
/// elided. Peers have none: their guards borrow the mutex, and the kernel's
/// lock is taken and released in different places.
struct BigLock {
    /// The mutex's name.
    name: &'static str,
    /// `bkl(name)`.
    bkl: IpcRun,
    /// `elide(name)`.
    elide: IpcRun,
}

/// A big lock for each of locklab's own mutexes, monomorphized by the
/// registry's visitor.
fn big_locks() -> &'static [BigLock] {
    struct Own(Vec<BigLock>);
    impl crate::registry::MutexVisitor for Own {
        fn visit<L: crate::lablock::LabLock>(&mut self, _: locklab::LockInfo, _: bool) {}
        fn own<R>(&mut self)
        where
            R: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
        {
            self.0.push(BigLock {
                name: R::INFO.name,
                bkl: run_rep::<Bkl<R>>,
                elide: run_rep::<Elide<R>>,
            });
        }
    }
    static ALL: std::sync::OnceLock<Vec<BigLock>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = Own(Vec::new());
        crate::registry::visit_mutexes(&mut v);
        v.0
    })
}

/// A kernel variant chosen by name: `none`, `fine`, `bkl(L)`, `elide(L)`.
#[derive(Clone)]
pub struct IpcVariant {
    /// The stored name, e.g. `bkl(clh)`.
    pub name: String,
    /// Its repetition.
    pub run: IpcRun,
    /// Whether it elides its lock with hardware transactions.
    pub elides: bool,
}

/// The big lock when a variant names none.
pub const DEFAULT_LOCK: &str = "clh";

/// Every variant name, for messages.
pub const VARIANT_NAMES: &str = "none, bkl, bkl(LOCK), fine, elide, elide(LOCK)";

/// Parses `--variants`: `all` or comma-separated names (duplicates dropped,
/// order kept); `bkl` and `elide` take a mutex of the library in
/// parentheses (default clh).
pub fn parse_variants(list: &str) -> Result<Vec<IpcVariant>> {
    let mut out: Vec<IpcVariant> = Vec::new();
    for name in list.split(',').map(str::trim) {
        let picked = match name {
            "" => {
                return Err(LabError::input(format!(
                    "--variants '{list}': empty name in the list; variants: all, {VARIANT_NAMES}"
                )))
            }
            "all" => ["none", "bkl", "fine", "elide"]
                .iter()
                .map(|n| variant(n))
                .collect::<Result<Vec<_>>>()?,
            n => vec![variant(n)?],
        };
        for v in picked {
            if !out.iter().any(|o| o.name == v.name) {
                out.push(v);
            }
        }
    }
    Ok(out)
}

fn variant(name: &str) -> Result<IpcVariant> {
    let (kind, lock) = match name.split_once('(') {
        Some((k, rest)) => match rest.strip_suffix(')') {
            Some(l) if !l.trim().is_empty() => (k.trim(), Some(l.trim())),
            _ => {
                return Err(LabError::input(format!(
                    "kernel variant '{name}': write the lock in parentheses, e.g. bkl(ticket)"
                )))
            }
        },
        None => (name, None),
    };
    let simple = |run: IpcRun| {
        if lock.is_some() {
            Err(LabError::input(format!(
                "kernel variant '{name}': {kind} takes no lock (only bkl and elide do)"
            )))
        } else {
            Ok(IpcVariant {
                name: kind.into(),
                run,
                elides: false,
            })
        }
    };
    match kind {
        "none" => simple(run_rep::<NoLock>),
        "fine" => simple(run_rep::<Fine>),
        "bkl" | "elide" => {
            let l = lock.unwrap_or(DEFAULT_LOCK);
            let e = crate::studies::locks::find(l)
                .map_err(|e| LabError::input(format!("kernel variant '{name}': {}", e.msg)))?;
            let own = big_locks().iter().find(|b| b.name == e.info.name);
            let run = own.map(|b| if kind == "bkl" { b.bkl } else { b.elide });
            let run = run.ok_or_else(|| {
                LabError::input(format!(
                    "kernel variant '{name}': {l} is a peer whose guard borrows its mutex; \
                     the kernel's big lock must be one of locklab's own locks (see `locklab locks`)"
                ))
            })?;
            Ok(IpcVariant {
                name: format!("{kind}({l})"),
                run,
                elides: kind == "elide",
            })
        }
        _ => Err(LabError::input(format!(
            "unknown kernel variant '{name}'; variants: all, {VARIANT_NAMES}"
        ))),
    }
}

/// One repetition's emulated-kernel counters over the measured window (see
/// [`super`]). `Rep::total_ops` counts one-way IPCs (system calls) and
/// `Rep::ns_per_op` is the time one core spends per one-way IPC.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpcMetrics {
    /// Time-stamp ticks (TSC cycles) the window lasted.
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
}

impl StudyMetrics for IpcMetrics {
    const KEY: &'static str = "ipc";
}
