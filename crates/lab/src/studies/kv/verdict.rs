//! The verdict of `bench kv`: at the most cores measured, each kernel
//! variant's Xput and its throughput against the best variant's (paired
//! over the repetitions), and the core count from which each big-lock
//! variant stops keeping up with the best (under [`KEEPS_UP`](crate::studies::shared::kernel::KEEPS_UP) of its
//! throughput; seed 002 §5.2.2: "the BKL keeps up until 5 cores").

use super::report::{xput, BENCH};
use crate::core::report::distinct;
use crate::core::results::Point;
use crate::core::stats::{paired_ratio, sig3};
use crate::core::verdict::{Line, Section};
use crate::studies::shared::kernel::{keeps_up, NONE};
use serde_json::json;

fn tput(p: &Point) -> Vec<f64> {
    p.reps.iter().map(|r| r.throughput_ops_s).collect()
}

/// The best synchronized variant at `cores` (highest median throughput;
/// `none`, valid at one core only, is no yardstick for scaling).
fn best_at<'a>(points: &[&'a Point], cores: u32) -> Option<&'a Point> {
    points
        .iter()
        .copied()
        .filter(|p| p.threads == cores && !p.reps.is_empty() && p.lock != NONE)
        .max_by(|a, b| {
            a.stat(|r| r.throughput_ops_s)
                .0
                .total_cmp(&b.stat(|r| r.throughput_ops_s).0)
        })
}

/// The sections of a run's kv points.
pub fn sections(points: &[&Point]) -> Vec<Section> {
    let mut cores = distinct(points.iter().map(|p| p.threads));
    cores.sort_unstable();
    let Some(&top) = cores.last() else {
        return Vec::new();
    };
    let Some(best) = best_at(points, top) else {
        return Vec::new();
    };
    let find = |v: &str, c: u32| {
        points
            .iter()
            .copied()
            .find(|p| p.lock == v && p.threads == c && !p.reps.is_empty())
    };
    let (scale, unit) = crate::core::report::throughput_unit(xput(best));
    let unit = unit.replace("ops", "req");
    let mut lines = Vec::new();
    for v in distinct(points.iter().map(|p| p.lock.as_str())) {
        let Some(p) = find(v, top) else { continue };
        let r = paired_ratio(&tput(best), &tput(p));
        lines.push(Line {
            group: format!("{top} cores"),
            question: v.to_string(),
            answer: format!(
                "Xput {} {unit}, {}× the best",
                sig3(xput(p) / scale),
                sig3(r.ratio)
            ),
            evidence: if p.lock == best.lock {
                "the best throughput here".to_string()
            } else {
                format!("throughput over {}'s: {}", best.lock, r.text())
            },
            json: json!({"variant": v, "cores": top, "xput": xput(p), "best": best.lock, "ratio_to_best": r.json()}),
        });
        if v.starts_with("bkl") {
            let ratio_at = |c: u32| {
                let (p, b) = (find(v, c)?, best_at(points, c)?);
                Some(paired_ratio(&tput(b), &tput(p)).ratio)
            };
            let whose = "the best variant's";
            lines.push(keeps_up(v, "the best", whose, &cores, ratio_at, json!({})));
        }
    }
    vec![Section {
        study: BENCH.into(),
        title: "key-value requests over the cores".into(),
        lines,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(v: &str, cores: u32, rates: &[f64]) -> Point {
        let params = json!({"workload": "c"});
        crate::studies::shared::kernel::test_point("kv", v, cores, params, rates)
    }

    #[test]
    fn ratios_to_the_best_and_where_the_big_lock_falls_behind() {
        let pts = [
            point("bkl(clh)", 1, &[1000.0, 1000.0]),
            point("fine", 1, &[950.0, 960.0]),
            point("bkl(clh)", 3, &[1500.0, 1510.0]),
            point("fine", 3, &[2000.0, 2000.0]),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let s = sections(&refs);
        assert_eq!(s.len(), 1);
        let bkl = s[0]
            .lines
            .iter()
            .find(|l| l.question == "bkl(clh)" && l.group == "3 cores")
            .unwrap();
        assert!(bkl.answer.contains("0.75"), "{}", bkl.answer);
        let falls = s[0]
            .lines
            .iter()
            .find(|l| l.group == "big lock vs the best")
            .unwrap();
        assert_eq!(falls.answer, "falls behind at 3 cores");
    }
}
