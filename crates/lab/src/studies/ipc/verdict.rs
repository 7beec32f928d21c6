//! The verdict of `bench ipc`: on one core, each kernel variant's
//! overhead per IPC over `none` (paired over the repetitions); over the
//! cores, each variant's throughput against `none` at the most cores
//! measured, and the core count from which each big-lock variant stops
//! keeping up with `none` (under [`KEEPS_UP`](crate::studies::shared::kernel::KEEPS_UP) of its throughput).

use crate::core::report::distinct;
use crate::core::results::Point;
use crate::core::stats::{paired_ratio, sig3};
use crate::core::verdict::{Line, Section};
use crate::studies::shared::ipc_points::{delay_ns, mode, BENCH};
use crate::studies::shared::kernel::{keeps_up, NONE};
use serde_json::json;

fn values(p: &Point, f: fn(&crate::core::results::Rep) -> f64) -> Vec<f64> {
    p.reps.iter().map(f).collect()
}

/// The sections of a run's ipc points.
pub fn sections(points: &[&Point]) -> Vec<Section> {
    let mut out = Vec::new();
    let find = |v: &str, m: &str, c: u32, d: u64| {
        points.iter().copied().find(|p| {
            p.lock == v && mode(p) == m && p.threads == c && delay_ns(p) == d && !p.reps.is_empty()
        })
    };
    let variants = distinct(points.iter().map(|p| p.lock.as_str()));
    // One core: the overhead per IPC.
    let single: Vec<&Point> = points
        .iter()
        .copied()
        .filter(|p| mode(p) == "single")
        .collect();
    if let Some(base) = single.iter().find(|p| p.lock == NONE) {
        let mut lines = Vec::new();
        for v in variants.iter().filter(|v| **v != NONE) {
            let Some(p) = find(v, "single", base.threads, delay_ns(base)) else {
                continue;
            };
            let r = paired_ratio(&values(base, |r| r.ns_per_op), &values(p, |r| r.ns_per_op));
            let pct = |x: f64| format!("{:+.1} %", (x - 1.0) * 100.0);
            let evidence = if r.spread_known() {
                format!(
                    "time per IPC over none's ({}–{}), {} repetitions",
                    pct(r.lo),
                    pct(r.hi),
                    r.n
                )
            } else {
                "time per IPC over none's (spread unknown: 1 repetition)".to_string()
            };
            lines.push(Line {
                group: "overhead".into(),
                question: v.to_string(),
                answer: pct(r.ratio),
                evidence,
                json: json!({"variant": v, "mode": "single", "ratio_to_none": r.json()}),
            });
        }
        if !lines.is_empty() {
            out.push(Section {
                study: BENCH.into(),
                title: "one core, one-way IPC".into(),
                lines,
            });
        }
    }
    // Over the cores, per delay.
    let multi: Vec<&Point> = points
        .iter()
        .copied()
        .filter(|p| mode(p) == "multi")
        .collect();
    let mut delays = distinct(multi.iter().map(|p| delay_ns(p)));
    delays.sort_unstable();
    for d in delays {
        let mut cores = distinct(multi.iter().filter(|p| delay_ns(p) == d).map(|p| p.threads));
        cores.sort_unstable();
        let Some(&top) = cores.last() else { continue };
        let mut lines = Vec::new();
        for v in variants.iter().filter(|v| **v != NONE) {
            let ratio_at = |c: u32| {
                let (p, b) = (find(v, "multi", c, d)?, find(NONE, "multi", c, d)?);
                Some(paired_ratio(
                    &values(b, |r| r.throughput_ops_s),
                    &values(p, |r| r.throughput_ops_s),
                ))
            };
            let Some(r) = ratio_at(top) else { continue };
            lines.push(Line {
                group: format!("{top} cores"),
                question: v.to_string(),
                answer: format!("{}× none", sig3(r.ratio)),
                evidence: format!("throughput over none's: {}", r.text()),
                json: json!({"variant": v, "cores": top, "delay_ns": d, "ratio_to_none": r.json()}),
            });
            if v.starts_with("bkl") {
                let ratio = |c| Some(ratio_at(c)?.ratio);
                let json = json!({ "delay_ns": d });
                lines.push(keeps_up(v, NONE, "none's", &cores, ratio, json));
            }
        }
        if !lines.is_empty() {
            out.push(Section {
                study: BENCH.into(),
                title: format!("over the cores, server delay {d} ns"),
                lines,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(v: &str, m: &str, cores: u32, rates: &[f64]) -> Point {
        let params = json!({"mode": m, "delay_ns": 0});
        crate::studies::shared::kernel::test_point("ipc", v, cores, params, rates)
    }

    #[test]
    fn overheads_and_where_the_big_lock_falls_behind() {
        let pts = [
            point("none", "single", 1, &[1000.0, 1010.0, 990.0]),
            point("bkl(clh)", "single", 1, &[800.0, 808.0, 792.0]),
            point("none", "multi", 1, &[1000.0, 1000.0]),
            point("bkl(clh)", "multi", 1, &[950.0, 960.0]),
            point("none", "multi", 2, &[2000.0, 2000.0]),
            point("bkl(clh)", "multi", 2, &[900.0, 910.0]),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let s = sections(&refs);
        assert_eq!(s.len(), 2);
        // 1000 per s against 800: each IPC takes 25 % longer.
        assert_eq!(s[0].lines[0].answer, "+25.0 %");
        let keeps = s[1]
            .lines
            .iter()
            .find(|l| l.group == "big lock vs none")
            .unwrap();
        assert_eq!(keeps.answer, "falls behind at 2 cores");
    }
}
