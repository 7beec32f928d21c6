//! What a stored point of the hash-table benchmark says beyond the common
//! figures: its update fraction, its lookup and update rates, and the JSON
//! keys `--json` promises for it.

use serde_json::{json, Value};

use super::runner::HashMetrics;
use crate::core::results::Point;

/// A point's update fraction in percent (from its parameters).
pub fn update_pct(p: &Point) -> Option<u32> {
    p.params.get("update_pct")?.as_u64().map(|x| x as u32)
}

/// Median lookups and updates per second of a point.
pub fn rates(p: &Point) -> (f64, f64) {
    let per_s = |f: fn(&HashMetrics) -> u64| {
        p.stat(|r| match &r.metrics_of::<HashMetrics>() {
            Some(h) if r.wall_s > 0.0 => f(h) as f64 / r.wall_s,
            _ => f64::NAN,
        })
        .0
    };
    (per_s(|h| h.lookups), per_s(|h| h.updates))
}

/// The extra JSON keys of a hash point: what `--json` promises.
pub fn point_json(p: &Point) -> Value {
    let (lookups_s, updates_s) = rates(p);
    let med = |f: fn(&HashMetrics) -> Option<u64>| {
        let x = p
            .stat(|r| {
                r.metrics_of::<HashMetrics>()
                    .as_ref()
                    .and_then(f)
                    .map_or(f64::NAN, |b| b as f64)
            })
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
