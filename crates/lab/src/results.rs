//! What a run produces: the machine it ran on, its parameters, and per point
//! every repetition. The store keeps exactly these; reports, JSON and plots
//! read them back.

use serde::{Deserialize, Serialize};

/// Facts about the machine a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Machine {
    /// CPU model name (from /proc/cpuinfo).
    pub cpu_model: String,
    /// Online logical CPUs.
    pub cores: usize,
    /// Time-stamp counter rate in Hz, if known.
    pub tsc_hz: Option<u64>,
    /// Kernel release and version.
    pub kernel: String,
    /// `rustc --version` of the toolchain that built the lab.
    pub rustc: String,
    /// Git revision of the lab's source (with `-dirty` if modified).
    pub git_rev: String,
    /// Host name.
    pub hostname: String,
    /// Round trip of one cache line between the first two CPUs the lab may
    /// run on, ns, measured as the run starts (`None` with one CPU, or when
    /// the threads could not be pinned; and for runs stored before it was
    /// recorded). Contended results move with it: on a VM it can change
    /// from one minute to the next.
    #[serde(default)]
    pub c2c_round_trip_ns: Option<f64>,
}

/// A run: one invocation of a benchmark command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    /// Store id; `None` until stored.
    pub id: Option<i64>,
    /// What ran: `bench` (the standard suite), `bench spin`, `bench uncontended`.
    pub kind: String,
    /// The command line as typed.
    pub command: String,
    /// Every parameter, resolved (defaults filled in).
    pub params: serde_json::Value,
    /// The machine.
    pub machine: Machine,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// End time, RFC 3339 UTC; `None` while running or if interrupted.
    pub finished: Option<String>,
    /// Whether every planned point finished.
    pub complete: bool,
}

/// One repetition of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rep {
    /// Repetition number, from 0.
    pub rep: u32,
    /// Measured wall-clock seconds.
    pub wall_s: f64,
    /// CPU seconds used by the measuring threads (user + system).
    pub cpu_s: f64,
    /// Acquisitions by all threads.
    pub total_ops: u64,
    /// `total_ops / wall_s`.
    pub throughput_ops_s: f64,
    /// Nanoseconds per acquire+release (for `uncontended`: per pair, one thread).
    pub ns_per_op: f64,
    /// Acquisitions per thread.
    pub thread_ops: Vec<u64>,
    /// Jain's fairness index of `thread_ops` (1 = perfectly even).
    pub jain: f64,
    /// Acquire latency percentiles and maximum in ns (0 when not sampled).
    pub p50_ns: u64,
    /// 99th percentile acquire latency, ns.
    pub p99_ns: u64,
    /// 99.9th percentile acquire latency, ns.
    pub p999_ns: u64,
    /// Longest acquire latency, ns.
    pub max_ns: u64,
    /// Waits still open when the window closed (censored: not in the
    /// percentiles above, whose samples all ended in the window); 0 for
    /// runs stored before schema 6.
    #[serde(default)]
    pub censored: u64,
    /// The longest censored wait had lasted at least this long at the
    /// closing, ns (a lower bound on the true longest wait; 0 if none).
    #[serde(default)]
    pub censored_ns: u64,
    /// What only the hash-table benchmark measures (`None` for the other
    /// benchmarks and for repetitions stored before schema 3). For `hash`
    /// points the latency fields above are those of sampled lookups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<HashMetrics>,
    /// What only the kernel IPC benchmark measures (`None` for the other
    /// benchmarks and for repetitions stored before schema 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ipc: Option<IpcMetrics>,
    /// What a `sim lhp` row measures (`None` for the benchmarks and for
    /// repetitions stored before schema 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sim: Option<SimMetrics>,
}

impl Rep {
    /// A repetition whose `total_ops` one thread did in `wall_s`: no
    /// latency sample and no benchmark-specific metrics (callers add theirs
    /// with struct update syntax).
    pub fn one_thread(rep: u32, wall_s: f64, cpu_s: f64, total_ops: u64) -> Rep {
        Rep {
            rep,
            wall_s,
            cpu_s,
            total_ops,
            throughput_ops_s: total_ops as f64 / wall_s,
            ns_per_op: wall_s * 1e9 / total_ops as f64,
            thread_ops: vec![total_ops],
            jain: 1.0,
            p50_ns: 0,
            p99_ns: 0,
            p999_ns: 0,
            max_ns: 0,
            censored: 0,
            censored_ns: 0,
            hash: None,
            ipc: None,
            sim: None,
        }
    }

    /// The longest wait known: the longest that ended in the window, or
    /// the least a censored one had lasted, whichever is longer.
    pub fn longest_wait_ns(&self) -> u64 {
        self.max_ns.max(self.censored_ns)
    }
}

/// One repetition of one row of a `sim lhp` table: a case (its VMs) under a
/// host policy, simulated with this repetition's seed (see
/// `locklab_model::lhp::experiment` for what each metric means). For `sim`
/// points the `Rep` fields around it describe the simulator's own work on
/// this row: `wall_s` and `cpu_s` of the simulation, `total_ops` the events
/// it processed and `throughput_ops_s` its events per second.
///
/// A number that does not exist (a throughput over a baseline of 0) is NaN
/// here and `null` in JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimMetrics {
    /// The repetition's seed.
    pub seed: u64,
    /// Mean normalized throughput of the case's VMs.
    #[serde(deserialize_with = "nan_if_null")]
    pub throughput_norm: f64,
    /// `throughput_norm` over `none`'s in the same case and repetition.
    #[serde(deserialize_with = "nan_if_null")]
    pub speedup: f64,
    /// Speed-up of the VMs that take locks (`fairness`: hackbench's).
    pub lock_speedup: Option<f64>,
    /// Variance of CPU utilization across the lock-free VMs (or all loaded
    /// VMs), percent².
    #[serde(deserialize_with = "nan_if_null")]
    pub util_variance: f64,
    /// The request VM's median response time, µs (`latency`).
    pub response_p50_us: Option<f64>,
    /// Its 99th percentile, µs.
    pub response_p99_us: Option<f64>,
    /// Its median over `none`'s, minus 1 (−0.17: 17 % faster).
    pub response_change: Option<f64>,
    /// Share of the host's CPU time spent spinning on guest locks, 0 to 1.
    #[serde(deserialize_with = "nan_if_null")]
    pub spin_share: f64,
    /// Share spent in host context switches and VM exits, 0 to 1.
    #[serde(deserialize_with = "nan_if_null")]
    pub overhead_share: f64,
    /// PLE exits per simulated second.
    #[serde(deserialize_with = "nan_if_null")]
    pub ple_exits_s: f64,
    /// Host context switches per simulated second.
    #[serde(deserialize_with = "nan_if_null")]
    pub switches_s: f64,
    /// Per VM of the case.
    pub per_vm: Vec<SimVm>,
    /// Events simulated by every simulation of this repetition, the
    /// baselines included.
    pub plan_events: u64,
    /// Seconds those simulations took, summed over them (the simulator's
    /// time, whatever the worker threads).
    #[serde(deserialize_with = "nan_if_null")]
    pub plan_sim_s: f64,
    /// Wall-clock seconds the whole command spent simulating, every
    /// repetition on every worker thread.
    #[serde(deserialize_with = "nan_if_null")]
    pub run_wall_s: f64,
}

/// One VM of a `sim lhp` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimVm {
    /// The VM's name (`oltp#2`).
    pub name: String,
    /// Its throughput over its baseline (the same VM alone under `none`).
    #[serde(deserialize_with = "nan_if_null")]
    pub throughput_norm: f64,
    /// Its CPU utilization, percent of the host.
    #[serde(deserialize_with = "nan_if_null")]
    pub util_pct: f64,
}

/// Reads a number that JSON wrote as `null` because it was NaN or infinite.
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One repetition's emulated-kernel counters over the measured window (see
/// `bench::ipc`). `Rep::total_ops` counts one-way IPCs (system calls) and
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

/// One repetition's hash-table measurements beyond throughput (see
/// `bench::hash`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HashMetrics {
    /// Lookups done by all threads.
    pub lookups: u64,
    /// Updates (replacements of an element) done by all threads.
    pub updates: u64,
    /// Peak of the bytes removed from the table but awaiting a grace period
    /// (sampled about every millisecond); 0 for strategies that free at once.
    pub backlog_peak_bytes: u64,
    /// Peak growth of the heap in use over the repetition's start (its
    /// table built), bytes, sampled about every millisecond by the lab's
    /// counting allocator (`None` in runs stored before it counted).
    pub mem_peak_bytes: Option<u64>,
}

/// One point: a lock at a thread count and parameter set, every repetition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// `spin` or `uncontended`.
    pub bench: String,
    /// Lock or peer name (`floor` for the uncontended physical floor).
    pub lock: String,
    /// Measuring threads.
    pub threads: u32,
    /// The point's own parameters (cs_ns, cs_lines, delay_ns, delay_dist, secs, …).
    pub params: serde_json::Value,
    /// Every repetition, in order.
    pub reps: Vec<Rep>,
}

/// Median of a sample (mean of the middle two for even counts); NaN if empty.
pub fn median(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one
/// thread did everything. 1 for an empty or all-zero sample (nothing unfair
/// happened).
pub fn jain(xs: &[u64]) -> f64 {
    let n = xs.len() as f64;
    let sum: f64 = xs.iter().map(|&x| x as f64).sum();
    let sq: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
    if n == 0.0 || sq == 0.0 {
        1.0
    } else {
        sum * sum / (n * sq)
    }
}

impl Point {
    /// A metric's median, minimum and maximum over the repetitions.
    pub fn stat(&self, f: impl Fn(&Rep) -> f64) -> (f64, f64, f64) {
        let xs: Vec<f64> = self.reps.iter().map(f).collect();
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        (median(&xs), min, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_when_even_and_one_over_n_when_one_thread_does_all() {
        assert!((jain(&[5, 5, 5, 5]) - 1.0).abs() < 1e-12);
        assert!((jain(&[8, 0, 0, 0]) - 0.25).abs() < 1e-12);
        let j = jain(&[10, 20]);
        assert!((j - 900.0 / (2.0 * 500.0)).abs() < 1e-12);
    }

    #[test]
    fn median_odd_even_and_unsorted() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
