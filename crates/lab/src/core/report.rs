//! The text tables of stored runs, shared by the studies' reports and the
//! front's: the run header, tables by parameter set, number formats, and
//! the one-line-per-run listing. Pure functions of what the store returns;
//! every number shown is a median over repetitions, with the spread kept
//! visible (min–max, or a mark where it is wide), because single numbers
//! from a shared machine drift.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::core::results::{Point, Rep, RunMeta};
use crate::core::store::RunSummary;
use crate::core::table::{layout, Column};

/// Width the text tables are laid out for.
pub(crate) const WIDTH: usize = 100;

/// A min–max spread wider than this fraction of the median is marked `~`.
pub(crate) const WIDE_SPREAD: f64 = 0.10;

/// Transaction aborts by cause, in words: `causes` are the counts of
/// conflict, capacity, lock busy, retry bit clear and other aborts
/// (`locklab::elide::Cause`). `None` when they do not add up to `aborts`
/// (runs stored before causes were counted).
pub(crate) fn abort_causes_text(aborts: u64, causes: [u64; 5]) -> Option<String> {
    const NAMES: [&str; 5] = [
        "conflict",
        "capacity",
        "lock busy",
        "retry bit clear",
        "other",
    ];
    (causes.iter().sum::<u64>() == aborts).then(|| {
        causes
            .iter()
            .zip(NAMES)
            .map(|(n, what)| format!("{n} {what}"))
            .collect::<Vec<_>>()
            .join(", ")
    })
}

/// A worker that waited for a CPU longer than this fraction of a window
/// ([`crate::core::measure::Span::waited_s`]) was measuring the host.
pub(crate) const HOST_WAIT: f64 = 0.05;

/// The line that says a run's workers waited for the host's CPUs: `worst`
/// is the largest run-queue wait of a worker, as a fraction of its window,
/// `at` where it was (a variant and point). `None` below [`HOST_WAIT`].
pub(crate) fn host_wait_note(worst: f64, at: &str) -> Option<String> {
    (worst > HOST_WAIT).then(|| {
        format!(
            "  host contention: a measured thread waited for a CPU {:.0} % of its window ({at}):\n  \
             the host's other work set those figures, not the code measured; measure on a quiet \
             machine",
            worst * 100.0
        )
    })
}

/// [`host_wait_note`] at the point whose worker waited longest: `wait`
/// gives a point's largest run-queue wait (NaN where it was not measured),
/// `at` says where the point is.
pub(crate) fn host_wait_line(
    points: &[&Point],
    wait: impl Fn(&Point) -> f64,
    at: impl Fn(&Point) -> String,
) -> Option<String> {
    let worst = points
        .iter()
        .filter(|p| wait(p).is_finite())
        .max_by(|a, b| wait(a).total_cmp(&wait(b)))?;
    host_wait_note(wait(worst), &at(worst))
}

/// The header of a run's report: its id, kind and times, its command,
/// machine and parameters.
pub(crate) fn header(out: &mut String, meta: &RunMeta) {
    let id = meta.id_text();
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

pub(crate) fn params_line(params: &Value) -> String {
    let items = params_items(params);
    if items.is_empty() {
        String::new()
    } else {
        items.join(" ")
    }
}

/// Points grouped by parameter set, groups and points in the order given.
pub(crate) fn by_params<'a>(points: &[&'a Point]) -> Vec<(&'a Value, Vec<&'a Point>)> {
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

/// A min–max spread as `(lo–hi)`, or `(spread unknown)` when there was
/// one repetition (whose min and max are the same number and say nothing).
pub(crate) fn spread(reps: usize, lo: &str, hi: &str) -> String {
    if reps < 2 {
        "(spread unknown)".to_string()
    } else {
        format!("({lo}–{hi})")
    }
}

pub(crate) fn rep_counts(points: &[&Point]) -> String {
    let mut counts: Vec<usize> = distinct(points.iter().map(|p| p.reps.len()));
    counts.sort_unstable();
    match counts.as_slice() {
        [n] => format!("{n} rep{}", if *n == 1 { "" } else { "s" }),
        [lo, .., hi] => format!("{lo}–{hi} reps"),
        [] => "no reps".to_string(),
    }
}

pub(crate) fn lock_width(points: &[&Point]) -> usize {
    points
        .iter()
        .map(|p| p.lock.chars().count())
        .max()
        .unwrap_or(0)
        .max(4)
        + 2
}

/// A Jain index as text, three decimals; "n/a" where it is undefined (no
/// thread acquired anything, see [`crate::core::results::jain`]).
pub fn jain_text(j: f64) -> String {
    if j.is_finite() {
        format!("{j:.3}")
    } else {
        "n/a".into()
    }
}

/// CPU nanoseconds per acquisition in one repetition (NaN without any).
pub fn cpu_ns_per_op(r: &Rep) -> f64 {
    if r.total_ops == 0 {
        f64::NAN
    } else {
        r.cpu_s * 1e9 / r.total_ops as f64
    }
}

/// A table with one row per lock and one column per thread count, split into
/// several tables when the columns would not fit the width. Column heads
/// end `mark` characters early, over the cells' trailing mark column.
pub(crate) fn grid(
    out: &mut String,
    lw: usize,
    cw: usize,
    mark: usize,
    locks: &[&str],
    threads: &[u32],
    cell: impl Fn(&str, u32) -> Option<String>,
) {
    let mut missing = false;
    grid_of(
        out,
        ("lock", lw),
        cw,
        locks,
        threads,
        |t| format!("{t} thr{}", " ".repeat(mark)),
        |lock, t| {
            cell(lock, t).unwrap_or_else(|| {
                missing = true;
                "–".to_string()
            })
        },
    );
    if missing {
        let _ = writeln!(out, "  –: not measured, or nothing to show");
    }
}

/// A table of `rows` by `cols`: a first column headed `corner`, `lw`
/// characters wide, then one column `cw` wide per value of `cols` headed
/// `head(col)`, split into several tables (a blank line between) when the
/// columns would not fit the width.
pub(crate) fn grid_of(
    out: &mut String,
    (corner, lw): (&str, usize),
    cw: usize,
    rows: &[&str],
    cols: &[u32],
    head: impl Fn(u32) -> String,
    mut cell: impl FnMut(&str, u32) -> String,
) {
    let per = ((WIDTH - 2 - lw) / cw).max(1);
    for (i, part) in cols.chunks(per).enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut table: Vec<Vec<String>> = Vec::with_capacity(rows.len() + 1);
        table.push(
            std::iter::once(corner.to_string())
                .chain(part.iter().map(|&c| head(c)))
                .collect(),
        );
        for &row in rows {
            let mut line = vec![row.to_string()];
            for &c in part {
                line.push(cell(row, c));
            }
            table.push(line);
        }
        let mut columns = vec![Column::fixed(false, lw)];
        columns.extend(std::iter::repeat_n(Column::fixed(true, cw), part.len()));
        layout(out, &table, &columns, 0);
    }
}

pub(crate) fn other_table(out: &mut String, bench: &str, params: &Value, group: &[&Point]) {
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

/// A number for JSON: `null` where it is not finite (JSON has no NaN or
/// infinity).
pub fn num(x: f64) -> Value {
    Value::from(x)
}

/// Three significant digits, without exponent ("1.23", "12.3", "123",
/// "12345", "0.0123") down to 0.001, with one below ("3.10e-5": a lock
/// that collapsed shows how far, not "0.000"); "–" for a number that is not
/// one.
pub(crate) fn sig(x: f64) -> String {
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

/// A number with an SI prefix and [`sig`]'s three figures: "950",
/// "12.3k", "4.50M", "2.00G".
pub(crate) fn short(v: f64) -> String {
    let (d, prefix) = match v.abs() {
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    format!("{}{prefix}", sig(v / d))
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
    // The machine, when the store holds runs of more than one (a shared
    // store; `locklab push`): a column that would say the same on every
    // line says nothing.
    let machines: Vec<String> = runs
        .iter()
        .map(|r| r.meta.machine.name().to_string())
        .collect();
    let first = runs[0].meta.machine.key();
    let several = runs.iter().any(|r| r.meta.machine.key() != first);
    let mw = machines
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (((r, id), pt), machine) in runs.iter().zip(&ids).zip(&pts).zip(&machines) {
        let state = if r.problem.is_some() {
            "DAMAGED"
        } else if r.meta.complete {
            "complete"
        } else {
            "INCOMPLETE"
        };
        let _ = write!(out, "{id:>idw$}  {}  ", r.meta.started);
        if several {
            let _ = write!(out, "{machine:<mw$}  ");
        }
        let _ = write!(
            out,
            "{:<kindw$}  {pt:>ptw$}  {state:<10}  {}",
            r.meta.kind, r.meta.command
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
