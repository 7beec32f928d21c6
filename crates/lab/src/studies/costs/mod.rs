//! `bench costs`: seed 003's Table 1 on this machine — the cost of basic
//! operations (an instruction, a clock cycle, an L2 hit, atomic
//! increments, main memory, a CPU-local lock, a cache transfer; see
//! [`ops`]) — and beside them the cost of one uncontended operation of
//! each synchronization primitive (spin, reader-writer and big-reader
//! locks, a seqlock read, an RCU read-side section of each flavour,
//! `synchronize`, `call`; see [`prims`]), all in one run, repetitions
//! interleaved.
//!
//! The seed's table (translated): "Table 1. Time required for common
//! operations on a 700MHz Pentium III", in nanoseconds: instruction 0.7,
//! clock cycle 1.4, L2 cache hit 12.9, atomic increment 58.2, cmpxchg
//! atomic increment 107.3, main memory 162.4, CPU-local lock 163.7, cache
//! transfer 170.4–360.9. The report gives each measured cost in ns and in
//! this machine's clocks (the measured clock-cycle row), beside the
//! seed's, so that what changed in relative terms shows.

pub mod ops;
pub mod prims;

use crate::core::args::{parse_reps, parse_secs};
use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::results::{Point, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::core::sweep::{Group, RepRun};
use crate::core::verdict::{pick, Entrant, Line, Section};
use clap::Args;
use ops::OpFn;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The name its points are stored under.
pub const BENCH: &str = "costs";

/// One row: its name, what is timed, seed 003's Table 1 figure (ns on the
/// 700 MHz Pentium III; a range for the cache transfer) where the seed has
/// one, and the function.
pub struct Row {
    /// The row's name (stored as the point's lock).
    pub name: &'static str,
    /// What one operation is.
    pub what: &'static str,
    /// Seed 003's figure, ns (low, high).
    pub seed_ns: Option<(f64, f64)>,
    /// One repetition.
    pub run: OpFn,
}

/// The rows of seed 003's Table 1 this machine can measure.
pub fn table1() -> Vec<Row> {
    let mut v = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        v.push(Row {
            name: "instruction",
            what: "an independent integer add",
            seed_ns: Some((0.7, 0.7)),
            run: ops::instruction,
        });
        v.push(Row {
            name: "clock cycle",
            what: "a dependent integer add",
            seed_ns: Some((1.4, 1.4)),
            run: ops::clock_cycle,
        });
    }
    v.extend([
        Row {
            name: "L2 hit",
            what: "a dependent load, ring of 4 × L1d",
            seed_ns: Some((12.9, 12.9)),
            run: ops::l2_hit,
        },
        Row {
            name: "atomic increment",
            what: "lock xadd, line cached",
            seed_ns: Some((58.2, 58.2)),
            run: ops::atomic_increment,
        },
        Row {
            name: "cmpxchg increment",
            what: "load + lock cmpxchg, line cached",
            seed_ns: Some((107.3, 107.3)),
            run: ops::cmpxchg_increment,
        },
        Row {
            name: "main memory",
            what: "a dependent load, ring of 4 × LLC",
            seed_ns: Some((162.4, 162.4)),
            run: ops::main_memory,
        },
        Row {
            name: "CPU-local lock",
            what: "tas acquire+release, line cached",
            seed_ns: Some((163.7, 163.7)),
            run: prims::tas,
        },
        Row {
            name: "cache transfer",
            what: "half a line's round trip, 2 CPUs",
            seed_ns: Some((170.4, 360.9)),
            run: ops::cache_transfer,
        },
    ]);
    v
}

/// Every row: Table 1's, then the primitives' (the tas lock is Table 1's
/// CPU-local lock and is not measured twice).
pub fn rows() -> Vec<Row> {
    let mut v = table1();
    v.extend(
        prims::PRIMITIVES
            .iter()
            .filter(|(name, _, _)| *name != "spin tas")
            .map(|&(name, what, run)| Row {
                name,
                what,
                seed_ns: None,
                run,
            }),
    );
    v
}

/// Parameters of `bench costs`.
#[derive(Debug, Args)]
pub struct CostsArgs {
    /// Target seconds per repetition of each row.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.1")]
    pub secs: f64,
    /// Repetitions per row (interleaved across the rows).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}

impl crate::core::study::RunCommand for CostsArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Costs);

    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        command(ctx, self)
    }
}

/// Runs every row, repetitions interleaved. Returns `Ok(false)` if
/// interrupted.
pub fn run(
    secs: f64,
    reps: u32,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    let rows = rows();
    let group = Group {
        bench: BENCH,
        threads: 1,
        params: json!({ "secs": secs }),
        reps,
        contenders: rows
            .iter()
            .map(|r| {
                let run = r.run;
                (
                    r.name.to_string(),
                    Box::new(move || run(secs)) as RepRun<'_>,
                )
            })
            .collect(),
    };
    group.run(
        progress,
        |name, rep| format!("costs: {name}, rep {rep}"),
        |name, e| LabError::failed(format!("bench costs: {name}: {e}")),
        sink,
    )
}

/// `bench costs`: measures and stores; returns the exit code.
pub fn command(ctx: &Ctx, a: &CostsArgs) -> Result<Outcome> {
    let rows = rows();
    let params = json!({
        "costs": { "secs": a.secs },
        "reps": a.reps,
        "l1d_bytes": ops::l1_bytes(),
        "llc_bytes": ops::llc_bytes(),
        "l2_ring_bytes": ops::l2_ring_bytes(),
        "memory_ring_bytes": ops::memory_ring_bytes(),
    });
    let progress = Progress::new(rows.len() as u64 * u64::from(a.reps), ctx.progress_quiet());
    let r = stored_run(ctx, "bench costs", params, &progress, |sink| {
        run(a.secs, a.reps, &progress, sink)
    });
    progress.finish();
    r
}

fn row_of(name: &str) -> Option<Row> {
    rows().into_iter().find(|r| r.name == name)
}

/// The median ns of the clock-cycle row, if measured.
fn clock_ns(points: &[&Point]) -> Option<f64> {
    points
        .iter()
        .find(|p| p.lock == "clock cycle")
        .map(|p| p.stat(|r| r.ns_per_op).0)
        .filter(|x| x.is_finite() && *x > 0.0)
}

/// Seed 003's clock: 700 MHz.
const SEED_CLOCK_NS: f64 = 1.0 / 0.7;

fn ns(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x >= 1e6 {
        format!("{:.3} ms", x / 1e6)
    } else if x >= 1e4 {
        format!("{:.1} µs", x / 1e3)
    } else {
        crate::core::stats::sig3(x)
    }
}

/// The table: per row its cost (median, min–max), in this machine's
/// clocks, and the seed's figure in ns and in its clocks.
pub fn table(out: &mut String, points: &[&Point]) {
    let clock = clock_ns(points);
    let reps = crate::core::report::rep_counts(points);
    let _ = writeln!(
        out,
        "costs: one operation, one thread, uncontended, ns (median, min–max of {reps}); \
         clocks: in this machine's measured clock cycle; seed 003: Table 1, 700 MHz Pentium III"
    );
    let nw = points
        .iter()
        .map(|p| p.lock.chars().count())
        .max()
        .unwrap_or(4)
        .max(9);
    let ww = points
        .iter()
        .filter_map(|p| row_of(&p.lock).map(|r| r.what.chars().count()))
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "  {:<nw$}  {:<ww$}  {:>9}  {:>19}  {:>8}  {:>12}  {:>12}",
        "operation", "what", "ns", "min–max", "clocks", "seed 003 ns", "seed clocks"
    );
    let mut table1_done = false;
    for p in points {
        let row = row_of(&p.lock);
        if !table1_done && row.as_ref().is_some_and(|r| r.seed_ns.is_none()) {
            table1_done = true;
            let _ = writeln!(out, "  {}", "·".repeat(nw + ww + 2));
        }
        let (med, lo, hi) = p.stat(|r| r.ns_per_op);
        let spread = crate::core::report::spread(p.reps.len(), &ns(lo), &ns(hi));
        let clocks = clock.map_or("–".to_string(), |c| crate::core::stats::sig3(med / c));
        let (seed, seed_clocks) = match row.as_ref().and_then(|r| r.seed_ns) {
            Some((a, b)) if a == b => (
                crate::core::stats::sig3(a),
                crate::core::stats::sig3(a / SEED_CLOCK_NS),
            ),
            Some((a, b)) => (
                format!(
                    "{}–{}",
                    crate::core::stats::sig3(a),
                    crate::core::stats::sig3(b)
                ),
                format!(
                    "{}–{}",
                    crate::core::stats::sig3(a / SEED_CLOCK_NS),
                    crate::core::stats::sig3(b / SEED_CLOCK_NS)
                ),
            ),
            None => ("–".into(), "–".into()),
        };
        let _ = writeln!(
            out,
            "  {:<nw$}  {:<ww$}  {:>9}  {:>19}  {:>8}  {:>12}  {:>12}",
            p.lock,
            row.as_ref().map_or("", |r| r.what),
            ns(med),
            spread,
            clocks,
            seed,
            seed_clocks
        );
    }
    let _ = writeln!(
        out,
        "  –: the seed has no such row. Main memory's ring also misses the TLB (4 KiB pages)."
    );
}

/// The read sides a read-mostly design chooses between.
const READ_SIDES: [&str; 6] = [
    "rwlock read",
    "brlock read",
    "seqlock read",
    "rcu read",
    "rcu read fenced",
    "rcu-qsbr read",
];

fn ns_values(p: &Point) -> Vec<f64> {
    p.reps.iter().map(|r| r.ns_per_op).collect()
}

/// The verdict: the cheapest read side against its runner-up and against
/// a reader-writer lock's; an atomic increment in clocks here and on the
/// seed's machine.
pub fn verdict_lines(points: &[&Point]) -> Vec<Line> {
    let at = |name: &str| points.iter().find(|p| p.lock == name).copied();
    let mut lines = Vec::new();
    let entrants: Vec<Entrant> = READ_SIDES
        .iter()
        .filter_map(|n| at(n))
        .map(|p| Entrant {
            name: p.lock.clone(),
            values: ns_values(p),
        })
        .collect();
    if let Some(pk) = pick(&entrants, true) {
        let versus = match (at(&pk.winner), at("rwlock read")) {
            (Some(w), Some(rw)) if pk.winner != "rwlock read" => {
                let r = crate::core::stats::paired_ratio(&ns_values(w), &ns_values(rw));
                format!("; rwlock read costs {}", r.text())
            }
            _ => String::new(),
        };
        // Below a few loop turns the figure is mostly the loop's.
        let floor = at("empty loop").map_or(String::new(), |p| {
            format!(
                "; the timing loop alone: {} ns",
                ns(p.stat(|r| r.ns_per_op).0)
            )
        });
        let versus = format!("{versus}{floor}");
        lines.push(Line {
            group: "read side".into(),
            question: "cheapest".into(),
            answer: pk.answer(),
            evidence: format!("{}{versus}", pk.evidence("under")),
            json: json!({ "pick": pk.json() }),
        });
    }
    let clock = clock_ns(points);
    for name in ["atomic increment", "main memory", "cache transfer"] {
        let (Some(p), Some(c)) = (at(name), clock) else {
            continue;
        };
        let Some((seed, _)) = row_of(name).and_then(|r| r.seed_ns) else {
            continue;
        };
        let here = p.stat(|r| r.ns_per_op).0 / c;
        lines.push(Line {
            group: "vs seed 003".into(),
            question: name.into(),
            answer: format!("{} clocks", crate::core::stats::sig3(here)),
            evidence: format!(
                "seed 003's Pentium III: {} clocks ({} ns at 700 MHz)",
                crate::core::stats::sig3(seed / SEED_CLOCK_NS),
                crate::core::stats::sig3(seed)
            ),
            json: json!({ "clocks": here, "seed_clocks": seed / SEED_CLOCK_NS }),
        });
    }
    lines
}

/// The study's reports.
pub struct Costs;

impl Study for Costs {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        out.push('\n');
        table(out, points);
    }

    fn point_json(&self, _meta: &RunMeta, p: &Point, of_study: &[&Point], _all: &[Point]) -> Value {
        let row = row_of(&p.lock);
        let clock = clock_ns(of_study);
        let med = p.stat(|r| r.ns_per_op).0;
        json!({
            "what": row.as_ref().map(|r| r.what),
            "ns": med,
            "clocks": clock.map(|c| med / c),
            "seed003_ns": row.as_ref().and_then(|r| r.seed_ns).map(|(a, b)| json!([a, b])),
        })
    }

    fn verdict(&self, _meta: &RunMeta, points: &[&Point], _all: &[Point]) -> Vec<Section> {
        let lines = verdict_lines(points);
        if lines.is_empty() {
            return Vec::new();
        }
        vec![Section {
            study: BENCH.into(),
            title: "one operation, uncontended".into(),
            lines,
        }]
    }
}
