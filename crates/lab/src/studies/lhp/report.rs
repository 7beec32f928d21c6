//! `bench lhp`'s own figure: each lock's preemption sensitivity.

use crate::core::report::{distinct, lock_width};
use crate::core::results::Point;
use std::fmt::Write as _;

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

pub(crate) fn sensitivity_table(out: &mut String, group: &[&Point], cores: u32) {
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
