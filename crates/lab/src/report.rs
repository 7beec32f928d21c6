//! Reports over a stored run: the JSON the CLI prints with `--json`, the
//! human summary, and the one-line-per-run listing. Pure functions of what
//! the store returns; every number shown is a median over repetitions, with
//! the spread kept visible (min–max, or a mark where it is wide), because
//! single numbers from a shared machine drift.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::results::{Point, Rep, RunMeta};
use crate::store::RunSummary;

pub mod hash;
pub mod ipc;
pub mod sim;

/// The lock name of the uncontended physical floor that ratios refer to.
pub const FLOOR: &str = "floor";

/// Width the text tables are laid out for.
const WIDTH: usize = 100;

/// A min–max spread wider than this fraction of the median is marked `~`.
const WIDE_SPREAD: f64 = 0.10;

/// The run and its points as one JSON object: run metadata, and per point
/// the medians over repetitions (`"reps"` is the number of repetitions; the
/// repetitions themselves are under `"repetitions"`). Numbers that do not
/// exist (a median of no repetitions, a ratio without a floor) are `null`.
///
/// A `sim lhp` run has its own object instead (see [`sim::run_json`]).
pub fn run_json(meta: &RunMeta, points: &[Point]) -> Value {
    if sim::is_sim(meta, points) {
        return sim::run_json(meta, points);
    }
    let lhp: Vec<&Point> = points.iter().filter(|p| p.bench == "lhp").collect();
    let sensitivity: serde_json::Map<String, Value> =
        preemption_sensitivity(&lhp, meta.machine.cores as u32)
            .into_iter()
            .map(|(lock, r)| (lock.to_string(), r.map_or(Value::Null, num)))
            .collect();
    let hash_points: Vec<&Point> = points.iter().filter(|p| p.bench == "hash").collect();
    let hash_crossover = hash::crossover_json(&hash_points);
    let ipc_points: Vec<&Point> = points.iter().filter(|p| p.bench == "ipc").collect();
    let points: Vec<Value> = points
        .iter()
        .map(|p| {
            let (tput, tput_min, tput_max) = p.stat(|r| r.throughput_ops_s);
            let mut v = json!({
                "bench": p.bench,
                "lock": p.lock,
                "threads": p.threads,
                "params": p.params,
                "reps": p.reps.len(),
                "throughput_ops_s": num(tput),
                "jain": num(p.stat(|r| r.jain).0),
                "p50_ns": num(p.stat(|r| r.p50_ns as f64).0),
                "p99_ns": num(p.stat(|r| r.p99_ns as f64).0),
                "p999_ns": num(p.stat(|r| r.p999_ns as f64).0),
                "max_ns": num(p.stat(|r| r.max_ns as f64).0),
                "censored": num(p.stat(|r| r.censored as f64).0),
                "longest_wait_ns": num(p.stat(|r| r.longest_wait_ns() as f64).0),
                "ns_per_op": num(p.stat(|r| r.ns_per_op).0),
                "cpu_ns_per_op": num(p.stat(cpu_ns_per_op).0),
                "throughput_min": num(tput_min),
                "throughput_max": num(tput_max),
                "ratio_to_floor": ratio_to_floor(p, points).map_or(Value::Null, num),
                "repetitions": serde_json::to_value(&p.reps).unwrap_or(Value::Null),
            });
            let extra = match p.bench.as_str() {
                "hash" => Some(hash::point_json(p)),
                "ipc" => Some(ipc::point_json(meta, p, &ipc_points)),
                _ => None,
            };
            if let (Value::Object(v), Some(Value::Object(extra))) = (&mut v, extra) {
                v.extend(extra);
            }
            v
        })
        .collect();
    json!({
        "preemption_sensitivity": sensitivity,
        "hash_crossover": hash_crossover,
        "run": run_meta_json(meta),
        "points": points,
    })
}

/// A finite number, else `null` (JSON has no NaN or infinity).
fn num(x: f64) -> Value {
    Value::from(x)
}

/// For an `uncontended` point: its median ns/op over the median ns/op of the
/// `floor` point of the same bench in the same run (the one with the same
/// parameters if there is one, else the first). `None` for other benches,
/// without a floor, or when either median is not a positive number.
pub fn ratio_to_floor(p: &Point, points: &[Point]) -> Option<f64> {
    if p.bench != "uncontended" {
        return None;
    }
    let floors = || {
        points
            .iter()
            .filter(|f| f.bench == p.bench && f.lock == FLOOR)
    };
    let floor = floors()
        .find(|f| f.params == p.params)
        .or_else(|| floors().next())?;
    let (ns, _, _) = p.stat(|r| r.ns_per_op);
    let (floor_ns, _, _) = floor.stat(|r| r.ns_per_op);
    let ratio = ns / floor_ns;
    (ns > 0.0 && floor_ns > 0.0 && ratio.is_finite()).then_some(ratio)
}

/// A human summary of a run: header, then per bench and parameter set a
/// table (`uncontended`: ns/op and ratio to the floor; `spin`: throughput by
/// threads, then fairness and p99 latency).
pub fn render_text(meta: &RunMeta, points: &[Point]) -> String {
    let mut out = String::new();
    header(&mut out, meta);
    if points.is_empty() {
        out.push_str("\nno points stored for this run\n");
        return out;
    }
    let mut benches: Vec<&str> = Vec::new();
    for p in points {
        if !benches.contains(&p.bench.as_str()) {
            benches.push(&p.bench);
        }
    }
    for bench in benches {
        let of_bench: Vec<&Point> = points.iter().filter(|p| p.bench == bench).collect();
        if bench == "hash" {
            // One report over every update fraction: they are its columns.
            out.push('\n');
            hash::tables(&mut out, &of_bench);
            continue;
        }
        if bench == "ipc" {
            ipc::tables(&mut out, meta, &of_bench);
            continue;
        }
        if bench == crate::sim::runner::BENCH {
            sim::tables(&mut out, meta, &of_bench);
            continue;
        }
        for (params, group) in by_params(&of_bench) {
            out.push('\n');
            match bench {
                "uncontended" => uncontended_table(&mut out, params, &group, points),
                "spin" => spin_tables(&mut out, bench, params, &group),
                "lhp" => {
                    spin_tables(&mut out, bench, params, &group);
                    sensitivity_table(&mut out, &group, meta.machine.cores as u32);
                }
                _ => other_table(&mut out, bench, params, &group),
            }
        }
    }
    out
}

fn header(out: &mut String, meta: &RunMeta) {
    let id = meta
        .id
        .map_or_else(|| "(unsaved)".to_string(), |id| id.to_string());
    let end = match (&meta.finished, meta.complete) {
        (Some(f), true) => format!("finished {f}"),
        (Some(f), false) => format!("INCOMPLETE (stopped {f})"),
        (None, _) => "INCOMPLETE (interrupted or still running)".to_string(),
    };
    let _ = writeln!(
        out,
        "run {id}: {}, started {}, {end}",
        meta.kind, meta.started
    );
    let m = &meta.machine;
    let tsc = m.tsc_hz.map_or_else(
        || "TSC rate unknown".to_string(),
        |hz| format!("TSC {:.2} GHz", hz as f64 / 1e9),
    );
    let machine = [
        m.cpu_model.clone(),
        format!("{} cores", m.cores),
        tsc,
        m.kernel.clone(),
        m.rustc.clone(),
        format!("git {}", m.git_rev),
        format!("host {}", m.hostname),
    ]
    .into_iter()
    .chain(
        m.c2c_round_trip_ns
            .map(|ns| format!("cache-line round trip {}", fmt_ns(ns))),
    )
    .collect::<Vec<_>>();
    wrapped(out, "command", std::slice::from_ref(&meta.command));
    wrapped(out, "machine", &machine);
    wrapped(out, "params", &params_items(&meta.params));
}

/// Writes `label` and the items, comma-separated, wrapped to the width with
/// a hanging indent.
fn wrapped(out: &mut String, label: &str, items: &[String]) {
    const INDENT: usize = 9;
    let mut line = format!("{label:<INDENT$}");
    let mut first = true;
    for (i, item) in items.iter().enumerate() {
        let piece = if i + 1 < items.len() {
            format!("{item},")
        } else {
            item.clone()
        };
        let sep = if first { "" } else { " " };
        if !first && line.chars().count() + sep.len() + piece.chars().count() > WIDTH {
            let _ = writeln!(out, "{}", line.trim_end());
            line = " ".repeat(INDENT);
        } else {
            line.push_str(sep);
        }
        line.push_str(&piece);
        first = false;
    }
    if items.is_empty() {
        line.push('–');
    }
    let _ = writeln!(out, "{}", line.trim_end());
}

/// `key=value` for each entry of a JSON object (strings unquoted), or the
/// compact JSON of anything else.
fn params_items(params: &Value) -> Vec<String> {
    match params {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", plain(v)))
            .collect(),
        Value::Null => Vec::new(),
        other => vec![plain(other)],
    }
}

/// A parameter value as typed on a command line: strings unquoted, lists of
/// scalars comma-separated, anything nested as compact JSON.
fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(xs) if xs.iter().all(|x| !x.is_array() && !x.is_object()) => {
            xs.iter().map(plain).collect::<Vec<_>>().join(",")
        }
        other => other.to_string(),
    }
}

fn params_line(params: &Value) -> String {
    let items = params_items(params);
    if items.is_empty() {
        String::new()
    } else {
        items.join(" ")
    }
}

/// Points grouped by parameter set, groups and points in the order given.
fn by_params<'a>(points: &[&'a Point]) -> Vec<(&'a Value, Vec<&'a Point>)> {
    let mut groups: Vec<(&Value, Vec<&Point>)> = Vec::new();
    for &p in points {
        match groups.iter_mut().find(|(params, _)| **params == p.params) {
            Some((_, g)) => g.push(p),
            None => groups.push((&p.params, vec![p])),
        }
    }
    groups
}

/// A run's metadata as every JSON report shows it.
pub(crate) fn run_meta_json(meta: &RunMeta) -> Value {
    json!({
        "id": meta.id,
        "kind": meta.kind,
        "command": meta.command,
        "params": meta.params,
        "machine": serde_json::to_value(&meta.machine).unwrap_or(Value::Null),
        "started": meta.started,
        "finished": meta.finished,
        "complete": meta.complete,
    })
}

/// Distinct values in order of first appearance.
pub(crate) fn distinct<T: PartialEq + Copy>(xs: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut v = Vec::new();
    for x in xs {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    v
}

fn rep_counts(points: &[&Point]) -> String {
    let mut counts: Vec<usize> = distinct(points.iter().map(|p| p.reps.len()));
    counts.sort_unstable();
    match counts.as_slice() {
        [n] => format!("{n} rep{}", if *n == 1 { "" } else { "s" }),
        [lo, .., hi] => format!("{lo}–{hi} reps"),
        [] => "no reps".to_string(),
    }
}

fn lock_width(points: &[&Point]) -> usize {
    points
        .iter()
        .map(|p| p.lock.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(4, 24)
        + 2
}

fn uncontended_table(out: &mut String, params: &Value, group: &[&Point], all: &[Point]) {
    let _ = writeln!(
        out,
        "uncontended: ns per acquire+release, one thread; median (min–max) of {}",
        rep_counts(group)
    );
    let ps = params_line(params);
    if !ps.is_empty() {
        let _ = writeln!(out, "  {ps}");
    }
    let lw = lock_width(group);
    let _ = writeln!(out, "  {:<lw$}{:<28}× floor", "lock", "ns/op (min–max)");
    for p in group {
        let (med, min, max) = p.stat(|r| r.ns_per_op);
        let cell = if p.reps.is_empty() {
            "–".to_string()
        } else {
            format!("{} ({}–{})", sig(med), sig(min), sig(max))
        };
        let ratio = ratio_to_floor(p, all).map_or_else(|| "–".to_string(), |r| format!("{r:.2}"));
        let _ = writeln!(out, "  {:<lw$}{cell:<28}{ratio}", p.lock);
    }
}

fn spin_tables(out: &mut String, bench: &str, params: &Value, group: &[&Point]) {
    let locks = distinct(group.iter().map(|p| p.lock.as_str()));
    let mut threads = distinct(group.iter().map(|p| p.threads));
    threads.sort_unstable();
    let find = |lock: &str, t: u32| group.iter().find(|p| p.lock == lock && p.threads == t);

    let (scale, unit) = throughput_unit(top_throughput(group));
    let _ = writeln!(
        out,
        "{bench}: throughput in {unit}, median of {}; ~ marks a min–max spread over {:.0}% of it",
        rep_counts(group),
        WIDE_SPREAD * 100.0
    );
    let ps = params_line(params);
    if !ps.is_empty() {
        let _ = writeln!(out, "  {ps}");
    }
    let lw = lock_width(group);
    grid(out, lw, 10, 1, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        if p.reps.is_empty() {
            return None;
        }
        let (med, min, max) = p.stat(|r| r.throughput_ops_s);
        let wide = med > 0.0 && (max - min) / med > WIDE_SPREAD;
        // Every cell ends in one mark column, so the digits stay aligned.
        Some(format!(
            "{}{}",
            sig(med / scale),
            if wide { '~' } else { ' ' }
        ))
    });

    let _ = writeln!(
        out,
        "\n  fairness: Jain index (1 = even), least–most acquisitions of a thread in % of an even share"
    );
    grid(out, lw, 16, 0, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        let (jain, lo, hi) = fairness(p)?;
        Some(format!("{jain:.2} {lo:>3.0}–{hi:<3.0}%"))
    });

    let _ = writeln!(
        out,
        "\n  acquire latency p50, p99 and max, medians (≥: a wait open at the window's end, lasting so far)"
    );
    grid(out, lw, 24, 0, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        if p.reps.is_empty() {
            return None;
        }
        let q = |f: fn(&Rep) -> u64| {
            let x = p.stat(|r| f(r) as f64).0;
            if x > 0.0 {
                fmt_ns(x)
            } else {
                "–".to_string()
            }
        };
        let max = p.stat(|r| r.max_ns as f64).0;
        let longest = p.stat(|r| r.longest_wait_ns() as f64).0;
        let mark = if longest > max { "≥" } else { "" };
        Some(format!(
            "{} {} {mark}{}",
            q(|r| r.p50_ns),
            q(|r| r.p99_ns),
            q(|r| r.longest_wait_ns())
        ))
    });

    // What waiting costs besides time: CPU burnt by spinners shows here
    // even when throughput hides it.
    let _ = writeln!(
        out,
        "\n  CPU time per acquisition (all threads' user + system time over acquisitions), medians"
    );
    grid(out, lw, 10, 0, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        if p.reps.is_empty() {
            return None;
        }
        let cpu = p.stat(cpu_ns_per_op).0;
        Some(if cpu.is_finite() {
            fmt_ns(cpu)
        } else {
            "–".to_string()
        })
    });
}

/// A point's fairness: the median Jain index, and in the repetition with
/// that index (the lower middle one for an even count) the least and the
/// most acquisitions of one thread as percentages of an even share.
pub fn fairness(p: &Point) -> Option<(f64, f64, f64)> {
    let mut reps: Vec<&Rep> = p.reps.iter().filter(|r| !r.thread_ops.is_empty()).collect();
    if reps.is_empty() {
        return None;
    }
    reps.sort_by(|a, b| a.jain.total_cmp(&b.jain));
    let r = reps[(reps.len() - 1) / 2];
    let mean = r.total_ops as f64 / r.thread_ops.len() as f64;
    if mean <= 0.0 {
        return Some((p.stat(|r| r.jain).0, 0.0, 0.0));
    }
    let lo = *r.thread_ops.iter().min()? as f64 / mean * 100.0;
    let hi = *r.thread_ops.iter().max()? as f64 / mean * 100.0;
    Some((p.stat(|r| r.jain).0, lo, hi))
}

/// CPU nanoseconds per acquisition in one repetition (NaN without any).
pub fn cpu_ns_per_op(r: &Rep) -> f64 {
    if r.total_ops == 0 {
        f64::NAN
    } else {
        r.cpu_s * 1e9 / r.total_ops as f64
    }
}

/// Each lock's preemption sensitivity: median throughput at 4 × `cores`
/// threads over median throughput at 1 × `cores` (1 = untouched by
/// oversubscription; near 0 = collapses), `None` when either point is
/// missing, among the points given (in lock order of first appearance).
pub fn preemption_sensitivity<'a>(points: &[&'a Point], cores: u32) -> Vec<(&'a str, Option<f64>)> {
    let locks = distinct(points.iter().map(|p| p.lock.as_str()));
    let at = |lock: &str, t: u32| {
        points
            .iter()
            .find(|p| p.lock == lock && p.threads == t && !p.reps.is_empty())
            .map(|p| p.stat(|r| r.throughput_ops_s).0)
    };
    locks
        .into_iter()
        .map(|lock| {
            let r = match (at(lock, 4 * cores), at(lock, cores)) {
                (Some(hi), Some(lo)) if lo > 0.0 && hi.is_finite() => Some(hi / lo),
                _ => None,
            };
            (lock, r)
        })
        .collect()
}

fn sensitivity_table(out: &mut String, group: &[&Point], cores: u32) {
    let _ = writeln!(
        out,
        "\n  preemption sensitivity: throughput at {} threads (4 × {cores} cores) over {cores} threads",
        4 * cores
    );
    let lw = lock_width(group);
    for (lock, r) in preemption_sensitivity(group, cores) {
        let cell = r.map_or_else(|| "–".to_string(), |r| format!("{r:.3}"));
        let _ = writeln!(out, "  {lock:<lw$}{cell:>10}");
    }
}

/// A table with one row per lock and one column per thread count, split into
/// several tables when the columns would not fit the width. Column heads
/// end `mark` characters early, over the cells' trailing mark column.
fn grid(
    out: &mut String,
    lw: usize,
    cw: usize,
    mark: usize,
    locks: &[&str],
    threads: &[u32],
    cell: impl Fn(&str, u32) -> Option<String>,
) {
    let per = ((WIDTH - 2 - lw) / cw).max(1);
    for (i, cols) in threads.chunks(per).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut line = format!("  {:<lw$}", "lock");
        for t in cols {
            let head = format!("{t} thr{}", " ".repeat(mark));
            let _ = write!(line, "{head:>cw$}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
        for lock in locks {
            let mut line = format!("  {lock:<lw$}");
            for &t in cols {
                let c = cell(lock, t).unwrap_or_else(|| "–".to_string());
                let _ = write!(line, "{c:>cw$}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

fn other_table(out: &mut String, bench: &str, params: &Value, group: &[&Point]) {
    let _ = writeln!(out, "{bench}: medians of {}", rep_counts(group));
    let ps = params_line(params);
    if !ps.is_empty() {
        let _ = writeln!(out, "  {ps}");
    }
    let lw = lock_width(group);
    let _ = writeln!(
        out,
        "  {:<lw$}{:>8}{:>16}{:>12}",
        "lock", "threads", "throughput", "ns/op"
    );
    for p in group {
        let tput = p.stat(|r| r.throughput_ops_s).0;
        let (scale, unit) = throughput_unit(tput);
        let _ = writeln!(
            out,
            "  {:<lw$}{:>8}{:>16}{:>12}",
            p.lock,
            p.threads,
            format!("{} {unit}", sig(tput / scale)),
            sig(p.stat(|r| r.ns_per_op).0)
        );
    }
}

/// The largest median throughput among `points` (0 if none is finite).
pub(crate) fn top_throughput(points: &[&Point]) -> f64 {
    points
        .iter()
        .map(|p| p.stat(|r| r.throughput_ops_s).0)
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max)
}

/// The unit that shows throughputs up to `top` with few digits.
pub(crate) fn throughput_unit(top: f64) -> (f64, &'static str) {
    if top >= 1e6 {
        (1e6, "Mops/s")
    } else if top >= 1e3 {
        (1e3, "kops/s")
    } else {
        (1.0, "ops/s")
    }
}

/// Three significant digits, without exponent ("1.23", "12.3", "123",
/// "12345", "0.0123") down to 0.001, with one below ("3.10e-5": a lock
/// that collapsed shows how far, not "0.000"); "–" for a number that is not
/// one.
fn sig(x: f64) -> String {
    if !x.is_finite() {
        return "–".to_string();
    }
    let a = x.abs();
    if a > 0.0 && a < 0.001 {
        format!("{x:.2e}")
    } else if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// A latency in ns with a unit that keeps it short: 850ns, 1.20µs, 35.0ms.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        "–".to_string()
    } else if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{}µs", sig(ns / 1e3))
    } else if ns < 1e9 {
        format!("{}ms", sig(ns / 1e6))
    } else {
        format!("{}s", sig(ns / 1e9))
    }
}

/// One line per stored run: id, start, kind, points, complete or
/// INCOMPLETE, command.
pub fn runs_text(runs: &[RunSummary]) -> String {
    if runs.is_empty() {
        return "no runs stored yet\n".to_string();
    }
    let ids: Vec<String> = runs
        .iter()
        .map(|r| r.meta.id.map_or_else(|| "?".into(), |id| format!("#{id}")))
        .collect();
    let idw = ids.iter().map(|s| s.len()).max().unwrap_or(0);
    let kindw = runs
        .iter()
        .map(|r| r.meta.kind.chars().count())
        .max()
        .unwrap_or(0);
    let pts: Vec<String> = runs
        .iter()
        .map(|r| format!("{} point{}", r.points, if r.points == 1 { "" } else { "s" }))
        .collect();
    let ptw = pts.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = String::new();
    for ((r, id), pt) in runs.iter().zip(&ids).zip(&pts) {
        let state = if r.problem.is_some() {
            "DAMAGED"
        } else if r.meta.complete {
            "complete"
        } else {
            "INCOMPLETE"
        };
        let _ = write!(
            out,
            "{id:>idw$}  {}  {:<kindw$}  {pt:>ptw$}  {state:<10}  {}",
            r.meta.started, r.meta.kind, r.meta.command
        );
        match &r.problem {
            Some(p) => {
                let _ = writeln!(out, "  ({p})");
            }
            None => out.push('\n'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Machine, Rep};

    fn rep(i: u32, tput: f64, ns: f64) -> Rep {
        Rep {
            rep: i,
            wall_s: 1.0,
            cpu_s: 2.0,
            total_ops: tput as u64,
            throughput_ops_s: tput,
            ns_per_op: ns,
            thread_ops: vec![tput as u64 / 2; 2],
            jain: 0.5 + f64::from(i) * 0.1,
            p50_ns: 100 * u64::from(i + 1),
            p99_ns: 1_000 * u64::from(i + 1),
            p999_ns: 10_000 * u64::from(i + 1),
            max_ns: 99_999,
            censored: 0,
            censored_ns: 0,
            hash: None,
            ipc: None,
            sim: None,
        }
    }

    fn point(bench: &str, lock: &str, threads: u32, tputs: &[f64], ns: &[f64]) -> Point {
        Point {
            bench: bench.into(),
            lock: lock.into(),
            threads,
            params: json!({"cs_ns": 100, "secs": 0.5}),
            reps: tputs
                .iter()
                .zip(ns)
                .enumerate()
                .map(|(i, (&t, &n))| rep(i as u32, t, n))
                .collect(),
        }
    }

    #[test]
    fn preemption_sensitivity_is_four_times_the_cores_over_the_cores() {
        // Two cores: 8 threads over 2 threads.
        let ps = [
            point("lhp", "ticket", 2, &[4e6, 5e6, 6e6], &[1.0; 3]),
            point("lhp", "ticket", 8, &[1e4, 5e4, 2e5], &[1.0; 3]),
            point("lhp", "mutex", 2, &[4e6, 4e6, 4e6], &[1.0; 3]),
            point("lhp", "mutex", 8, &[3e6, 3e6, 3e6], &[1.0; 3]),
            point("lhp", "tas", 2, &[4e6], &[1.0]),
        ];
        let refs: Vec<&Point> = ps.iter().collect();
        let s = preemption_sensitivity(&refs, 2);
        assert_eq!(s[0], ("ticket", Some(5e4 / 5e6)));
        assert_eq!(s[1], ("mutex", Some(0.75)));
        assert_eq!(s[2], ("tas", None), "no point at 4 × cores");
        let v = run_json(&meta(true), &ps);
        assert_eq!(v["preemption_sensitivity"]["mutex"], 0.75);
        assert_eq!(v["preemption_sensitivity"]["tas"], Value::Null);
        let text = render_text(&meta(true), &ps);
        assert!(text.contains("lhp: throughput"), "{text}");
        assert!(text.contains("preemption sensitivity"), "{text}");
        assert!(text.contains("0.750"), "{text}");
    }

    fn meta(complete: bool) -> RunMeta {
        RunMeta {
            id: Some(7),
            kind: "bench".into(),
            command: "locklab bench --reps 3".into(),
            params: json!({"reps": 3, "threads": [1, 2]}),
            machine: Machine {
                cpu_model: "Test CPU".into(),
                cores: 2,
                tsc_hz: Some(2_400_000_000),
                kernel: "Linux 6.1".into(),
                rustc: "rustc 1.85.0".into(),
                git_rev: "abc1234".into(),
                hostname: "box".into(),
                c2c_round_trip_ns: Some(480.0),
            },
            started: "2025-03-01T14:05:09Z".into(),
            finished: complete.then(|| "2025-03-01T14:09:40Z".into()),
            complete,
        }
    }

    fn points() -> Vec<Point> {
        vec![
            point(
                "uncontended",
                "floor",
                1,
                &[1e8, 1e8, 1e8],
                &[2.0, 1.0, 4.0],
            ),
            point(
                "uncontended",
                "ticket",
                1,
                &[5e7, 5e7, 5e7],
                &[5.0, 6.0, 9.0],
            ),
            point("spin", "tas", 1, &[1.0, 2.0, 9.0], &[1.0, 1.0, 1.0]),
            point("spin", "tas", 2, &[3e6, 3.1e6, 2.9e6], &[1.0, 1.0, 1.0]),
            point("spin", "mcs", 1, &[4e6, 4e6, 4e6], &[1.0, 1.0, 1.0]),
            point("spin", "mcs", 2, &[6e6, 6e6, 9e6], &[1.0, 1.0, 1.0]),
        ]
    }

    #[test]
    fn json_has_medians_and_ratio_to_floor() {
        let v = run_json(&meta(true), &points());
        assert_eq!(v["run"]["id"], 7);
        assert_eq!(v["run"]["complete"], true);
        assert_eq!(v["run"]["machine"]["tsc_hz"], 2_400_000_000u64);
        for key in ["kind", "command", "params", "started", "finished"] {
            assert!(!v["run"][key].is_null(), "run.{key}");
        }
        let p = &v["points"];
        // tas at 1 thread: throughputs 1, 2, 9 → median 2.
        let tas1 = &p[2];
        assert_eq!(tas1["lock"], "tas");
        assert_eq!(tas1["reps"], 3);
        assert_eq!(tas1["throughput_ops_s"], 2.0);
        assert_eq!(tas1["throughput_min"], 1.0);
        assert_eq!(tas1["throughput_max"], 9.0);
        assert_eq!(tas1["jain"], 0.6);
        assert_eq!(tas1["p50_ns"], 200.0);
        assert_eq!(tas1["p99_ns"], 2000.0);
        assert_eq!(tas1["p999_ns"], 20000.0);
        assert_eq!(
            tas1["ratio_to_floor"],
            Value::Null,
            "only uncontended points"
        );
        assert_eq!(tas1["repetitions"].as_array().unwrap().len(), 3);
        assert_eq!(tas1["repetitions"][2]["throughput_ops_s"], 9.0);
        assert_eq!(tas1["params"], json!({"cs_ns": 100, "secs": 0.5}));
        // floor ns/op 2, 1, 4 → 2; ticket 5, 6, 9 → 6; ratio 3.
        assert_eq!(p[0]["ns_per_op"], 2.0);
        assert_eq!(p[0]["ratio_to_floor"], 1.0);
        assert_eq!(p[1]["ns_per_op"], 6.0);
        assert_eq!(p[1]["ratio_to_floor"], 3.0);
    }

    #[test]
    fn json_without_floor_or_reps_has_nulls() {
        let mut ps = points();
        ps.remove(0);
        ps[0].reps.clear();
        let v = run_json(&meta(false), &ps);
        assert_eq!(v["points"][0]["ratio_to_floor"], Value::Null);
        assert_eq!(v["points"][0]["reps"], 0);
        assert_eq!(v["points"][0]["throughput_ops_s"], Value::Null);
        assert_eq!(v["run"]["finished"], Value::Null);
        assert_eq!(v["run"]["complete"], false);
        // Every value is valid JSON (no NaN sneaks through).
        serde_json::from_str::<Value>(&v.to_string()).unwrap();
    }

    #[test]
    fn ratio_prefers_the_floor_with_the_same_params() {
        let mut ps = points();
        let mut other_floor = point("uncontended", "floor", 1, &[1.0], &[3.0]);
        other_floor.params = json!({"cs_ns": 0});
        ps.insert(0, other_floor);
        assert_eq!(ratio_to_floor(&ps[2], &ps), Some(3.0));
        let mut lonely = ps[2].clone();
        lonely.params = json!({"cs_ns": 5});
        assert_eq!(
            ratio_to_floor(&lonely, &ps),
            Some(2.0),
            "falls back to the first floor"
        );
    }

    #[test]
    fn text_shows_locks_tables_and_state() {
        let text = render_text(&meta(true), &points());
        for needle in [
            "run 7",
            "finished 2025-03-01T14:09:40Z",
            "floor",
            "ticket",
            "tas",
            "mcs",
            "3.00",
        ] {
            assert!(text.contains(needle), "{needle:?} missing in\n{text}");
        }
        assert!(!text.contains("INCOMPLETE"));
        assert!(text.contains("Mops/s"));
        assert!(text.contains("1 thr") && text.contains("2 thr"));
        assert!(text.contains("1.00µs") || text.contains("2.00µs"), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "too wide: {line:?}");
        }
        let incomplete = render_text(&meta(false), &points());
        assert!(incomplete.contains("INCOMPLETE"), "{incomplete}");
        assert!(render_text(&meta(false), &[]).contains("no points"));
    }

    #[test]
    fn many_thread_counts_wrap_within_the_width() {
        let ps: Vec<Point> = (1..=64)
            .map(|t| {
                point(
                    "spin",
                    "a-rather-long-lock-name",
                    t,
                    &[1e6 * f64::from(t)],
                    &[1.0],
                )
            })
            .collect();
        let text = render_text(&meta(true), &ps);
        for line in text.lines() {
            assert!(line.chars().count() <= WIDTH, "too wide: {line:?}");
        }
        assert!(text.contains("64 thr"));
    }

    #[test]
    fn units() {
        assert_eq!(fmt_ns(850.0), "850ns");
        assert_eq!(fmt_ns(1_200.0), "1.20µs");
        assert_eq!(fmt_ns(35_000_000.0), "35.0ms");
        assert_eq!(fmt_ns(2.5e9), "2.50s");
        assert_eq!(throughput_unit(5e5), (1e3, "kops/s"));
        assert_eq!(sig(12345.6), "12346");
        assert_eq!(sig(0.0123), "0.012");
        // A collapsed lock's rate in Mops/s is not "0.000".
        assert_eq!(sig(3.1e-5), "3.10e-5");
        assert_eq!(sig(0.0), "0");
        assert_eq!(sig(f64::NAN), "–");
    }

    #[test]
    fn runs_listing_one_line_each() {
        let runs = vec![
            RunSummary {
                meta: meta(false),
                points: 1,
                problem: None,
            },
            RunSummary {
                meta: RunMeta {
                    id: Some(12),
                    ..meta(true)
                },
                points: 24,
                problem: None,
            },
        ];
        let text = runs_text(&runs);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].contains("#7") && lines[0].contains("INCOMPLETE"));
        assert!(lines[0].contains("1 point ") && lines[0].contains("locklab bench --reps 3"));
        assert!(
            lines[1].contains("#12")
                && lines[1].contains("complete")
                && lines[1].contains("24 points")
        );
        assert!(lines[1].contains("2025-03-01T14:05:09Z"));
        assert_eq!(runs_text(&[]), "no runs stored yet\n");
    }
}
