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

use crate::clock::ns_to_ticks;
use crate::error::{LabError, Result};
use crate::measure::{settle_for, Hooks, Window};
use crate::results::{Rep, StudyMetrics};
use locklab::elide::Policy;
use locklab_kernel::cc::{Bkl, Concurrency, Elide, ElideAdaptive, Fine, NoLock};
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

impl<M, P> Variant for Elide<M, P>
where
    M: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
    P: Policy + Send + Sync + 'static,
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
        abort_lock_busy: total.abort_lock_busy,
        abort_conflict: total.abort_conflict,
        abort_capacity: total.abort_capacity,
        abort_retry_clear: total.abort_retry_clear,
        abort_other: total.abort_other,
        skipped: total.skipped,
        host_wait: span.waited_frac(),
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

/// What a study runs a kernel variant with: a function monomorphized for
/// the variant's type, so that every study of the emulated kernel parses
/// `--variants` here ([`parse_variants_for`]) and gets each variant's own
/// compiled kernel.
pub trait KernelRun {
    /// The function (a plain `fn` pointer).
    type Run: Copy;
    /// The function for variant `C`.
    fn of<C: Variant>() -> Self::Run;
}

/// `bench ipc`'s repetition.
pub struct IpcRuns;

impl KernelRun for IpcRuns {
    type Run = IpcRun;
    fn of<C: Variant>() -> IpcRun {
        run_rep::<C>
    }
}

/// The kernel's big lock over one of locklab's own mutexes: plain and
/// elided. Peers have none: their guards borrow the mutex, and the kernel's
/// lock is taken and released in different places.
struct BigLock<F> {
    /// `bkl(name)`.
    bkl: F,
    /// `elide(name)`.
    elide: F,
    /// `elide-adaptive(name)`.
    elide_adaptive: F,
}

/// The big lock over locklab's own mutex `name`, monomorphized by the
/// registry's visitor for study `K`.
fn big_lock<K: KernelRun>(name: &str) -> Option<BigLock<K::Run>> {
    struct Own<'a, K: KernelRun>(&'a str, Option<BigLock<K::Run>>);
    impl<K: KernelRun> crate::registry::MutexVisitor for Own<'_, K> {
        fn visit<L: crate::lablock::LabLock>(&mut self, _: locklab::LockInfo, _: bool) {}
        fn own<R>(&mut self)
        where
            R: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
        {
            if R::INFO.name == self.0 && self.1.is_none() {
                self.1 = Some(BigLock {
                    bkl: K::of::<Bkl<R>>(),
                    elide: K::of::<Elide<R>>(),
                    elide_adaptive: K::of::<ElideAdaptive<R>>(),
                });
            }
        }
    }
    let mut v = Own::<K>(name, None);
    crate::registry::visit_mutexes(&mut v);
    v.1
}

/// A kernel variant chosen by name: `none`, `fine`, `bkl(L)`, `elide(L)`,
/// `elide-adaptive(L)`, with what a study runs it with (`F`, see [`KernelRun`]).
#[derive(Clone)]
pub struct KernelVariant<F> {
    /// The stored name, e.g. `bkl(clh)`.
    pub name: String,
    /// Its repetition.
    pub run: F,
    /// Whether it elides its lock with hardware transactions.
    pub elides: bool,
}

/// A kernel variant of `bench ipc`.
pub type IpcVariant = KernelVariant<IpcRun>;

/// The big lock when a variant names none.
pub const DEFAULT_LOCK: &str = "clh";

/// Every variant name, for messages.
pub const VARIANT_NAMES: &str =
    "none, bkl, bkl(LOCK), fine, elide, elide(LOCK), elide-adaptive, elide-adaptive(LOCK)";

/// Parses `--variants`: `all` or comma-separated names (duplicates dropped,
/// order kept); `bkl`, `elide` and `elide-adaptive` take a mutex of the
/// library in parentheses (default clh).
pub fn parse_variants(list: &str) -> Result<Vec<IpcVariant>> {
    parse_variants_for::<IpcRuns>(list)
}

/// [`parse_variants`] for any study of the emulated kernel (`K` says what
/// it runs each variant with).
pub fn parse_variants_for<K: KernelRun>(list: &str) -> Result<Vec<KernelVariant<K::Run>>> {
    let mut out: Vec<KernelVariant<K::Run>> = Vec::new();
    for name in list.split(',').map(str::trim) {
        let picked = match name {
            "" => {
                return Err(LabError::input(format!(
                    "--variants '{list}': empty name in the list; variants: all, {VARIANT_NAMES}"
                )))
            }
            "all" => ["none", "bkl", "fine", "elide", "elide-adaptive"]
                .iter()
                .map(|n| variant::<K>(n))
                .collect::<Result<Vec<_>>>()?,
            n => vec![variant::<K>(n)?],
        };
        for v in picked {
            if !out.iter().any(|o| o.name == v.name) {
                out.push(v);
            }
        }
    }
    Ok(out)
}

fn variant<K: KernelRun>(name: &str) -> Result<KernelVariant<K::Run>> {
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
    let simple = |run: K::Run| {
        if lock.is_some() {
            Err(LabError::input(format!(
                "kernel variant '{name}': {kind} takes no lock (only bkl, elide and elide-adaptive do)"
            )))
        } else {
            Ok(KernelVariant {
                name: kind.into(),
                run,
                elides: false,
            })
        }
    };
    match kind {
        "none" => simple(K::of::<NoLock>()),
        "fine" => simple(K::of::<Fine>()),
        "bkl" | "elide" | "elide-adaptive" => {
            let l = lock.unwrap_or(DEFAULT_LOCK);
            let e = crate::studies::locks::find(l)
                .map_err(|e| LabError::input(format!("kernel variant '{name}': {}", e.msg)))?;
            let own = big_lock::<K>(e.info.name);
            let run = own.map(|b| match kind {
                "bkl" => b.bkl,
                "elide" => b.elide,
                _ => b.elide_adaptive,
            });
            let run = run.ok_or_else(|| {
                LabError::input(format!(
                    "kernel variant '{name}': {l} is a peer whose guard borrows its mutex; \
                     the kernel's big lock must be one of locklab's own locks (see `locklab locks`)"
                ))
            })?;
            Ok(KernelVariant {
                name: format!("{kind}({l})"),
                run,
                elides: kind != "bkl",
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
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
