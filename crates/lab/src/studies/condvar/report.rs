//! The tables, JSON and verdict of `bench condvar`: per setting (capacity,
//! where the notify is, the producers' sleep, the window), one row per
//! pairing and one column per implementation: items per second, each
//! implementation's rate over the best other one's at the same pairing
//! (paired by repetition, with its interval), CPU time and waits per item,
//! and how evenly the consumers shared the items.

use super::runner::{CondvarMetrics, Pair, BENCH};
use crate::core::report::{cpu_ns_per_op, distinct, fmt_ns, rep_counts, sig, throughput_unit};
use crate::core::results::{Point, Rep};
use crate::core::stats::{geomean, paired_ratio, Ratio};
use crate::core::table::{layout, Column};
use crate::core::verdict::{decisive, pick, Entrant, Line, Section};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The implementation measured against the peers in the verdict.
pub const OURS: &str = "locklab";

/// A point's pairing, from its parameters.
pub fn pair_of(p: &Point) -> Option<Pair> {
    let n = |k: &str| p.params.get(k)?.as_u64().map(|x| x as u32);
    Some(Pair {
        producers: n("producers")?,
        consumers: n("consumers")?,
    })
}

/// A point's setting: its parameters without the pairing, which the
/// points of one table share.
pub fn setting(params: &Value) -> Value {
    let mut s = params.clone();
    if let Value::Object(m) = &mut s {
        m.remove("producers");
        m.remove("consumers");
    }
    s
}

/// Points grouped by setting, groups and points in stored order.
pub fn by_setting<'a>(points: &[&'a Point]) -> Vec<(Value, Vec<&'a Point>)> {
    let mut groups: Vec<(Value, Vec<&Point>)> = Vec::new();
    for &p in points {
        let s = setting(&p.params);
        match groups.iter_mut().find(|(k, _)| *k == s) {
            Some((_, g)) => g.push(p),
            None => groups.push((s, vec![p])),
        }
    }
    groups
}

fn rates(p: &Point) -> Vec<f64> {
    p.reps.iter().map(|r| r.throughput_ops_s).collect()
}

/// Waits (of pushes and pops together) per item taken in one repetition;
/// NaN without items or without the study's metrics.
pub fn waits_per_item(r: &Rep) -> f64 {
    match r.metrics_of::<CondvarMetrics>() {
        Some(m) if r.total_ops > 0 => {
            (m.producer_waits + m.consumer_waits) as f64 / r.total_ops as f64
        }
        _ => f64::NAN,
    }
}

/// `p`'s rate over the best other implementation's at the same pairing
/// and setting (`group`: points of one run): that implementation's name
/// and the ratio, the geometric mean of the per-repetition ratios with its
/// interval. The best is the one with the highest geometric mean of its
/// rates. `None` without another implementation measured there.
pub fn ratio_to_best_peer<'a>(p: &Point, group: &[&'a Point]) -> Option<(&'a str, Ratio)> {
    let best = group
        .iter()
        .filter(|o| o.lock != p.lock && o.params == p.params && o.bench == p.bench)
        .filter(|o| !o.reps.is_empty())
        .map(|o| (*o, geomean(&rates(o))))
        .filter(|(_, g)| g.is_finite())
        .max_by(|a, b| a.1.total_cmp(&b.1))?
        .0;
    let r = paired_ratio(&rates(best), &rates(p));
    r.ratio.is_finite().then_some((best.lock.as_str(), r))
}

/// The pairings of `group`, in order of first appearance.
fn pairings(group: &[&Point]) -> Vec<Pair> {
    distinct(group.iter().filter_map(|p| pair_of(p)))
}

fn find<'a>(group: &[&'a Point], lock: &str, pair: Pair) -> Option<&'a Point> {
    group
        .iter()
        .copied()
        .find(|p| p.lock == lock && pair_of(p) == Some(pair) && !p.reps.is_empty())
}

/// The setting in words: "a queue of 16 items, notify under the mutex".
fn title(setting: &Value) -> String {
    let cap = setting.get("capacity").and_then(Value::as_u64);
    let signal = setting.get("signal").and_then(Value::as_str);
    let sleep = setting.get("producer_sleep_ns").and_then(Value::as_u64);
    let mut s = match cap {
        Some(c) => format!("a queue of {c} item{}", if c == 1 { "" } else { "s" }),
        None => "a bounded queue".to_string(),
    };
    match signal {
        Some("under") => s.push_str(", notify under the mutex"),
        Some("after") => s.push_str(", notify after unlocking"),
        _ => {}
    }
    if let Some(ns) = sleep.filter(|ns| *ns > 0) {
        let _ = write!(s, ", producers sleep {} per item", fmt_ns(ns as f64));
    }
    s
}

/// One table: a row per pairing, a column per implementation.
fn table(
    out: &mut String,
    group: &[&Point],
    locks: &[&str],
    cell: impl Fn(&Point) -> Option<String>,
) {
    let mut rows = vec![std::iter::once("pairing".to_string())
        .chain(locks.iter().map(|l| l.to_string()))
        .collect::<Vec<_>>()];
    let mut missing = false;
    for pair in pairings(group) {
        let mut row = vec![pair.to_string()];
        for l in locks {
            row.push(find(group, l, pair).and_then(&cell).unwrap_or_else(|| {
                missing = true;
                "–".to_string()
            }));
        }
        rows.push(row);
    }
    layout(out, &rows, &[Column::LEFT], 3);
    if missing {
        let _ = writeln!(out, "  –: not measured, or nothing to show");
    }
}

/// The rate table alone, with its heading.
pub(crate) fn rate_table(out: &mut String, setting: &Value, group: &[&Point]) {
    let locks = distinct(group.iter().map(|p| p.lock.as_str()));
    let top = group
        .iter()
        .map(|p| p.stat(|r| r.throughput_ops_s).0)
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    let (scale, unit) = throughput_unit(top);
    let unit = unit.replace("ops", " items");
    let _ = writeln!(
        out,
        "{BENCH}: {}; items taken per second ({unit}), median (min–max) of {}",
        title(setting),
        rep_counts(group)
    );
    let ps = crate::core::report::params_line(setting);
    if !ps.is_empty() {
        let _ = writeln!(out, "  {ps}");
    }
    table(out, group, &locks, |p| {
        let (med, lo, hi) = p.stat(|r| r.throughput_ops_s);
        Some(format!(
            "{} {}",
            sig(med / scale),
            crate::core::report::spread(p.reps.len(), &sig(lo / scale), &sig(hi / scale))
        ))
    });
}

/// Every table of one setting.
pub(crate) fn tables(out: &mut String, setting: &Value, group: &[&Point]) {
    rate_table(out, setting, group);
    let locks = distinct(group.iter().map(|p| p.lock.as_str()));
    if locks.len() > 1 {
        let _ = writeln!(
            out,
            "\n  rate over the best other implementation's at the pairing (named): geometric mean of \
             the\n  per-repetition ratios (repetitions interleaved, so paired) and its 95 % interval"
        );
        table(out, group, &locks, |p| {
            let (peer, r) = ratio_to_best_peer(p, group)?;
            Some(format!("{} {peer}", r.text()))
        });
    }
    let _ = writeln!(
        out,
        "\n  CPU time per item (every producer's and consumer's, over the items taken in the \
         window)\n  and waits per item (pushes' and pops' waits on a condition variable), medians"
    );
    table(out, group, &locks, |p| {
        let cpu = p.stat(cpu_ns_per_op).0;
        let waits = p.stat(waits_per_item).0;
        Some(format!("{:<8} {}", fmt_ns(cpu), sig(waits)))
    });
    if group
        .iter()
        .any(|p| pair_of(p).is_some_and(|x| x.consumers > 1))
    {
        let _ = writeln!(
            out,
            "\n  consumers' shares: Jain index of their items (1 = even), median; least–most items of \
             a\n  consumer in % of an even share, in the repetition of median index"
        );
        table(out, group, &locks, |p| {
            if pair_of(p)?.consumers < 2 {
                return Some("·".to_string());
            }
            let (j, lo, hi) = crate::studies::shared::contention::report::fairness(p)?;
            Some(format!("{j:.2} {lo:.0}–{hi:.0}%"))
        });
    }
}

/// Fields a point adds to its JSON object.
pub fn point_json(p: &Point, of_study: &[&Point]) -> Value {
    let same: Vec<&Point> = of_study
        .iter()
        .copied()
        .filter(|o| setting(&o.params) == setting(&p.params))
        .collect();
    let pair = pair_of(p);
    json!({
        "pairing": pair.map(|x| x.to_string()),
        "producers": pair.map(|x| x.producers),
        "consumers": pair.map(|x| x.consumers),
        "items_s": finite(p.stat(|r| r.throughput_ops_s).0),
        "cpu_ns_per_item": finite(p.stat(cpu_ns_per_op).0),
        "waits_per_item": finite(p.stat(waits_per_item).0),
        "ratio_to_best_peer": ratio_to_best_peer(p, &same).map_or(Value::Null, |(peer, r)| {
            let mut v = r.json();
            v["peer"] = json!(peer);
            v
        }),
    })
}

fn finite(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

/// The verdict: per setting and pairing the fastest implementation and
/// the one with the least CPU per item, each against its runner-up; and
/// where `locklab` is ahead of, tied with or behind the best peer.
pub fn verdict(points: &[&Point]) -> Vec<Section> {
    by_setting(points)
        .into_iter()
        .map(|(setting, group)| Section {
            study: BENCH.into(),
            title: title(&setting),
            lines: lines(&group),
        })
        .collect()
}

fn lines(group: &[&Point]) -> Vec<Line> {
    let locks = distinct(group.iter().map(|p| p.lock.as_str()));
    let mut out = Vec::new();
    let entrants = |pair: Pair, f: fn(&Rep) -> f64| -> Vec<Entrant> {
        locks
            .iter()
            .filter_map(|l| find(group, l, pair))
            .map(|p| Entrant {
                name: p.lock.clone(),
                values: p.reps.iter().map(f).collect(),
            })
            .collect()
    };
    type Question = (&'static str, fn(&Rep) -> f64, bool);
    let questions: [Question; 2] = [
        ("fastest", |r| r.throughput_ops_s, false),
        ("least CPU", cpu_ns_per_op, true),
    ];
    let mut standing: Vec<(Pair, Standing)> = Vec::new();
    for pair in pairings(group) {
        for (q, f, lower) in questions {
            let Some(pk) = pick(&entrants(pair, f), lower) else {
                continue;
            };
            out.push(Line {
                group: pair.to_string(),
                question: q.into(),
                answer: pk.answer(),
                evidence: pk.evidence("over"),
                json: json!({"pairing": pair.to_string(), "question": q, "pick": pk.json()}),
            });
        }
        let Some((peer, r)) = find(group, OURS, pair).and_then(|p| ratio_to_best_peer(p, group))
        else {
            continue;
        };
        let st = Standing::of(&r);
        standing.push((pair, st));
        let mut data = r.json();
        data["peer"] = json!(peer);
        out.push(Line {
            group: pair.to_string(),
            question: format!("{OURS} vs the best peer"),
            answer: st.word().into(),
            evidence: format!("{} {peer}", r.text()),
            json: json!({"pairing": pair.to_string(), "question": "vs the best peer",
                         "standing": st.word(), "ratio": data}),
        });
    }
    if standing.len() > 1 {
        out.push(summary(&standing));
    }
    out
}

/// Where `locklab` stands against the best peer at a pairing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    Ahead,
    Tied,
    Behind,
}

impl Standing {
    /// From its rate over the best peer's: told apart as the verdict tells
    /// a winner from its runner-up ([`decisive`]), else tied.
    fn of(r: &Ratio) -> Standing {
        if decisive(r) {
            Standing::Ahead
        } else if decisive(&r.inverse()) {
            Standing::Behind
        } else {
            Standing::Tied
        }
    }

    fn word(self) -> &'static str {
        match self {
            Standing::Ahead => "ahead",
            Standing::Tied => "tied",
            Standing::Behind => "behind",
        }
    }
}

/// The standings of every pairing on one line.
fn summary(standing: &[(Pair, Standing)]) -> Line {
    let at = |s: Standing| -> Vec<String> {
        standing
            .iter()
            .filter(|(_, x)| *x == s)
            .map(|(p, _)| p.to_string())
            .collect()
    };
    let (ahead, tied, behind) = (
        at(Standing::Ahead),
        at(Standing::Tied),
        at(Standing::Behind),
    );
    let counts = [
        (ahead.len(), Standing::Ahead),
        (tied.len(), Standing::Tied),
        (behind.len(), Standing::Behind),
    ];
    let answer = counts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, s)| format!("{} {n}", s.word()))
        .collect::<Vec<_>>()
        .join(", ");
    let evidence = [(&ahead, "ahead"), (&tied, "tied"), (&behind, "behind")]
        .iter()
        .filter(|(v, _)| !v.is_empty())
        .map(|(v, w)| format!("{w} at {}", v.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    Line {
        group: "all pairings".into(),
        question: format!("{OURS} vs the best peer"),
        answer,
        evidence,
        json: json!({"question": "vs the best peer", "ahead": ahead, "tied": tied, "behind": behind}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(lock: &str, p: u32, c: u32, rates: &[f64]) -> Point {
        Point {
            bench: BENCH.into(),
            lock: lock.into(),
            threads: p + c,
            params: json!({"capacity": 16, "signal": "under", "producer_sleep_ns": 0,
                           "secs": 0.5, "producers": p, "consumers": c}),
            reps: rates
                .iter()
                .enumerate()
                .map(|(i, &r)| {
                    // Rates divisible by the consumers: each gets an equal share.
                    let mut rep = Rep::counted(1.0, 0.5, vec![r as u64 / c as u64; c as usize]);
                    rep.rep = i as u32;
                    rep.set_metrics(&CondvarMetrics {
                        producer_waits: r as u64 / 10,
                        ..Default::default()
                    });
                    rep
                })
                .collect(),
        }
    }

    fn run() -> Vec<Point> {
        vec![
            point("locklab", 1, 1, &[1000.0, 1100.0, 1050.0]),
            point("std", 1, 1, &[500.0, 560.0, 520.0]),
            point("parking_lot", 1, 1, &[800.0, 880.0, 840.0]),
            point("locklab", 4, 4, &[400.0, 420.0, 410.0]),
            point("std", 4, 4, &[800.0, 840.0, 820.0]),
            point("parking_lot", 4, 4, &[404.0, 424.0, 412.0]),
        ]
    }

    #[test]
    fn ratios_are_to_the_best_other_implementation_at_the_pairing() {
        let pts = run();
        let refs: Vec<&Point> = pts.iter().collect();
        let (peer, r) = ratio_to_best_peer(&pts[0], &refs).unwrap();
        assert_eq!(peer, "parking_lot");
        assert!((r.ratio - 1.25).abs() < 0.01, "{r:?}");
        let (peer, r) = ratio_to_best_peer(&pts[4], &refs).unwrap();
        assert_eq!(peer, "parking_lot", "std's best other at 4x4");
        assert!(r.ratio > 1.9, "{r:?}");
        assert_eq!(pair_of(&pts[3]).unwrap().to_string(), "4x4");
    }

    #[test]
    fn the_verdict_says_where_locklab_is_ahead_and_behind() {
        let pts = run();
        let refs: Vec<&Point> = pts.iter().collect();
        let s = verdict(&refs);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].title, "a queue of 16 items, notify under the mutex");
        let ours = |g: &str| {
            s[0].lines
                .iter()
                .find(|l| l.group == g && l.question.starts_with(OURS))
                .unwrap()
        };
        assert_eq!(ours("1x1").answer, "ahead");
        assert!(
            ours("1x1").evidence.starts_with("1.25× ("),
            "{:?}",
            ours("1x1")
        );
        assert_eq!(ours("4x4").answer, "behind");
        assert_eq!(ours("all pairings").answer, "ahead 1, behind 1");
        assert_eq!(ours("all pairings").evidence, "ahead at 1x1; behind at 4x4");
        let fastest: Vec<&str> = s[0]
            .lines
            .iter()
            .filter(|l| l.question == "fastest")
            .map(|l| l.answer.as_str())
            .collect();
        assert_eq!(fastest, ["locklab", "std"]);
    }

    #[test]
    fn the_text_has_a_row_per_pairing_and_a_column_per_implementation() {
        let pts = run();
        let refs: Vec<&Point> = pts.iter().collect();
        let mut out = String::new();
        tables(&mut out, &setting(&pts[0].params), &refs);
        let head = out.lines().find(|l| l.contains("pairing")).unwrap();
        assert!(
            head.contains("locklab") && head.contains("parking_lot"),
            "{out}"
        );
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with("1x1"))
            .unwrap();
        assert!(row.contains("1.05 (1.00–1.10)"), "{out}");
        assert!(out.contains("k items/s"), "{out}");
        assert!(
            out.contains("1.25× (") && out.contains(") parking_lot"),
            "{out}"
        );
        // Waits per item: a tenth of the items waited.
        assert!(out.contains("0.100"), "{out}");
    }
}
