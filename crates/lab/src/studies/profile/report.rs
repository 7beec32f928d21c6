//! The report of `locklab profile`: per process, its lock objects most
//! waited-on first, and a `bench spin` command with the worst one's
//! pattern.

use crate::studies::shared::lock_profile::{mean, spin_workload, Counts};

/// Objects stored one by one per process (the most waited-on, then the
/// most taken); the rest are stored as one summary point.
pub const KEEP: usize = 500;

/// One acquisition in this many has its hold timed (the interposer's
/// `profile::SAMPLE`).
pub const SAMPLE: u64 = 16;
use crate::core::report::fmt_ns;
use crate::core::results::{Point, RunMeta};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// A point's counts (stored as its one repetition's metrics).
fn counts(p: &Point) -> Counts {
    p.reps
        .first()
        .and_then(|r| r.metrics_of::<Counts>())
        .unwrap_or_default()
}

fn param<'a>(p: &'a Point, k: &str) -> &'a str {
    p.params.get(k).and_then(Value::as_str).unwrap_or("")
}

fn process<'a>(p: &'a Point, k: &str) -> &'a Value {
    p.params
        .get("process")
        .and_then(|v| v.get(k))
        .unwrap_or(&Value::Null)
}

/// The ready command for [`spin_workload`].
pub fn spin_command(c: &Counts) -> Option<String> {
    let (t, cs, delay) = spin_workload(c)?;
    Some(format!(
        "locklab bench spin --threads {t} --cs-ns {cs} --delay-ns {delay}"
    ))
}

/// `n (p%)`.
fn with_pct(n: u64, of: u64) -> String {
    if of == 0 {
        "–".into()
    } else {
        format!("{n} ({:.1}%)", 100.0 * n as f64 / of as f64)
    }
}

/// The tables of a profile run.
pub fn table(out: &mut String, meta: &RunMeta, points: &[&Point]) {
    let top = meta.params.get("top").and_then(Value::as_u64).unwrap_or(10) as usize;
    let mut pids: Vec<u64> = Vec::new();
    for p in points {
        let pid = process(p, "pid").as_u64().unwrap_or(0);
        if !pids.contains(&pid) {
            pids.push(pid);
        }
    }
    let command = meta
        .params
        .get("command")
        .and_then(Value::as_str)
        .unwrap_or("");
    let lock = points.first().map(|p| p.lock.as_str()).unwrap_or("");
    let rwlock = points
        .first()
        .map(|p| process(p, "rwlock").as_str().unwrap_or(""))
        .unwrap_or("");
    let lockless = meta
        .params
        .get("processes_without_locks")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let _ = writeln!(
        out,
        "profile: `{command}` under {lock} and {rwlock}: {} process{} took locks{}",
        pids.len(),
        if pids.len() == 1 { "" } else { "es" },
        if lockless > 0 {
            format!(" ({lockless} more took none)")
        } else {
            String::new()
        }
    );
    // The lock whose waits took the largest share of its threads' time.
    let mut worst: Option<(f64, Counts, String)> = None;
    for pid in pids {
        let mine: Vec<&&Point> = points
            .iter()
            .filter(|p| process(p, "pid").as_u64() == Some(pid))
            .collect();
        let first = mine[0];
        let all: Vec<Counts> = mine.iter().map(|p| counts(p)).collect();
        let contended = all
            .iter()
            .filter(|c| c.contended + c.read_contended > 0)
            .count();
        let wait: u64 = all.iter().map(Counts::wait_ns).sum();
        let _ = writeln!(
            out,
            "\npid {pid} {}: {} s, {} thread(s) took locks, {} lock objects, {contended} contended{}",
            process(first, "exe").as_str().unwrap_or("?"),
            crate::core::report::sig(process(first, "elapsed_ns").as_f64().unwrap_or(0.0) * 1e-9),
            process(first, "threads"),
            process(first, "objects"),
            if wait > 0 {
                format!(", {} waited in all", fmt_ns(wait as f64))
            } else {
                String::new()
            },
        );
        let _ = writeln!(
            out,
            "  {:>3} {:<16} {:<6} {:>3} {:>10} {:>14} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>15} {:>6}  first contended at",
            "#", "object", "kind", "thr", "acquired", "contended", "busy", "wait", "max", "mean", "held", "max", "mean", "reads (waited)", "conds"
        );
        for (i, (p, c)) in mine.iter().zip(&all).take(top).enumerate() {
            let reads = if p.params.get("kind").and_then(Value::as_str) == Some("rwlock") {
                format!("{} ({})", c.reads, c.read_contended)
            } else {
                "–".into()
            };
            let wmax = c.wait_max_ns.max(c.read_wait_max_ns);
            let waited = c.contended + c.read_contended > 0;
            let _ = writeln!(
                out,
                "  {:>3} {:<16} {:<6} {:>3} {:>10} {:>14} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>15} {:>6}  {}",
                i + 1,
                param(p, "object"),
                param(p, "kind"),
                c.threads,
                c.acquisitions,
                with_pct(c.contended, c.acquisitions),
                c.busy,
                fmt_ns(if waited { c.wait_ns() as f64 } else { f64::NAN }),
                fmt_ns(if waited { wmax as f64 } else { f64::NAN }),
                fmt_ns(mean(c.wait_ns(), c.contended + c.read_contended)),
                fmt_ns(c.hold_total_ns as f64),
                fmt_ns(if c.acquisitions > 0 { c.hold_max_ns as f64 } else { f64::NAN }),
                fmt_ns(mean(c.hold_total_ns, c.acquisitions)),
                reads,
                c.cond_waits,
                p.params.get("caller").and_then(Value::as_str).unwrap_or("–"),
            );
        }
        let objects = process(first, "objects")
            .as_u64()
            .unwrap_or(mine.len() as u64);
        if objects > top as u64 {
            let _ = writeln!(
                out,
                "  … {} more objects (`locklab show --json` has the first {}{})",
                objects - top as u64,
                mine.len().min(KEEP),
                if mine.len() > KEEP {
                    " and the sum of the rest"
                } else {
                    ""
                }
            );
        }
        for (k, what) in [
            ("overflow", "objects found no room in the profile's table and were not counted"),
            ("glibc_only_calls", "calls on process-shared, robust or priority-protocol locks, which stay the C library's, were not counted"),
            ("misuse", "unlocks of a default mutex that the caller did not hold were refused with EPERM (a bug in the program: POSIX leaves it undefined, and the C library lets it pass)"),
        ] {
            if let Some(n) = process(first, k).as_u64().filter(|n| *n > 0) {
                let _ = writeln!(out, "  note: {n} {what}");
            }
        }
        if let Some(c) = all.first().filter(|c| spin_workload(c).is_some()) {
            let elapsed = process(first, "elapsed_ns").as_f64().unwrap_or(0.0);
            let share = c.wait_ns() as f64 / (elapsed * f64::from(c.threads.max(1)));
            if worst.as_ref().is_none_or(|w| share > w.0) {
                worst = Some((share, c.clone(), param(mine[0], "object").to_string()));
            }
        }
    }
    let _ = writeln!(
        out,
        "\n  wait: what the contended acquisitions waited (mean: per contended one)\n  \
         held: time held exclusive, timed for the first 64 acquisitions, then one in {} (mean: per acquisition)\n  \
         reads: shared acquisitions of a reader-writer lock (how many waited)\n  \
         busy: failed try forms and timed-out timed forms; conds: condition waits with the mutex\n  \
         thr: threads that took it; –: none",
        SAMPLE
    );
    let Some((share, c, object)) = worst else {
        let _ = writeln!(
            out,
            "\n  No lock was contended: the choice of lock cannot shorten any wait here."
        );
        return;
    };
    let _ = writeln!(
        out,
        "\n  Waiting for {object}, the most waited-on, took {} of the time of the {} threads that took it.",
        if share < 1e-4 { "less than 0.01%".to_string() } else { format!("{:.2}%", 100.0 * share) },
        c.threads
    );
    if share < WORTH {
        let _ = writeln!(
            out,
            "  Under {:.0}%: the choice of lock can hardly shorten this program's waits; what a lock costs \
             uncontended\n  still counts (`locklab run` measures the whole program under each lock).",
            100.0 * WORTH
        );
    } else {
        let (t, cs, delay) = spin_workload(&c).expect("checked");
        let _ = writeln!(
            out,
            "\n  {object}'s pattern ({t} threads, held {} and {} apart, spinning where the program may sleep) \
             as a benchmark of every lock:\n    {}",
            fmt_ns(cs as f64),
            fmt_ns(delay as f64),
            spin_command(&c).expect("checked"),
        );
    }
}

/// The share of its threads' time a lock's waits must take for its
/// pattern to be worth a benchmark.
const WORTH: f64 = 0.01;

/// What a point's JSON adds: its object, the means, and the `bench spin`
/// command of its pattern (for a contended one).
pub fn point_json(p: &Point) -> Value {
    let c = counts(p);
    json!({
        "object": param(p, "object"),
        "kind": param(p, "kind"),
        "caller": p.params.get("caller").cloned().unwrap_or(Value::Null),
        "contended_pct": if c.acquisitions == 0 { Value::Null } else { json!(100.0 * c.contended as f64 / c.acquisitions as f64) },
        "wait_mean_ns": nan_null(mean(c.wait_ns(), c.contended + c.read_contended)),
        "hold_mean_ns": nan_null(mean(c.hold_total_ns, c.acquisitions)),
        "bench_spin": spin_command(&c),
    })
}

fn nan_null(x: f64) -> Value {
    if x.is_finite() {
        json!(x)
    } else {
        Value::Null
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads taking turns: each holds 1 ms and comes back 1 ms
    /// after its release, for 1 s: 500 acquisitions each, none waits.
    /// Known answer: the benchmark's delay is what the threads spent away
    /// from the lock.
    #[test]
    fn a_known_pattern_becomes_its_benchmark() {
        let c = Counts {
            acquisitions: 1000,
            contended: 10,
            hold_total_ns: 1000 * 1_000_000,
            wait_total_ns: 0,
            threads: 2,
            first_ns: 0,
            last_ns: 1_000_000_000,
            ..Counts::default()
        };
        // Each thread: 500 cycles in 1 s = 2 ms a cycle; 1 ms held, so
        // 1 ms away.
        assert_eq!(spin_workload(&c), Some((2, 1_000_000, 1_000_000)));
        assert_eq!(
            spin_command(&c).unwrap(),
            "locklab bench spin --threads 2 --cs-ns 1000000 --delay-ns 1000000"
        );
        // Never contended: nothing to reproduce.
        let quiet = Counts {
            contended: 0,
            ..c.clone()
        };
        assert_eq!(spin_workload(&quiet), None);
        // Waiting is not delay: the same cycle with 0.5 ms of waiting
        // leaves 0.5 ms away.
        let waiting = Counts {
            wait_total_ns: 1000 * 500_000,
            ..c
        };
        assert_eq!(spin_workload(&waiting), Some((2, 1_000_000, 500_000)));
    }
}
