//! What the studies of the emulated kernel share: its concurrency
//! controls chosen by name (`--variants`: `none`, `fine`, `bkl(L)`,
//! `elide(L)`, `elide-adaptive(L)`), each monomorphized for the study's
//! repetition; the check of the elision variants against this CPU; the
//! emulated core counts and the notes before a run; each point's
//! contenders; one measured window around a kernel run, over which the
//! kernel's counters, each core's idle time, CPU time and run-queue wait
//! and the study's own counters are read at the same two instants, and the
//! checks after it; the elision counters in words; and where a big lock
//! stops keeping up, for the verdicts. Around these, what `bench ipc` and
//! `bench kv` do alike: the options they share, the run of a point's
//! group, the stored run, the throughput axis of their charts.

use crate::core::args::{parse_reps, parse_secs, CoreList};
use crate::core::error::{LabError, Result};
use crate::core::measure::{settle_for, Hooks, Span, Window};
use crate::core::progress::Progress;
use crate::core::results::{Point, Rep};
use crate::core::run::stored_run;
use crate::core::study::{Ctx, Outcome};
use crate::core::sweep::{Group, RepRun};
use crate::core::verdict::Line;
use crate::noteln;
use locklab_kernel::cc::{Bkl, Concurrency, EitherPolicy, Elide, Fine, NoLock, PolicyChoice};
use locklab_kernel::idle::IdleSpan;
use locklab_kernel::stats::CoreStats;
use locklab_kernel::{Kernel, Monitor, System};
use std::sync::Arc;
use std::time::Duration;

/// The options of `bench ipc` and `bench kv` after their own (flattened
/// last into each, so that `--help` lists them last).
#[derive(Debug, clap::Args)]
pub struct RepArgs {
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.3")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
    /// Pin emulated core i to CPU i mod CPUs.
    #[arg(long)]
    pub pin: bool,
    /// Run `elide` on a CPU without RTM: every kernel entry then takes the
    /// fall-back lock, and the output says so.
    #[arg(long)]
    pub allow_fallback: bool,
}

/// Most emulated cores a study starts.
pub const MAX_CORES: u32 = 64;

/// Emulated core counts (up to [`MAX_CORES`]).
pub(crate) fn parse_emulated_cores(s: &str) -> std::result::Result<CoreList, String> {
    crate::core::args::parse_core_list(s, MAX_CORES)
}

/// The emulated core counts asked for, or 1 up to the CPUs this process
/// may use (at most [`MAX_CORES`]).
pub fn cores_or_default(cores: Option<&CoreList>) -> Vec<u32> {
    match cores {
        Some(c) => c.0.clone(),
        None => (1..=(crate::core::machine::cpus() as u32).clamp(1, MAX_CORES)).collect(),
    }
}

/// Checks the variants against this CPU: without RTM, an elision variant
/// named in `--variants` is refused unless `allow_fallback` asks for its
/// fall-back path, and the default list (`explicit` false) leaves them
/// out. Prints nothing: `Ok(true)` says they were left out, which
/// [`notes`] says once every other check has passed (a refused command
/// prints its one line and nothing else). `LOCKLAB_RTM=off` makes a CPU
/// with RTM count as one without ([`locklab::RTM_VAR`]); another value is
/// refused.
pub fn check_rtm<F>(
    variants: &mut Vec<KernelVariant<F>>,
    explicit: bool,
    allow_fallback: bool,
) -> Result<bool> {
    if let Err(v) = locklab::rtm_setting() {
        return Err(LabError::input(format!(
            "{}={v}: allowed off (run as on a CPU without RTM) or auto (read the CPU)",
            locklab::RTM_VAR
        )));
    }
    if locklab_kernel::cc::rtm_available() || allow_fallback {
        return Ok(false);
    }
    if explicit {
        if let Some(v) = variants.iter().find(|v| v.elides) {
            return Err(LabError::input(format!(
                "{}: this CPU has no RTM (Intel TSX restricted transactional memory), so \
                 nothing can be elided; --allow-fallback runs it anyway on its fall-back \
                 lock path (the big lock plus the elision wrapper's checks)",
                v.name
            )));
        }
        Ok(false)
    } else {
        let before = variants.len();
        variants.retain(|v| !v.elides);
        Ok(variants.len() < before)
    }
}

/// `--variants` (`list`, `all` if not given) parsed for study `K`
/// ([`parse_variants_for`]) and checked against this CPU ([`check_rtm`],
/// which `allow_fallback` is for): the variants, and whether elision
/// variants were left out.
pub fn chosen_variants<K: KernelRun>(
    list: Option<&str>,
    allow_fallback: bool,
) -> Result<(Vec<KernelVariant<K::Run>>, bool)> {
    let mut variants = parse_variants_for::<K>(list.unwrap_or("all"))?;
    let left_out = check_rtm(&mut variants, list.is_some(), allow_fallback)?;
    Ok((variants, left_out))
}

/// Refuses `--allow-fallback` when `--variants` (`explicit`) names no
/// elision variant: it would change nothing.
pub fn check_fallback_used<F>(
    variants: &[KernelVariant<F>],
    explicit: bool,
    allow_fallback: bool,
) -> Result<()> {
    if allow_fallback && explicit && !variants.iter().any(|v| v.elides) {
        return Err(LabError::input(
            "--allow-fallback is for the elide variants, and --variants names none",
        ));
    }
    Ok(())
}

/// The notes before a run, once every check has passed: elision
/// variants left out (`elide_left_out`, from [`check_rtm`]), emulated
/// cores beyond this machine's CPUs (`oversubscribed`: whether those
/// points are measured at all), and elision variants on a CPU without RTM.
pub fn notes<F>(
    variants: &[KernelVariant<F>],
    cores: &[u32],
    oversubscribed: bool,
    elide_left_out: bool,
) {
    if elide_left_out {
        noteln!(
            "note: elide left out: this CPU has no RTM (--variants elide --allow-fallback runs its fall-back path)"
        );
    }
    let ncpu = crate::core::machine::cpus() as u32;
    let over: Vec<u32> = cores.iter().copied().filter(|&c| c > ncpu).collect();
    if !over.is_empty() && oversubscribed {
        noteln!(
            "note: {over:?} emulated cores on {ncpu} CPUs: a core that loses its CPU inside the kernel \
             stalls every core spinning on its lock, so those points measure the host's scheduler"
        );
    }
    if variants.iter().any(|v| v.elides) && !locklab_kernel::cc::rtm_available() {
        noteln!(
            "note: this CPU has no RTM: the elide variants run their fall-back path on every kernel entry"
        );
    }
}

/// The contenders of one point, side by side: each variant's repetition
/// of `pt` under `cfg`, by the variant's name.
pub fn contenders<'a, C, P>(
    variants: impl Iterator<
        Item = &'a KernelVariant<fn(&C, &P, PolicyChoice) -> std::result::Result<Rep, String>>,
    >,
    cfg: &'a C,
    pt: &'a P,
) -> Vec<(String, RepRun<'a>)>
where
    C: 'a,
    P: 'a,
{
    variants
        .map(|v| {
            let (run, choice) = (v.run, v.choice);
            (
                v.name.clone(),
                Box::new(move || run(cfg, pt, choice)) as RepRun<'a>,
            )
        })
        .collect()
}

/// Runs one point's group ([`Group::run`]): the progress line names the
/// study, the contender, `at` (where, e.g. "4 cores") and the repetition;
/// a contender's error is a failed check.
pub fn run_group(
    group: Group<'_>,
    at: &str,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    let bench = group.bench;
    group.run(
        progress,
        |name, rep| format!("{bench}: {name} {at}, rep {rep}"),
        |_, e| LabError::failed(format!("bench {bench}: {at}: {e}")),
        sink,
    )
}

/// Measures and stores a run of `bench {bench}` ([`stored_run`]) with a
/// progress line of `units` repetitions: `params` are the run's, to which
/// the variants' names and whether this CPU has RTM are added; `run`
/// measures every point into the sink.
pub fn measure_and_store<F>(
    ctx: &Ctx,
    bench: &str,
    variants: &[KernelVariant<F>],
    mut params: serde_json::Value,
    units: u64,
    run: impl FnOnce(&Progress, &mut dyn FnMut(Point) -> Result<()>) -> Result<bool>,
) -> Result<Outcome> {
    let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    params["variants"] = serde_json::json!(names);
    params["rtm"] = locklab_kernel::cc::rtm_available().into();
    let progress = Progress::new(units, ctx.progress_quiet());
    let r = stored_run(ctx, &format!("bench {bench}"), params, &progress, |sink| {
        run(&progress, sink)
    });
    progress.finish();
    r
}

/// A kernel concurrency control the lab can build by type; `choice` is the
/// elision policy, which only the elided big lock reads (it is chosen when
/// the kernel is made, so that `elide(L)` and `elide-adaptive(L)` share one
/// compiled kernel: [`EitherPolicy`]).
pub trait Variant: Concurrency + Sized {
    /// The control, ready to boot a kernel.
    fn make(choice: PolicyChoice) -> Self;
}

impl Variant for NoLock {
    fn make(_: PolicyChoice) -> Self {
        NoLock
    }
}

impl Variant for Fine {
    fn make(_: PolicyChoice) -> Self {
        Fine::new()
    }
}

impl<M> Variant for Bkl<M>
where
    M: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
{
    fn make(_: PolicyChoice) -> Self {
        Bkl::new(M::INFO.name)
    }
}

impl<M> Variant for Elide<M, EitherPolicy>
where
    M: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
{
    fn make(choice: PolicyChoice) -> Self {
        Elide::chosen(M::INFO.name, choice)
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

/// The kernel's big lock over one of locklab's own mutexes: plain and
/// elided. Peers have none: their guards borrow the mutex, and the kernel's
/// lock is taken and released in different places.
struct BigLock<F> {
    /// `bkl(name)`.
    bkl: F,
    /// `elide(name)` and `elide-adaptive(name)`, with the policy chosen.
    elide: F,
}

/// The big lock over locklab's own mutex `name`, monomorphized by the
/// registry's visitor for study `K`.
fn big_lock<K: KernelRun>(name: &str) -> Option<BigLock<K::Run>> {
    struct Own<'a, K: KernelRun>(&'a str, Option<BigLock<K::Run>>);
    impl<K: KernelRun> crate::core::registry::MutexVisitor for Own<'_, K> {
        fn visit<L: crate::core::lablock::LabMutex>(&mut self, _: locklab::LockInfo, _: bool) {}
        fn own<R>(&mut self)
        where
            R: lock_api::RawMutex + locklab::Described + Send + Sync + 'static,
        {
            if R::INFO.name == self.0 && self.1.is_none() {
                self.1 = Some(BigLock {
                    bkl: K::of::<Bkl<R>>(),
                    elide: K::of::<Elide<R, EitherPolicy>>(),
                });
            }
        }
    }
    let mut v = Own::<K>(name, None);
    crate::core::registry::visit_mutexes(&mut v);
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
    /// The elision policy `run` makes its kernel with (read by the elided
    /// big lock only).
    pub choice: PolicyChoice,
    /// Whether it elides its lock with hardware transactions.
    pub elides: bool,
}

/// The variant without synchronization (`--variants none`): every study's
/// yardstick, valid only where no two cores share a kernel object.
pub const NONE: &str = "none";

/// The big lock when a variant names none.
pub const DEFAULT_LOCK: &str = "clh";

/// Every variant name, for messages.
pub const VARIANT_NAMES: &str =
    "none, bkl, bkl(LOCK), fine, elide, elide(LOCK), elide-adaptive, elide-adaptive(LOCK)";

/// Parses `--variants`: `all` or comma-separated names (duplicates dropped,
/// order kept); `bkl`, `elide` and `elide-adaptive` take a mutex of the
/// library in parentheses (default clh). `K` says what the study runs each
/// variant with.
pub fn parse_variants_for<K: KernelRun>(list: &str) -> Result<Vec<KernelVariant<K::Run>>> {
    let mut out: Vec<KernelVariant<K::Run>> = Vec::new();
    let names = crate::core::args::name_items(list).ok_or_else(|| {
        LabError::input(format!(
            "--variants '{list}': empty name in the list; variants: all, {VARIANT_NAMES}"
        ))
    })?;
    for name in names {
        let picked = match name {
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
                choice: PolicyChoice::Fixed,
                elides: false,
            })
        }
    };
    match kind {
        "none" => simple(K::of::<NoLock>()),
        "fine" => simple(K::of::<Fine>()),
        "bkl" | "elide" | "elide-adaptive" => {
            let l = lock.unwrap_or(DEFAULT_LOCK);
            let e = crate::core::locks::find(l)
                .map_err(|e| LabError::input(format!("kernel variant '{name}': {}", e.msg)))?;
            let own = big_lock::<K>(e.info.name);
            let run = own.map(|b| if kind == "bkl" { b.bkl } else { b.elide });
            let run = run.ok_or_else(|| {
                let what = if e.delegates {
                    "is a delegation lock, which runs closures and has no lock and unlock to call"
                } else {
                    "is a peer whose guard borrows its mutex"
                };
                LabError::input(format!(
                    "kernel variant '{name}': {l} {what}; the kernel's big lock, taken and released \
                     in different places, must be one of locklab's own mutexes that lock and unlock \
                     (`locklab locks`: neither a peer nor of family delegation)"
                ))
            })?;
            Ok(KernelVariant {
                name: format!("{kind}({l})"),
                run,
                choice: if kind == "elide-adaptive" {
                    PolicyChoice::Adaptive
                } else {
                    PolicyChoice::Fixed
                },
                elides: kind != "bkl",
            })
        }
        _ => Err(LabError::input(format!(
            "unknown kernel variant '{name}'; variants: all, {VARIANT_NAMES}"
        ))),
    }
}

/// What one window measured of a running kernel.
#[derive(Debug, Clone)]
pub struct Windowed<T> {
    /// The window.
    pub span: Span,
    /// The interval the samples cover: from the reads at the opening to
    /// the reads at the closing, ticks (the window's instants, plus however
    /// late the controller got to read).
    pub ticks: u64,
    /// The same in seconds: what throughputs divide by.
    pub wall_s: f64,
    /// Per core: busy time over the window, in [0, 1].
    pub utilisation: Vec<f64>,
    /// Per core: the kernel's counters over the window.
    pub per_core: Vec<CoreStats>,
    /// What `sample` gave at the opening and at the closing.
    pub samples: (T, T),
}

/// Runs `sys` on `k` and measures one window of `secs` (after a settle
/// period): each core's idle time, the kernel's counters and `sample()`
/// (the study's own counters) are read at the window's two instants.
/// Everything divides by the interval the reads cover, the time between
/// the two sets of reads (each set read back to back, the idle clocks
/// first), so a controller that reads late (preempted on a busy machine)
/// shifts numerators and denominator alike, and throughput and
/// utilisation share one window. Returns what the run left for the
/// checker too.
pub fn windowed<C: locklab_kernel::cc::Concurrency, T: Default>(
    k: &Arc<Kernel<C>>,
    sys: &System,
    secs: f64,
    pin: bool,
    sample: impl Fn() -> T,
) -> std::result::Result<(Windowed<T>, locklab_kernel::RunResult), String> {
    // Every emulated core's thread enters the window before its loop, so
    // the window opens only when every core runs, after the settle period.
    let window = Arc::new(Window::new(sys.cores as usize));
    let (w, run) = k
        .run(
            sys.programs(),
            core_start(&window, pin),
            Duration::from_secs(10),
            |m| drive_window(m, &window, secs, &sample),
        )
        .map_err(|h| format!("{}: {h}", k.variant()))?;
    Ok((w, run))
}

/// What each emulated core's thread runs first in [`windowed`]: pins it
/// (if asked) and enters the window.
fn core_start(window: &Arc<Window>, pin: bool) -> Arc<dyn Fn(u32) + Send + Sync> {
    let ncpu = crate::core::machine::cpus();
    let window = Arc::clone(window);
    Arc::new(move |core: u32| {
        if pin {
            crate::core::machine::pin(core as usize % ncpu);
        }
        window.enter_thread(core as usize);
    })
}

/// The controller's part of [`windowed`], while the cores run: opens and
/// closes the window, reading the idle clocks, the kernel's counters and
/// `sample` at both instants. Not generic over the kernel's variant, so it
/// is compiled once per study rather than once per variant.
fn drive_window<T: Default>(
    m: &Monitor,
    window: &Window,
    secs: f64,
    sample: &dyn Fn() -> T,
) -> Windowed<T> {
    let (mut s0, mut s1) = (Vec::new(), Vec::new());
    let (mut i0, mut i1) = (Vec::new(), Vec::new());
    let (mut c0, mut c1) = (T::default(), T::default());
    let (mut h0, mut h1) = (0u64, 0u64);
    let span = window.measure(
        settle_for(secs),
        secs,
        Hooks {
            at_open: Some(&mut || {
                h0 = crate::core::clock::ticks();
                i0 = m.idle();
                s0 = m.per_core();
                c0 = sample();
            }),
            at_close: Some(&mut || {
                h1 = crate::core::clock::ticks();
                i1 = m.idle();
                s1 = m.per_core();
                c1 = sample();
            }),
            during: None,
        },
    );
    let ticks = h1.saturating_sub(h0);
    let utilisation = i0
        .iter()
        .zip(&i1)
        .map(|(a, b)| {
            // Busy over the interval the counts cover, so that
            // utilisation and throughput share their window.
            let idle = IdleSpan::between(*a, *b).idle;
            IdleSpan { ticks, idle }.utilisation()
        })
        .collect();
    let per_core = s1.iter().zip(&s0).map(|(a, b)| a.minus(*b)).collect();
    Windowed {
        span,
        ticks,
        wall_s: crate::core::clock::ticks_to_s(ticks),
        utilisation,
        per_core,
        samples: (c0, c1),
    }
}

/// The checks after a repetition: the kernel's invariants, then what the
/// programs of the run left (`what` names them in the message, e.g. "IPC
/// results").
pub fn check_run<C: locklab_kernel::cc::Concurrency>(
    k: &Kernel<C>,
    run: &locklab_kernel::RunResult,
    what: &str,
) -> std::result::Result<(), String> {
    let v = locklab_kernel::check::check_kernel(k);
    if !v.is_empty() {
        return Err(format!("{}: kernel invariants broken: {v}", k.variant()));
    }
    let v = locklab_kernel::check::check_programs(k, run);
    if !v.is_empty() {
        return Err(format!("{}: {what} wrong: {v}", k.variant()));
    }
    Ok(())
}

/// What the elision variants' kernel entries did, summed over repetitions
/// (and points).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Elision {
    /// Kernel entries run as hardware transactions.
    pub elided: u64,
    /// Kernel entries that took the fall-back lock.
    pub fallbacks: u64,
    /// Transactions aborted.
    pub aborts: u64,
    /// Fall-backs taken without attempting (the adaptive policy).
    pub skipped: u64,
    /// Aborts by cause: conflict, capacity, lock busy, retry bit clear,
    /// other (`crate::core::report::abort_causes_text`).
    pub causes: [u64; 5],
}

impl Elision {
    /// Field-wise sum.
    pub fn plus(self, o: Self) -> Self {
        Elision {
            elided: self.elided + o.elided,
            fallbacks: self.fallbacks + o.fallbacks,
            aborts: self.aborts + o.aborts,
            skipped: self.skipped + o.skipped,
            causes: std::array::from_fn(|i| self.causes[i] + o.causes[i]),
        }
    }

    /// In words, in two halves: the entries (with those `skipped` without
    /// attempting when `show_skipped`), and the aborts by cause (and that
    /// only the fall-back path ran, if so).
    pub fn words(&self, show_skipped: bool) -> (String, String) {
        let skipped = if show_skipped {
            format!(" ({} without attempting)", self.skipped)
        } else {
            String::new()
        };
        let causes = if self.aborts == 0 {
            String::new()
        } else {
            crate::core::report::abort_causes_text(self.aborts, self.causes)
                .map_or_else(String::new, |c| format!(" ({c})"))
        };
        let path = if self.elided == 0 {
            " — it ran the fall-back path only"
        } else {
            ""
        };
        (
            format!(
                "{} kernel entries ran as transactions, {} on the fall-back lock{skipped}",
                self.elided, self.fallbacks
            ),
            format!("{} aborts{causes}{path}", self.aborts),
        )
    }

    /// The aborts by cause as a JSON object.
    pub fn causes_json(&self) -> serde_json::Value {
        let c = self.causes;
        serde_json::json!({
            "conflict": c[0],
            "capacity": c[1],
            "lock_busy": c[2],
            "retry_clear": c[3],
            "other": c[4],
        })
    }
}

/// A big lock keeps up with its yardstick (`none`, or the best variant)
/// while its throughput is at least this fraction of the yardstick's.
pub const KEEPS_UP: f64 = 0.9;

/// The verdict's line "big lock vs `yardstick`" for big-lock `variant`:
/// where it stops keeping up with its yardstick over `cores` (ascending),
/// the first core count where `ratio_at` (its throughput over the
/// yardstick's, where both were measured) is under [`KEEPS_UP`]; `whose`
/// names the yardstick's throughput, e.g. "none's". `json` (an object)
/// gets the variant and that core count.
pub fn keeps_up(
    variant: &str,
    yardstick: &str,
    whose: &str,
    cores: &[u32],
    ratio_at: impl Fn(u32) -> Option<f64>,
    mut json: serde_json::Value,
) -> Line {
    let top = cores.last().copied().unwrap_or(0);
    let falls = cores
        .iter()
        .copied()
        .find(|&c| ratio_at(c).is_some_and(|r| r < KEEPS_UP));
    let measured: Vec<String> = cores
        .iter()
        .filter_map(|&c| Some(format!("{} at {c}", crate::core::stats::sig3(ratio_at(c)?))))
        .collect();
    let answer = match falls {
        Some(c) => format!("falls behind at {c} cores"),
        None => format!("keeps up to {top} cores"),
    };
    let evidence = format!(
        "keeping up: at least {:.0} % of {whose} throughput; measured {}",
        KEEPS_UP * 100.0,
        measured.join(", ")
    );
    json["variant"] = variant.into();
    json["falls_behind_at_cores"] = serde_json::json!(falls);
    Line {
        group: format!("big lock vs {yardstick}"),
        question: variant.to_string(),
        answer,
        evidence,
        json,
    }
}

/// Whether a chart of throughput shows `y`: finite, and above zero on a
/// log scale.
pub fn shown(y: f64, log_y: bool) -> bool {
    y.is_finite() && (!log_y || y > 0.0)
}

/// The throughput axis of a chart of `bench ipc` or `bench kv`.
pub struct RateAxis {
    /// What the values are divided by for the axis.
    pub scale: f64,
    /// The unit after that division, e.g. "M IPC/s".
    pub unit: String,
    /// The axis' ends, in the unit.
    pub lo: f64,
    /// See `lo`.
    pub hi: f64,
}

/// The axis over the values `ys` (per second) of a chart, of which those
/// [`shown`] count; `what` names the operations in the unit ("IPC",
/// "req"). `None` if none is above zero.
pub fn rate_axis(ys: impl Iterator<Item = f64>, log_y: bool, what: &str) -> Option<RateAxis> {
    let (lo, hi) = ys
        .filter(|&y| shown(y, log_y))
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
    if hi <= 0.0 {
        return None;
    }
    let (scale, unit) = crate::core::report::throughput_unit(hi);
    let unit = unit.replace("ops", what);
    let (lo, hi) = if log_y {
        (lo / scale / 1.6, hi / scale * 1.6)
    } else {
        (0.0, hi / scale * 1.08)
    };
    Some(RateAxis {
        scale,
        unit,
        lo,
        hi,
    })
}

/// A point of `bench` for the verdicts' tests: `lock` at `cores`, one
/// repetition per rate (operations per second over one second).
#[cfg(test)]
pub(crate) fn test_point(
    bench: &str,
    lock: &str,
    cores: u32,
    params: serde_json::Value,
    rates: &[f64],
) -> Point {
    Point {
        bench: bench.into(),
        lock: lock.into(),
        threads: cores,
        params,
        reps: rates
            .iter()
            .enumerate()
            .map(|(i, r)| Rep::one_thread(i as u32, 1.0, 1.0, *r as u64))
            .collect(),
    }
}
