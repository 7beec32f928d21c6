//! The report of a `sim lhp` run, from its stored points: one table per
//! experiment (a row per policy; for `scalability` a grid of policies by VM
//! count), seed 004's reported numbers beside this run's where the paper
//! has them, and the simulator's speed; and the same as JSON. Each number
//! is the median over the repetitions (seeds), with the min–max spread of
//! the normalized throughput, as the other reports keep theirs.

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::metrics::{RowMetrics, SimMetrics, VmRow, BENCH, KIND};
use crate::core::report::{distinct, grid_of, num, sig, WIDE_SPREAD};
use crate::core::results::{median, Point, Rep, RunMeta};
use crate::core::table::{layout, Column};

/// Whether a run is a `sim lhp` run (by its kind, or by its points).
pub fn is_sim(meta: &RunMeta, points: &[Point]) -> bool {
    meta.kind == KIND || (!points.is_empty() && points.iter().all(|p| p.bench == BENCH))
}

/// The experiment a point belongs to (`performance`, or a file's name).
pub fn experiment(p: &Point) -> &str {
    p.params
        .get("experiment")
        .and_then(Value::as_str)
        .unwrap_or("?")
}

/// Whether the points come from a scenario file rather than one of seed
/// 004's experiments.
fn from_file(p: &Point) -> bool {
    p.params.get("config").is_some()
}

/// A row's medians over its repetitions.
#[derive(Debug, Clone, PartialEq)]
pub struct RowStat {
    /// The policy.
    pub policy: String,
    /// VMs in the case.
    pub vms: u32,
    /// Repetitions with metrics.
    pub reps: usize,
    /// Each metric's median over the repetitions (per VM too, by position):
    /// NaN where no repetition has a number, `None` where none has the
    /// optional metric.
    pub median: RowMetrics,
    /// Normalized throughput: min, max.
    pub throughput_norm_range: (f64, f64),
    /// Speed-up over `none`: min, max.
    pub speedup_range: (f64, f64),
}

impl RowStat {
    /// Normalized throughput: median, min, max.
    pub fn throughput_norm(&self) -> (f64, f64, f64) {
        let (min, max) = self.throughput_norm_range;
        (self.median.throughput_norm, min, max)
    }

    /// Speed-up over `none`: median, min, max.
    pub fn speedup(&self) -> (f64, f64, f64) {
        let (min, max) = self.speedup_range;
        (self.median.speedup, min, max)
    }
}

fn spread(xs: &[f64]) -> (f64, f64, f64) {
    let ok: Vec<f64> = xs.iter().copied().filter(|x| !x.is_nan()).collect();
    if ok.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let min = ok.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ok.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (median(&ok), min, max)
}

/// The medians of a point's repetitions.
pub fn row_stat(p: &Point) -> RowStat {
    let ms: Vec<SimMetrics> = p.reps.iter().filter_map(Rep::metrics_of).collect();
    let all = |f: fn(&RowMetrics) -> f64| spread(&ms.iter().map(|m| f(&m.row)).collect::<Vec<_>>());
    let some = |f: fn(&RowMetrics) -> Option<f64>| {
        let xs: Vec<f64> = ms.iter().filter_map(|m| f(&m.row)).collect();
        (!xs.is_empty()).then(|| spread(&xs).0)
    };
    let names: Vec<&str> = ms
        .first()
        .map(|m| m.row.per_vm.iter().map(|v| v.name.as_str()).collect())
        .unwrap_or_default();
    let per_vm = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let of = |f: fn(&VmRow) -> f64| {
                spread(
                    &ms.iter()
                        .filter_map(|m| m.row.per_vm.get(i))
                        .map(f)
                        .collect::<Vec<_>>(),
                )
                .0
            };
            VmRow {
                name: name.to_string(),
                throughput_norm: of(|v| v.throughput_norm),
                util_pct: of(|v| v.util_pct),
            }
        })
        .collect();
    let throughput_norm = all(|m| m.throughput_norm);
    let speedup = all(|m| m.speedup);
    RowStat {
        policy: p.lock.clone(),
        vms: p.threads,
        reps: ms.len(),
        median: RowMetrics {
            throughput_norm: throughput_norm.0,
            speedup: speedup.0,
            lock_speedup: some(|m| m.lock_speedup),
            util_variance: all(|m| m.util_variance).0,
            response_p50_us: some(|m| m.response_p50_us),
            response_p99_us: some(|m| m.response_p99_us),
            response_change: some(|m| m.response_change),
            spin_share: all(|m| m.spin_share).0,
            overhead_share: all(|m| m.overhead_share).0,
            ple_exits_s: all(|m| m.ple_exits_s).0,
            switches_s: all(|m| m.switches_s).0,
            per_vm,
        },
        throughput_norm_range: (throughput_norm.1, throughput_norm.2),
        speedup_range: (speedup.1, speedup.2),
    }
}

/// What the simulator did for the run: events over every repetition, the
/// seconds the simulations took summed (the per-thread speed) and the wall
/// time on the worker threads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// Events simulated, baselines included.
    pub events: u64,
    /// Seconds of simulation summed over the simulations.
    pub sim_s: f64,
    /// Wall-clock seconds of the whole run's simulations.
    pub wall_s: f64,
    /// Worker threads (`None` if the run did not record them).
    pub threads: Option<u64>,
}

impl Speed {
    /// Events per second of one simulation thread.
    pub fn per_thread(&self) -> f64 {
        self.events as f64 / self.sim_s
    }

    /// Events per wall-clock second on all the worker threads.
    pub fn overall(&self) -> f64 {
        self.events as f64 / self.wall_s
    }
}

/// The simulator's speed, from the totals every stored repetition carries
/// (`None` without a repetition).
pub fn speed(meta: &RunMeta, points: &[&Point]) -> Option<Speed> {
    let first = points.iter().find(|p| {
        p.reps
            .iter()
            .any(|r| r.metrics_of::<SimMetrics>().is_some())
    })?;
    let ms: Vec<SimMetrics> = first.reps.iter().filter_map(Rep::metrics_of).collect();
    Some(Speed {
        events: ms.iter().map(|m| m.plan_events).sum(),
        sim_s: ms.iter().map(|m| m.plan_sim_s).sum(),
        wall_s: ms.first().map_or(f64::NAN, |m| m.run_wall_s),
        threads: meta.params.get("threads").and_then(Value::as_u64),
    })
}

/// A number seed 004 reports: the value and whether the paper says "about".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reported {
    /// The value.
    pub value: f64,
    /// The paper gives it as approximate (约, ≈).
    pub approximate: bool,
}

/// Seed 004's numbers for one policy in one experiment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeedRow {
    /// The policy.
    pub policy: &'static str,
    /// System speed-up over Linux 2.6.38 (× none).
    pub speedup: Option<Reported>,
    /// Hackbench's speed-up (`fairness`).
    pub lock_speedup: Option<Reported>,
    /// Change of the request VM's response time (`latency`; −0.17: 17 % faster).
    pub response_change: Option<Reported>,
}

const fn r(value: f64) -> Option<Reported> {
    Some(Reported {
        value,
        approximate: false,
    })
}

const fn about(value: f64) -> Option<Reported> {
    Some(Reported {
        value,
        approximate: true,
    })
}

const fn row(
    policy: &'static str,
    speedup: Option<Reported>,
    lock_speedup: Option<Reported>,
    response_change: Option<Reported>,
) -> SeedRow {
    SeedRow {
        policy,
        speedup,
        lock_speedup,
        response_change,
    }
}

/// What seed 004 (Zhang, Zhang and Chen 2014, §3.1–3.3) reports for an
/// experiment; §3.4 (scalability) gives a figure and no numbers.
pub fn seed004(experiment: &str) -> &'static [SeedRow] {
    const PERFORMANCE: [SeedRow; 5] = [
        row("itcs", r(3.41), None, None),
        row("sitcs", r(2.78), None, None),
        row("dtcs", r(2.69), None, None),
        row("yth", r(2.56), None, None),
        row("ytt", r(3.30), None, None),
    ];
    const FAIRNESS: [SeedRow; 5] = [
        row("itcs", r(2.64), about(130.0), None),
        row("sitcs", r(2.60), about(100.0), None),
        row("dtcs", r(1.71), about(15.31), None),
        row("yth", r(1.59), about(10.69), None),
        row("ytt", r(1.51), about(2.7), None),
    ];
    const LATENCY: [SeedRow; 3] = [
        row("itcs", r(1.7555), None, r(0.1447)),
        row("sitcs", r(1.4159), None, about(-0.0537)),
        row("dtcs", None, None, about(-0.17)),
    ];
    match experiment {
        "performance" => &PERFORMANCE,
        "fairness" => &FAIRNESS,
        "latency" => &LATENCY,
        _ => &[],
    }
}

/// Seed 004's set-up, as the run's parameters name it.
const SEED_SETUP: [(&str, &str, &str, &str); 4] = [
    ("pcpus", "8", "pCPUs", "8"),
    ("vcpus", "8", "vCPUs per VM", "8"),
    (
        "lock",
        "ticket",
        "guest locks",
        "not named (locklab: ticket)",
    ),
    ("ple", "seed", "PLE", "PLE_GAP 128, PLE_WIN 2048, fixed"),
];

/// Where the run's set-up differs from seed 004's, as text.
fn setup_differences(params: &Value) -> Vec<String> {
    SEED_SETUP
        .iter()
        .filter_map(|(key, seed, what, shown)| {
            let v = params.get(*key)?;
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            (v != *seed).then(|| format!("{what} {v} (seed 004: {shown})"))
        })
        .collect()
}

fn pct(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map_or_else(|| "–".into(), |x| format!("{:+.1} %", x * 100.0))
}

/// A percentage as the paper prints it: up to two decimals (+75.55 %, −17 %).
fn paper_pct(x: Option<f64>) -> String {
    x.map_or_else(
        || "–".into(),
        |x| format!("{:+} %", (x * 10_000.0).round() / 100.0),
    )
}

fn times(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map_or_else(|| "–".into(), |x| format!("{}×", sig(x)))
}

fn reported(x: Option<Reported>, f: impl Fn(Option<f64>) -> String) -> String {
    match x {
        None => "–".into(),
        Some(r) => format!(
            "{}{}",
            if r.approximate { "≈" } else { "" },
            f(Some(r.value))
        ),
    }
}

/// A rate with a short unit: 950, 12.3k, 1.20M.
fn rate(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x >= 1e6 {
        format!("{}M", sig(x / 1e6))
    } else if x >= 1e3 {
        format!("{}k", sig(x / 1e3))
    } else {
        sig(x)
    }
}

fn wide((med, min, max): (f64, f64, f64)) -> bool {
    med > 0.0 && (max - min) / med > WIDE_SPREAD
}

fn marked(s: (f64, f64, f64), text: String) -> String {
    format!("{text}{}", if wide(s) { '~' } else { ' ' })
}

/// The set-up in words, from a point's parameters: the VMs and the host,
/// then the guest locks and pause-loop exiting.
fn setup_lines(p: &Point) -> (String, String) {
    let params = &p.params;
    let get = |k: &str| {
        params.get(k).map_or_else(
            || "?".to_string(),
            |v| v.as_str().map_or_else(|| v.to_string(), str::to_string),
        )
    };
    let vms = match experiment(p) {
        "fairness" => "1 VM of hackbench beside 4 of pi".to_string(),
        "performance" => "4 VMs of oltp".to_string(),
        "latency" => "7 VMs of oltp and 1 of latency".to_string(),
        "scalability" => format!("1 to {} VMs of oltp", get("max_vms")),
        _ => {
            let scenario = params.get("scenario").unwrap_or(&Value::Null);
            let vms = scenario
                .get("vms")
                .and_then(Value::as_array)
                .map(|vms| {
                    vms.iter()
                        .map(|v| {
                            format!(
                                "{} × {} ({} vCPUs)",
                                v["count"],
                                v["name"].as_str().unwrap_or("?"),
                                v["vcpus"]
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            let pcpus = scenario
                .pointer("/host/pcpus")
                .map_or_else(|| "?".into(), Value::to_string);
            let ple = match scenario.pointer("/ple/mode").and_then(Value::as_str) {
                Some("kvm") => format!(
                    "KVM's adaptive window from {} cycles",
                    scenario
                        .pointer("/ple/window_cycles")
                        .unwrap_or(&Value::Null)
                ),
                _ => format!(
                    "fixed window of {} cycles",
                    scenario
                        .pointer("/ple/window_cycles")
                        .unwrap_or(&Value::Null)
                ),
            };
            return (format!("{vms} on {pcpus} pCPUs"), format!("PLE {ple}"));
        }
    };
    (
        format!(
            "{vms}, {} vCPUs each, on {} pCPUs",
            get("vcpus"),
            get("pcpus")
        ),
        format!(
            "{} guest locks; PLE {}",
            get("lock"),
            match get("ple").as_str() {
                "seed" => "seed 004's gap 128 and window 2048, as cycles (fixed)",
                "kvm" => "KVM's adaptive window",
                _ => "?",
            }
        ),
    )
}

fn rep_line(rows: &[RowStat], points: &[&Point]) -> String {
    let mut counts = distinct(rows.iter().map(|r| r.reps));
    counts.sort_unstable();
    let mut seeds: Vec<u64> = points
        .iter()
        .flat_map(|p| {
            p.reps
                .iter()
                .filter_map(|r| r.metrics_of::<SimMetrics>().map(|m| m.seed))
        })
        .collect();
    seeds.sort_unstable();
    seeds.dedup();
    let seeds = match seeds.as_slice() {
        [] => String::new(),
        [s] => format!(", seed {s}"),
        [a, .., b] => format!(", seeds {a}–{b}"),
    };
    match counts.as_slice() {
        [1] => format!("one repetition{seeds}"),
        [n] => format!("median (min–max) of {n} reps{seeds}"),
        [a, .., b] => format!("median (min–max) of {a}–{b} reps{seeds}"),
        [] => "no repetitions".into(),
    }
}

/// Columns of a head and cells each: a left-aligned first column and
/// right-aligned others, each as wide as its widest cell.
fn columns(out: &mut String, cols: &[(String, Vec<String>)]) {
    let n = cols.first().map_or(0, |c| c.1.len());
    let rows: Vec<Vec<String>> = (0..=n)
        .map(|line| {
            cols.iter()
                .map(|(head, cells)| {
                    if line == 0 {
                        head.clone()
                    } else {
                        cells[line - 1].clone()
                    }
                })
                .collect()
        })
        .collect();
    let mut align = vec![Column::RIGHT; cols.len()];
    if let Some(first) = align.first_mut() {
        *first = Column::LEFT;
    }
    layout(out, &rows, &align, 2);
}

/// The text tables of a run's sim points.
pub fn tables(out: &mut String, meta: &RunMeta, points: &[&Point]) {
    for name in distinct(points.iter().map(|p| experiment(p))) {
        let group: Vec<&Point> = points
            .iter()
            .copied()
            .filter(|p| experiment(p) == name)
            .collect();
        out.push('\n');
        if name == "scalability" && !from_file(group[0]) {
            scalability(out, &group);
        } else {
            single(out, name, &group);
        }
        seed_comparison(out, name, &group);
        if let Some(s) = speed(meta, &group) {
            let threads = s.threads.map_or_else(String::new, |t| {
                format!(" on {t} thread{}", if t == 1 { "" } else { "s" })
            });
            let _ = writeln!(
                out,
                "\n  simulator: {} events in {} s of simulation = {} events/s per thread",
                rate(s.events as f64),
                sig(s.sim_s),
                rate(s.per_thread()),
            );
            let _ = writeln!(
                out,
                "  ({} s wall{threads}: {} events/s)",
                sig(s.wall_s),
                rate(s.overall()),
            );
        }
    }
}

fn title(out: &mut String, name: &str, group: &[&Point], rows: &[RowStat]) {
    let what = if from_file(group[0]) {
        format!(
            "scenario {name} ({})",
            group[0].params["config"].as_str().unwrap_or("?")
        )
    } else {
        format!("experiment {name}")
    };
    let p = &group[0].params;
    let secs = |k: &str| {
        p.get(k)
            .and_then(Value::as_f64)
            .map_or_else(|| "?".into(), |s| format!("{s}"))
    };
    let (vms, host) = setup_lines(group[0]);
    let _ = writeln!(out, "sim lhp, {what}: {vms}");
    let _ = writeln!(out, "  {host}");
    let _ = writeln!(
        out,
        "  {} s measured after {} s warm-up per simulation; {}",
        secs("secs"),
        secs("warmup_secs"),
        rep_line(rows, group)
    );
    out.push('\n');
}

/// One row per policy (every experiment but `scalability`, and files).
fn single(out: &mut String, name: &str, group: &[&Point]) {
    let rows: Vec<RowStat> = group.iter().map(|p| row_stat(p)).collect();
    title(out, name, group, &rows);
    let file = from_file(group[0]);
    let spread = rows.iter().any(|r| r.reps > 1);
    let col = |head: &str, f: &dyn Fn(&RowStat) -> String| {
        (head.to_string(), rows.iter().map(f).collect::<Vec<_>>())
    };
    let mut cols = vec![
        col("policy", &|r| {
            if group.iter().any(|p| p.threads != group[0].threads) {
                format!("{} ×{}", r.policy, r.vms)
            } else {
                r.policy.clone()
            }
        }),
        col(
            if spread {
                "norm tput (min–max)"
            } else {
                "norm tput"
            },
            &|r| {
                let (m, lo, hi) = r.throughput_norm();
                if spread {
                    format!("{} ({}–{})", sig(m), sig(lo), sig(hi))
                } else {
                    sig(m)
                }
            },
        ),
        col("× none ", &|r| {
            marked(r.speedup(), format!("{:.2}", r.speedup().0))
        }),
    ];
    let any = |f: fn(&RowStat) -> Option<f64>| rows.iter().any(|r| f(r).is_some());
    if name == "fairness" && !file {
        cols.push(col("hackbench ×", &|r| times(r.median.lock_speedup)));
    } else if file && any(|r| r.median.lock_speedup) {
        cols.push(col("lock VMs ×", &|r| times(r.median.lock_speedup)));
    }
    if name == "fairness" || file {
        cols.push(col("util var", &|r| sig(r.median.util_variance)));
    }
    if name == "latency" || any(|r| r.median.response_p50_us) {
        cols.push(col("p50 µs", &|r| {
            r.median.response_p50_us.map_or("–".into(), sig)
        }));
        cols.push(col("p99 µs", &|r| {
            r.median.response_p99_us.map_or("–".into(), sig)
        }));
        cols.push(col("p50 Δ", &|r| pct(r.median.response_change)));
    }
    cols.push(col("spin %", &|r| {
        format!("{:.1}", r.median.spin_share * 100.0)
    }));
    cols.push(col("PLE exits/s", &|r| rate(r.median.ple_exits_s)));
    cols.push(col("switches/s", &|r| rate(r.median.switches_s)));
    columns(out, &cols);
    let _ = writeln!(
        out,
        "  norm tput: each VM's throughput over its own alone on the host (none), geometric mean over"
    );
    let _ = writeln!(
        out,
        "  the VMs (request VMs left out); × none: over none's norm tput; spin %: host CPU spinning"
    );
    if name == "fairness" && !file {
        let _ = writeln!(
            out,
            "  hackbench ×: the hackbench VM's speed-up; util var: variance of the pi VMs' CPU shares (%²)"
        );
    }
    if name == "latency" || any(|r| r.median.response_p50_us) {
        let _ = writeln!(
            out,
            "  p50/p99 µs: the request VM's response times; p50 Δ: its median over none's (− is faster)"
        );
    }
    if spread {
        let _ = writeln!(
            out,
            "  ~ marks a speed-up whose min–max spread is over {:.0}% of it",
            WIDE_SPREAD * 100.0
        );
    }
}

/// `scalability`: a grid of policies by VM count for each metric.
fn scalability(out: &mut String, group: &[&Point]) {
    let rows: Vec<RowStat> = group.iter().map(|p| row_stat(p)).collect();
    title(out, "scalability", group, &rows);
    let policies = distinct(rows.iter().map(|r| r.policy.as_str()));
    let mut counts = distinct(rows.iter().map(|r| r.vms));
    counts.sort_unstable();
    let find = |p: &str, n: u32| rows.iter().find(|r| r.policy == p && r.vms == n);
    type Grid<'a> = (&'static str, &'a dyn Fn(&RowStat) -> String);
    let grids: [Grid; 5] = [
        (
            "norm tput: arithmetic mean over the VMs of each VM's throughput over the VM alone (none)",
            &|r| marked(r.throughput_norm(), sig(r.throughput_norm().0)),
        ),
        ("× none: norm tput over none's at the same VM count", &|r| {
            marked(r.speedup(), format!("{:.2}", r.speedup().0))
        }),
        ("spin %: host CPU time spent spinning on guest locks", &|r| {
            format!("{:.1} ", r.median.spin_share * 100.0)
        }),
        ("PLE exits per simulated second", &|r| format!("{} ", rate(r.median.ple_exits_s))),
        ("host context switches per simulated second", &|r| {
            format!("{} ", rate(r.median.switches_s))
        }),
    ];
    let lw = policies
        .iter()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(6)
        .max(6)
        + 2;
    for (what, cell) in grids {
        let _ = writeln!(out, "\n  {what}");
        grid_of(
            out,
            ("policy", lw),
            9,
            &policies,
            &counts,
            |n| format!("{n} VM{} ", if n == 1 { "" } else { "s" }),
            |p, n| find(p, n).map_or_else(|| "– ".to_string(), cell),
        );
    }
    if rows
        .iter()
        .any(|r| wide(r.throughput_norm()) || wide(r.speedup()))
    {
        let _ = writeln!(
            out,
            "  ~ marks a min–max spread over the repetitions wider than {:.0}% of the median",
            WIDE_SPREAD * 100.0
        );
    }
}

/// Seed 004's numbers under the table, beside this run's.
fn seed_comparison(out: &mut String, name: &str, group: &[&Point]) {
    if from_file(group[0]) {
        return;
    }
    if name == "scalability" {
        let _ = writeln!(
            out,
            "\n  seed 004 (Fig. 8, 1 to 8 VMs of 8 vCPUs on 8 pCPUs) gives no numbers for scalability: \
             none fell\n  most as VMs were added, itcs scaled best, and the policies drew closer at more VMs"
        );
        return;
    }
    let seed = seed004(name);
    if seed.is_empty() {
        return;
    }
    let rows: Vec<RowStat> = group.iter().map(|p| row_stat(p)).collect();
    let here = |policy: &str| rows.iter().find(|r| r.policy == policy);
    let what = match name {
        "fairness" => "1 hackbench VM and 4 pi VMs",
        "performance" => "4 SysBench OLTP VMs",
        _ => "8 SysBench VMs (one of 1 thread)",
    };
    let _ = writeln!(
        out,
        "\n  seed 004 measured on Linux 2.6.38 (8 pCPUs), {what}, 8 vCPUs each:"
    );
    let mut cols: Vec<(String, Vec<String>)> = vec![(
        "policy".into(),
        seed.iter().map(|s| s.policy.to_string()).collect(),
    )];
    let mut pair =
        |head: &str, paper: &dyn Fn(&SeedRow) -> String, ours: &dyn Fn(&RowStat) -> String| {
            cols.push((
                format!("{head}: seed 004"),
                seed.iter().map(paper).collect(),
            ));
            cols.push((
                "this run".into(),
                seed.iter()
                    .map(|s| here(s.policy).map_or_else(|| "not run".into(), ours))
                    .collect(),
            ));
        };
    match name {
        "fairness" => {
            pair("hackbench ×", &|s| reported(s.lock_speedup, times), &|r| {
                times(r.median.lock_speedup)
            });
            pair("system ×", &|s| reported(s.speedup, times), &|r| {
                times(Some(r.speedup().0))
            });
        }
        "performance" => {
            pair("× none", &|s| reported(s.speedup, times), &|r| {
                times(Some(r.speedup().0))
            });
        }
        _ => {
            pair(
                "throughput",
                &|s| {
                    reported(
                        s.speedup.map(|x| Reported {
                            value: x.value - 1.0,
                            ..x
                        }),
                        paper_pct,
                    )
                },
                &|r| pct(Some(r.speedup().0 - 1.0)),
            );
            pair(
                "response",
                &|s| reported(s.response_change, paper_pct),
                &|r| pct(r.median.response_change),
            );
        }
    }
    columns(out, &cols);
    let diff = setup_differences(&group[0].params);
    if !diff.is_empty() {
        let _ = writeln!(
            out,
            "  this run's set-up differs from the seed's: {}",
            diff.join(", ")
        );
    }
}

fn opt(x: Option<f64>) -> Value {
    x.map_or(Value::Null, num)
}

/// A row as JSON: every field of the table's row (medians; `null` where a
/// row has no such number), the spread, and every repetition.
fn row_json(p: &Point) -> Value {
    let r = row_stat(p);
    let (events, _, _) = p.stat(|x| x.total_ops as f64);
    let (wall, _, _) = p.stat(|x| x.wall_s);
    json!({
        "policy": r.policy,
        "vms": r.vms,
        "reps": r.reps,
        "throughput_norm": num(r.throughput_norm().0),
        "throughput_norm_min": num(r.throughput_norm().1),
        "throughput_norm_max": num(r.throughput_norm().2),
        "speedup": num(r.speedup().0),
        "speedup_min": num(r.speedup().1),
        "speedup_max": num(r.speedup().2),
        "lock_speedup": opt(r.median.lock_speedup),
        "util_variance": num(r.median.util_variance),
        "response_p50_us": opt(r.median.response_p50_us),
        "response_p99_us": opt(r.median.response_p99_us),
        "response_change": opt(r.median.response_change),
        "spin_share": num(r.median.spin_share),
        "overhead_share": num(r.median.overhead_share),
        "ple_exits_s": num(r.median.ple_exits_s),
        "switches_s": num(r.median.switches_s),
        "per_vm": r.median.per_vm.iter().map(|v| json!({
            "name": v.name, "throughput_norm": num(v.throughput_norm), "util_pct": num(v.util_pct),
        })).collect::<Vec<_>>(),
        "events": num(events),
        "wall_s": num(wall),
        "repetitions": serde_json::to_value(&p.reps).unwrap_or(Value::Null),
    })
}

fn seed_json(s: &SeedRow) -> Value {
    let v = |x: Option<Reported>| {
        x.map_or(
            Value::Null,
            |r| json!({"value": r.value, "approximate": r.approximate}),
        )
    };
    json!({
        "policy": s.policy,
        "speedup": v(s.speedup),
        "lock_speedup": v(s.lock_speedup),
        "response_change": v(s.response_change),
    })
}

/// A sim run as one JSON object: the experiment, its rows, the simulator's
/// speed, seed 004's numbers where it has them, and the run.
pub fn run_json(meta: &RunMeta, points: &[Point]) -> Value {
    let sims: Vec<&Point> = points.iter().filter(|p| p.bench == BENCH).collect();
    let names = distinct(sims.iter().map(|p| experiment(p)));
    let experiment = names.first().copied().unwrap_or_else(|| {
        meta.params
            .get("experiment")
            .and_then(Value::as_str)
            .unwrap_or("?")
    });
    let sp = speed(meta, &sims);
    let file = sims.first().is_some_and(|p| from_file(p));
    json!({
        "experiment": experiment,
        "run_id": meta.id,
        "rows": sims.iter().map(|p| row_json(p)).collect::<Vec<_>>(),
        "reps": sims.iter().map(|p| p.reps.len()).max().unwrap_or(0),
        "events": sp.map(|s| s.events),
        "sim_s": sp.map(|s| num(s.sim_s)),
        "events_per_s": sp.map(|s| num(s.per_thread())),
        "wall_s": sp.map(|s| num(s.wall_s)),
        "events_per_s_wall": sp.map(|s| num(s.overall())),
        "threads": sp.and_then(|s| s.threads),
        "seed_004": if file { Vec::new() } else { seed004(experiment).iter().map(seed_json).collect() },
        "params": sims.first().map_or(Value::Null, |p| p.params.clone()),
        "run": crate::core::report::run_meta_json(meta),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::report::WIDTH;
    use crate::core::results::{Machine, Rep};

    fn metrics(seed: u64, norm: f64, speedup: f64, latency: bool) -> SimMetrics {
        SimMetrics {
            seed,
            row: RowMetrics {
                throughput_norm: norm,
                speedup,
                lock_speedup: Some(speedup * 10.0),
                util_variance: 4.0,
                response_p50_us: latency.then_some(40.0 / speedup),
                response_p99_us: latency.then_some(90.0 / speedup),
                response_change: latency.then_some(1.0 / speedup - 1.0),
                spin_share: 0.5 / speedup,
                overhead_share: 0.01,
                ple_exits_s: 12_345.0 * speedup,
                switches_s: 2_500_000.0,
                per_vm: vec![VmRow {
                    name: "oltp#1".into(),
                    throughput_norm: norm,
                    util_pct: 12.5,
                }],
            },
            plan_events: 4_000_000,
            plan_sim_s: 2.0,
            run_wall_s: 1.5,
        }
    }

    /// A point as `sim lhp` stores it, hand-built: one repetition per
    /// speed-up given.
    pub(crate) fn point(exp: &str, policy: &str, vms: u32, speedups: &[f64]) -> Point {
        let latency = exp == "latency";
        Point {
            bench: BENCH.into(),
            lock: policy.into(),
            threads: vms,
            params: json!({"experiment": exp, "pcpus": 2, "vcpus": 2, "lock": "ticket",
                           "ple": "seed", "secs": 0.5, "warmup_secs": 0.1, "seed": 1,
                           "max_vms": if exp == "scalability" { json!(3) } else { Value::Null }}),
            reps: speedups
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    let mut r = Rep::one_thread(i as u32, 0.5, 0.5, 1_000_000);
                    r.set_metrics(&metrics(1 + i as u64, 0.2 * s, s, latency));
                    r
                })
                .collect(),
        }
    }

    pub(crate) fn meta() -> RunMeta {
        RunMeta {
            id: Some(3),
            uuid: None,
            kind: KIND.into(),
            command: "locklab sim lhp".into(),
            params: json!({"experiment": "performance", "threads": 4, "reps": 3}),
            machine: Machine::default(),
            started: "2026-11-23T03:00:00Z".into(),
            finished: Some("2026-11-23T03:01:00Z".into()),
            complete: true,
        }
    }

    fn text(points: &[Point]) -> String {
        let refs: Vec<&Point> = points.iter().collect();
        let mut out = String::new();
        tables(&mut out, &meta(), &refs);
        for line in out.lines() {
            assert!(line.chars().count() <= WIDTH, "too wide: {line:?}");
        }
        out
    }

    #[test]
    fn performance_table_has_a_row_per_policy_and_the_seeds_numbers() {
        let ps = [
            point("performance", "none", 4, &[1.0, 1.0, 1.0]),
            point("performance", "itcs", 4, &[2.0, 3.0, 2.5]),
        ];
        let t = text(&ps);
        assert!(
            t.contains("sim lhp, experiment performance: 4 VMs of oltp, 2 vCPUs each, on 2 pCPUs"),
            "{t}"
        );
        assert!(t.contains("median (min–max) of 3 reps, seeds 1–3"), "{t}");
        assert!(t.contains("norm tput (min–max)"), "{t}");
        // itcs: norm 0.4, 0.6, 0.5 → 0.500 (0.400–0.600); × none 2.50, wide.
        assert!(t.contains("0.500 (0.400–0.600)"), "{t}");
        assert!(t.contains("2.50~"), "{t}");
        assert!(t.contains("× none: seed 004"), "{t}");
        assert!(t.contains("3.41×"), "{t}");
        assert!(t.contains("2.50×"), "{t}");
        assert!(t.contains("not run"), "sitcs was not simulated: {t}");
        assert!(
            t.contains(
                "differs from the seed's: pCPUs 2 (seed 004: 8), vCPUs per VM 2 (seed 004: 8)"
            ),
            "{t}"
        );
        assert!(t.contains("events/s per thread"), "{t}");
        // Three repetitions of 4 M events in 2 s each: 2 M events/s.
        assert!(
            t.contains("12.0M events in 6.00 s of simulation = 2.00M events/s per thread"),
            "{t}"
        );
        assert!(
            t.contains("(1.50 s wall on 4 threads: 8.00M events/s)"),
            "{t}"
        );
        assert!(!t.contains("hackbench"), "{t}");
    }

    #[test]
    fn fairness_and_latency_have_their_own_columns() {
        let ps = [
            point("fairness", "none", 5, &[1.0]),
            point("fairness", "dtcs", 5, &[1.5]),
        ];
        let t = text(&ps);
        assert!(t.contains("hackbench ×") && t.contains("util var"), "{t}");
        assert!(t.contains("≈15.3×") && t.contains("1.71×"), "{t}");
        assert!(t.contains("15.0×"), "dtcs hackbench × = 1.5 × 10: {t}");
        assert!(t.contains("one repetition, seed 1"), "{t}");
        let ps = [
            point("latency", "none", 8, &[1.0]),
            point("latency", "itcs", 8, &[2.0]),
        ];
        let t = text(&ps);
        assert!(
            t.contains("p50 µs") && t.contains("p99 µs") && t.contains("p50 Δ"),
            "{t}"
        );
        assert!(t.contains("-50.0 %"), "itcs halves the response: {t}");
        assert!(
            t.contains("+75.55 %") && t.contains("+14.47 %") && t.contains("≈-17 %"),
            "{t}"
        );
        assert!(t.contains("+100.0 %"), "this run's throughput change: {t}");
    }

    #[test]
    fn scalability_is_a_grid_of_policies_by_vm_count() {
        let mut ps = Vec::new();
        for n in 1..=3 {
            ps.push(point("scalability", "none", n, &[1.0]));
            ps.push(point("scalability", "itcs", n, &[1.0 + f64::from(n)]));
        }
        let t = text(&ps);
        assert!(t.contains("1 to 3 VMs of oltp"), "{t}");
        assert!(t.contains("1 VM") && t.contains("3 VMs"), "{t}");
        assert!(t.contains("4.00"), "itcs × none at 3 VMs: {t}");
        assert!(t.contains("gives no numbers for scalability"), "{t}");
    }

    #[test]
    fn json_has_every_row_field_and_nulls_where_absent() {
        let ps = vec![
            point("performance", "none", 4, &[1.0, 1.0]),
            point("performance", "itcs", 4, &[2.0, 4.0]),
        ];
        let v = run_json(&meta(), &ps);
        assert_eq!(v["experiment"], "performance");
        assert_eq!(v["run_id"], 3);
        assert_eq!(v["events"], 8_000_000);
        assert_eq!(v["events_per_s"], 2e6);
        assert_eq!(v["threads"], 4);
        let row = &v["rows"][1];
        assert_eq!(row["policy"], "itcs");
        assert_eq!(row["vms"], 4);
        assert_eq!(row["speedup"], 3.0);
        assert_eq!(row["speedup_min"], 2.0);
        assert!((row["throughput_norm"].as_f64().unwrap() - 0.6).abs() < 1e-12);
        for key in ["response_p50_us", "response_p99_us", "response_change"] {
            assert_eq!(row[key], Value::Null, "{key}");
        }
        for key in [
            "lock_speedup",
            "util_variance",
            "spin_share",
            "ple_exits_s",
            "switches_s",
        ] {
            assert!(row[key].is_number(), "{key}");
        }
        assert_eq!(row["repetitions"].as_array().unwrap().len(), 2);
        assert_eq!(v["seed_004"][0]["policy"], "itcs");
        assert_eq!(v["seed_004"][0]["speedup"]["value"], 3.41);
        let lat = run_json(&meta(), &[point("latency", "itcs", 8, &[2.0])]);
        assert_eq!(lat["rows"][0]["response_p50_us"], 20.0);
        serde_json::from_str::<Value>(&v.to_string()).unwrap();
    }

    #[test]
    fn nan_medians_are_dashes_and_nulls() {
        let mut p = point("performance", "none", 4, &[1.0]);
        let mut m = p.reps[0].metrics_of::<SimMetrics>().unwrap();
        m.row.throughput_norm = f64::NAN;
        p.reps[0].set_metrics(&m);
        let t = text(&[p.clone()]);
        assert!(t.contains("–"), "{t}");
        let v = run_json(&meta(), &[p]);
        assert_eq!(v["rows"][0]["throughput_norm"], Value::Null);
    }
}
