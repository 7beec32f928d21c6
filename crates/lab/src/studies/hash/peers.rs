//! locklab's reader-writer locks against the peers (std, parking_lot,
//! pthread) in `bench hash`: where a run has `global-rw(L)` (or
//! `bucket-rw(L)`) for one of locklab's locks `L` and for a peer `P`, the
//! throughput of `L` over that of `P` at every update fraction and thread
//! count, with its interval.
//!
//! The ratio is paired by repetition ([`crate::core::stats::paired_ratio`]):
//! the sweep interleaves the contenders' repetitions, so repetition *i* of
//! `L` and of `P` ran one after the other on the same machine state. A
//! point is **ahead** or **behind** when the interval lies wholly on one
//! side of 1 and the ratio is more than [`NEGLIGIBLE`] from it
//! ([`decisive`]), **tied** otherwise.

use std::fmt::Write as _;

use serde_json::{json, Value};

use crate::core::registry::rw_all;
use crate::core::results::Point;
use crate::core::stats::{paired_ratio, sig3, Ratio};
use crate::core::verdict::{decisive, Line, NEGLIGIBLE};
use crate::studies::shared::hashtable::point::update_pct;

/// Which side of a peer a lock is at one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Separated above 1 by more than [`NEGLIGIBLE`].
    Ahead,
    /// Not separated.
    Tied,
    /// Separated below 1 by more than [`NEGLIGIBLE`].
    Behind,
}

impl Side {
    /// The side that `r` (lock over peer) puts the lock on.
    pub fn of(r: &Ratio) -> Side {
        if decisive(r) {
            Side::Ahead
        } else if decisive(&r.inverse()) {
            Side::Behind
        } else {
            Side::Tied
        }
    }

    fn mark(self) -> char {
        match self {
            Side::Ahead => '+',
            Side::Tied => '=',
            Side::Behind => '-',
        }
    }

    fn word(self) -> &'static str {
        match self {
            Side::Ahead => "ahead",
            Side::Tied => "tied",
            Side::Behind => "behind",
        }
    }
}

/// One of locklab's locks against one peer in one strategy family.
#[derive(Debug, Clone)]
pub struct Versus {
    /// The strategy measured with locklab's lock: `global-rw(rwsem)`.
    pub lock: String,
    /// The same strategy with the peer: `global-rw(std-rw)`.
    pub peer: String,
    /// `(update %, threads, lock / peer)` at every point both have, by
    /// fraction and then threads.
    pub cells: Vec<(u32, u32, Ratio)>,
}

impl Versus {
    /// The points where the lock is behind.
    pub fn behind(&self) -> Vec<&(u32, u32, Ratio)> {
        self.cells
            .iter()
            .filter(|c| Side::of(&c.2) == Side::Behind)
            .collect()
    }
}

/// `global-rw(rwsem)` as (`global-rw`, `rwsem`).
fn split(strategy: &str) -> Option<(&str, &str)> {
    let (family, rest) = strategy.split_once('(')?;
    Some((family, rest.strip_suffix(')')?))
}

/// Whether the registry has `name` as a reader-writer lock from outside
/// locklab (`None`: no such reader-writer lock).
fn is_peer(name: &str) -> Option<bool> {
    rw_all()
        .iter()
        .find(|e| e.info.name == name)
        .map(|e| e.peer)
}

/// Every (locklab lock, peer) pair of one table shape's points, in the
/// order the strategies were first stored.
pub fn versus(points: &[&Point]) -> Vec<Versus> {
    let strategies = crate::core::report::distinct(points.iter().map(|p| p.lock.as_str()));
    let mut out = Vec::new();
    for &s in &strategies {
        let Some((family, lock)) = split(s) else {
            continue;
        };
        if is_peer(lock) != Some(false) {
            continue;
        }
        for &q in &strategies {
            let Some((f, peer)) = split(q) else { continue };
            if f != family || is_peer(peer) != Some(true) {
                continue;
            }
            out.push(Versus {
                lock: s.to_string(),
                peer: q.to_string(),
                cells: cells(points, s, q),
            });
        }
    }
    out.retain(|v| !v.cells.is_empty());
    out
}

fn cells(points: &[&Point], lock: &str, peer: &str) -> Vec<(u32, u32, Ratio)> {
    let tput = |p: &Point| -> Vec<f64> { p.reps.iter().map(|r| r.throughput_ops_s).collect() };
    let mut v: Vec<(u32, u32, Ratio)> = points
        .iter()
        .filter(|p| p.lock == lock && !p.reps.is_empty())
        .filter_map(|a| {
            let pct = update_pct(a)?;
            let b = points.iter().find(|b| {
                b.lock == peer
                    && b.threads == a.threads
                    && update_pct(b) == Some(pct)
                    && !b.reps.is_empty()
            })?;
            Some((pct, a.threads, paired_ratio(&tput(b), &tput(a))))
        })
        .filter(|c| c.2.ratio.is_finite())
        .collect();
    v.sort_by_key(|c| (c.0, c.1));
    v
}

/// Two decimals where that keeps three figures or fewer (0.10 to 99.99),
/// else [`sig3`]: a table cell's number.
fn two(x: f64) -> String {
    if (0.1..100.0).contains(&x.abs()) {
        format!("{x:.2}")
    } else {
        sig3(x)
    }
}

/// `1.02 (0.98–1.05) =`: the ratio, its interval and its side.
fn cell(r: &Ratio) -> String {
    let side = Side::of(r).mark();
    if r.spread_known() {
        format!("{} ({}–{}) {side}", two(r.ratio), two(r.lo), two(r.hi))
    } else {
        format!("{} (n={}) {side}", two(r.ratio), r.n)
    }
}

/// The tables of one shape's pairs: per pair, a row per update fraction
/// and a column per thread count.
pub fn text(out: &mut String, vs: &[Versus]) {
    if vs.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "\n  against the peers: throughput of locklab's lock over the peer's in the same run, the\n  \
         geometric mean of the per-repetition ratios and its {:.0} % interval; + ahead, - behind,\n  \
         = tied (the interval holds 1, or the ratio is within {:.0} % of it)",
        crate::core::stats::LEVEL * 100.0,
        NEGLIGIBLE * 100.0
    );
    for v in vs {
        let mut threads: Vec<u32> = v.cells.iter().map(|c| c.1).collect();
        threads.sort_unstable();
        threads.dedup();
        let mut pcts: Vec<u32> = v.cells.iter().map(|c| c.0).collect();
        pcts.dedup();
        let shown: Vec<String> = v.cells.iter().map(|c| cell(&c.2)).collect();
        let w = shown.iter().map(|s| s.chars().count()).max().unwrap_or(0) + 1;
        let _ = writeln!(out, "\n  {} ÷ {}", v.lock, v.peer);
        let mut head = format!("  {:>5}", "upd%");
        for t in &threads {
            let _ = write!(head, "{:>w$}", format!("{t} thr"));
        }
        let _ = writeln!(out, "{head}");
        for &pct in &pcts {
            let mut line = format!("  {pct:>5}");
            for &t in &threads {
                let c = v
                    .cells
                    .iter()
                    .find(|c| c.0 == pct && c.1 == t)
                    .map_or_else(|| "–".to_string(), |c| cell(&c.2));
                let _ = write!(line, "{c:>w$}");
            }
            let _ = writeln!(out, "{}", line.trim_end());
        }
    }
}

/// The pairs as JSON: per pair, `lock`, `peer` and per point `update_pct`,
/// `threads`, `side` and the ratio ([`Ratio::json`]).
pub fn json(vs: &[Versus]) -> Value {
    Value::from(
        vs.iter()
            .map(|v| {
                json!({
                    "lock": v.lock,
                    "peer": v.peer,
                    "points": v.cells.iter().map(|(pct, t, r)| {
                        let mut j = r.json();
                        j["update_pct"] = (*pct).into();
                        j["threads"] = (*t).into();
                        j["side"] = Side::of(r).word().into();
                        j
                    }).collect::<Vec<_>>(),
                })
            })
            .collect::<Vec<_>>(),
    )
}

/// One verdict line per pair: ahead or tied everywhere, or the points
/// where it is behind.
pub fn lines(vs: &[Versus]) -> Vec<Line> {
    vs.iter()
        .map(|v| {
            let n = v.cells.len();
            let count = |s: Side| v.cells.iter().filter(|c| Side::of(&c.2) == s).count();
            let behind = v.behind();
            let answer = if behind.is_empty() {
                "ahead or tied".to_string()
            } else {
                format!("behind at {} of {n}", behind.len())
            };
            let evidence = if behind.is_empty() {
                format!(
                    "ahead at {} and tied at {} of {n} points",
                    count(Side::Ahead),
                    count(Side::Tied)
                )
            } else {
                let at: Vec<String> = behind
                    .iter()
                    .map(|(pct, t, r)| format!("{}× at {pct} %, {t} thr", sig3(r.ratio)))
                    .collect();
                format!(
                    "{}; ahead at {}, tied at {}",
                    at.join("; "),
                    count(Side::Ahead),
                    count(Side::Tied)
                )
            };
            let (family, lock) = split(&v.lock).unwrap_or(("", &v.lock));
            let peer = split(&v.peer).map_or(v.peer.as_str(), |p| p.1);
            Line {
                group: format!("{family} vs peers"),
                question: format!("{lock} ÷ {peer}"),
                answer,
                evidence,
                json: json!({
                    "lock": v.lock, "peer": v.peer, "points": n,
                    "ahead": count(Side::Ahead), "tied": count(Side::Tied),
                    "behind": behind.len(),
                }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point whose repetitions have throughputs `tputs`.
    fn point(s: &str, pct: u32, threads: u32, tputs: &[f64]) -> Point {
        Point::of_throughputs(
            "hash",
            s,
            threads,
            json!({"keys": 1024, "buckets": 1024, "update_pct": pct}),
            tputs,
        )
    }

    /// Known answers: rwsem exactly 1.5× std-rw in every repetition (a
    /// shared drift across repetitions cancels), exactly 0.5× parking_lot,
    /// and level with pthread within noise.
    fn run() -> Vec<Point> {
        let base = [100.0, 80.0, 120.0, 90.0, 110.0];
        let scaled = |k: f64| base.iter().map(|x| x * k).collect::<Vec<_>>();
        let noisy = [101.0, 79.0, 119.0, 91.0, 109.0];
        let mut v = Vec::new();
        for pct in [0, 10] {
            for t in [1, 4] {
                v.push(point("global-rw(rwsem)", pct, t, &base));
                v.push(point("global-rw(std-rw)", pct, t, &scaled(1.0 / 1.5)));
                v.push(point("global-rw(parking_lot-rw)", pct, t, &scaled(2.0)));
                v.push(point("global-rw(pthread-rw)", pct, t, &noisy));
                // Other families and strategies pair with nothing here.
                v.push(point("bucket-rw(rwsem)", pct, t, &base));
                v.push(point("seqlock", pct, t, &base));
            }
        }
        v
    }

    #[test]
    fn pairs_each_own_lock_with_each_peer_of_its_family() {
        let pts = run();
        let refs: Vec<&Point> = pts.iter().collect();
        let vs = versus(&refs);
        let names: Vec<(&str, &str)> = vs
            .iter()
            .map(|v| (v.lock.as_str(), v.peer.as_str()))
            .collect();
        assert_eq!(
            names,
            [
                ("global-rw(rwsem)", "global-rw(std-rw)"),
                ("global-rw(rwsem)", "global-rw(parking_lot-rw)"),
                ("global-rw(rwsem)", "global-rw(pthread-rw)"),
            ]
        );
        let sides = |v: &Versus| v.cells.iter().map(|c| Side::of(&c.2)).collect::<Vec<_>>();
        for c in &vs[0].cells {
            assert!((c.2.ratio - 1.5).abs() < 1e-9, "{c:?}");
        }
        assert_eq!(sides(&vs[0]), [Side::Ahead; 4]);
        for c in &vs[1].cells {
            assert!((c.2.ratio - 0.5).abs() < 1e-9, "{c:?}");
        }
        assert_eq!(sides(&vs[1]), [Side::Behind; 4]);
        assert_eq!(sides(&vs[2]), [Side::Tied; 4]);
        assert_eq!(
            vs[0].cells.iter().map(|c| (c.0, c.1)).collect::<Vec<_>>(),
            [(0, 1), (0, 4), (10, 1), (10, 4)]
        );
    }

    #[test]
    fn table_json_and_verdict_say_the_same() {
        let pts = run();
        let refs: Vec<&Point> = pts.iter().collect();
        let vs = versus(&refs);
        let mut out = String::new();
        text(&mut out, &vs);
        assert!(
            out.contains("global-rw(rwsem) ÷ global-rw(std-rw)"),
            "{out}"
        );
        assert!(out.contains("1.50 (1.50–1.50) +"), "{out}");
        assert!(out.contains("0.50 (0.50–0.50) -"), "{out}");
        let j = json(&vs);
        assert_eq!(j[1]["peer"], "global-rw(parking_lot-rw)");
        assert_eq!(j[1]["points"][3]["side"], "behind");
        assert_eq!(j[1]["points"][3]["update_pct"], 10);
        assert_eq!(j[1]["points"][3]["threads"], 4);
        let l = lines(&vs);
        assert_eq!(l[0].group, "global-rw vs peers");
        assert_eq!(l[0].question, "rwsem ÷ std-rw");
        assert_eq!(l[0].answer, "ahead or tied");
        assert_eq!(l[1].answer, "behind at 4 of 4");
        assert!(
            l[1].evidence.contains("0.500× at 10 %, 4 thr"),
            "{}",
            l[1].evidence
        );
        assert_eq!(l[2].answer, "ahead or tied");
        assert_eq!(l[2].json["tied"], 4);
    }

    #[test]
    fn one_repetition_is_never_a_side() {
        let pts = [
            point("bucket-rw(rwsem)", 0, 2, &[200.0]),
            point("bucket-rw(std-rw)", 0, 2, &[100.0]),
        ];
        let refs: Vec<&Point> = pts.iter().collect();
        let vs = versus(&refs);
        assert_eq!(vs.len(), 1);
        assert_eq!(Side::of(&vs[0].cells[0].2), Side::Tied);
        let mut out = String::new();
        text(&mut out, &vs);
        assert!(out.contains("2.00 (n=1) ="), "{out}");
    }
}
