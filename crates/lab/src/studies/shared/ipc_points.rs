//! The stored points of `bench ipc` as other studies read them: a point's
//! measurement and server delay, and the `multi` ping-pong curves that
//! the machine-repairman model is fitted to (by `model fit --run`, and for
//! the dashed lines of the ipc plot). Shared by the ipc and model studies;
//! imports no study.

use crate::core::results::Point;
use serde_json::Value;

/// The name `bench ipc` stores its points under.
pub const BENCH: &str = "ipc";

/// A point's measurement (`single`, `multi`, `shared`, `hold`).
pub fn mode(p: &Point) -> &str {
    p.params.get("mode").and_then(Value::as_str).unwrap_or("")
}

/// A point's mean server delay, ns.
pub fn delay_ns(p: &Point) -> u64 {
    p.params
        .get("delay_ns")
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// One `multi` curve of a stored `bench ipc` run: (cores, median one-way
/// IPCs per ns) for `variant` at `delay_ns`.
pub fn curve(points: &[Point], variant: &str, delay_ns: u64) -> Vec<(f64, f64)> {
    let mut v: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| {
            p.bench == BENCH
                && mode(p) == "multi"
                && p.lock == variant
                && self::delay_ns(p) == delay_ns
        })
        .map(|p| (f64::from(p.threads), p.stat(|r| r.throughput_ops_s).0 / 1e9))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// The curves of `variant` at every delay of a stored `bench ipc` run, as
/// a family for [`locklab_model::queueing::fit_family`]: the curve at
/// delay d has Z = z₀ + d/2 per one-way IPC (a round trip is two system
/// calls and one server delay).
pub fn family(points: &[Point], variant: &str, delays: &[u64]) -> Vec<(f64, Vec<(f64, f64)>)> {
    delays
        .iter()
        .map(|&d| (d as f64 / 2.0, curve(points, variant, d)))
        .collect()
}
