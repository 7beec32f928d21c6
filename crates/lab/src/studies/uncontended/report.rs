//! The table of `bench uncontended`: ns per acquire+release and the ratio
//! to the floor.

use super::runner::{BENCH, FLOOR};
use crate::core::report::{lock_width, params_line, rep_counts, sig};
use crate::core::results::Point;
use serde_json::Value;
use std::fmt::Write as _;

/// For an `uncontended` point: its median ns/op over the median ns/op of the
/// `floor` point of the same bench in the same run (the one with the same
/// parameters if there is one, else the first). `None` for other benches,
/// without a floor, or when either median is not a positive number.
pub fn ratio_to_floor(p: &Point, points: &[Point]) -> Option<f64> {
    if p.bench != BENCH {
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

pub(crate) fn table(out: &mut String, params: &Value, group: &[&Point], all: &[Point]) {
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
            format!(
                "{} {}",
                sig(med),
                crate::core::report::spread(p.reps.len(), &sig(min), &sig(max))
            )
        };
        let ratio = ratio_to_floor(p, all).map_or_else(|| "–".to_string(), |r| format!("{r:.2}"));
        let _ = writeln!(out, "  {:<lw$}{cell:<28}{ratio}", p.lock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::results::Rep;
    use serde_json::json;

    /// The longest name of the registry (26 characters) still leaves a
    /// gap before the figures, which start in one column on every row.
    #[test]
    fn columns_line_up_with_the_longest_lock_names() {
        let point = |lock: &str| Point {
            bench: "uncontended".into(),
            lock: lock.into(),
            threads: 1,
            params: json!({}),
            reps: (0..3)
                .map(|i| Rep::one_thread(i, 1.0, 1.0, 100_000_000))
                .collect(),
        };
        let points = [point("spin-yield(ticket-backoff)"), point("tas")];
        let group: Vec<&Point> = points.iter().collect();
        let mut out = String::new();
        table(&mut out, &json!({}), &group, &points);
        let rows: Vec<&str> = out
            .lines()
            .filter(|l| l.contains("tas") || l.contains("backoff"))
            .collect();
        assert_eq!(rows.len(), 2, "{out}");
        let figure_at = |l: &str| l.find("10.0").expect("the figure");
        assert_eq!(figure_at(rows[0]), figure_at(rows[1]), "{out}");
        assert!(
            rows[0].contains("spin-yield(ticket-backoff)  10.0"),
            "{out}"
        );
    }
}
