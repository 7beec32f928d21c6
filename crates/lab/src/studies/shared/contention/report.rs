//! The tables of a contention sweep (`bench spin`, and `bench lhp`'s
//! before its sensitivity): throughput, fairness, acquire latency and CPU
//! time per acquisition, one row per lock and one column per thread count.

use super::runner::Handovers;
use crate::core::report::{
    cpu_ns_per_op, distinct, fmt_ns, grid, lock_width, params_line, rep_counts, sig,
    throughput_unit, top_throughput, WIDE_SPREAD,
};
use crate::core::results::{Point, Rep};
use serde_json::Value;
use std::fmt::Write as _;

/// Every table of one parameter set: throughput, fairness, latency, CPU.
pub(crate) fn tables(out: &mut String, bench: &str, params: &Value, group: &[&Point]) {
    throughput_table(out, bench, params, group);
    other_tables(out, group);
}

/// The throughput table alone (with its heading and parameters).
pub(crate) fn throughput_table(out: &mut String, bench: &str, params: &Value, group: &[&Point]) {
    let locks = distinct(group.iter().map(|p| p.lock.as_str()));
    let mut threads = distinct(group.iter().map(|p| p.threads));
    threads.sort_unstable();
    let find = |lock: &str, t: u32| group.iter().find(|p| p.lock == lock && p.threads == t);

    let (scale, unit) = throughput_unit(top_throughput(group));
    let _ = writeln!(
        out,
        "{bench}: throughput in {unit}, median of {}; ~ marks a min–max spread over {:.0}% of it",
        rep_counts(group),
        WIDE_SPREAD * 100.0
    );
    let ps = params_line(params);
    if !ps.is_empty() {
        let _ = writeln!(out, "  {ps}");
    }
    let lw = lock_width(group);
    grid(out, lw, 10, 1, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        if p.reps.is_empty() {
            return None;
        }
        let (med, min, max) = p.stat(|r| r.throughput_ops_s);
        let wide = med > 0.0 && (max - min) / med > WIDE_SPREAD;
        // Every cell ends in one mark column, so the digits stay aligned.
        Some(format!(
            "{}{}",
            sig(med / scale),
            if wide { '~' } else { ' ' }
        ))
    });
}

/// Fairness, acquire latency and CPU time per acquisition.
fn other_tables(out: &mut String, group: &[&Point]) {
    let locks = distinct(group.iter().map(|p| p.lock.as_str()));
    let mut threads = distinct(group.iter().map(|p| p.threads));
    threads.sort_unstable();
    let find = |lock: &str, t: u32| group.iter().find(|p| p.lock == lock && p.threads == t);
    let lw = lock_width(group);
    let _ = writeln!(
        out,
        "\n  fairness: Jain index (1 = even), least–most acquisitions of a thread in % of an even share\n  \
         (n/a: no thread acquired anything)"
    );
    grid(out, lw, 16, 0, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        // Measured, but with nothing to share: undefined, not "even".
        let Some((jain, lo, hi)) = fairness(p) else {
            return (!p.reps.is_empty()).then(|| "n/a".to_string());
        };
        Some(format!("{jain:.2} {lo:>3.0}–{hi:<3.0}%"))
    });

    let _ = writeln!(
        out,
        "\n  acquire latency p50, p99 and max, medians (≥: a wait open at the window's end, lasting so far)"
    );
    grid(out, lw, 24, 0, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        if p.reps.is_empty() {
            return None;
        }
        let q = |f: fn(&Rep) -> u64| {
            let x = p.stat(|r| f(r) as f64).0;
            if x > 0.0 {
                fmt_ns(x)
            } else {
                "–".to_string()
            }
        };
        let max = p.stat(|r| r.max_ns as f64).0;
        let longest = p.stat(|r| r.longest_wait_ns() as f64).0;
        let mark = if longest > max { "≥" } else { "" };
        Some(format!(
            "{} {} {mark}{}",
            q(|r| r.p50_ns),
            q(|r| r.p99_ns),
            q(|r| r.longest_wait_ns())
        ))
    });

    // What waiting costs besides time: CPU burnt by spinners shows here
    // even when throughput hides it.
    let _ = writeln!(
        out,
        "\n  CPU time per acquisition (all threads' user + system time over acquisitions), medians"
    );
    grid(out, lw, 10, 0, &locks, &threads, |lock, t| {
        let p = find(lock, t)?;
        if p.reps.is_empty() {
            return None;
        }
        let cpu = p.stat(cpu_ns_per_op).0;
        Some(if cpu.is_finite() {
            fmt_ns(cpu)
        } else {
            "–".to_string()
        })
    });

    // Only runs on a topology of several nodes counted hand-overs.
    if group
        .iter()
        .any(|p| p.reps.iter().any(|r| r.metrics_of::<Handovers>().is_some()))
    {
        let _ = writeln!(
            out,
            "\n  hand-overs within a NUMA node, % of hand-overs to another thread, medians \
             (the topology: in the parameters above)"
        );
        grid(out, lw, 10, 0, &locks, &threads, |lock, t| {
            let p = find(lock, t)?;
            let shares: Vec<f64> = p
                .reps
                .iter()
                .filter_map(|r| r.metrics_of::<Handovers>()?.same_share())
                .collect();
            if shares.is_empty() {
                return (!p.reps.is_empty()).then(|| "–".to_string());
            }
            Some(format!(
                "{:.0}%",
                crate::core::results::median(&shares) * 100.0
            ))
        });
    }
}

/// A point's fairness: the median Jain index, and in the repetition with
/// that index (the lower middle one for an even count) the least and the
/// most acquisitions of one thread as percentages of an even share.
/// `None` when no repetition has a fairness (no thread acquired anything:
/// see [`crate::core::results::jain`]).
pub fn fairness(p: &Point) -> Option<(f64, f64, f64)> {
    let mut reps: Vec<&Rep> = p
        .reps
        .iter()
        .filter(|r| !r.thread_ops.is_empty() && !r.jain.is_nan())
        .collect();
    if reps.is_empty() {
        return None;
    }
    reps.sort_by(|a, b| a.jain.total_cmp(&b.jain));
    let r = reps[(reps.len() - 1) / 2];
    let mean = r.total_ops as f64 / r.thread_ops.len() as f64;
    if mean <= 0.0 {
        return None;
    }
    let lo = *r.thread_ops.iter().min()? as f64 / mean * 100.0;
    let hi = *r.thread_ops.iter().max()? as f64 / mean * 100.0;
    Some((p.stat(|r| r.jain).0, lo, hi))
}
