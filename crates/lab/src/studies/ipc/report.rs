//! The report of `bench ipc` points: one-way IPC cost and overhead over
//! `none` on one core (seed 002 Fig. 3), throughput against cores per delay
//! (Fig. 4 and 5), the shared-endpoint sweep, and kernel critical-section
//! lengths; in the text summary and as extra JSON keys per point.

use super::runner::{cycles_per_ipc, hold_ticks, IpcMetrics};
use crate::core::report::{
    distinct, fmt_ns, host_wait_line, lock_width, rep_counts, sig, throughput_unit, top_throughput,
    WIDE_SPREAD,
};
use crate::core::results::{Point, RunMeta};
use crate::studies::shared::ipc_points::{delay_ns, mode};
use crate::studies::shared::kernel::{Elision, NONE};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// TSC ticks per ns on the machine of the run (NaN if unknown).
fn ticks_per_ns(meta: &RunMeta) -> f64 {
    meta.machine.tsc_hz.map_or(f64::NAN, |hz| hz as f64 / 1e9)
}

/// Median TSC cycles per one-way IPC on one core.
pub fn cycles(p: &Point) -> f64 {
    p.stat(|r| cycles_per_ipc(r, p.threads)).0
}

/// Median mean kernel critical-section length, ticks (NaN if not timed).
pub fn hold(p: &Point) -> f64 {
    p.stat(hold_ticks).0
}

/// The largest run-queue wait of an emulated core over the repetitions, as
/// a fraction of the window (NaN for runs stored before it was measured).
pub fn host_wait(p: &Point) -> f64 {
    p.reps
        .iter()
        .filter_map(|r| r.metrics_of::<IpcMetrics>())
        .flat_map(|m| m.host_wait)
        .fold(f64::NAN, f64::max)
}

/// Elision outcomes summed over repetitions (and points).
fn elision<'a>(points: impl IntoIterator<Item = &'a Point>) -> Elision {
    points
        .into_iter()
        .flat_map(|p| &p.reps)
        .filter_map(|r| r.metrics_of::<IpcMetrics>())
        .map(|m| Elision {
            elided: m.elided,
            fallbacks: m.fallbacks,
            aborts: m.aborts,
            skipped: m.skipped,
            causes: [
                m.abort_conflict,
                m.abort_capacity,
                m.abort_lock_busy,
                m.abort_retry_clear,
                m.abort_other,
            ],
        })
        .fold(Elision::default(), Elision::plus)
}

/// The point of `none` that `p` compares with (same mode, cores, delay).
fn none_of<'a>(p: &Point, all: &[&'a Point]) -> Option<&'a Point> {
    all.iter().copied().find(|q| {
        q.lock == NONE && mode(q) == mode(p) && q.threads == p.threads && delay_ns(q) == delay_ns(p)
    })
}

/// `p`'s median time per IPC over `none`'s, minus one (the overhead);
/// `None` for `none` itself.
pub fn overhead(p: &Point, all: &[&Point]) -> Option<f64> {
    if p.lock == NONE {
        return None;
    }
    let base = none_of(p, all)?;
    let (a, b) = (p.stat(|r| r.ns_per_op).0, base.stat(|r| r.ns_per_op).0);
    let o = a / b - 1.0;
    (a > 0.0 && b > 0.0 && o.is_finite()).then_some(o)
}

/// `p`'s median throughput over `none`'s.
pub fn vs_none(p: &Point, all: &[&Point]) -> Option<f64> {
    let base = none_of(p, all)?;
    let r = p.stat(|r| r.throughput_ops_s).0 / base.stat(|r| r.throughput_ops_s).0;
    r.is_finite().then_some(r)
}

fn cell(p: &Point, scale: f64) -> String {
    let (med, min, max) = p.stat(|r| r.throughput_ops_s);
    let wide = med > 0.0 && (max - min) / med > WIDE_SPREAD;
    format!("{}{}", sig(med / scale), if wide { '~' } else { ' ' })
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "–".into(), |o| format!("{:+.1} %", o * 100.0))
}

/// The text tables of a run's ipc points.
pub fn tables(out: &mut String, meta: &RunMeta, points: &[&Point]) {
    let tpn = ticks_per_ns(meta);
    let lw = lock_width(points).max(10);
    let variants: Vec<&str> = distinct(points.iter().map(|p| p.lock.as_str()));
    let of = |m: &str| -> Vec<&Point> { points.iter().copied().filter(|p| mode(p) == m).collect() };

    let single = of("single");
    if !single.is_empty() {
        let _ = writeln!(
            out,
            "\nipc single: one-way IPC on one core (one client/server pair, no delay); median of {}",
            rep_counts(&single)
        );
        let _ = writeln!(
            out,
            "  {:<lw$}{:>10}{:>14}{:>12}{:>12}",
            "variant", "ns/IPC", "min–max", "cycles/IPC", "over none"
        );
        for p in &single {
            let (med, min, max) = p.stat(|r| r.ns_per_op);
            let _ = writeln!(
                out,
                "  {:<lw$}{:>10}{:>14}{:>12}{:>12}",
                p.lock,
                sig(med),
                if p.reps.len() < 2 {
                    "unknown".to_string()
                } else {
                    format!("{}–{}", sig(min), sig(max))
                },
                sig(cycles(p)),
                pct(overhead(p, &single))
            );
        }
    }

    for (m, what) in [
        ("multi", "a ping-pong pair per core on its own endpoint"),
        (
            "shared",
            "every core's client calls one endpoint served by every core's server",
        ),
    ] {
        let pts = of(m);
        for d in distinct(pts.iter().map(|p| delay_ns(p))) {
            let group: Vec<&Point> = pts.iter().copied().filter(|p| delay_ns(p) == d).collect();
            let cores: Vec<u32> = {
                let mut c = distinct(group.iter().map(|p| p.threads));
                c.sort_unstable();
                c
            };
            let (scale, unit) = throughput_unit(top_throughput(&group));
            let unit = unit.replace("ops", "IPC");
            let _ = writeln!(
                out,
                "\nipc {m}: {what}; server delay {d} ns (exponential)\n  total one-way IPCs in {unit}, \
                 median of {}; ~ marks a min–max spread over {:.0}%; × none at the most cores",
                rep_counts(&group),
                WIDE_SPREAD * 100.0
            );
            let mut head = format!("  {:<lw$}", "variant");
            for c in &cores {
                let _ = write!(head, "{:>10}", format!("{c} cores "));
            }
            let _ = write!(head, "{:>9}", "× none");
            let _ = writeln!(out, "{}", head.trim_end());
            for v in &variants {
                let mut line = format!("  {v:<lw$}");
                let mut any = false;
                for &c in &cores {
                    let p = group.iter().find(|p| p.lock == *v && p.threads == c);
                    any |= p.is_some();
                    let _ = write!(
                        line,
                        "{:>10}",
                        p.map_or_else(|| "–".into(), |p| cell(p, scale))
                    );
                }
                if !any {
                    continue;
                }
                let last = cores
                    .last()
                    .and_then(|&c| group.iter().find(|p| p.lock == *v && p.threads == c))
                    .and_then(|p| vs_none(p, &group));
                let _ = write!(
                    line,
                    "{:>9}",
                    last.map_or_else(|| "–".into(), |r| format!("{r:.2}"))
                );
                let _ = writeln!(out, "{}", line.trim_end());
            }
        }
    }

    let hold_pts = of("hold");
    if !hold_pts.is_empty() {
        let cores: Vec<u32> = {
            let mut c = distinct(hold_pts.iter().map(|p| p.threads));
            c.sort_unstable();
            c
        };
        let _ = writeln!(
            out,
            "\nipc hold: mean kernel critical section (from lock acquired to released; for none the \
             same stretch\n  unlocked), the multi set-up at {} ns delay; ns (TSC cycles), median of {}",
            delay_ns(hold_pts[0]),
            rep_counts(&hold_pts)
        );
        let mut head = format!("  {:<lw$}", "variant");
        for c in &cores {
            let _ = write!(head, "{:>16}", format!("{c} cores"));
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for v in &variants {
            let mut line = format!("  {v:<lw$}");
            let mut any = false;
            for &c in &cores {
                let p = hold_pts.iter().find(|p| p.lock == *v && p.threads == c);
                any |= p.is_some();
                let text = p.map_or_else(
                    || "–".into(),
                    |p| format!("{} ({})", fmt_ns(hold(p) / tpn), sig(hold(p))),
                );
                let _ = write!(line, "{text:>16}");
            }
            if any {
                let _ = writeln!(out, "{}", line.trim_end());
            }
        }
    }

    let at = |p: &Point| format!("{}, {} at {} cores", mode(p), p.lock, p.threads);
    if let Some(line) = host_wait_line(points, host_wait, at) {
        let _ = writeln!(out, "\n{}", line.trim_start_matches(' '));
    }

    for v in variants.iter().filter(|v| v.starts_with("elide")) {
        let m = elision(points.iter().copied().filter(|p| p.lock == *v));
        // The adaptive policy's entries that did not attempt at all.
        let (entries, aborts) = m.words(v.starts_with("elide-adaptive") || m.skipped > 0);
        let _ = writeln!(out, "\n{v}: {entries}, {aborts}");
    }
}

/// The extra JSON keys of an ipc point.
pub fn point_json(meta: &RunMeta, p: &Point, all: &[&Point]) -> Value {
    let tpn = ticks_per_ns(meta);
    let num = |x: f64| if x.is_finite() { json!(x) } else { Value::Null };
    let m = elision([p]);
    json!({
        "mode": mode(p),
        "delay_ns": delay_ns(p),
        "cores": p.threads,
        "ipcs_s": num(p.stat(|r| r.throughput_ops_s).0),
        "ns_per_ipc": num(p.stat(|r| r.ns_per_op).0),
        "cycles_per_ipc": num(cycles(p)),
        "overhead_vs_none": overhead(p, all).map_or(Value::Null, |o| json!(o)),
        "throughput_vs_none": vs_none(p, all).map_or(Value::Null, |r| json!(r)),
        "hold_cycles": num(hold(p)),
        "hold_ns": num(hold(p) / tpn),
        "elided": m.elided,
        "fallbacks": m.fallbacks,
        "aborts": m.aborts,
        "skipped": m.skipped,
        "host_wait": num(host_wait(p)),
        "abort_causes": m.causes_json(),
    })
}
