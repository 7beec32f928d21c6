//! The report of `bench hash`: per update fraction, total throughput by
//! threads with ratios to the baselines of the same run (`none` at 0 %
//! updates, and `bucket-rw`), the details at the largest thread count,
//! locklab's reader-writer locks against the peers ([`super::peers`]), and
//! each strategy's crossovers with `bucket-rw`: the update fractions where
//! it gets ahead of it or falls behind (seed 003 gives no such crossover:
//! it says RCU is the best choice overall while updates are fewer than
//! about a third of accesses, "只要更新访问少于约三分之一,RCU 总体而言是最佳选择").

use std::fmt::Write as _;

use serde_json::{json, Value};

use super::peers;
use crate::core::report::{
    distinct, fmt_ns, lock_width, params_line, rep_counts, sig, throughput_unit, WIDE_SPREAD,
};
use crate::core::results::Point;
use crate::studies::shared::hashtable::point::{rates, update_pct};
use crate::studies::shared::hashtable::runner::HashMetrics;

/// The name of the unsynchronized strategy, the 0 % baseline.
const NONE: &str = "none";
/// Strategies named so are the per-bucket reader-writer baseline.
const BUCKET_RW: &str = "bucket-rw(";

/// The parameters of a point without its update fraction: what one table
/// of the report has in common.
fn shape(p: &Point) -> Value {
    let mut v = p.params.clone();
    if let Value::Object(m) = &mut v {
        m.remove("update_pct");
    }
    v
}

/// Where a strategy's throughput over the baseline's passes through 1 as
/// updates grow: a ratio above 1 is ahead, 1 or below is behind.
#[derive(Debug, Clone, PartialEq)]
pub enum Crossover {
    /// Ahead at every measured fraction, `from` % to `to` %.
    Ahead { from: u32, to: u32 },
    /// Behind at every measured fraction, `from` % to `to` %.
    Behind { from: u32, to: u32 },
    /// Changes sides: at each crossing, in increasing order (at least one),
    /// it gets ahead or falls behind.
    Crosses(Vec<Crossing>),
    /// Fewer than two update fractions measured for both: nothing to tell.
    Unknown,
}

/// One change of sides: at `pct` % updates (interpolated linearly between
/// the measured fractions on either side), the strategy gets ahead
/// (`ahead`) or falls behind (`!ahead`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Crossing {
    /// The update percentage where the ratio passes through 1.
    pub pct: f64,
    /// Ahead after the crossing (it was behind before), or the reverse.
    pub ahead: bool,
}

impl Crossing {
    fn text(self) -> String {
        let verb = if self.ahead {
            "gets ahead"
        } else {
            "falls behind"
        };
        format!("{verb} at {:.1} %", self.pct)
    }
}

impl Crossover {
    /// One word for JSON: `ahead`, `behind` (at every measured fraction),
    /// `gets_ahead`, `falls_behind` (one crossing), `crosses` (several),
    /// `unknown`.
    pub fn verdict(&self) -> &'static str {
        match self {
            Crossover::Ahead { .. } => "ahead",
            Crossover::Behind { .. } => "behind",
            Crossover::Crosses(c) if c.len() == 1 && c[0].ahead => "gets_ahead",
            Crossover::Crosses(c) if c.len() == 1 => "falls_behind",
            Crossover::Crosses(_) => "crosses",
            Crossover::Unknown => "unknown",
        }
    }

    /// The report's words for it.
    pub fn text(&self) -> String {
        match self {
            Crossover::Ahead { from, to } => {
                format!("ahead at every fraction measured ({from} % to {to} %)")
            }
            Crossover::Behind { from, to } => {
                format!("never ahead (behind at every fraction measured, {from} % to {to} %)")
            }
            Crossover::Crosses(c) if c.len() == 1 && c[0].ahead => {
                format!("{} (behind below it)", c[0].text())
            }
            Crossover::Crosses(c) if c.len() == 1 => c[0].text(),
            Crossover::Crosses(c) => format!(
                "crosses {} times: {}",
                c.len(),
                c.iter().map(|x| x.text()).collect::<Vec<_>>().join(", ")
            ),
            Crossover::Unknown => "–".to_string(),
        }
    }
}

/// The crossings of a throughput ratio (strategy over baseline) measured at
/// increasing update percentages: every pass through 1, either way (a
/// missing ratio is skipped).
pub fn crossover(ratios: &[(u32, f64)]) -> Crossover {
    let r: Vec<(u32, f64)> = ratios
        .iter()
        .copied()
        .filter(|(_, x)| x.is_finite())
        .collect();
    if r.len() < 2 {
        return Crossover::Unknown;
    }
    let ahead = |x: f64| x > 1.0;
    let crossings: Vec<Crossing> = r
        .windows(2)
        .filter(|w| ahead(w[0].1) != ahead(w[1].1))
        .map(|w| {
            let ((u0, r0), (u1, r1)) = (w[0], w[1]);
            let t = (r0 - 1.0) / (r0 - r1);
            Crossing {
                pct: f64::from(u0) + t * f64::from(u1 - u0),
                ahead: ahead(r1),
            }
        })
        .collect();
    let (from, to) = (r[0].0, r[r.len() - 1].0);
    match (crossings.is_empty(), ahead(r[0].1)) {
        (true, true) => Crossover::Ahead { from, to },
        (true, false) => Crossover::Behind { from, to },
        (false, _) => Crossover::Crosses(crossings),
    }
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

/// The short form, for the standard suite: throughput per strategy at the
/// most threads measured, one column per update fraction.
pub fn brief(out: &mut String, points: &[&Point]) {
    for g in groups(points) {
        let (scale, unit) = throughput_unit(crate::core::report::top_throughput(&g.points));
        let t = g.max_threads();
        let first = g.points[0];
        let n = |k: &str| first.params.get(k).and_then(Value::as_u64).unwrap_or(0);
        let _ = writeln!(
            out,
            "\nhash: {} keys in {} buckets; throughput at {t} threads in {unit}, median of {}; \
             ~ marks a min–max spread over {:.0}%",
            n("keys"),
            n("buckets"),
            rep_counts(&g.points),
            WIDE_SPREAD * 100.0
        );
        let lw = lock_width(&g.points).max(8);
        let mut head = format!("  {:<lw$}", "strategy");
        for u in &g.pcts {
            let _ = write!(head, "{:>10}", format!("{u} % upd "));
        }
        let _ = writeln!(out, "{}", head.trim_end());
        for s in &g.strategies {
            let mut line = format!("  {s:<lw$}");
            for &u in &g.pcts {
                let c = g.find(s, t, u).map_or_else(
                    || "–".to_string(),
                    |p| {
                        let (med, min, max) = p.stat(|r| r.throughput_ops_s);
                        let wide = med > 0.0 && (max - min) / med > WIDE_SPREAD;
                        format!("{}{}", sig(med / scale), if wide { '~' } else { ' ' })
                    },
                );
                let _ = write!(line, "{c:>10}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

fn group_tables(out: &mut String, g: &Group<'_>) {
    let first = g.points[0];
    let (scale, unit) = throughput_unit(crate::core::report::top_throughput(&g.points));
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
        crate::studies::shared::hashtable::runner::SAMPLE_EVERY
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
                    r.metrics_of::<HashMetrics>()
                        .map_or(f64::NAN, |h| h.backlog_peak_bytes as f64)
                })
                .0;
            let mem = p
                .stat(|r| {
                    r.metrics_of::<HashMetrics>()
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

    peers::text(out, &peers::versus(&g.points));

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
                "\n  crossover at {t} threads: the update fractions where a strategy gets ahead of or falls\n  \
                 behind {base} (linear interpolation between the measured fractions {})",
                g.pcts.iter().map(|u| format!("{u} %")).collect::<Vec<_>>().join(", ")
            );
            for (s, c) in list {
                let _ = writeln!(out, "  {s:<lw$}{}", c.text());
            }
        }
    }
}

/// Each table shape's comparisons of locklab's reader-writer locks with
/// the peers ([`peers::json`]), for the run's JSON: per shape `params` and
/// `pairs`; shapes without a pair are left out.
pub fn peers_json(points: &[&Point]) -> Value {
    let v: Vec<Value> = groups(points)
        .iter()
        .filter_map(|g| {
            let vs = peers::versus(&g.points);
            (!vs.is_empty())
                .then(|| json!({"params": shape(g.points[0]), "pairs": peers::json(&vs)}))
        })
        .collect();
    Value::from(v)
}

/// Each table shape's crossovers, for the run's JSON: the baseline, the
/// thread count, and per strategy `"verdict"` (see [`Crossover::verdict`]),
/// `"crossings"` (each `{"pct": x, "now": "ahead" | "behind"}`, in
/// increasing order) and `"crossover_pct"`, the first crossing's fraction
/// (null unless it crosses).
pub fn crossover_json(points: &[&Point]) -> Value {
    let v: Vec<Value> = groups(points)
        .iter()
        .filter_map(|g| {
            let (base, list) = g.crossovers()?;
            let per: serde_json::Map<String, Value> = list
                .into_iter()
                .map(|(s, c)| {
                    let crossings: &[Crossing] = match &c {
                        Crossover::Crosses(x) => x,
                        _ => &[],
                    };
                    let v = json!({
                        "crossover_pct": crossings.first().map(|x| x.pct),
                        "crossings": crossings
                            .iter()
                            .map(|x| json!({
                                "pct": x.pct,
                                "now": if x.ahead { "ahead" } else { "behind" },
                            }))
                            .collect::<Vec<_>>(),
                        "verdict": c.verdict(),
                    });
                    (s.to_string(), v)
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

    use crate::core::results::Rep;

    #[test]
    fn crossover_interpolates_every_pass_through_one() {
        let falls = |pct| Crossing { pct, ahead: false };
        let gets = |pct| Crossing { pct, ahead: true };
        // 2 at 10 %, 0.5 at 50 %: through 1 two thirds of the way.
        let Crossover::Crosses(c) = crossover(&[(0, 4.0), (10, 2.0), (50, 0.5)]) else {
            panic!("must cross")
        };
        assert_eq!(c.len(), 1);
        assert!(!c[0].ahead);
        assert!((c[0].pct - (10.0 + 40.0 * 1.0 / 1.5)).abs() < 1e-9, "{c:?}");
        // A ratio of exactly 1 is not ahead.
        assert_eq!(
            crossover(&[(0, 2.0), (50, 1.0)]),
            Crossover::Crosses(vec![falls(50.0)])
        );
        assert_eq!(
            crossover(&[(0, 1.0), (50, 2.0)]),
            Crossover::Crosses(vec![gets(0.0)])
        );
        assert_eq!(
            crossover(&[(0, 0.5), (50, 1.5)]),
            Crossover::Crosses(vec![gets(25.0)])
        );
        assert_eq!(
            crossover(&[(0, 1.5), (10, 0.5), (20, 1.5), (30, 0.5)]),
            Crossover::Crosses(vec![falls(5.0), gets(15.0), falls(25.0)])
        );
        assert_eq!(
            crossover(&[(0, 3.0), (100, 1.5)]),
            Crossover::Ahead { from: 0, to: 100 }
        );
        assert_eq!(
            crossover(&[(10, 0.9), (50, 1.0)]),
            Crossover::Behind { from: 10, to: 50 }
        );
        assert_eq!(crossover(&[]), Crossover::Unknown);
        assert_eq!(
            crossover(&[(0, 2.0)]),
            Crossover::Unknown,
            "one fraction only"
        );
        assert_eq!(
            crossover(&[(0, 2.0), (10, f64::NAN), (20, 0.0)]),
            Crossover::Crosses(vec![falls(10.0)]),
            "a missing ratio is skipped"
        );
    }

    /// The update fractions of the synthetic runs below.
    const PCTS: [u32; 4] = [0, 10, 20, 50];

    /// A hash run at 4 threads whose median throughputs are `100 × ratio`
    /// for each strategy and fraction of [`PCTS`], with `bucket-rw` at 100
    /// everywhere.
    fn run(strategies: &[(&str, [f64; 4])]) -> Vec<Point> {
        let point = |s: &str, pct: u32, tput: f64| Point {
            bench: "hash".into(),
            lock: s.into(),
            threads: 4,
            params: json!({ "buckets": 1024, "keys": 1024, "update_pct": pct }),
            reps: vec![Rep {
                throughput_ops_s: tput,
                ..Rep::one_thread(0, 1.0, 1.0, 1)
            }],
        };
        let mut v = Vec::new();
        for (i, &pct) in PCTS.iter().enumerate() {
            v.push(point("bucket-rw(rw-fair)", pct, 100.0));
            for (s, ratios) in strategies {
                v.push(point(s, pct, 100.0 * ratios[i]));
            }
        }
        v
    }

    /// Each strategy's line of the crossover section of the report.
    fn crossover_lines(points: &[Point]) -> Vec<(String, String)> {
        let mut out = String::new();
        tables(&mut out, &points.iter().collect::<Vec<_>>());
        let at = out.find("\n  crossover at 4 threads").expect(&out);
        out[at..]
            .lines()
            .skip(3)
            .map(|l| {
                let l = l.trim();
                let (s, text) = l.split_once(' ').expect(l);
                (s.to_string(), text.trim().to_string())
            })
            .collect()
    }

    /// One pattern of a strategy's ratio over bucket-rw: synthetic medians
    /// and what the report and the JSON must say of them.
    struct Pattern {
        strategy: &'static str,
        /// Over bucket-rw at each fraction of [`PCTS`].
        ratios: [f64; 4],
        /// The report's words.
        text: &'static str,
        /// The JSON's verdict and crossings (fraction, side after it).
        verdict: &'static str,
        crossings: &'static [(f64, &'static str)],
    }

    /// The case: 0.47 × bucket-rw at 0 %, 1.99 × at 50 %.
    const BEHIND_THEN_AHEAD: Pattern = Pattern {
        strategy: "dashmap",
        ratios: [0.47, 0.6, 0.9, 1.99],
        text: "gets ahead at 22.8 % (behind below it)",
        verdict: "gets_ahead",
        crossings: &[(20.0 + 30.0 * 0.1 / 1.09, "ahead")],
    };
    const AHEAD_THEN_BEHIND: Pattern = Pattern {
        strategy: "rcu",
        ratios: [3.5, 2.0, 1.5, 0.5],
        text: "falls behind at 35.0 %",
        verdict: "falls_behind",
        crossings: &[(35.0, "behind")],
    };
    const AHEAD_EVERYWHERE: Pattern = Pattern {
        strategy: "seqlock",
        ratios: [2.5, 2.0, 1.8, 1.5],
        text: "ahead at every fraction measured (0 % to 50 %)",
        verdict: "ahead",
        crossings: &[],
    };
    const BEHIND_EVERYWHERE: Pattern = Pattern {
        strategy: "global-spin",
        ratios: [0.2, 0.25, 0.3, 0.5],
        text: "never ahead (behind at every fraction measured, 0 % to 50 %)",
        verdict: "behind",
        crossings: &[],
    };
    const SEVERAL_FROM_AHEAD: Pattern = Pattern {
        strategy: "brlock",
        ratios: [1.5, 0.5, 1.5, 0.5],
        text:
            "crosses 3 times: falls behind at 5.0 %, gets ahead at 15.0 %, falls behind at 35.0 %",
        verdict: "crosses",
        crossings: &[(5.0, "behind"), (15.0, "ahead"), (35.0, "behind")],
    };
    const SEVERAL_FROM_BEHIND: Pattern = Pattern {
        strategy: "refcnt",
        ratios: [0.5, 1.5, 0.5, 0.5],
        text: "crosses 2 times: gets ahead at 5.0 %, falls behind at 15.0 %",
        verdict: "crosses",
        crossings: &[(5.0, "ahead"), (15.0, "behind")],
    };

    /// The report's line and the JSON of `patterns` measured in one run.
    fn check(patterns: &[&Pattern]) {
        let ratios: Vec<(&str, [f64; 4])> =
            patterns.iter().map(|p| (p.strategy, p.ratios)).collect();
        let points = run(&ratios);
        let want: Vec<(String, String)> = patterns
            .iter()
            .map(|p| (p.strategy.to_string(), p.text.to_string()))
            .collect();
        assert_eq!(crossover_lines(&points), want);

        let v = crossover_json(&points.iter().collect::<Vec<_>>());
        assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
        assert_eq!(v[0]["baseline"], "bucket-rw(rw-fair)");
        assert_eq!(v[0]["threads"], 4);
        for p in patterns {
            let (s, c) = (p.strategy, &v[0]["strategies"][p.strategy]);
            assert_eq!(c["verdict"], p.verdict, "{s}: {c}");
            let got = c["crossings"].as_array().expect("crossings");
            assert_eq!(got.len(), p.crossings.len(), "{s}: {c}");
            for (g, (pct, now)) in got.iter().zip(p.crossings) {
                assert!((g["pct"].as_f64().unwrap() - pct).abs() < 1e-9, "{s}: {c}");
                assert_eq!(g["now"], *now, "{s}: {c}");
            }
            match p.crossings.first() {
                Some((pct, _)) => {
                    assert!((c["crossover_pct"].as_f64().unwrap() - pct).abs() < 1e-9)
                }
                None => assert!(c["crossover_pct"].is_null(), "{s}: {c}"),
            }
        }
    }

    #[test]
    fn behind_then_ahead_says_where_it_gets_ahead() {
        check(&[&BEHIND_THEN_AHEAD]);
    }

    #[test]
    fn ahead_then_behind_says_where_it_falls_behind() {
        check(&[&AHEAD_THEN_BEHIND]);
    }

    #[test]
    fn ahead_everywhere_says_so_over_the_fractions_measured() {
        check(&[&AHEAD_EVERYWHERE]);
    }

    #[test]
    fn behind_everywhere_says_so_over_the_fractions_measured() {
        check(&[&BEHIND_EVERYWHERE]);
    }

    #[test]
    fn several_crossings_from_ahead_are_listed_in_order() {
        check(&[&SEVERAL_FROM_AHEAD]);
    }

    #[test]
    fn several_crossings_from_behind_are_listed_in_order() {
        check(&[&SEVERAL_FROM_BEHIND]);
    }

    #[test]
    fn every_pattern_in_one_run_keeps_its_own_line() {
        check(&[
            &BEHIND_THEN_AHEAD,
            &AHEAD_THEN_BEHIND,
            &AHEAD_EVERYWHERE,
            &BEHIND_EVERYWHERE,
            &SEVERAL_FROM_AHEAD,
            &SEVERAL_FROM_BEHIND,
        ]);
    }

    #[test]
    fn bytes_have_binary_units() {
        assert_eq!(fmt_bytes(0.0), "0 B");
        assert_eq!(fmt_bytes(2048.0), "2.00 KiB");
        assert_eq!(fmt_bytes(3.5 * 1024.0 * 1024.0), "3.50 MiB");
        assert_eq!(fmt_bytes(f64::NAN), "–");
    }
}
