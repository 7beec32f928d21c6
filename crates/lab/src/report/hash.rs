//! The report of `bench hash`: per update fraction, total throughput by
//! threads with ratios to the baselines of the same run (`none` at 0 %
//! updates, and `bucket-rw`), the details at the largest thread count, and
//! each strategy's crossover with `bucket-rw`: the update fraction where it
//! stops beating it (seed 003 puts RCU's near one third).

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{
    distinct, fmt_ns, lock_width, params_line, rep_counts, sig, throughput_unit, WIDE_SPREAD,
};
use crate::results::Point;

/// The name of the unsynchronized strategy, the 0 % baseline.
const NONE: &str = "none";
/// Strategies named so are the per-bucket reader-writer baseline.
const BUCKET_RW: &str = "bucket-rw(";

/// A point's update fraction in percent (from its parameters).
pub fn update_pct(p: &Point) -> Option<u32> {
    p.params.get("update_pct")?.as_u64().map(|x| x as u32)
}

/// The parameters of a point without its update fraction: what one table
/// of the report has in common.
fn shape(p: &Point) -> Value {
    let mut v = p.params.clone();
    if let Value::Object(m) = &mut v {
        m.remove("update_pct");
    }
    v
}

/// Median lookups and updates per second of a point.
pub fn rates(p: &Point) -> (f64, f64) {
    let per_s = |f: fn(&crate::results::HashMetrics) -> u64| {
        p.stat(|r| match &r.hash {
            Some(h) if r.wall_s > 0.0 => f(h) as f64 / r.wall_s,
            _ => f64::NAN,
        })
        .0
    };
    (per_s(|h| h.lookups), per_s(|h| h.updates))
}

/// Where a strategy stops beating the baseline as updates grow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Crossover {
    /// Its throughput over the baseline's falls through 1 at this update
    /// percentage (interpolated linearly between measured fractions).
    At(f64),
    /// Not ahead even at the smallest measured fraction.
    Never,
    /// Ahead at every measured fraction, up to this one.
    Throughout(u32),
    /// Fewer than two update fractions measured for both: nothing to tell.
    Unknown,
}

/// The crossover of a throughput ratio (strategy over baseline) measured at
/// increasing update percentages: the first fall from above 1 to 1 or below.
pub fn crossover(ratios: &[(u32, f64)]) -> Crossover {
    let r: Vec<(u32, f64)> = ratios
        .iter()
        .copied()
        .filter(|(_, x)| x.is_finite())
        .collect();
    if r.len() < 2 {
        return Crossover::Unknown;
    }
    let first = r[0].1;
    if first <= 1.0 {
        return Crossover::Never;
    }
    for w in r.windows(2) {
        let ((u0, r0), (u1, r1)) = (w[0], w[1]);
        if r0 > 1.0 && r1 <= 1.0 {
            let t = (r0 - 1.0) / (r0 - r1);
            return Crossover::At(f64::from(u0) + t * f64::from(u1 - u0));
        }
    }
    Crossover::Throughout(r[r.len() - 1].0)
}

/// One group of hash points (one table shape): the data every view needs.
struct Group<'a> {
    points: Vec<&'a Point>,
    strategies: Vec<&'a str>,
    threads: Vec<u32>,
    pcts: Vec<u32>,
}

impl<'a> Group<'a> {
    fn new(points: Vec<&'a Point>) -> Self {
        let strategies = distinct(points.iter().map(|p| p.lock.as_str()));
        let mut threads = distinct(points.iter().map(|p| p.threads));
        threads.sort_unstable();
        let mut pcts = distinct(points.iter().filter_map(|p| update_pct(p)));
        pcts.sort_unstable();
        Group {
            points,
            strategies,
            threads,
            pcts,
        }
    }

    fn find(&self, s: &str, t: u32, pct: u32) -> Option<&'a Point> {
        self.points.iter().copied().find(|p| {
            p.lock == s && p.threads == t && update_pct(p) == Some(pct) && !p.reps.is_empty()
        })
    }

    fn tput(&self, s: &str, t: u32, pct: u32) -> Option<f64> {
        self.find(s, t, pct)
            .map(|p| p.stat(|r| r.throughput_ops_s).0)
            .filter(|x| x.is_finite())
    }

    fn max_threads(&self) -> u32 {
        self.threads.last().copied().unwrap_or(1)
    }

    fn bucket_rw(&self) -> Option<&'a str> {
        self.strategies
            .iter()
            .copied()
            .find(|s| s.starts_with(BUCKET_RW))
    }

    /// Throughput of `s` over `base` at the largest thread count.
    fn ratio(&self, s: &str, pct: u32, base: &str, base_pct: u32) -> Option<f64> {
        let t = self.max_threads();
        let (a, b) = (self.tput(s, t, pct)?, self.tput(base, t, base_pct)?);
        (b > 0.0).then(|| a / b)
    }

    fn crossovers(&self) -> Option<(&'a str, Vec<(&'a str, Crossover)>)> {
        let base = self.bucket_rw()?;
        let v = self
            .strategies
            .iter()
            .filter(|s| **s != base)
            .map(|&s| {
                let ratios: Vec<(u32, f64)> = self
                    .pcts
                    .iter()
                    .filter_map(|&u| Some((u, self.ratio(s, u, base, u)?)))
                    .collect();
                (s, crossover(&ratios))
            })
            .filter(|(_, c)| *c != Crossover::Unknown)
            .collect();
        Some((base, v))
    }
}

/// The hash points grouped by table shape, in stored order.
fn groups<'a>(points: &[&'a Point]) -> Vec<Group<'a>> {
    let mut shapes: Vec<(Value, Vec<&Point>)> = Vec::new();
    for &p in points {
        let s = shape(p);
        match shapes.iter_mut().find(|(k, _)| *k == s) {
            Some((_, g)) => g.push(p),
            None => shapes.push((s, vec![p])),
        }
    }
    shapes.into_iter().map(|(_, g)| Group::new(g)).collect()
}

/// Bytes with a binary unit: 0 B, 512 B, 12.3 KiB, 1.20 MiB.
pub fn fmt_bytes(b: f64) -> String {
    if !b.is_finite() {
        "–".to_string()
    } else if b < 1024.0 {
        format!("{b:.0} B")
    } else if b < 1024.0 * 1024.0 {
        format!("{} KiB", sig(b / 1024.0))
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{} MiB", sig(b / (1024.0 * 1024.0)))
    } else {
        format!("{} GiB", sig(b / (1024.0 * 1024.0 * 1024.0)))
    }
}

/// The text tables of a run's hash points.
pub fn tables(out: &mut String, points: &[&Point]) {
    for (i, g) in groups(points).iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        group_tables(out, g);
    }
}

fn group_tables(out: &mut String, g: &Group<'_>) {
    let first = g.points[0];
    let (scale, unit) = throughput_unit(super::top_throughput(&g.points));
    let keys = first
        .params
        .get("keys")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let buckets = first
        .params
        .get("buckets")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "hash: {keys} keys in {buckets} buckets; throughput (lookups + updates) in {unit}, median of {}; \
         ~ marks a min–max spread over {:.0}%",
        rep_counts(&g.points),
        WIDE_SPREAD * 100.0
    );
    let ps = params_line(&shape(first));
    if !ps.is_empty() {
        let _ = writeln!(out, "  {ps}");
    }
    let t = g.max_threads();
    let base_rw = g.bucket_rw();
    let has_none = g.find(NONE, t, 0).is_some();
    let _ = writeln!(
        out,
        "  ratios at {t} threads: × none = over none at 0 % updates; × b-rw = over {} at the same fraction",
        base_rw.unwrap_or("bucket-rw (not in this run)")
    );
    let lw = lock_width(&g.points).max(10);
    for &pct in &g.pcts {
        let _ = writeln!(out, "\n  {pct} % updates");
        let mut head = format!("  {:<lw$}", "strategy");
        for th in &g.threads {
            let _ = write!(head, "{:>10}", format!("{th} thr "));
        }
        let _ = write!(head, "{:>9}{:>9}", "× none", "× b-rw");
        let _ = writeln!(out, "{}", head.trim_end());
        for &s in &g.strategies {
            if !g.threads.iter().any(|&th| g.find(s, th, pct).is_some()) {
                continue;
            }
            let mut line = format!("  {s:<lw$}");
            for &th in &g.threads {
                let cell = g.find(s, th, pct).map_or_else(
                    || "–".to_string(),
                    |p| {
                        let (med, min, max) = p.stat(|r| r.throughput_ops_s);
                        let wide = med > 0.0 && (max - min) / med > WIDE_SPREAD;
                        format!("{}{}", sig(med / scale), if wide { '~' } else { ' ' })
                    },
                );
                let _ = write!(line, "{cell:>10}");
            }
            let ratio = |r: Option<f64>| r.map_or_else(|| "–".to_string(), |r| format!("{r:.2}"));
            let vs_none = if has_none {
                g.ratio(s, pct, NONE, 0)
            } else {
                None
            };
            let vs_rw = base_rw.and_then(|b| g.ratio(s, pct, b, pct));
            let _ = write!(line, "{:>9}{:>9}", ratio(vs_none), ratio(vs_rw));
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }

    let _ = writeln!(
        out,
        "\n  at {t} threads, medians: lookups and updates per second, lookup latency (one in {} \
         timed),\n  peak reclamation backlog, peak heap growth",
        crate::bench::hash::SAMPLE_EVERY
    );
    let _ = writeln!(
        out,
        "  {:<lw$}{:>6}{:>11}{:>11}{:>8}{:>8}{:>11}{:>11}",
        "strategy", "upd%", "lookups/s", "updates/s", "p50", "p99", "backlog", "memory"
    );
    for &s in &g.strategies {
        for &pct in &g.pcts {
            let Some(p) = g.find(s, t, pct) else { continue };
            let (l, u) = rates(p);
            let rate = |x: f64| {
                let (sc, un) = throughput_unit(x);
                format!("{}{}", sig(x / sc), un.trim_end_matches("ops/s"))
            };
            let p50 = p.stat(|r| r.p50_ns as f64).0;
            let p99 = p.stat(|r| r.p99_ns as f64).0;
            let backlog = p
                .stat(|r| {
                    r.hash
                        .as_ref()
                        .map_or(f64::NAN, |h| h.backlog_peak_bytes as f64)
                })
                .0;
            let mem = p
                .stat(|r| {
                    r.hash
                        .as_ref()
                        .and_then(|h| h.mem_peak_bytes)
                        .map_or(f64::NAN, |b| b as f64)
                })
                .0;
            let _ = writeln!(
                out,
                "  {s:<lw$}{pct:>6}{:>11}{:>11}{:>8}{:>8}{:>11}{:>11}",
                rate(l),
                rate(u),
                fmt_ns(p50),
                fmt_ns(p99),
                fmt_bytes(backlog),
                fmt_bytes(mem)
            );
        }
    }

    match g.crossovers() {
        None => {
            let _ = writeln!(
                out,
                "\n  crossover: needs a bucket-rw strategy in the run (the baseline it is measured against)"
            );
        }
        Some((_, list)) if list.is_empty() => {
            let _ = writeln!(
                out,
                "\n  crossover: needs at least two update fractions measured for a strategy and bucket-rw"
            );
        }
        Some((base, list)) => {
            let _ = writeln!(
                out,
                "\n  crossover at {t} threads: the update fraction where a strategy stops beating {base}\n  \
                 (linear interpolation between the measured fractions {})",
                g.pcts.iter().map(|u| format!("{u} %")).collect::<Vec<_>>().join(", ")
            );
            for (s, c) in list {
                let text = match c {
                    Crossover::At(u) => format!("{u:.1} %"),
                    Crossover::Never => format!("never ahead (behind at {} %)", g.pcts[0]),
                    Crossover::Throughout(u) => {
                        format!("ahead at every fraction measured (to {u} %)")
                    }
                    Crossover::Unknown => "–".to_string(),
                };
                let _ = writeln!(out, "  {s:<lw$}{text}");
            }
        }
    }
}

/// The extra JSON keys of a hash point: what `--json` promises.
pub fn point_json(p: &Point) -> Value {
    let (lookups_s, updates_s) = rates(p);
    let med = |f: fn(&crate::results::HashMetrics) -> Option<u64>| {
        let x = p
            .stat(|r| r.hash.as_ref().and_then(f).map_or(f64::NAN, |b| b as f64))
            .0;
        x
    };
    json!({
        "strategy": p.lock,
        "update_pct": update_pct(p),
        "lookups_s": lookups_s,
        "updates_s": updates_s,
        "backlog_peak_bytes": med(|h| Some(h.backlog_peak_bytes)),
        "mem_peak_bytes": med(|h| h.mem_peak_bytes),
    })
}

/// Each table shape's crossovers, for the run's JSON: the baseline, the
/// thread count, and per strategy `{"crossover_pct": x}` (null unless it
/// crosses) with `"verdict"` one of `crosses`, `never`, `throughout`.
pub fn crossover_json(points: &[&Point]) -> Value {
    let v: Vec<Value> = groups(points)
        .iter()
        .filter_map(|g| {
            let (base, list) = g.crossovers()?;
            let per: serde_json::Map<String, Value> = list
                .into_iter()
                .map(|(s, c)| {
                    let (pct, verdict) = match c {
                        Crossover::At(u) => (Value::from(u), "crosses"),
                        Crossover::Never => (Value::Null, "never"),
                        Crossover::Throughout(_) => (Value::Null, "throughout"),
                        Crossover::Unknown => (Value::Null, "unknown"),
                    };
                    (
                        s.to_string(),
                        json!({ "crossover_pct": pct, "verdict": verdict }),
                    )
                })
                .collect();
            Some(json!({
                "params": shape(g.points[0]),
                "threads": g.max_threads(),
                "baseline": base,
                "strategies": per,
            }))
        })
        .collect();
    Value::from(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossover_interpolates_the_first_fall_through_one() {
        // 2 at 10 %, 0.5 at 50 %: through 1 two thirds of the way.
        let Crossover::At(u) = crossover(&[(0, 4.0), (10, 2.0), (50, 0.5)]) else {
            panic!("must cross")
        };
        assert!((u - (10.0 + 40.0 * 1.0 / 1.5)).abs() < 1e-9, "{u}");
        assert_eq!(crossover(&[(0, 2.0), (50, 1.0)]), Crossover::At(50.0));
        assert_eq!(crossover(&[(0, 0.9), (50, 2.0)]), Crossover::Never);
        assert_eq!(
            crossover(&[(0, 3.0), (100, 1.5)]),
            Crossover::Throughout(100)
        );
        assert_eq!(crossover(&[]), Crossover::Unknown);
        assert_eq!(
            crossover(&[(0, 2.0)]),
            Crossover::Unknown,
            "one fraction only"
        );
        assert_eq!(
            crossover(&[(0, 2.0), (10, f64::NAN), (20, 0.0)]),
            Crossover::At(10.0),
            "a missing ratio is skipped"
        );
    }

    #[test]
    fn bytes_have_binary_units() {
        assert_eq!(fmt_bytes(0.0), "0 B");
        assert_eq!(fmt_bytes(2048.0), "2.00 KiB");
        assert_eq!(fmt_bytes(3.5 * 1024.0 * 1024.0), "3.50 MiB");
        assert_eq!(fmt_bytes(f64::NAN), "–");
    }
}
