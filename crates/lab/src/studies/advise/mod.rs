//! `locklab advise`: which lock for a stated workload (or a profiled
//! program's worst lock), on this machine. It measures the few points that
//! decide it (the contention benchmark of [`crate::studies::shared::contention`] at the
//! workload's threads, a short list of candidates, repetitions
//! interleaved), stores them as a run of kind `advise`, and answers from
//! them (`decide`): the fastest, the runner-up, the ratio with its
//! interval, CPU per acquisition; with `--cores-model`, the queueing
//! model's prediction beyond this machine's cores; with `--vm`, the
//! lock-holder-preemption simulator's ([`sim`]); with `--read-pct`, the
//! read-mostly mechanisms of [`crate::studies::hash`] over one table at
//! the workload's update fraction ([`READ_MOSTLY`]). Every claim is
//! labelled measured, model or simulated.

pub mod args;
pub mod decide;
pub mod machine_sim;
pub mod sim;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::registry::{self, Entry};
use crate::core::report::{cpu_ns_per_op, fmt_ns};
use crate::core::results::{Point, RunMeta};
use crate::core::run::{resolve, stored_run};
use crate::core::store::Store;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::core::verdict::{Line, Section};
use crate::studies::shared::contention::{runner::SpinConfig, workload::DelayDist, SpinPlan};
use crate::studies::shared::hashtable::{HashConfig, HashPlan};
use crate::studies::shared::lock_profile::{spin_workload, Counts};
use args::AdviseArgs;
use decide::{decide, rate, Advice, Workload};
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The name its points are stored under, and its run kind.
pub const BENCH: &str = "advise";

/// The candidates unless `--locks` names others: one lock per design a
/// program would choose between. ttas: the simplest spin lock that does
/// not hammer the line; ticket: the simplest fair one; mcs and qspin: the
/// scalable FIFO queue locks (qspin is Linux's); mutex: locklab's hybrid
/// that spins while the lock moves, then sleeps; futex3: the minimal
/// sleeping lock; spin-park(ttas): spin a while, then sleep; pthread: the
/// C library's, what a program already has.
pub const DEFAULT_LOCKS: [&str; 8] = [
    "ttas",
    "ticket",
    "mcs",
    "qspin",
    "mutex",
    "futex3",
    "spin-park(ttas)",
    "pthread",
];

/// The locks that fit a workload beyond what [`DEFAULT_LOCKS`] covers,
/// each with why: measured beside the defaults when `--locks` is not
/// given. More threads than cores, or a VM, where a waiter (or the holder)
/// can be off its CPU: the Malthusian lock, which keeps surplus waiters
/// asleep, and MCS-TP, which passes over a waiter that looks preempted.
/// More than one NUMA node (the machine's, or `LOCKLAB_TOPOLOGY`'s): the
/// NUMA-aware locks, which keep hand-overs within a node.
pub fn fitting(threads: u32, cores: usize, vm: bool, nodes: usize) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if vm || threads as usize > cores {
        let when = if vm {
            "in a VM a waiter can lose its virtual CPU".to_string()
        } else {
            format!("{threads} threads on {cores} cores leave some waiters off a CPU")
        };
        v.push((
            "malthusian",
            format!("{when}: it keeps only a few waiters spinning and the rest asleep"),
        ));
        v.push((
            "mcs-tp",
            format!("{when}: it passes over a waiter that looks preempted"),
        ));
    }
    if nodes > 1 {
        for name in ["c-bo-mcs", "hmcs", "cna"] {
            v.push((
                name,
                format!("{nodes} NUMA nodes: it keeps hand-overs within a node, up to a bound"),
            ));
        }
    }
    v
}

/// The read-mostly mechanisms `--read-pct` measures, all over one hash
/// table of `bench hash` at the workload's update fraction: one exclusive
/// spin lock (what a program without a read-mostly mechanism has; see
/// [`decide::EXCLUSIVE`]), locklab's fair reader-writer lock, the
/// big-reader lock, a seqlock and RCU.
pub const READ_MOSTLY: &str = "global-spin,global-rw(rw-fair),brlock,seqlock,rcu";

/// The read-mostly table: as `bench hash`'s default, 1024 keys in 1024
/// buckets.
const READ_MOSTLY_KEYS: u64 = 1024;

const DEFAULT_CS_NS: u64 = 100;
const DEFAULT_DELAY_NS: u64 = 1000;

/// The pattern of the most waited-on lock of a stored `profile` run:
/// threads, critical section and delay, and where it came from.
fn from_profile(
    db: &crate::core::store::Location,
    run: crate::core::args::RunRef,
) -> Result<(u32, u64, u64, String)> {
    let store = Store::open_read_only(db)?;
    let id = resolve(&store, run)?;
    let (meta, points) = store.load(id)?;
    if meta.kind != crate::studies::shared::lock_profile::BENCH {
        return Err(LabError::input(format!(
            "--profile {id}: run {id} is a `{}` run, not a `locklab profile` run (`locklab runs` lists them)",
            meta.kind
        )));
    }
    let mut worst: Option<(f64, (u32, u64, u64), String)> = None;
    for p in points
        .iter()
        .filter(|p| p.bench == crate::studies::shared::lock_profile::BENCH)
    {
        let Some(c) = p.reps.first().and_then(|r| r.metrics_of::<Counts>()) else {
            continue;
        };
        let Some(pattern) = spin_workload(&c) else {
            continue;
        };
        let elapsed = p
            .params
            .pointer("/process/elapsed_ns")
            .and_then(Value::as_f64)
            .unwrap_or(0.0);
        let share = c.wait_ns() as f64 / (elapsed * f64::from(c.threads.max(1))).max(1.0);
        if worst.as_ref().is_none_or(|w| share > w.0) {
            let object = p
                .params
                .get("object")
                .and_then(Value::as_str)
                .unwrap_or("?");
            worst = Some((share, pattern, format!("profile run {id}: {object}")));
        }
    }
    match worst {
        Some((_, (t, cs, d), src)) => Ok((t, cs, d, src)),
        None => Err(LabError::input(format!(
            "--profile {id}: no lock of run {id} was contended, so it has no pattern to measure; \
             state the workload with --threads, --cs-ns and --delay-ns"
        ))),
    }
}

/// The candidates of `--locks`, or [`DEFAULT_LOCKS`] and the locks that
/// fit the workload (see [`fitting`]).
fn candidates(list: Option<&str>, fit: &[(&str, String)]) -> Result<Vec<&'static Entry>> {
    match list {
        Some(l) => crate::core::locks::parse_list(l),
        None => Ok(DEFAULT_LOCKS
            .iter()
            .copied()
            .chain(fit.iter().map(|(n, _)| *n))
            .filter_map(|n| crate::core::locks::find(n).ok())
            .collect()),
    }
}

/// `locklab advise`: measures, stores and prints the advice; returns the
/// exit code.
pub fn command(ctx: &Ctx, a: &AdviseArgs) -> Result<Outcome> {
    let (threads, cs_ns, delay_ns, source) = match a.profile {
        Some(run) => {
            let (t, cs, d, src) = from_profile(&ctx.db, run)?;
            (
                a.threads.unwrap_or(t),
                a.cs_ns.unwrap_or(cs),
                a.delay_ns.unwrap_or(d),
                src,
            )
        }
        None => (
            a.threads
                .unwrap_or(crate::core::machine::cpus().max(1) as u32),
            a.cs_ns.unwrap_or(DEFAULT_CS_NS),
            a.delay_ns.unwrap_or(DEFAULT_DELAY_NS),
            "stated".to_string(),
        ),
    };
    let fit = if a.locks.is_some() {
        Vec::new()
    } else {
        fitting(
            threads,
            crate::core::machine::cpus().max(1),
            a.vm,
            locklab::topology::node_count(),
        )
    };
    let locks = candidates(a.locks.as_deref(), &fit)?;
    let w = Workload {
        threads,
        cs_ns,
        delay_ns,
        read_pct: a.read_pct,
        vm: a.vm,
        cores_model: a.cores_model,
        source,
    };
    // The simulation needs nothing measured: it runs first, and its answer
    // is kept with the run's parameters.
    let sim = if a.vm {
        Some(
            sim::run(threads, cs_ns, delay_ns)
                .map_err(|e| LabError::failed(format!("advise --vm: the simulator: {e}")))?,
        )
    } else {
        None
    };
    let machine = match (a.sockets, a.cores_model) {
        (Some(m), Some(n)) => Some(
            machine_sim::run(&registry::names_of(&locks), n, m, cs_ns, delay_ns)
                .map_err(|e| LabError::input(format!("advise --sockets: {e}")))?,
        ),
        _ => None,
    };
    let plan = SpinPlan {
        bench: BENCH,
        locks,
        threads: vec![threads],
        reps: a.reps,
        cfg: SpinConfig {
            cs_ns,
            cs_lines: 1,
            delay_ns,
            delay_dist: DelayDist::Exp,
            secs: a.secs,
            pin: false,
            stall_every: 0,
            stall_ns: 0,
            topology: crate::studies::shared::contention::runner::topology_param(),
        },
    };
    // A read fraction: the read-mostly mechanisms over one table at the
    // workload's update fraction and threads, as many repetitions.
    let mostly = if a.read_pct > 0 {
        Some(HashPlan {
            strategies: crate::studies::shared::hashtable::strategies::parse(READ_MOSTLY)?,
            threads: vec![threads],
            update_pcts: vec![100 - a.read_pct],
            reps: a.reps,
            cfg: HashConfig::new(READ_MOSTLY_KEYS as usize, READ_MOSTLY_KEYS, a.secs, false),
        })
    } else {
        None
    };
    let params = json!({
        "workload": w,
        "locks": registry::names_of(&plan.locks),
        "fitting": fit.iter().map(|(lock, why)| json!({ "lock": lock, "why": why })).collect::<Vec<_>>(),
        "read_mostly": mostly.as_ref().map(|m| m.strategies.iter().map(|s| s.name.clone()).collect::<Vec<_>>()),
        "reps": plan.reps,
        "secs": a.secs,
        "sim": sim,
        "machine_sim": machine,
    });
    let units = plan.units() + mostly.as_ref().map_or(0, HashPlan::units);
    let progress = Progress::new(units, ctx.progress_quiet());
    let r = stored_run(ctx, BENCH, params, &progress, |sink| {
        if !crate::studies::shared::contention::run(&plan, &progress, sink)? {
            return Ok(false);
        }
        match &mostly {
            Some(m) => crate::studies::shared::hashtable::run(m, &progress, sink),
            None => Ok(true),
        }
    });
    progress.finish();
    r
}

/// The measured table: per lock, median throughput (min–max), its ratio
/// to the fastest, CPU per acquisition, fairness and the 99th percentile
/// acquire latency.
fn table(out: &mut String, points: &[&Point]) {
    let best = points
        .iter()
        .map(|p| p.stat(|r| r.throughput_ops_s).0)
        .fold(f64::NAN, f64::max);
    let lw = points
        .iter()
        .map(|p| p.lock.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "  {:<lw$}  {:>11}  {:>23}  {:>8}  {:>10}  {:>6}  {:>9}",
        "LOCK", "THROUGHPUT", "MIN–MAX", "VS BEST", "CPU/ACQ", "JAIN", "P99 WAIT"
    );
    let mut sorted: Vec<&&Point> = points.iter().collect();
    sorted.sort_by(|a, b| {
        b.stat(|r| r.throughput_ops_s)
            .0
            .total_cmp(&a.stat(|r| r.throughput_ops_s).0)
    });
    for p in sorted {
        let (x, lo, hi) = p.stat(|r| r.throughput_ops_s);
        let _ = writeln!(
            out,
            "  {:<lw$}  {:>11}  {:>23}  {:>8}  {:>10}  {:>6}  {:>9}",
            p.lock,
            rate(x),
            format!("{} – {}", rate(lo), rate(hi)),
            format!("{:.2}", x / best),
            fmt_ns(p.stat(cpu_ns_per_op).0),
            crate::core::report::jain_text(p.stat(|r| r.jain).0),
            fmt_ns(p.stat(|r| r.p99_ns as f64).0),
        );
    }
}

/// The advice as verdict lines: the recommendation, the runner-up, each
/// piece of evidence under its kind, the notes.
fn lines(a: &Advice) -> Vec<Line> {
    let mut v = vec![
        Line {
            group: String::new(),
            question: "recommended".into(),
            answer: a.lock.clone(),
            evidence: a.why.clone(),
            json: json!({ "lock": a.lock }),
        },
        Line {
            group: String::new(),
            question: "runner-up".into(),
            answer: a.runner_up.clone().unwrap_or_else(|| "–".into()),
            evidence: "the next fastest measured".into(),
            json: json!({ "lock": a.runner_up }),
        },
    ];
    if let Some(m) = &a.read_mostly {
        v.push(Line {
            group: String::new(),
            question: "read-mostly".into(),
            answer: m.clone(),
            evidence: format!(
                "the fastest measured at {} % reads, for the data the reads share (below)",
                a.workload.read_pct
            ),
            json: json!({ "strategy": m }),
        });
    }
    for e in &a.evidence {
        v.push(Line {
            group: String::new(),
            question: e.topic.clone(),
            answer: e.kind.name().into(),
            evidence: e.claim.clone(),
            json: e.data.clone(),
        });
    }
    for n in &a.notes {
        v.push(Line {
            group: String::new(),
            question: "note".into(),
            answer: String::new(),
            evidence: n.clone(),
            json: Value::Null,
        });
    }
    v
}

/// The run's read-mostly points (`bench hash`'s, measured for
/// `--read-pct`).
fn read_mostly_points(all: &[Point]) -> Vec<&Point> {
    all.iter()
        .filter(|p| p.bench == crate::studies::shared::hashtable::BENCH)
        .collect()
}

/// The study's report: the measured table, and the advice as its verdict.
pub struct Advise;

impl Study for Advise {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        let title = decide::workload_of(meta)
            .map(|w| w.title(meta.machine.cores))
            .unwrap_or_default();
        let reps = points.first().map_or(0, |p| p.reps.len());
        let _ = writeln!(
            out,
            "\nadvise: {title}; measured on this machine, {reps} interleaved repetitions per lock"
        );
        table(out, points);
    }

    fn verdict(&self, meta: &RunMeta, points: &[&Point], all: &[Point]) -> Vec<Section> {
        match decide(meta, points, &read_mostly_points(all)) {
            Some(a) => vec![Section {
                study: BENCH.into(),
                title: a.workload.title(meta.machine.cores),
                lines: lines(&a),
            }],
            None => Vec::new(),
        }
    }

    fn own_json(&self, meta: &RunMeta, points: &[Point]) -> Option<Value> {
        if meta.kind != BENCH {
            return None;
        }
        let mine: Vec<&Point> = points.iter().filter(|p| p.bench == BENCH).collect();
        let advice = decide(meta, &mine, &read_mostly_points(points));
        let sections = self.verdict(meta, &mine, points);
        Some(json!({
            "run": crate::core::report::run_meta_json(meta),
            "workload": meta.params.get("workload"),
            "points": mine.iter().map(|p| json!({
                "lock": p.lock,
                "threads": p.threads,
                "params": p.params,
                "reps": p.reps.len(),
                "throughput_ops_s": p.stat(|r| r.throughput_ops_s).0,
                "cpu_ns_per_op": p.stat(cpu_ns_per_op).0,
                "jain": p.stat(|r| r.jain).0,
                "p99_ns": p.stat(|r| r.p99_ns as f64).0,
                "repetitions": p.reps,
            })).collect::<Vec<_>>(),
            "read_mostly_points": read_mostly_points(points)
                .iter()
                .map(|p| {
                    let mut j = crate::studies::shared::hashtable::point::point_json(p);
                    j["threads"] = p.threads.into();
                    j["reps"] = p.reps.len().into();
                    j["throughput_ops_s"] = p.stat(|r| r.throughput_ops_s).0.into();
                    j
                })
                .collect::<Vec<_>>(),
            "recommendation": advice.map(|a| a.json()),
            "verdict": crate::core::verdict::json(&sections),
        }))
    }
}

impl crate::core::study::RunCommand for AdviseArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Advise);

    fn run(&self, ctx: &crate::core::study::Ctx) -> crate::Result<crate::core::study::Outcome> {
        command(ctx, self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_locks_that_fit_follow_oversubscription_the_vm_and_the_nodes() {
        let names =
            |v: Vec<(&'static str, String)>| v.into_iter().map(|(n, _)| n).collect::<Vec<_>>();
        assert!(fitting(2, 2, false, 1).is_empty());
        assert_eq!(names(fitting(3, 2, false, 1)), ["malthusian", "mcs-tp"]);
        assert_eq!(names(fitting(1, 2, true, 1)), ["malthusian", "mcs-tp"]);
        assert_eq!(names(fitting(2, 2, false, 2)), ["c-bo-mcs", "hmcs", "cna"]);
        assert_eq!(fitting(8, 2, false, 2).len(), 5);
        assert!(fitting(8, 2, false, 1)[0]
            .1
            .starts_with("8 threads on 2 cores"));
        for (name, _) in fitting(8, 2, true, 2) {
            assert!(
                crate::core::locks::find(name).is_ok(),
                "{name} not in the registry"
            );
        }
    }
    use crate::core::args::RunRef;
    use crate::core::results::{Machine, Rep};

    fn meta(kind: &str) -> RunMeta {
        RunMeta {
            id: None,
            uuid: None,
            kind: kind.into(),
            command: String::new(),
            params: json!({}),
            machine: Machine::default(),
            started: String::new(),
            finished: None,
            complete: false,
        }
    }

    fn object(name: &str, c: &Counts) -> Point {
        let mut r = Rep::one_thread(0, 1.0, 1.0, 1);
        r.set_metrics(c);
        Point {
            bench: crate::studies::shared::lock_profile::BENCH.into(),
            lock: "pthread".into(),
            threads: c.threads,
            params: json!({ "object": name, "process": { "elapsed_ns": 1e9 } }),
            reps: vec![r],
        }
    }

    /// Known answer: of two lock objects, the contended one's pattern
    /// (`spin_workload` of its counts) is the workload; a run of another
    /// kind is refused as input.
    #[test]
    fn a_profile_gives_its_most_waited_on_locks_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("p.db");
        let mut store = Store::open(&db).unwrap();
        let id = store.begin_run(&meta("profile")).unwrap();
        let calm = Counts {
            acquisitions: 100,
            threads: 1,
            hold_total_ns: 1000,
            last_ns: 1_000_000,
            ..Counts::default()
        };
        let busy = Counts {
            acquisitions: 1000,
            contended: 400,
            wait_total_ns: 400_000,
            hold_total_ns: 500_000,
            threads: 4,
            first_ns: 0,
            last_ns: 2_000_000,
            ..Counts::default()
        };
        store.add_point(id, &object("calm", &calm)).unwrap();
        store.add_point(id, &object("busy", &busy)).unwrap();
        let (t, cs, d, src) = from_profile(&(&db).into(), RunRef::Id(id)).unwrap();
        assert_eq!(Some((t, cs, d)), spin_workload(&busy));
        assert_eq!((t, cs), (4, 500));
        assert!(src.contains("busy"), "{src}");
        let other = store.begin_run(&meta("bench spin")).unwrap();
        let e = from_profile(&(&db).into(), RunRef::Id(other)).unwrap_err();
        assert!(e.to_string().contains("not a `locklab profile` run"), "{e}");
    }
}
