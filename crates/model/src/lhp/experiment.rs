//! Seed 004's four experiments (§3.1–3.4) as tables over policies, and the
//! same for a scenario of the user's.
//!
//! An experiment is a set of *cases* (a list of VMs; `scalability` has one
//! per VM count), each simulated under every policy, plus one *baseline*
//! per distinct kind of VM: that VM alone on the host under `none`. A VM's
//! normalized throughput is its throughput over its baseline's, as seed 004
//! normalizes to "a single VM on the native kernel". [`plan`] lists the
//! simulations, a caller runs them (in parallel if it likes: they are
//! independent), and [`tabulate`] turns their results into rows.
//!
//! The row metrics:
//! - `throughput_norm`: the geometric mean of the normalized throughputs of
//!   the case's VMs (seed 004's "system performance"), request VMs (those
//!   with a think time) left out; `scalability` takes the arithmetic mean,
//!   as seed 004 §3.4 does;
//! - `speedup`: `throughput_norm` over `none`'s in the same case;
//! - `lock_speedup`: the same geometric mean over the VMs whose workload
//!   takes locks only (in `fairness`, hackbench's speed-up);
//! - `util_variance`: the variance of CPU utilization (percent of the host)
//!   across the lock-free VMs (the `pi` VMs of `fairness`), or across all
//!   loaded VMs when none is lock-free (seed 004 §3.1);
//! - `response_p50_us`, `response_p99_us`: the request VMs' response times
//!   (`latency`), and their change over `none`.

use super::config::{ConfigError, Host, LockKind, Ple, Scenario, VmSpec, Workload};
use super::policy::Policy;
use super::result::SimResult;
use std::collections::{BTreeMap, BTreeSet};

/// Seed 004's experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Experiment {
    /// §3.1: 1 VM running hackbench beside 4 VMs running pi.
    Fairness,
    /// §3.2: 4 VMs running oltp.
    Performance,
    /// §3.3: 7 VMs running oltp and 1 VM with one request thread.
    Latency,
    /// §3.4: 1 to `max_vms` VMs running oltp.
    Scalability,
}

impl Experiment {
    /// Every experiment.
    pub const ALL: [Experiment; 4] = [
        Experiment::Fairness,
        Experiment::Performance,
        Experiment::Latency,
        Experiment::Scalability,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Fairness => "fairness",
            Experiment::Performance => "performance",
            Experiment::Latency => "latency",
            Experiment::Scalability => "scalability",
        }
    }

    /// The experiment named `s`.
    pub fn from_name(s: &str) -> Option<Experiment> {
        Self::ALL.into_iter().find(|e| e.name() == s)
    }
}

/// The knobs every experiment shares; [`Params::default`] is seed 004's
/// set-up.
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    /// The host.
    pub host: Host,
    /// Pause-loop exiting.
    pub ple: Ple,
    /// vCPUs per VM.
    pub vcpus: u32,
    /// Guest lock algorithm of every workload.
    pub lock: LockKind,
    /// Policies, in row order (`none` is simulated even when not listed: the
    /// speed-ups need it).
    pub policies: Vec<Policy>,
    /// Largest VM count of `scalability`.
    pub max_vms: u32,
    /// Measured simulated time per simulation, ns.
    pub duration_ns: f64,
    /// Warm-up per simulation, ns.
    pub warmup_ns: f64,
    /// Seed.
    pub seed: u64,
}

impl Default for Params {
    fn default() -> Params {
        Params {
            host: Host::new(8),
            ple: Ple::seed004(),
            vcpus: 8,
            lock: LockKind::Ticket,
            policies: Policy::ALL.to_vec(),
            max_vms: 8,
            duration_ns: 1e9,
            warmup_ns: 2e8,
            seed: 1,
        }
    }
}

/// One set of VMs simulated under every policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// VMs in the case (the `scalability` axis).
    pub vms: u32,
    /// Them.
    pub specs: Vec<VmSpec>,
}

/// What an experiment simulates: its cases under its policies, on a host.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// `fairness`, `performance`, `latency`, `scalability`, or a name a
    /// configuration file gave.
    pub name: String,
    /// Scenario fields other than the VMs and the policy.
    pub base: Scenario,
    /// The cases.
    pub cases: Vec<Case>,
    /// Policies, in row order (`none` first and always present).
    pub policies: Vec<Policy>,
    /// Arithmetic instead of geometric mean for `throughput_norm`.
    pub arithmetic_mean: bool,
}

fn preset(name: &str, lock: LockKind) -> Workload {
    let mut w = Workload::preset(name).expect("preset names are fixed");
    w.lock = lock;
    w
}

fn with_none(policies: &[Policy]) -> Vec<Policy> {
    let mut v = vec![Policy::None];
    v.extend(policies.iter().copied().filter(|&p| p != Policy::None));
    v
}

impl Setup {
    /// One of seed 004's experiments with `params`.
    pub fn experiment(e: Experiment, p: &Params) -> Setup {
        let vm = |w: &str, count: u32| VmSpec::new(preset(w, p.lock), count, p.vcpus);
        let cases = match e {
            Experiment::Fairness => vec![Case {
                vms: 5,
                specs: vec![vm("hackbench", 1), vm("pi", 4)],
            }],
            Experiment::Performance => vec![Case {
                vms: 4,
                specs: vec![vm("oltp", 4)],
            }],
            Experiment::Latency => vec![Case {
                vms: 8,
                specs: vec![vm("oltp", 7), vm("latency", 1)],
            }],
            Experiment::Scalability => (1..=p.max_vms.max(1))
                .map(|n| Case {
                    vms: n,
                    specs: vec![vm("oltp", n)],
                })
                .collect(),
        };
        let mut base = Scenario::new(Vec::new(), Policy::None);
        base.host = p.host.clone();
        base.ple = p.ple;
        base.duration_ns = p.duration_ns;
        base.warmup_ns = p.warmup_ns;
        base.seed = p.seed;
        Setup {
            name: e.name().to_string(),
            base,
            cases,
            policies: with_none(&p.policies),
            arithmetic_mean: e == Experiment::Scalability,
        }
    }

    /// A scenario of the user's (its policy ignored) under `policies`.
    pub fn custom(name: &str, scenario: &Scenario, policies: &[Policy]) -> Setup {
        let vms = scenario.vms.iter().map(|v| v.count).sum();
        Setup {
            name: name.to_string(),
            base: Scenario {
                vms: Vec::new(),
                ..scenario.clone()
            },
            cases: vec![Case {
                vms,
                specs: scenario.vms.clone(),
            }],
            policies: with_none(policies),
            arithmetic_mean: false,
        }
    }
}

/// What one simulation of a plan is for.
#[derive(Debug, Clone, PartialEq)]
pub enum Role {
    /// Case `case` under `policy`.
    Cell {
        /// Index into [`Setup::cases`].
        case: usize,
        /// The policy.
        policy: Policy,
    },
    /// The baseline of a kind of VM: it alone on the host under `none`.
    Baseline,
}

/// One simulation to run.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// What it is for.
    pub role: Role,
    /// Short label for progress output (`itcs ×4`, `alone: oltp`).
    pub label: String,
    /// The scenario.
    pub scenario: Scenario,
}

/// A kind of VM: what makes two VMs share a baseline.
fn kind_key(v: &VmSpec) -> String {
    format!("{:?}|{}|{}", v.workload, v.vcpus, v.weight)
}

/// The simulations `setup` needs: baselines first, then each case under
/// each policy.
pub fn plan(setup: &Setup) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut seen = BTreeSet::new();
    for case in &setup.cases {
        for spec in &case.specs {
            if !seen.insert(kind_key(spec)) {
                continue;
            }
            let mut alone = spec.clone();
            alone.count = 1;
            jobs.push(Job {
                role: Role::Baseline,
                label: format!("alone: {}", spec.name),
                scenario: Scenario {
                    vms: vec![alone],
                    policy: Policy::None,
                    ..setup.base.clone()
                },
            });
        }
    }
    for (c, case) in setup.cases.iter().enumerate() {
        for &policy in &setup.policies {
            jobs.push(Job {
                role: Role::Cell { case: c, policy },
                label: if setup.cases.len() > 1 {
                    format!("{policy} ×{}", case.vms)
                } else {
                    policy.to_string()
                },
                scenario: Scenario {
                    vms: case.specs.clone(),
                    policy,
                    ..setup.base.clone()
                },
            });
        }
    }
    jobs
}

/// One VM of a cell, as a table reports it.
///
/// With the `serde` feature it serializes as its fields; a number JSON
/// cannot hold (NaN) is written `null` and read back as NaN.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct VmRow {
    /// Name (`oltp#2`).
    pub name: String,
    /// Throughput over its baseline (the same VM alone under `none`).
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub throughput_norm: f64,
    /// CPU utilization, percent of the host.
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub util_pct: f64,
}

/// What a row measures: a case under a policy (see the module's text for
/// each metric). A number that does not exist (a throughput over a baseline
/// of 0) is NaN.
///
/// With the `serde` feature it serializes as its fields; a NaN is written
/// `null` and read back as NaN (or `None` where the field is optional).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RowMetrics {
    /// Mean normalized throughput of the case's VMs.
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub throughput_norm: f64,
    /// `throughput_norm` over `none`'s in the same case.
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub speedup: f64,
    /// Speed-up of the VMs that take locks (`None` when there are none;
    /// `fairness`: hackbench's).
    pub lock_speedup: Option<f64>,
    /// Variance of CPU utilization across the lock-free VMs (or all loaded
    /// VMs), percent².
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub util_variance: f64,
    /// The request VMs' median response time, µs (`None` without request
    /// VMs; `latency`).
    pub response_p50_us: Option<f64>,
    /// Their 99th percentile, µs.
    pub response_p99_us: Option<f64>,
    /// Median response time over `none`'s, minus 1 (−0.17: 17 % faster).
    pub response_change: Option<f64>,
    /// Share of the host's CPU time spent spinning on guest locks, 0 to 1.
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub spin_share: f64,
    /// Share spent in host context switches and VM exits, 0 to 1.
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub overhead_share: f64,
    /// PLE exits per simulated second.
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub ple_exits_s: f64,
    /// Host context switches per simulated second.
    #[cfg_attr(feature = "serde", serde(deserialize_with = "nan_if_null"))]
    pub switches_s: f64,
    /// Per VM of the case.
    pub per_vm: Vec<VmRow>,
}

/// Reads a number that JSON wrote as `null` because it was NaN or infinite.
#[cfg(feature = "serde")]
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(<Option<f64> as serde::Deserialize>::deserialize(d)?.unwrap_or(f64::NAN))
}

/// One row: a case under a policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The policy.
    pub policy: Policy,
    /// VMs in the case.
    pub vms: u32,
    /// What it measured.
    pub metrics: RowMetrics,
    /// Events simulated.
    pub events: u64,
}

/// An experiment's table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The experiment's name.
    pub experiment: String,
    /// Rows: cases in order, policies in order within a case.
    pub rows: Vec<Row>,
    /// Events simulated by every job, baselines included.
    pub events: u64,
}

fn geomean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    (xs.iter().map(|x| x.max(1e-300).ln()).sum::<f64>() / xs.len() as f64).exp()
}

fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn variance(xs: &[f64]) -> f64 {
    if xs.len() < 2 {
        return 0.0;
    }
    let m = mean(xs);
    xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64
}

/// The table of `setup` from its plan's results, `results[i]` being job
/// `i`'s.
///
/// # Panics
/// If `jobs` is not `plan(setup)` or `results` does not match it.
pub fn tabulate(setup: &Setup, jobs: &[Job], results: &[SimResult]) -> Table {
    assert_eq!(jobs.len(), results.len(), "one result per job");
    let mut baselines: BTreeMap<String, f64> = BTreeMap::new();
    for (job, r) in jobs.iter().zip(results) {
        if job.role == Role::Baseline {
            baselines.insert(kind_key(&job.scenario.vms[0]), r.vms[0].throughput);
        }
    }
    struct Cell {
        row: Row,
        p50: Option<f64>,
    }
    let mut cells: Vec<Cell> = Vec::new();
    for (job, r) in jobs.iter().zip(results) {
        let Role::Cell { case, policy } = job.role else {
            continue;
        };
        let specs = &setup.cases[case].specs;
        // Expand the specs into one entry per VM, as the result lists them.
        let kinds: Vec<&VmSpec> = specs
            .iter()
            .flat_map(|s| std::iter::repeat_n(s, s.count as usize))
            .collect();
        assert_eq!(kinds.len(), r.vms.len(), "a result per VM");
        let mut loaded = Vec::new();
        let mut locking = Vec::new();
        let mut lock_free_util = Vec::new();
        let mut loaded_util = Vec::new();
        let mut per_vm = Vec::new();
        let mut responses: Vec<(f64, f64, u64)> = Vec::new();
        for (spec, vm) in kinds.iter().zip(&r.vms) {
            let base = baselines[&kind_key(spec)];
            let norm = if base > 0.0 {
                vm.throughput / base
            } else {
                f64::NAN
            };
            let util = vm.utilization * 100.0;
            per_vm.push(VmRow {
                name: vm.name.clone(),
                throughput_norm: norm,
                util_pct: util,
            });
            if spec.workload.think.is_some() {
                responses.push((vm.response.p50_ns, vm.response.p99_ns, vm.response.count));
                continue;
            }
            loaded.push(norm);
            loaded_util.push(util);
            if spec.workload.sections > 0 {
                locking.push(norm);
            } else {
                lock_free_util.push(util);
            }
        }
        let tn = if setup.arithmetic_mean {
            mean(&loaded)
        } else {
            geomean(&loaded)
        };
        let util_variance = if lock_free_util.is_empty() {
            variance(&loaded_util)
        } else {
            variance(&lock_free_util)
        };
        // Request VMs: the percentiles of the one with most requests (there
        // is one in `latency`).
        let resp = responses
            .iter()
            .max_by_key(|x| x.2)
            .filter(|x| x.2 > 0)
            .map(|x| (x.0 / 1e3, x.1 / 1e3));
        let capacity = r.sim_ns * f64::from(r.pcpus);
        let secs = r.sim_ns / 1e9;
        cells.push(Cell {
            row: Row {
                policy,
                vms: setup.cases[case].vms,
                metrics: RowMetrics {
                    throughput_norm: tn,
                    speedup: f64::NAN,
                    lock_speedup: if locking.is_empty() {
                        None
                    } else {
                        Some(geomean(&locking))
                    },
                    util_variance,
                    response_p50_us: resp.map(|x| x.0),
                    response_p99_us: resp.map(|x| x.1),
                    response_change: None,
                    spin_share: r.spin_ns() / capacity,
                    overhead_share: r.vms.iter().map(|v| v.overhead_ns).sum::<f64>() / capacity,
                    ple_exits_s: r.ple_exits() as f64 / secs,
                    switches_s: r.switches as f64 / secs,
                    per_vm,
                },
                events: r.events,
            },
            p50: resp.map(|x| x.0),
        });
    }
    // Speed-ups against `none` in the same case.
    let none: BTreeMap<u32, (f64, Option<f64>, Option<f64>)> = cells
        .iter()
        .filter(|c| c.row.policy == Policy::None)
        .map(|c| {
            (
                c.row.vms,
                (
                    c.row.metrics.throughput_norm,
                    c.row.metrics.lock_speedup,
                    c.p50,
                ),
            )
        })
        .collect();
    let mut rows = Vec::new();
    for mut c in cells {
        let (t0, l0, p0) = none[&c.row.vms];
        let m = &mut c.row.metrics;
        m.speedup = m.throughput_norm / t0;
        m.lock_speedup = match (m.lock_speedup, l0) {
            (Some(l), Some(l0)) => Some(l / l0),
            _ => None,
        };
        m.response_change = match (c.p50, p0) {
            (Some(p), Some(p0)) if p0 > 0.0 => Some(p / p0 - 1.0),
            _ => None,
        };
        rows.push(c.row);
    }
    Table {
        experiment: setup.name.clone(),
        rows,
        events: results.iter().map(|r| r.events).sum(),
    }
}

/// Runs `setup`'s plan one simulation after another, calling `progress`
/// with each job's label before it starts, and tabulates it.
pub fn run(setup: &Setup, mut progress: impl FnMut(&str)) -> Result<Table, ConfigError> {
    let jobs = plan(setup);
    let mut results = Vec::with_capacity(jobs.len());
    for j in &jobs {
        progress(&j.label);
        results.push(super::simulate(&j.scenario)?);
    }
    Ok(tabulate(setup, &jobs, &results))
}
