//! The verdict of `bench hash`: per update fraction, the best strategy at
//! the most threads measured (against its runner-up, paired over the
//! repetitions); for each strategy whose readers take no lock, where it
//! stops beating the best lock-based strategy as updates grow; and for
//! each of locklab's reader-writer locks measured beside a peer, whether
//! it is ahead or tied at every point ([`super::peers`]).
//!
//! "Best lock-based" is, at each update fraction, whichever strategy whose
//! readers take a lock (a spin lock, a reader-writer lock, a big-reader
//! lock, a per-bucket lock to count a reference, dashmap's sharded locks,
//! or a flat-combining mutex that runs their lookups) was fastest there: the envelope a lock-based design could reach.
//! That is the comparison seed 003 makes with its Figure 5 (translated
//! from the seed's text): "As long as update accesses are fewer than about
//! one third, RCU is the best choice overall", overall meaning against
//! every other primitive of the figure.

use super::report::{crossover, Crossover};
use crate::core::report::distinct;
use crate::core::results::Point;
use crate::core::verdict::{pick, times, Entrant, Line, Section};
use crate::studies::shared::hashtable::point::update_pct;
use serde_json::{json, Value};

/// Whether a strategy's readers take a lock.
pub fn lock_based(strategy: &str) -> bool {
    [
        "global-spin",
        "bucket-spin",
        "global-rw",
        "bucket-rw",
        "refcnt",
        "brlock",
        "dashmap",
        "combining",
    ]
    .iter()
    .any(|s| strategy == *s || strategy.starts_with(&format!("{s}(")))
}

/// The unsynchronized reference (read-only), not a strategy to choose.
pub const NONE: &str = "none";

/// The sections of a run's hash points, one per table shape.
pub fn sections(points: &[&Point]) -> Vec<Section> {
    let mut shapes: Vec<(Value, Vec<&Point>)> = Vec::new();
    for &p in points {
        let mut s = p.params.clone();
        if let Value::Object(m) = &mut s {
            m.remove("update_pct");
        }
        match shapes.iter_mut().find(|(k, _)| *k == s) {
            Some((_, g)) => g.push(p),
            None => shapes.push((s, vec![p])),
        }
    }
    shapes
        .into_iter()
        .map(|(shape, g)| section(&shape, &g))
        .collect()
}

fn title(shape: &Value, threads: u32) -> String {
    let n = |k: &str| shape.get(k).and_then(Value::as_u64);
    match (n("keys"), n("buckets")) {
        (Some(k), Some(b)) => format!("{k} keys in {b} buckets, at {threads} threads"),
        _ => format!("at {threads} threads"),
    }
}

fn section(shape: &Value, g: &[&Point]) -> Section {
    let threads = g.iter().map(|p| p.threads).max().unwrap_or(1);
    let mut pcts = distinct(g.iter().filter_map(|p| update_pct(p)));
    pcts.sort_unstable();
    let strategies = distinct(g.iter().map(|p| p.lock.as_str()));
    let at = |s: &str, pct: u32| {
        g.iter().copied().find(|p| {
            p.lock == s && p.threads == threads && update_pct(p) == Some(pct) && !p.reps.is_empty()
        })
    };
    let median = |p: &Point| p.stat(|r| r.throughput_ops_s).0;
    let mut lines = Vec::new();
    // The best per fraction.
    for &pct in &pcts {
        let entrants: Vec<Entrant> = strategies
            .iter()
            .filter(|s| **s != NONE)
            .filter_map(|s| {
                at(s, pct).map(|p| Entrant {
                    name: s.to_string(),
                    values: p.reps.iter().map(|r| r.throughput_ops_s).collect(),
                })
            })
            .collect();
        if let Some(p) = pick(&entrants, false) {
            lines.push(Line {
                group: format!("{pct} % updates"),
                question: "best".into(),
                answer: p.answer(),
                evidence: p.evidence("over"),
                json: json!({"update_pct": pct, "threads": threads, "pick": p.json()}),
            });
        }
    }
    // The envelope of the lock-based strategies, and each lockless one
    // against it.
    let envelope: Vec<(u32, &str, f64)> = pcts
        .iter()
        .filter_map(|&pct| {
            strategies
                .iter()
                .filter(|s| lock_based(s))
                .filter_map(|s| Some((*s, median(at(s, pct)?))))
                .filter(|(_, x)| x.is_finite() && *x > 0.0)
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(s, x)| (pct, s, x))
        })
        .collect();
    let crossings_from = lines.len();
    if !envelope.is_empty() {
        let names = distinct(envelope.iter().map(|e| e.1));
        // Each name with the fractions it was best at.
        let at: Vec<String> = names
            .iter()
            .map(|n| {
                let pcts: Vec<String> = envelope
                    .iter()
                    .filter(|e| e.1 == *n)
                    .map(|e| e.0.to_string())
                    .collect();
                format!("{n} at {} %", pcts.join(", "))
            })
            .collect();
        lines.push(Line {
            group: "lock-based".into(),
            question: "best".into(),
            answer: if names.len() == 1 {
                names[0].to_string()
            } else {
                "by fraction".into()
            },
            evidence: if names.len() == 1 {
                "at every fraction: the crossovers below are against it".into()
            } else {
                format!("{}: the crossovers below are against them", at.join("; "))
            },
            json: json!({"best_lock_based": envelope.iter().map(|(pct, s, _)| json!({"update_pct": pct, "strategy": s})).collect::<Vec<_>>()}),
        });
    }
    for s in strategies.iter().filter(|s| **s != NONE && !lock_based(s)) {
        let ratios: Vec<(u32, f64)> = envelope
            .iter()
            .filter_map(|&(pct, _, best)| Some((pct, median(at(s, pct)?) / best)))
            .collect();
        let c = crossover(&ratios);
        if c == Crossover::Unknown {
            continue;
        }
        let answer = match &c {
            Crossover::Ahead { .. } => "ahead throughout".to_string(),
            Crossover::Behind { .. } => "behind throughout".to_string(),
            Crossover::Crosses(x) if x.len() == 1 && !x[0].ahead => {
                format!("ahead below {:.0} %", x[0].pct)
            }
            Crossover::Crosses(x) if x.len() == 1 => format!("ahead above {:.0} %", x[0].pct),
            Crossover::Crosses(x) => format!("crosses {} times", x.len()),
            Crossover::Unknown => unreachable!("skipped above"),
        };
        let evidence = format!(
            "{} at {} %",
            ratios
                .iter()
                .map(|(_, r)| times(*r))
                .collect::<Vec<_>>()
                .join(", "),
            ratios
                .iter()
                .map(|(pct, _)| pct.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
        lines.push(Line {
            group: "crossover".into(),
            question: s.to_string(),
            answer,
            evidence,
            json: json!({
                "strategy": s, "crossover": c.verdict(),
                "crossings_pct": match &c {
                    Crossover::Crosses(x) => x.iter().map(|x| x.pct).collect::<Vec<_>>(),
                    _ => Vec::new(),
                },
                "ratios": ratios.iter().map(|(pct, r)| json!({"update_pct": pct, "ratio": r})).collect::<Vec<_>>(),
                "best_lock_based": envelope.iter().map(|(pct, s, _)| json!({"update_pct": pct, "strategy": s})).collect::<Vec<_>>(),
            }),
        });
    }
    // The best lock-based line only introduces crossovers.
    if lines.len() == crossings_from + 1 {
        lines.truncate(crossings_from);
    }
    // locklab's reader-writer locks against the peers, over every point.
    lines.extend(super::peers::lines(&super::peers::versus(g)));
    Section {
        study: crate::studies::shared::hashtable::BENCH.into(),
        title: title(shape, threads),
        lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::results::Rep;

    fn point(s: &str, pct: u32, rate: f64) -> Point {
        Point {
            bench: "hash".into(),
            lock: s.into(),
            threads: 4,
            params: json!({"keys": 1024, "buckets": 1024, "update_pct": pct}),
            reps: (0..3)
                .map(|i| Rep::one_thread(i, 1.0, 1.0, (rate * (1.0 + 0.01 * i as f64)) as u64))
                .collect(),
        }
    }

    #[test]
    fn rcu_ahead_of_the_lock_envelope_until_it_falls_behind() {
        let pts = [
            point("bucket-rw(rw-fair)", 0, 100.0),
            point("bucket-spin", 0, 80.0),
            point("rcu", 0, 400.0),
            point("bucket-rw(rw-fair)", 10, 90.0),
            point("bucket-spin", 10, 95.0),
            point("rcu", 10, 190.0),
            point("bucket-rw(rw-fair)", 50, 60.0),
            point("bucket-spin", 50, 90.0),
            point("rcu", 50, 45.0),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let s = sections(&refs);
        assert_eq!(s.len(), 1);
        let best0 = &s[0].lines[0];
        assert_eq!(
            (best0.group.as_str(), best0.answer.as_str()),
            ("0 % updates", "rcu")
        );
        let best50 = &s[0].lines[2];
        assert_eq!(best50.answer, "bucket-spin");
        let rcu = s[0].lines.iter().find(|l| l.question == "rcu").unwrap();
        // 190/95 = 2 at 10 %, 45/90 = 0.5 at 50 %: through 1 two thirds
        // of the way, at 10 + 40 × 2/3 %.
        assert_eq!(rcu.answer, "ahead below 37 %");
        let at10 = rcu.json["ratios"][1]["ratio"].as_f64().unwrap();
        assert!((at10 - 2.0).abs() < 0.02, "{}", rcu.evidence);
        assert!(
            rcu.evidence.ends_with("× at 0, 10, 50 %"),
            "{}",
            rcu.evidence
        );
        let best = s[0].lines.iter().find(|l| l.group == "lock-based").unwrap();
        assert!(best
            .evidence
            .contains("bucket-rw(rw-fair) at 0 %; bucket-spin at 10, 50 %"));
    }

    #[test]
    fn lock_based_names() {
        assert!(lock_based("bucket-rw(rwsem)"));
        assert!(lock_based("global-spin"));
        assert!(lock_based("combining"));
        assert!(!lock_based("rcu-qsbr"));
        assert!(!lock_based("seqlock"));
    }
}
