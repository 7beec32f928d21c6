//! The report of `bench kv` points: throughput, Xput and mean utilisation
//! against cores per kernel variant (seed 000 Figs. 3 and 4, seed 002
//! Fig. 7), each core's utilisation, and what the requests were; in the
//! text summary and as extra JSON keys per point.

use super::runner::KvMetrics;
use crate::core::report::{
    distinct, host_wait_line, lock_width, rep_counts, sig, throughput_unit, WIDE_SPREAD,
};
use crate::core::results::{median, Point, RunMeta};
use crate::studies::shared::kernel::{Elision, NONE};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The name its points are stored under.
pub const BENCH: &str = "kv";

fn metrics(p: &Point) -> Vec<KvMetrics> {
    p.reps
        .iter()
        .filter_map(|r| r.metrics_of::<KvMetrics>())
        .collect()
}

/// Median throughput, requests per second.
pub fn throughput(p: &Point) -> f64 {
    p.stat(|r| r.throughput_ops_s).0
}

/// Median mean utilisation over the cores, 0–1.
pub fn utilisation(p: &Point) -> f64 {
    median(
        &metrics(p)
            .iter()
            .map(|m| m.mean_utilisation)
            .collect::<Vec<_>>(),
    )
}

/// Median Xput (throughput over mean utilisation), requests per second.
pub fn xput(p: &Point) -> f64 {
    p.stat(|r| r.metrics_of::<KvMetrics>().map_or(f64::NAN, |m| m.xput))
        .0
}

/// Per core, the median utilisation.
pub fn core_utilisation(p: &Point) -> Vec<f64> {
    let ms = metrics(p);
    let n = ms.iter().map(|m| m.utilisation.len()).max().unwrap_or(0);
    (0..n)
        .map(|c| {
            median(
                &ms.iter()
                    .filter_map(|m| m.utilisation.get(c).copied())
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

/// The largest run-queue wait of an emulated core over the repetitions, as
/// a fraction of the window (NaN for runs stored before it was measured).
pub fn host_wait(p: &Point) -> f64 {
    metrics(p)
        .iter()
        .flat_map(|m| m.host_wait.iter().copied())
        .fold(f64::NAN, f64::max)
}

/// Per core, the busy cycles (time-stamp ticks) between its kernel
/// entries, pooled over the repetitions: seed 002 §5.2's "average delay"
/// between kernel entries, except that the kernel's own time is in it.
/// Empty for runs stored before per-core calls were counted.
pub fn cycles_per_entry(p: &Point) -> Vec<f64> {
    let ms = metrics(p);
    let n = ms.iter().map(|m| m.core_syscalls.len()).max().unwrap_or(0);
    (0..n)
        .map(|c| {
            let (busy, calls) = ms.iter().fold((0.0, 0u64), |(b, k), m| {
                let u = m.utilisation.get(c).copied().unwrap_or(0.0);
                let s = m.core_syscalls.get(c).copied().unwrap_or(0);
                (b + u * m.ticks as f64, k + s)
            });
            if calls == 0 {
                f64::NAN
            } else {
                busy / calls as f64
            }
        })
        .collect()
}

/// Operations by kind summed over the repetitions.
fn ops(p: &Point) -> [u64; 5] {
    metrics(p).iter().fold([0; 5], |a, m| {
        [
            a[0] + m.reads,
            a[1] + m.updates,
            a[2] + m.scans,
            a[3] + m.inserts,
            a[4] + m.rmws,
        ]
    })
}

/// Kernel system calls and interrupts per request (over all repetitions).
fn per_request(p: &Point) -> (f64, f64) {
    let req: u64 = p.reps.iter().map(|r| r.total_ops).sum();
    let ms = metrics(p);
    let sys: u64 = ms.iter().map(|m| m.syscalls).sum();
    let irq: u64 = ms.iter().map(|m| m.interrupts).sum();
    (sys as f64 / req as f64, irq as f64 / req as f64)
}

/// Elision outcomes summed over repetitions (and points).
fn elision<'a>(points: impl IntoIterator<Item = &'a Point>) -> Elision {
    points
        .into_iter()
        .flat_map(metrics)
        .map(|m| Elision {
            elided: m.elided,
            fallbacks: m.fallbacks,
            aborts: m.aborts,
            skipped: m.skipped,
            causes: m.abort_causes,
        })
        .fold(Elision::default(), Elision::plus)
}

fn param<'a>(p: &'a Point, k: &str) -> &'a str {
    p.params.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The text tables of a run's kv points.
pub fn tables(out: &mut String, _meta: &RunMeta, points: &[&Point]) {
    if points.is_empty() {
        return;
    }
    let lw = lock_width(points).max(10);
    let variants: Vec<&str> = distinct(points.iter().map(|p| p.lock.as_str()));
    let mut cores = distinct(points.iter().map(|p| p.threads));
    cores.sort_unstable();
    let first = points[0];
    let _ =
        writeln!(
        out,
        "\nkv: YCSB workload {} ({} keys, {} records per server) through core 0's network driver; \
         median of {}",
        param(first, "workload"),
        param(first, "keys"),
        first.params.get("records").and_then(Value::as_u64).unwrap_or(0),
        rep_counts(points)
    );
    let top = points
        .iter()
        .map(|p| throughput(p).max(xput(p)))
        .fold(0.0, f64::max);
    let (scale, unit) = throughput_unit(top);
    let unit = unit.replace("ops", "req");
    type Metric = fn(&Point) -> f64;
    let rows: [(&str, Metric, bool); 3] = [
        ("throughput", throughput, true),
        ("Xput (throughput / mean utilisation)", xput, true),
        ("mean utilisation", utilisation, false),
    ];
    for (what, f, rate) in rows {
        let _ = writeln!(
            out,
            "  {what}{}",
            if rate {
                format!(", {unit}")
            } else {
                ", % busy".into()
            }
        );
        let mut head = format!("  {:<lw$}", "variant");
        for c in &cores {
            let _ = write!(head, "{:>10}", format!("{c} cores "));
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for v in &variants {
            let mut line = format!("  {v:<lw$}");
            for &c in &cores {
                let cell = points
                    .iter()
                    .find(|p| p.lock == *v && p.threads == c)
                    .map_or_else(
                        || "–".to_string(),
                        |p| {
                            let x = f(p);
                            if !x.is_finite() {
                                return "–".to_string();
                            }
                            if rate {
                                let (_, lo, hi) = p.stat(|r| r.throughput_ops_s);
                                let wide =
                                    x > 0.0 && (hi - lo) / throughput(p).max(1e-9) > WIDE_SPREAD;
                                format!(
                                    "{}{}",
                                    sig(x / scale),
                                    if wide && what == "throughput" {
                                        '~'
                                    } else {
                                        ' '
                                    }
                                )
                            } else {
                                format!("{:.0} % ", x * 100.0)
                            }
                        },
                    );
                let _ = write!(line, "{cell:>10}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
    let _ = writeln!(
        out,
        "  utilisation per core (core 0 the driver's), at the most cores"
    );
    let top_cores = *cores.last().unwrap_or(&1);
    for v in &variants {
        if let Some(p) = points
            .iter()
            .find(|p| p.lock == *v && p.threads == top_cores)
        {
            let u: Vec<String> = core_utilisation(p)
                .iter()
                .map(|x| format!("{:.0}%", x * 100.0))
                .collect();
            let (sys, irq) = per_request(p);
            let _ = writeln!(
                out,
                "  {v:<lw$}  {}   {:.1} system calls and {:.2} interrupts per request",
                u.join(" "),
                sys,
                irq
            );
        }
    }
    let entries: Vec<(&str, Vec<f64>)> = variants
        .iter()
        .filter_map(|v| {
            let p = points
                .iter()
                .find(|p| p.lock == *v && p.threads == top_cores)?;
            Some((*v, cycles_per_entry(p))).filter(|(_, c)| !c.is_empty())
        })
        .collect();
    if !entries.is_empty() {
        let _ = writeln!(
            out,
            "  busy cycles between kernel entries per core (seed 002's delay, kernel time included)"
        );
        for (v, c) in entries {
            let c: Vec<String> = c
                .iter()
                .map(|x| {
                    if x.is_finite() {
                        format!("{x:.0}")
                    } else {
                        "–".into()
                    }
                })
                .collect();
            let _ = writeln!(out, "  {v:<lw$}  {}", c.join(" "));
        }
    }
    let all_ops = points.iter().fold([0u64; 5], |a, p| {
        let o = ops(p);
        std::array::from_fn(|i| a[i] + o[i])
    });
    let _ = writeln!(
        out,
        "  operations completed: {} reads, {} updates, {} scans, {} inserts, {} read-modify-writes",
        all_ops[0], all_ops[1], all_ops[2], all_ops[3], all_ops[4]
    );
    let at = |p: &Point| format!("{} at {} cores", p.lock, p.threads);
    if let Some(line) = host_wait_line(points, host_wait, at) {
        let _ = writeln!(out, "{line}");
    }
    if variants.contains(&NONE) {
        let _ = writeln!(
            out,
            "  none runs at 1 core only: beyond, the driver and the servers share kernel objects"
        );
    }
    for v in variants.iter().filter(|v| v.starts_with("elide")) {
        let m = elision(points.iter().copied().filter(|p| p.lock == *v));
        let (entries, aborts) = m.words(v.starts_with("elide-adaptive"));
        let _ = writeln!(out, "  {v}: {entries},\n    {aborts}");
    }
}

/// The extra JSON keys of a kv point.
pub fn point_json(p: &Point) -> Value {
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let o = ops(p);
    let m = elision([p]);
    let (sys, irq) = per_request(p);
    json!({
        "cores": p.threads,
        "workload": param(p, "workload"),
        "keys": param(p, "keys"),
        "records": p.params.get("records").cloned().unwrap_or(Value::Null),
        "throughput_ops_s": num(throughput(p)),
        "utilisation": num(utilisation(p)),
        "xput": num(xput(p)),
        "core_utilisation": core_utilisation(p).into_iter().map(num).collect::<Vec<_>>(),
        "reads": o[0],
        "updates": o[1],
        "scans": o[2],
        "inserts": o[3],
        "rmws": o[4],
        "syscalls_per_request": num(sys),
        "interrupts_per_request": num(irq),
        "host_wait": num(host_wait(p)),
        "core_cycles_per_entry": cycles_per_entry(p).into_iter().map(num).collect::<Vec<_>>(),
        "elided": m.elided,
        "fallbacks": m.fallbacks,
        "aborts": m.aborts,
        "skipped": m.skipped,
        "abort_causes": m.causes_json(),
    })
}
