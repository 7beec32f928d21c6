//! The verdict of a contention sweep (`bench spin`, and `bench lhp`, which
//! is the same sweep oversubscribed): per thread-count class the fastest
//! lock, the one that burns the least CPU per acquisition and the fairest,
//! each against its runner-up with how sure that is; and the locks to
//! avoid beyond the cores, whose rate there falls under [`COLLAPSE`] of
//! their rate at the cores.

use crate::core::report::{by_params, cpu_ns_per_op, distinct};
use crate::core::results::{Point, Rep, RunMeta};
use crate::core::stats::geomean;
use crate::core::verdict::{pick, times, Class, Entrant, Line, Section};
use serde_json::{json, Value};

/// A lock collapses beyond the cores when its rate at the most threads
/// measured falls under this fraction of its rate at the cores.
pub const COLLAPSE: f64 = 0.5;

/// The sections of one study's points, one per parameter set.
pub fn sections(bench: &str, meta: &RunMeta, points: &[&Point]) -> Vec<Section> {
    let cores = meta.machine.cores.max(1);
    by_params(points)
        .into_iter()
        .map(|(params, group)| Section {
            study: bench.to_string(),
            title: workload(params),
            lines: lines(&group, cores),
        })
        .collect()
}

/// The workload in a few words, from a point's parameters.
fn workload(params: &Value) -> String {
    let n = |k: &str| params.get(k).and_then(Value::as_u64);
    let mut parts = Vec::new();
    if let Some(cs) = n("cs_ns") {
        let lines = n("cs_lines").unwrap_or(1);
        parts.push(format!(
            "critical section {cs} ns on {lines} line{}",
            if lines == 1 { "" } else { "s" }
        ));
    }
    if let Some(d) = n("delay_ns") {
        let dist = params
            .get("delay_dist")
            .and_then(Value::as_str)
            .unwrap_or("");
        parts.push(if d == 0 {
            "no delay".to_string()
        } else {
            format!("delay {d} ns ({dist})")
        });
    }
    if parts.is_empty() {
        crate::core::report::params_line(params)
    } else {
        parts.join(", ")
    }
}

/// One value per repetition for `lock` over the thread counts `ts`: the
/// geometric mean over the thread counts of repetition `i`'s `f`. `None`
/// unless the lock has every thread count with repetitions.
fn per_rep(group: &[&Point], lock: &str, ts: &[u32], f: fn(&Rep) -> f64) -> Option<Vec<f64>> {
    let pts: Vec<&Point> = ts
        .iter()
        .map(|t| {
            group
                .iter()
                .copied()
                .find(|p| p.lock == lock && p.threads == *t && !p.reps.is_empty())
        })
        .collect::<Option<_>>()?;
    let n = pts.iter().map(|p| p.reps.len()).min()?;
    Some(
        (0..n)
            .map(|i| geomean(&pts.iter().map(|p| f(&p.reps[i])).collect::<Vec<_>>()))
            .collect(),
    )
}

/// Each lock's value per repetition over the thread counts `ts` (the
/// geometric mean across them), as the verdict's contenders.
pub(crate) fn entrants(
    group: &[&Point],
    locks: &[&str],
    ts: &[u32],
    f: fn(&Rep) -> f64,
) -> Vec<Entrant> {
    locks
        .iter()
        .filter_map(|l| {
            per_rep(group, l, ts, f).map(|values| Entrant {
                name: l.to_string(),
                values,
            })
        })
        .collect()
}

/// A question of the verdict: its words, the value per repetition, whether
/// lower is better, and how the margin reads.
type Question = (&'static str, fn(&Rep) -> f64, bool, &'static str);

fn lines(group: &[&Point], cores: usize) -> Vec<Line> {
    let locks = distinct(group.iter().map(|p| p.lock.as_str()));
    let mut threads = distinct(group.iter().map(|p| p.threads));
    threads.sort_unstable();
    let mut out = Vec::new();
    for class in [Class::One, Class::UpToCores, Class::BeyondCores] {
        let ts: Vec<u32> = threads
            .iter()
            .copied()
            .filter(|t| Class::of(*t, cores) == class)
            .collect();
        if ts.is_empty() {
            continue;
        }
        let label = class.label(&ts, cores);
        let questions: &[Question] = if class == Class::One {
            &[("fastest", |r| r.throughput_ops_s, false, "over")]
        } else {
            &[
                ("fastest", |r| r.throughput_ops_s, false, "over"),
                ("least CPU", cpu_ns_per_op, true, "over"),
                ("fairest", |r| r.jain, false, "over"),
            ]
        };
        for (q, f, lower, what) in questions {
            let Some(p) = pick(&entrants(group, &locks, &ts, *f), *lower) else {
                continue;
            };
            out.push(Line {
                group: label.clone(),
                question: q.to_string(),
                answer: p.answer(),
                evidence: p.evidence(what),
                json: json!({
                    "class": class.key(), "threads": ts, "question": q, "pick": p.json(),
                }),
            });
        }
    }
    if let Some(l) = avoid(group, &locks, &threads, cores) {
        out.push(l);
    }
    out
}

/// The locks whose rate at the most threads measured beyond the cores is
/// under [`COLLAPSE`] of their rate at the most threads up to the cores.
fn avoid(group: &[&Point], locks: &[&str], threads: &[u32], cores: usize) -> Option<Line> {
    let at_cores = *threads.iter().filter(|t| **t as usize <= cores).max()?;
    let beyond = *threads.iter().filter(|t| **t as usize > cores).max()?;
    let rate = |lock: &str, t: u32| {
        group
            .iter()
            .find(|p| p.lock == lock && p.threads == t && !p.reps.is_empty())
            .map(|p| p.stat(|r| r.throughput_ops_s).0)
    };
    let mut fallen: Vec<(&str, f64)> = locks
        .iter()
        .filter_map(|l| {
            let (a, b) = (rate(l, at_cores)?, rate(l, beyond)?);
            (a > 0.0 && b.is_finite() && b / a < COLLAPSE).then_some((*l, b / a))
        })
        .collect();
    fallen.sort_by(|a, b| a.1.total_cmp(&b.1));
    let over: Vec<u32> = threads
        .iter()
        .copied()
        .filter(|t| *t as usize > cores)
        .collect();
    let group = Class::BeyondCores.label(&over, cores);
    let question = "avoid".to_string();
    let data = json!({
        "threads": beyond, "at_cores": at_cores, "collapse_under": COLLAPSE,
        "locks": fallen.iter().map(|(l, r)| json!({"lock": l, "ratio": r})).collect::<Vec<_>>(),
    });
    if fallen.is_empty() {
        return Some(Line {
            group,
            question,
            answer: "none".into(),
            evidence: format!(
                "every lock keeps at least {:.0} % of its rate at {at_cores} threads",
                COLLAPSE * 100.0
            ),
            json: data,
        });
    }
    let names: Vec<String> = fallen
        .iter()
        .take(3)
        .map(|(l, r)| format!("{l} {}", times(*r)))
        .collect();
    let more = fallen.len().saturating_sub(3);
    Some(Line {
        group,
        question,
        answer: format!(
            "{} lock{}",
            fallen.len(),
            if fallen.len() == 1 { "" } else { "s" }
        ),
        evidence: format!(
            "at {beyond} vs {at_cores} threads: {}{}",
            names.join(", "),
            if more > 0 {
                format!(", +{more}")
            } else {
                String::new()
            }
        ),
        json: data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::results::Machine;

    fn meta(cores: usize) -> RunMeta {
        RunMeta {
            id: Some(1),
            uuid: None,
            kind: "bench spin".into(),
            command: "locklab bench spin".into(),
            params: Value::Null,
            machine: Machine {
                cores,
                ..Machine::default()
            },
            started: String::new(),
            finished: None,
            complete: true,
        }
    }

    /// A point whose repetitions have these rates (acquisitions per
    /// second over one second) and an even share per thread.
    fn point(lock: &str, threads: u32, rates: &[f64]) -> Point {
        Point {
            bench: "spin".into(),
            lock: lock.into(),
            threads,
            params: json!({"cs_ns": 100, "cs_lines": 1, "delay_ns": 0, "delay_dist": "exp"}),
            reps: rates
                .iter()
                .enumerate()
                .map(|(i, &r)| {
                    let mut rep = Rep::one_thread(i as u32, 1.0, threads as f64, r as u64);
                    rep.thread_ops = vec![r as u64 / threads as u64; threads as usize];
                    rep
                })
                .collect(),
        }
    }

    fn find<'a>(s: &'a [Section], q: &str) -> &'a Line {
        s[0].lines
            .iter()
            .find(|l| format!("{}, {}", l.question, l.group).starts_with(q))
            .unwrap_or_else(|| panic!("no line {q:?} in {:#?}", s[0].lines))
    }

    #[test]
    fn a_clear_winner_a_tie_and_a_collapse() {
        let pts = [
            point("fast", 1, &[200.0, 210.0, 205.0]),
            point("slow", 1, &[100.0, 104.0, 98.0]),
            point("fast", 2, &[150.0, 149.0, 152.0]),
            point("slow", 2, &[151.0, 148.0, 150.0]),
            point("fast", 8, &[1.0, 2.0, 1.5]),
            point("slow", 8, &[140.0, 139.0, 141.0]),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let s = sections("spin", &meta(2), &refs);
        assert_eq!(s.len(), 1);
        let one = find(&s, "fastest, 1 thread");
        assert_eq!(one.answer, "fast");
        assert!(one.evidence.contains("slow"), "{}", one.evidence);
        let two = find(&s, "fastest, 2 (≤ 2 cores)");
        assert!(two.answer.starts_with("tie: "), "{two:?}");
        let beyond = find(&s, "fastest, 8 (> 2 cores)");
        assert_eq!(beyond.answer, "slow");
        let avoid = find(&s, "avoid");
        assert_eq!(avoid.answer, "1 lock");
        assert!(avoid.evidence.contains("fast 0.0"), "{}", avoid.evidence);
        assert!(!avoid.evidence.contains("slow"));
    }

    /// A lock under which no thread acquired anything has no fairness (0/0)
    /// and no rate worth naming: beside a lock that did work, it is never
    /// the fairest, the fastest nor the one with the least CPU.
    #[test]
    fn no_acquisitions_win_nothing() {
        let reps = |ops: &[u64]| -> Vec<Rep> {
            (0..3)
                .map(|i| Rep {
                    rep: i,
                    ..Rep::counted(1.0, 2.0, ops.to_vec())
                })
                .collect()
        };
        let at = |lock: &str, ops: &[u64]| Point {
            reps: reps(ops),
            ..point(lock, 2, &[])
        };
        let pts = [at("idle", &[0, 0]), at("busy", &[600, 400])];
        let refs: Vec<&Point> = pts.iter().collect();
        let s = sections("spin", &meta(2), &refs);
        for q in ["fairest", "fastest", "least CPU"] {
            let l = find(&s, &format!("{q}, 2"));
            assert_eq!(l.answer, "busy", "{l:?}");
        }
        assert!(s[0].lines.iter().all(|l| !l.answer.contains("idle")));
        // Alone, it gets no answer at all.
        let alone = [at("idle", &[0, 0])];
        let refs: Vec<&Point> = alone.iter().collect();
        let s = sections("spin", &meta(2), &refs);
        assert!(s[0].lines.is_empty(), "{:#?}", s[0].lines);
    }

    #[test]
    fn no_collapse_says_none() {
        let pts = [point("a", 2, &[100.0, 101.0]), point("a", 4, &[90.0, 91.0])];
        let refs: Vec<&Point> = pts.iter().collect();
        let s = sections("spin", &meta(2), &refs);
        assert_eq!(find(&s, "avoid").answer, "none");
    }
}
