//! The command line: parsing and validation of every value, with messages
//! that name the bad value and what is allowed.

use crate::bench::workload::DelayDist;
use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Most threads a benchmark or torture may start (oversubscription is the point, up to a limit).
pub const MAX_THREADS: u32 = 256;
/// Longest critical-section work or delay, ns (one second).
pub const MAX_NS: u64 = 1_000_000_000;
/// Longest measured time per repetition, seconds.
pub const MAX_SECS: f64 = 3600.0;
/// Most cores `model` predicts for or fits (the models go further, but a
/// list up to this solves in well under a second).
pub const MODEL_MAX_CORES: u32 = 10_000;

/// locklab: lock algorithms measured on your machine.
#[derive(Debug, Parser)]
#[command(name = "locklab", version, about, long_about = None)]
pub struct Cli {
    /// Results database (SQLite; created if absent).
    #[arg(long, global = true, value_name = "PATH", default_value = "locklab.db")]
    pub db: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
    pub json: bool,
    /// No progress on stderr (a bar on a terminal, otherwise a line every
    /// few seconds); `--json` implies it.
    #[arg(long, short = 'q', global = true)]
    pub quiet: bool,
    /// Command to run.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Run benchmarks; alone, the standard quick suite (uncontended, spin, lhp, and a short hash-table study).
    Bench(BenchArgs),
    /// Check that locks exclude and never hang: many threads on non-atomic shadow data.
    Torture(TortureArgs),
    /// List the locks and peers with their metadata.
    Locks,
    /// List stored runs.
    Runs,
    /// Show one stored run (id or `last`).
    Show {
        /// Run id, or `last`.
        #[arg(value_parser = parse_run)]
        run: RunRef,
    },
    /// Queueing models of a lock: predict throughput from a service time and a delay, or fit them to a measured curve.
    Model(ModelArgs),
    /// Simulators: `sim lhp` simulates lock-holder preemption in VMs under host scheduling policies (seed 004).
    Sim(SimArgs),
    /// Plot a run's throughput against threads to an SVG file.
    Plot {
        /// Run id, or `last`.
        #[arg(value_parser = parse_run)]
        run: RunRef,
        /// Output SVG file.
        #[arg(long, value_name = "FILE.svg")]
        out: PathBuf,
        /// Logarithmic throughput axis.
        #[arg(long)]
        log: bool,
        /// Which points: `spin`, `lhp`, `hash`, `ipc` or `sim-lhp` (default:
        /// the first the run has). `hash` draws lookups against threads at 0 %
        /// updates and throughput against the update fraction; `ipc` draws IPC
        /// throughput against cores with the fitted queueing model; `sim-lhp`
        /// draws a `sim lhp` run's normalized throughput per policy.
        #[arg(long, value_parser = ["spin", "lhp", "hash", "ipc", "sim-lhp"])]
        bench: Option<String>,
    },
}

/// `bench` and its kinds.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmark; none runs the standard quick suite.
    #[command(subcommand)]
    pub kind: Option<BenchKind>,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchKind {
    /// Contention: threads take one lock in a loop with work inside and a delay outside.
    Spin(SpinArgs),
    /// One thread: ns per acquire+release, against the atomic floor.
    Uncontended(UncontendedArgs),
    /// Lock-holder preemption: the spin benchmark at one thread and 1, 2, 4, 8 × the cores, with each lock's preemption sensitivity.
    Lhp(LhpArgs),
    /// Hash-table lookups and updates under each synchronization strategy (seed 003: spinlocks, rwlocks, refcounts, brlock, seqlock, RCU-style peers).
    Hash(HashArgs),
    /// The emulated microkernel's IPC path under each kernel concurrency control (seeds 000 and 002: none, big lock, fine-grained, elided).
    Ipc(IpcArgs),
}

/// Parameters of `bench ipc`.
#[derive(Debug, Args)]
pub struct IpcArgs {
    /// Kernel variants: `all`, or comma-separated names: none, bkl, fine,
    /// elide; bkl and elide take a mutex of the library in parentheses,
    /// e.g. bkl(ticket) (default clh). Default: none, bkl, fine, and elide
    /// where the CPU has RTM.
    #[arg(long)]
    pub variants: Option<String>,
    /// Measurements: `all`, or comma-separated: single (one-way IPC cost on
    /// one core), multi (a ping-pong pair per core), shared (every client
    /// calls one endpoint), hold (kernel critical-section lengths).
    #[arg(long, value_parser = parse_modes, default_value = "all")]
    pub modes: ModeList,
    /// Emulated core counts for multi, shared and hold, like 1,2,4 or 1-4
    /// (default: 1 up to the CPUs this process may use).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_emulated_cores)]
    pub cores: Option<CoreList>,
    /// Mean exponential delay a server works between receiving and
    /// replying, ns, comma-separated (default 0,250,1000,4000); multi
    /// sweeps them, shared and hold use the first, single none.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns_list)]
    pub delay_ns: Option<NsList>,
    /// Context-switch hardware work (page-table and segment loads), ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "30")]
    pub switch_ns: u64,
    /// Do the context-switch work inside the kernel's critical section
    /// (seed 002 moved it out; this shows what that saved).
    #[arg(long)]
    pub switch_inside: bool,
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

/// Most emulated cores `bench ipc` starts.
pub const MAX_CORES: u32 = 64;

/// A validated list of `bench ipc` measurements, in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModeList(pub Vec<crate::bench::ipc::Mode>);

fn parse_modes(s: &str) -> Result<ModeList, String> {
    use crate::bench::ipc::Mode;
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim) {
        let add: Vec<Mode> = if part == "all" {
            Mode::ALL.to_vec()
        } else {
            vec![Mode::from_name(part).ok_or_else(|| {
                format!("'{part}' is not a measurement: allowed all, single, multi, shared, hold")
            })?]
        };
        for m in add {
            if !v.contains(&m) {
                v.push(m);
            }
        }
    }
    Ok(ModeList(v))
}

/// A validated list of durations in ns, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NsList(pub Vec<u64>);

fn parse_ns_list(s: &str) -> Result<NsList, String> {
    sorted_list(s, |p| parse_ns(p.trim())).map(NsList)
}

/// A comma-separated list, each item parsed by `one`, ascending, without
/// duplicates.
fn sorted_list<T: Ord>(s: &str, one: impl Fn(&str) -> Result<T, String>) -> Result<Vec<T>, String> {
    let mut v = s.split(',').map(one).collect::<Result<Vec<T>, String>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// Parameters of `bench hash`.
#[derive(Debug, Args)]
pub struct HashArgs {
    /// Strategies: `all`, or comma-separated names; global-rw and bucket-rw
    /// take a reader-writer lock in parentheses, e.g. bucket-rw(rw-fair)
    /// (default rw-fair). Names: none, global-spin, bucket-spin,
    /// global-rw(L), bucket-rw(L), refcnt, brlock, seqlock, rcu, rcu-qsbr,
    /// crossbeam-epoch, dashmap, liburcu, liburcu-qsbr.
    #[arg(long, default_value = "all")]
    pub strategies: String,
    /// Thread counts, comma-separated (up to 256).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_threads, default_value = "1,2,4")]
    pub threads: ThreadList,
    /// Percentages of operations that are updates, comma-separated (each 0 to 100).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_pcts, default_value = "0,10,33,50,100")]
    pub update_pct: PctList,
    /// Buckets of the table.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_buckets, default_value = "1024")]
    pub buckets: u64,
    /// Distinct keys (default: buckets × chain).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_keys)]
    pub keys: Option<u64>,
    /// Elements per bucket (default: keys / buckets, or 1 without --keys).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_chain)]
    pub chain: Option<u64>,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.3")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
    /// Pin thread i to CPU i mod cores.
    #[arg(long)]
    pub pin: bool,
}

/// `model` and its kinds.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// What to do with the model.
    #[command(subcommand)]
    pub kind: ModelKind,
}

/// The model commands.
#[derive(Debug, Subcommand)]
pub enum ModelKind {
    /// Throughput, queue length and utilisation of N cores on one lock, with the knee and the cores that reach 95 % of the peak.
    Predict(PredictArgs),
    /// Fit the machine-repairman model's service time S and delay Z to measured (cores, throughput) points.
    Fit(FitArgs),
}

/// Which queueing model `model predict` solves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelName {
    /// The machine-repairman model of a big lock (seed 002): service time S whatever the queue.
    Repairman,
    /// The ticket-lock collapse model (Boyd-Wickizer et al. 2012): service time S + C·k with k cores at the lock.
    Ticket,
}

/// Parameters of `model predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// Service time S: how long one acquisition holds the lock (any time unit, e.g. cycles; more than 0).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_service)]
    pub service: f64,
    /// Mean delay Z a core spends outside the lock between acquisitions (same unit; 0 or more).
    #[arg(long, value_name = "Z", allow_negative_numbers = true, value_parser = parse_delay)]
    pub delay: f64,
    /// Core counts: a list and ranges, e.g. 1,2,4,8 or 1-28 or 1-4,8,16 (each 1 to 10000).
    #[arg(long, value_name = "LIST", allow_negative_numbers = true, value_parser = parse_cores)]
    pub cores: CoreList,
    /// The model.
    #[arg(long, value_enum, default_value = "repairman")]
    pub model: ModelName,
    /// With --model ticket: the hand-off cost C each core at the lock adds to S (same unit; 0 or more).
    #[arg(long, value_name = "C", allow_negative_numbers = true, value_parser = parse_handoff)]
    pub handoff: Option<f64>,
}

/// Parameters of `model fit`. The measured points come from exactly one
/// source (the `source` group): a CSV file or a stored `bench ipc` run.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["csv", "run"])))]
pub struct FitArgs {
    /// A stored `bench ipc` run (id or `last`): its multi ping-pong curve of
    /// one variant at one delay, throughput in IPCs per ns, so S and Z come
    /// out in ns (and in TSC cycles).
    #[arg(long, value_parser = parse_run)]
    pub run: Option<RunRef>,
    /// With --run: the kernel variant (default: the run's first bkl(...)).
    #[arg(long)]
    pub variant: Option<String>,
    /// With --run: the server delay of the curve, ns (needed when the run
    /// measured several).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns)]
    pub delay_ns: Option<u64>,
    /// CSV file of measured points, one `cores,throughput` per line (a header line and `#` comments are allowed); throughput in acquisitions per time unit.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Fit only the points of the K smallest core counts (seed 002 fitted the first 14 of 28: one socket).
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = parse_first)]
    pub first: Option<usize>,
    /// Fix the delay Z at this value (in the unit the throughput is per) and fit S alone.
    #[arg(long, value_name = "Z", allow_negative_numbers = true, value_parser = parse_delay)]
    pub delay: Option<f64>,
}

/// A validated list of core counts, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreList(pub Vec<u32>);

/// A positive, finite time in the caller's unit.
fn parse_positive_time(s: &str, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        Ok(_) => Err(format!(
            "{what} '{}' is out of range: allowed a finite number greater than 0",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a {what}: allowed a finite number greater than 0",
            s.trim()
        )),
    }
}

/// A finite time of 0 or more in the caller's unit.
fn parse_time_or_zero(s: &str, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err(format!(
            "{what} '{}' is out of range: allowed a finite number of 0 or more",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a {what}: allowed a finite number of 0 or more",
            s.trim()
        )),
    }
}

fn parse_service(s: &str) -> Result<f64, String> {
    parse_positive_time(s, "service time")
}

fn parse_delay(s: &str) -> Result<f64, String> {
    parse_time_or_zero(s, "delay")
}

fn parse_handoff(s: &str) -> Result<f64, String> {
    parse_time_or_zero(s, "hand-off cost")
}

fn parse_first(s: &str) -> Result<usize, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => usize::try_from(n).map_err(|_| format!("{n} core counts is too many")),
        _ => Err(format!(
            "'{}' core counts: allowed a whole number of 1 or more",
            s.trim()
        )),
    }
}

fn parse_core_count(s: &str, max: u32) -> Result<u32, String> {
    let s = s.trim();
    match s.parse::<u64>() {
        Ok(n) if (1..=u64::from(max)).contains(&n) => Ok(n as u32),
        Ok(n) => Err(format!("{n} cores is out of range: allowed 1 to {max}")),
        Err(_) => Err(format!(
            "'{s}' is not a number of cores: allowed 1 to {max}, \
             in lists like 1,2,4 and ranges like 1-28"
        )),
    }
}

/// Core counts for the models (up to [`MODEL_MAX_CORES`]).
fn parse_cores(s: &str) -> Result<CoreList, String> {
    parse_core_list(s, MODEL_MAX_CORES)
}

/// Emulated cores for `bench ipc` (up to [`MAX_CORES`]).
fn parse_emulated_cores(s: &str) -> Result<CoreList, String> {
    parse_core_list(s, MAX_CORES)
}

/// A list of core counts and ranges, each 1 to `max`, ascending, without
/// duplicates.
fn parse_core_list(s: &str, max: u32) -> Result<CoreList, String> {
    if s.trim().is_empty() {
        return Err(
            "an empty list of cores: give counts like 1,2,4 or ranges like 1-28".to_string(),
        );
    }
    let mut v = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((lo, hi)) if !lo.trim().is_empty() => {
                let (lo, hi) = (parse_core_count(lo, max)?, parse_core_count(hi, max)?);
                if lo > hi {
                    return Err(format!(
                        "'{part}' is a range from high to low: allowed LOW-HIGH, e.g. {hi}-{lo}"
                    ));
                }
                v.extend(lo..=hi);
            }
            _ => v.push(parse_core_count(part, max)?),
        }
    }
    v.sort_unstable();
    v.dedup();
    Ok(CoreList(v))
}

/// A validated list of percentages, ascending, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PctList(pub Vec<u32>);

fn parse_pcts(s: &str) -> Result<PctList, String> {
    sorted_list(s, parse_pct).map(PctList)
}

fn parse_count(s: &str, what: &str, max: u64) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        Ok(n) => Err(format!("{n} {what} is out of range: allowed 1 to {max}")),
        Err(_) => Err(format!(
            "'{}' is not a number of {what}: allowed 1 to {max}",
            s.trim()
        )),
    }
}

fn parse_buckets(s: &str) -> Result<u64, String> {
    parse_count(s, "buckets", crate::bench::hash::MAX_BUCKETS)
}

fn parse_keys(s: &str) -> Result<u64, String> {
    parse_count(s, "keys", crate::bench::hash::MAX_KEYS)
}

fn parse_chain(s: &str) -> Result<u64, String> {
    parse_count(s, "elements per bucket", crate::bench::hash::MAX_KEYS)
}

/// The workload options `bench spin` and `bench lhp` share (their delay
/// and duration defaults differ, so those stay with each command).
#[derive(Debug, Args)]
pub struct Workload {
    /// Busy work inside the critical section, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "100")]
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_lines, default_value = "1")]
    pub cs_lines: usize,
    /// Distribution of the delay (default exp; only with a delay: --delay-ns more than 0).
    #[arg(long, value_enum)]
    pub delay_dist: Option<DelayDist>,
    /// Pin thread i to CPU i mod cores.
    #[arg(long)]
    pub pin: bool,
    /// Every N acquisitions, each thread blocks inside its critical section
    /// for --stall-ns (a holder off its CPU); 0 = never.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_stall_every, default_value = "0")]
    pub stall_every: u64,
    /// How long a stalled holder blocks, ns (with --stall-every; default 50000).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns)]
    pub stall_ns: Option<u64>,
}

/// Parameters of `bench lhp`.
#[derive(Debug, Args)]
pub struct LhpArgs {
    /// Locks: comma-separated names or `all` (see `locklab locks`).
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Thread counts as multiples of the cores, comma-separated (one thread is always measured too).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_multiples, default_value = "1,2,4,8")]
    pub multiples: ThreadList,
    #[command(flatten)]
    pub work: Workload,
    /// Mean delay between acquisitions, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "0")]
    pub delay_ns: u64,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.5")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}

/// Parameters of `bench spin`.
#[derive(Debug, Args)]
pub struct SpinArgs {
    /// Locks: comma-separated names or `all` (see `locklab locks`).
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Thread counts, comma-separated (oversubscription allowed, up to 256).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_threads, default_value = "1,2,4,8")]
    pub threads: ThreadList,
    #[command(flatten)]
    pub work: Workload,
    /// Mean delay between acquisitions, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "200")]
    pub delay_ns: u64,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "1")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}

/// Parameters of `bench uncontended`.
#[derive(Debug, Args)]
pub struct UncontendedArgs {
    /// Locks: comma-separated names or `all`.
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Target seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.2")]
    pub secs: f64,
    /// Repetitions per lock.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}

/// Parameters of `torture`.
#[derive(Debug, Args)]
pub struct TortureArgs {
    /// Torture RCU instead of locks, in the manner of Linux's rcutorture
    /// (`--locks` then names RCU flavours: rcu, rcu-qsbr, rcu-fenced).
    #[arg(long)]
    pub rcu: bool,
    /// Locks (or with --rcu, RCU flavours): comma-separated names or `all` (the default).
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Threads (default: 4 × cores); with --rcu, reader threads (default: 2 × cores).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_thread_count)]
    pub threads: Option<u32>,
    /// Seconds per lock or flavour (default: 1, with --rcu 5).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs)]
    pub secs: Option<f64>,
    /// Seconds without progress before a run counts as hung (1 to 3600).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_watchdog, default_value = "10")]
    pub watchdog: f64,
    /// Reader-writer locks: percentage of operations that read, 0 to 100 (default 80; not with --rcu).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_pct)]
    pub read_pct: Option<u32>,
}

/// `sim` and its kinds.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Which simulator.
    #[command(subcommand)]
    pub kind: SimKind,
}

/// The simulators.
#[derive(Debug, Subcommand)]
pub enum SimKind {
    /// Lock-holder preemption in VMs: seed 004's experiments (or a scenario
    /// file) simulated under each host policy, one row per policy.
    Lhp(SimLhpArgs),
}

/// Parameters of `sim lhp`. What is simulated comes from at most one of
/// `--experiment` (default `performance`) and `--config`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("what").args(["experiment", "config"])))]
pub struct SimLhpArgs {
    /// One of seed 004's experiments: fairness (1 hackbench VM beside 4 pi
    /// VMs), performance (4 oltp VMs), latency (7 oltp VMs and one request
    /// VM), scalability (1 to --max-vms oltp VMs). Default: performance.
    #[arg(long, value_name = "NAME", value_parser = parse_experiment)]
    pub experiment: Option<Experiment>,
    /// A scenario file (TOML; see docs/lhp.md, "Scenario files") instead of
    /// an experiment. --policies, --secs, --warmup-secs and --seed override
    /// the file's values.
    #[arg(long, value_name = "FILE.toml")]
    pub config: Option<PathBuf>,
    /// Host policies: `all` or comma-separated names (none, yth, ytt, itcs,
    /// sitcs, dtcs, kvm-dy, pv); `none` is always simulated, as the
    /// speed-ups refer to it. Default: all.
    #[arg(long, value_name = "LIST", value_parser = parse_policies)]
    pub policies: Option<PolicyList>,
    /// Physical CPUs of the simulated host (default 8, seed 004's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_pcpus)]
    pub pcpus: Option<u32>,
    /// vCPUs per VM (default 8, seed 004's).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_vcpus)]
    pub vcpus: Option<u32>,
    /// Guest spin lock algorithm: ticket (default) or tas.
    #[arg(long, value_parser = parse_lock_kind)]
    pub lock: Option<LockKind>,
    /// Pause-loop exiting: `seed` (seed 004's fixed window: gap 128, window
    /// 2048 cycles; the default) or `kvm` (today's KVM: window 4096,
    /// growing ×2 per exit, reset when scheduled in).
    #[arg(long, value_parser = parse_ple)]
    pub ple: Option<PleChoice>,
    /// Largest VM count of `--experiment scalability` (default 8).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_max_vms)]
    pub max_vms: Option<u32>,
    /// Simulated seconds measured per simulation (default 1).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_sim_secs)]
    pub secs: Option<f64>,
    /// Simulated seconds of warm-up per simulation, not measured (default 0.2).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_warmup_secs)]
    pub warmup_secs: Option<f64>,
    /// Seed of the first repetition; repetition r uses seed + r (default 1).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_seed)]
    pub seed: Option<u64>,
    /// Repetitions of the whole experiment, each with its own seed.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "1")]
    pub reps: u32,
    /// Worker threads running simulations side by side (each simulation is
    /// single-threaded; default: the CPUs this process may use).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_thread_count)]
    pub threads: Option<u32>,
}

pub use locklab_model::lhp::{Experiment, LockKind, Policy};

/// `--ple`: which pause-loop exiting the host has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PleChoice {
    /// Seed 004's fixed window (gap 128, window 2048 cycles).
    Seed,
    /// Today's KVM adaptive window.
    Kvm,
}

impl PleChoice {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PleChoice::Seed => "seed",
            PleChoice::Kvm => "kvm",
        }
    }

    /// The pause-loop exiting it stands for.
    pub fn ple(self) -> locklab_model::lhp::Ple {
        match self {
            PleChoice::Seed => locklab_model::lhp::Ple::seed004(),
            PleChoice::Kvm => locklab_model::lhp::Ple::kvm(),
        }
    }
}

/// A validated list of host policies, in the order given, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyList(pub Vec<Policy>);

/// Most VMs of `sim lhp --experiment scalability`.
pub const MAX_SIM_VMS: u32 = 256;
/// Most vCPUs per VM on the command line.
pub const MAX_SIM_VCPUS: u32 = 1024;
/// Longest simulated time per simulation, seconds (the simulator's limit:
/// measured time plus warm-up at most one simulated hour).
pub const MAX_SIM_SECS: f64 = 3600.0;

fn parse_experiment(s: &str) -> Result<Experiment, String> {
    Experiment::from_name(s.trim()).ok_or_else(|| {
        format!(
            "'{}' is not an experiment: allowed {}",
            s.trim(),
            Experiment::ALL.map(Experiment::name).join(", ")
        )
    })
}

/// Policy names (and `all`), comma-separated, into a list in the order
/// given without duplicates.
pub fn parse_policies(s: &str) -> Result<PolicyList, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim) {
        let add: Vec<Policy> = if part == "all" {
            Policy::ALL.to_vec()
        } else if part.is_empty() {
            return Err(format!(
                "'{s}' has an empty policy name: allowed all or a list of {}",
                Policy::names()
            ));
        } else {
            vec![Policy::from_name(part).ok_or_else(|| {
                format!("'{part}' is not a policy: allowed all, {}", Policy::names())
            })?]
        };
        for p in add {
            if !v.contains(&p) {
                v.push(p);
            }
        }
    }
    Ok(PolicyList(v))
}

fn parse_lock_kind(s: &str) -> Result<LockKind, String> {
    LockKind::from_name(s.trim()).ok_or_else(|| {
        format!(
            "'{}' is not a guest lock: allowed {}",
            s.trim(),
            LockKind::ALL.map(LockKind::name).join(", ")
        )
    })
}

fn parse_ple(s: &str) -> Result<PleChoice, String> {
    match s.trim() {
        "seed" => Ok(PleChoice::Seed),
        "kvm" => Ok(PleChoice::Kvm),
        other => Err(format!(
            "'{other}' is not a pause-loop exiting: allowed seed (fixed window 2048 cycles) or kvm (adaptive)"
        )),
    }
}

fn parse_pcpus(s: &str) -> Result<u32, String> {
    let max = locklab_model::lhp::config::MAX_PCPUS;
    parse_count(s, "pCPUs", u64::from(max)).map(|n| n as u32)
}

fn parse_vcpus(s: &str) -> Result<u32, String> {
    parse_count(s, "vCPUs per VM", u64::from(MAX_SIM_VCPUS)).map(|n| n as u32)
}

fn parse_max_vms(s: &str) -> Result<u32, String> {
    parse_count(s, "VMs", u64::from(MAX_SIM_VMS)).map(|n| n as u32)
}

fn parse_sim_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= MAX_SIM_SECS => Ok(x),
        Ok(_) => Err(format!(
            "'{}' simulated seconds is out of range: allowed more than 0 up to {MAX_SIM_SECS}",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a number of simulated seconds (e.g. 0.5)",
            s.trim()
        )),
    }
}

fn parse_warmup_secs(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=MAX_SIM_SECS).contains(&x) => Ok(x),
        Ok(_) => Err(format!(
            "'{}' simulated seconds of warm-up is out of range: allowed 0 to {MAX_SIM_SECS}",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a number of simulated seconds (e.g. 0.2)",
            s.trim()
        )),
    }
}

fn parse_seed(s: &str) -> Result<u64, String> {
    s.trim().parse::<u64>().map_err(|_| {
        format!(
            "'{}' is not a seed: allowed a whole number from 0 to {}",
            s.trim(),
            u64::MAX
        )
    })
}

/// A run named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRef {
    /// A run id.
    Id(i64),
    /// The newest run.
    Last,
}

/// A validated list of thread counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadList(pub Vec<u32>);

fn parse_run(s: &str) -> Result<RunRef, String> {
    if s == "last" {
        return Ok(RunRef::Last);
    }
    match s.parse::<i64>() {
        Ok(n) if n >= 1 => Ok(RunRef::Id(n)),
        _ => Err("a run is a positive integer id or `last`; `locklab runs` lists them".into()),
    }
}

fn parse_thread_count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=MAX_THREADS as u64).contains(&n) => Ok(n as u32),
        Ok(n) => Err(format!(
            "thread count {n} is out of range: allowed 1 to {MAX_THREADS}"
        )),
        Err(_) => Err(format!(
            "'{}' is not a thread count: allowed 1 to {MAX_THREADS}",
            s.trim()
        )),
    }
}

fn parse_threads(s: &str) -> Result<ThreadList, String> {
    let mut v = Vec::new();
    for part in s.split(',') {
        let n = parse_thread_count(part)?;
        if !v.contains(&n) {
            v.push(n);
        }
    }
    Ok(ThreadList(v))
}

/// Largest multiple of the cores `bench lhp` takes (the thread count is
/// checked against [`MAX_THREADS`] once the cores are known).
pub const MAX_MULTIPLE: u32 = 64;

fn parse_multiples(s: &str) -> Result<ThreadList, String> {
    let mut v = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.parse::<u32>() {
            Ok(n) if (1..=MAX_MULTIPLE).contains(&n) => {
                if !v.contains(&n) {
                    v.push(n);
                }
            }
            _ => {
                return Err(format!(
                    "'{part}' is not a multiple of the cores: allowed 1 to {MAX_MULTIPLE}"
                ))
            }
        }
    }
    Ok(ThreadList(v))
}

fn parse_ns(s: &str) -> Result<u64, String> {
    if s.trim_start().starts_with('-') {
        return Err(format!(
            "'{s}' is a negative duration: allowed 0 to {MAX_NS} ns (one second)"
        ));
    }
    match s.parse::<u64>() {
        Ok(n) if n <= MAX_NS => Ok(n),
        Ok(n) => Err(format!(
            "{n} ns is too long: allowed 0 to {MAX_NS} ns (one second)"
        )),
        Err(_) => Err(format!(
            "'{s}' is not a duration: a whole number of nanoseconds from 0 to {MAX_NS}"
        )),
    }
}

fn parse_pct(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n <= 100 => Ok(n as u32),
        Ok(n) => Err(format!("{n} % is out of range: allowed 0 to 100")),
        Err(_) => Err(format!("'{}' is not a percentage (0 to 100)", s.trim())),
    }
}

fn parse_secs(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 && x <= MAX_SECS => Ok(x),
        Ok(_) => Err(format!(
            "'{s}' seconds is out of range: allowed more than 0 up to {MAX_SECS}"
        )),
        Err(_) => Err(format!("'{s}' is not a number of seconds (e.g. 0.5)")),
    }
}

/// Shortest torture watchdog, seconds. When threads outnumber cores, a
/// runnable thread waits up to a scheduler period for its CPU, and the
/// period grows with the threads on the CPU (CFS: at least 0.75 ms each,
/// scaled by the CPUs; some 0.1 to 0.2 s with the most threads a torture
/// starts on two cores). A watchdog within a few periods would call a
/// healthy lock hung.
pub const MIN_WATCHDOG_S: f64 = 1.0;

fn parse_watchdog(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (MIN_WATCHDOG_S..=MAX_SECS).contains(&x) => Ok(x),
        Ok(_) => Err(format!(
            "'{}' seconds is out of range for the watchdog: allowed {MIN_WATCHDOG_S} to {MAX_SECS} \
             (a shorter one would take threads waiting for a CPU for a hang)",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a number of seconds: allowed {MIN_WATCHDOG_S} to {MAX_SECS}",
            s.trim()
        )),
    }
}

fn parse_stall_every(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(n) if n <= 1_000_000_000 => Ok(n),
        _ => Err(format!(
            "'{s}' acquisitions between stalls: allowed 0 (never) to 1000000000"
        )),
    }
}

fn parse_reps(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("'{s}' repetitions: allowed 1 to 1000")),
    }
}

fn parse_lines(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n <= 1024 => Ok(n),
        _ => Err(format!("'{s}' cache lines: allowed 0 to 1024")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists_parse_and_reject_zero_and_absurd() {
        assert_eq!(parse_threads("1,2,8,2").unwrap(), ThreadList(vec![1, 2, 8]));
        assert!(parse_threads("0").unwrap_err().contains("1 to 256"));
        assert!(parse_threads("100000").unwrap_err().contains("100000"));
        assert!(parse_threads("two").unwrap_err().contains("'two'"));
        assert!(parse_threads("1,,2").is_err());
    }

    #[test]
    fn durations_reject_negative_non_numeric_and_too_long() {
        assert_eq!(parse_ns("0").unwrap(), 0);
        assert!(parse_ns("-5").unwrap_err().contains("'-5'"));
        assert!(parse_ns("1e3").is_err());
        assert!(parse_ns("2000000000").is_err());
        assert!(parse_secs("0").is_err());
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("NaN").is_err());
        assert!(parse_secs("inf").is_err());
        assert_eq!(parse_secs("0.5").unwrap(), 0.5);
    }

    #[test]
    fn core_lists_take_ranges_and_reject_zero_reversed_and_empty() {
        assert_eq!(
            parse_cores("1-4,8,2").unwrap(),
            CoreList(vec![1, 2, 3, 4, 8])
        );
        assert_eq!(parse_cores(" 16 ").unwrap(), CoreList(vec![16]));
        assert!(parse_cores("0").unwrap_err().contains("1 to 10000"));
        assert!(parse_cores("1-0").unwrap_err().contains("1 to 10000"));
        assert!(parse_cores("8-2").unwrap_err().contains("'8-2'"));
        assert!(parse_cores("-3").unwrap_err().contains("'-3'"));
        assert!(parse_cores("").unwrap_err().contains("empty"));
        assert!(parse_cores("1,,2").is_err());
        assert!(parse_cores("10001").unwrap_err().contains("10001"));
        assert!(parse_cores("1-x").unwrap_err().contains("'x'"));
    }

    #[test]
    fn model_times_reject_what_the_model_cannot_take() {
        assert_eq!(parse_service("358").unwrap(), 358.0);
        assert!(parse_service("0").unwrap_err().contains("'0'"));
        assert!(parse_service("-1").is_err());
        assert!(parse_service("inf").is_err());
        assert!(parse_service("NaN").is_err());
        assert_eq!(parse_delay("0").unwrap(), 0.0);
        assert!(parse_delay("-0.5").unwrap_err().contains("'-0.5'"));
        assert!(parse_delay("soon").unwrap_err().contains("'soon'"));
        assert!(parse_handoff("-1").is_err());
        assert!(parse_first("0").unwrap_err().contains("'0'"));
        assert_eq!(parse_first("14").unwrap(), 14);
    }

    #[test]
    fn sim_values_name_what_is_allowed() {
        assert_eq!(
            parse_policies("itcs,none,itcs").unwrap(),
            PolicyList(vec![Policy::Itcs, Policy::None])
        );
        assert_eq!(parse_policies("all").unwrap().0.len(), Policy::ALL.len());
        let e = parse_policies("itcs,bogus").unwrap_err();
        assert!(e.contains("'bogus'") && e.contains("kvm-dy"), "{e}");
        assert!(parse_policies("itcs,,none").unwrap_err().contains("empty"));
        assert!(parse_experiment("speed")
            .unwrap_err()
            .contains("scalability"));
        assert_eq!(parse_experiment("latency").unwrap(), Experiment::Latency);
        assert!(parse_lock_kind("mcs").unwrap_err().contains("ticket, tas"));
        assert!(parse_ple("vmware").unwrap_err().contains("seed"));
        assert!(parse_pcpus("0").unwrap_err().contains("1 to 1024"));
        assert!(parse_vcpus("-1").unwrap_err().contains("'-1'"));
        for bad in ["0", "-1", "nan", "inf", "3601"] {
            assert!(parse_sim_secs(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_warmup_secs("0").unwrap(), 0.0);
        assert!(parse_warmup_secs("-0.1").is_err());
        assert!(parse_seed("-1").unwrap_err().contains("'-1'"));
    }

    #[test]
    fn the_watchdog_has_a_floor_named_in_the_message() {
        assert_eq!(parse_watchdog("1").unwrap(), 1.0);
        assert_eq!(parse_watchdog("10").unwrap(), 10.0);
        for bad in ["0.001", "0.5", "0", "-3", "nan", "inf", "3601"] {
            let e = parse_watchdog(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
            assert!(
                e.contains("allowed 1 to 3600") || e.contains("allowed 1 to"),
                "{e}"
            );
        }
    }

    #[test]
    fn reps_and_runs() {
        assert!(parse_reps("0").is_err());
        assert_eq!(parse_reps("3").unwrap(), 3);
        assert_eq!(parse_run("last").unwrap(), RunRef::Last);
        assert_eq!(parse_run("12").unwrap(), RunRef::Id(12));
        assert!(parse_run("0").is_err() && parse_run("x").is_err());
    }
}
