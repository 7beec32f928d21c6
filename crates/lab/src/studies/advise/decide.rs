//! The recommendation of an `advise` run, a pure function of its stored
//! points and parameters (so `show` gives the same answer every time):
//! the fastest lock by paired repetitions, the one that uses least CPU per
//! acquisition, ties broken by a stated preference, the queueing model's
//! prediction beyond this machine's cores, and the simulator's answer for
//! a VM. Each piece of evidence carries its kind: measured in the run, a
//! model's prediction, or simulated.

use super::sim::SimEvidence;
use crate::core::registry::{self, Entry};
use crate::core::report::{cpu_ns_per_op, fmt_ns};
use crate::core::results::{Point, RunMeta};
use crate::core::stats::{paired_ratio, sig3};
use crate::core::verdict::{pick, Entrant, Pick};
use locklab_model::queueing::Repairman;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The workload an `advise` run measured (stored in the run's parameters
/// under `workload`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Workload {
    /// Threads that take the lock.
    pub threads: u32,
    /// Critical section, ns.
    pub cs_ns: u64,
    /// Mean delay between a thread's acquisitions, ns.
    pub delay_ns: u64,
    /// Percentage of acquisitions that only read.
    pub read_pct: u32,
    /// Whether the program runs in a VM.
    pub vm: bool,
    /// Cores the queueing model predicts for, if asked.
    pub cores_model: Option<u32>,
    /// Where the workload came from: `stated`, or `profile run N: OBJECT`.
    pub source: String,
}

impl Workload {
    /// The workload in a few words.
    pub fn title(&self, cores: usize) -> String {
        let over = if self.threads as usize > cores.max(1) {
            format!(
                ", oversubscribed: {} threads on {cores} cores",
                self.threads
            )
        } else {
            String::new()
        };
        format!(
            "{} threads, critical section {}, delay {}{}{}",
            self.threads,
            fmt_ns(self.cs_ns as f64),
            fmt_ns(self.delay_ns as f64),
            if self.read_pct > 0 {
                format!(", {} % reads", self.read_pct)
            } else {
                String::new()
            },
            over
        )
    }
}

/// What a piece of evidence is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Measured in this run on this machine.
    Measured,
    /// Predicted by the queueing model (with its assumptions stated).
    Model,
    /// Simulated: by the lock-holder-preemption simulator, or by the
    /// spin-lock simulator on a machine the user named.
    Simulated,
}

impl Kind {
    /// Its name in text and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Measured => "measured",
            Kind::Model => "model",
            Kind::Simulated => "simulated",
        }
    }
}

/// One claim and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct Evidence {
    /// Measured, model or simulated.
    pub kind: Kind,
    /// What it is about, short ("throughput", "CPU per acquisition", …).
    pub topic: String,
    /// The claim, with its label where it is not measured.
    pub claim: String,
    /// The numbers behind it.
    pub data: Value,
}

/// The advice of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    /// The workload.
    pub workload: Workload,
    /// The recommended lock (a name of the registry).
    pub lock: String,
    /// The next best measured lock.
    pub runner_up: Option<String>,
    /// Why this one: a clear win, or how a tie was broken.
    pub why: String,
    /// The read-mostly mechanism measured best at the workload's read
    /// fraction (a strategy of `bench hash`), when it was measured.
    pub read_mostly: Option<String>,
    /// The evidence, measured first.
    pub evidence: Vec<Evidence>,
    /// What the run did not measure but the workload raises.
    pub notes: Vec<String>,
}

impl Advice {
    /// As the JSON `recommendation` object.
    pub fn json(&self) -> Value {
        json!({
            "lock": self.lock,
            "runner_up": self.runner_up,
            "why": self.why,
            "read_mostly": self.read_mostly,
            "evidence": self.evidence.iter().map(|e| json!({
                "kind": e.kind.name(),
                "topic": e.topic,
                "claim": e.claim,
                "data": e.data,
            })).collect::<Vec<_>>(),
            "notes": self.notes,
        })
    }
}

/// The stored workload of a run's parameters.
pub fn workload_of(meta: &RunMeta) -> Option<Workload> {
    serde_json::from_value(meta.params.get("workload")?.clone()).ok()
}

/// The simulator's answer stored with the run, if it ran.
pub fn sim_of(meta: &RunMeta) -> Option<SimEvidence> {
    serde_json::from_value(meta.params.get("sim")?.clone()).ok()
}

/// The spin-lock simulation of the machine the user named, if it ran.
pub fn machine_sim_of(meta: &RunMeta) -> Option<super::machine_sim::MachineSim> {
    serde_json::from_value(meta.params.get("machine_sim")?.clone()).ok()
}

fn entry(name: &str) -> Option<&'static Entry> {
    registry::all().iter().find(|e| e.info.name == name)
}

/// How a lock's waiters behave, in the simulator's terms.
pub fn waiter_kind(name: &str) -> &'static str {
    match entry(name) {
        Some(e) if e.info.blocking => "sleep",
        Some(e) if e.info.fair => "fifo-spin",
        _ => "tas-spin",
    }
}

/// The order ties are broken in (lower first), and why. Threads within
/// the cores: a fair spin lock first (every thread served in turn), then
/// an unfair one, then a sleeping one, locklab's before a peer's, simpler
/// before cleverer (the registry's order). More threads than cores, or a
/// VM: a sleeping lock first, since a spinning waiter may burn the CPU
/// time a preempted holder needs.
fn preference(name: &str, sleepy: bool) -> (u32, bool, usize) {
    let Some(e) = entry(name) else {
        return (9, true, usize::MAX);
    };
    let class = match (e.info.blocking, e.info.fair, sleepy) {
        (false, true, false) => 0,
        (false, false, false) => 1,
        (true, _, false) => 2,
        (true, _, true) => 0,
        (false, false, true) => 1,
        (false, true, true) => 2,
    };
    (class, e.peer, e.index)
}

fn tie_reason(sleepy: bool) -> &'static str {
    if sleepy {
        "preferred as one that sleeps instead of spinning (a spinning waiter can burn the time a \
         preempted holder needs), then locklab's own and the simplest"
    } else {
        "preferred as fair (FIFO: every thread served in turn), then locklab's own and the simplest"
    }
}

fn values(p: &Point, f: impl Fn(&crate::core::results::Rep) -> f64) -> Vec<f64> {
    p.reps.iter().map(f).collect()
}

fn median(p: &Point, f: impl Fn(&crate::core::results::Rep) -> f64) -> f64 {
    p.stat(f).0
}

/// Ops/s as text.
pub fn rate(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x >= 1e6 {
        format!("{} M/s", sig3(x / 1e6))
    } else if x >= 1e3 {
        format!("{} k/s", sig3(x / 1e3))
    } else {
        format!("{}/s", sig3(x))
    }
}

/// The repairman service time S (ns) that gives throughput `x` (ops/ns)
/// at `n` threads with delay `z` (ns), by bisection; `None` if no S does.
pub fn fit_service(x: f64, n: u32, z: f64) -> Option<f64> {
    let at = |s: f64| Repairman::new(s, z).ok()?.throughput(n).ok();
    let (mut lo, mut hi) = (1e-3_f64, 1e9_f64);
    if x.is_nan() || x <= 0.0 || at(lo)? <= x || at(hi)? >= x {
        return None;
    }
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if at(mid)? > x {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((lo * hi).sqrt())
}

/// The model's throughput (ops/s) at `cores` for a lock measured at `x`
/// ops/s with `n` threads: the fitted S and the prediction.
fn model_at(x: f64, n: u32, z: f64, cores: u32) -> Option<(f64, f64)> {
    let s = fit_service(x * 1e-9, n, z)?;
    let y = Repairman::new(s, z).ok()?.throughput(cores).ok()?;
    Some((s, y * 1e9))
}

/// The advice of a run's `advise` points; `None` without a usable point.
///
/// `mostly` are the run's read-mostly points (`bench hash` at the
/// workload's update fraction, measured when `--read-pct` is above 0).
pub fn decide(meta: &RunMeta, points: &[&Point], mostly: &[&Point]) -> Option<Advice> {
    let w = workload_of(meta)?;
    let cores = meta.machine.cores.max(1);
    let sleepy = w.vm || w.threads as usize > cores;
    let tput: Vec<Entrant> = points
        .iter()
        .map(|p| Entrant {
            name: p.lock.clone(),
            values: values(p, |r| r.throughput_ops_s),
        })
        .collect();
    let cpu: Vec<Entrant> = points
        .iter()
        .map(|p| Entrant {
            name: p.lock.clone(),
            values: values(p, cpu_ns_per_op),
        })
        .collect();
    let fast = pick(&tput, false)?;
    let cheap = pick(&cpu, true);
    let point = |name: &str| points.iter().find(|p| p.lock == name).copied();
    // Every lock by throughput, best first.
    let mut order: Vec<(String, f64)> = points
        .iter()
        .map(|p| (p.lock.clone(), median(p, |r| r.throughput_ops_s)))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));

    let mut notes = Vec::new();
    let (mut lock, mut why) = if fast.tied.len() > 1 {
        // A lock that collapsed in one repetition (below half the best
        // median of the tied) is tied only by its spread: left out.
        let best = fast
            .tied
            .iter()
            .filter_map(|n| point(n))
            .map(|p| median(p, |r| r.throughput_ops_s))
            .fold(0.0, f64::max);
        let (mut steady, shaky): (Vec<String>, Vec<String>) =
            fast.tied.iter().cloned().partition(|n| {
                point(n).is_some_and(|p| p.stat(|r| r.throughput_ops_s).1 >= 0.5 * best)
            });
        if steady.is_empty() {
            steady = fast.tied.clone();
        }
        steady.sort_by_key(|n| preference(n, sleepy));
        let chosen = steady[0].clone();
        let dropped = if shaky.is_empty() || steady.len() == fast.tied.len() {
            String::new()
        } else {
            format!(
                " (left out: {}, a repetition below half the best median)",
                shaky.join(", ")
            )
        };
        let why = format!(
            "{} by throughput{dropped}; {chosen} {}",
            fast.answer(),
            tie_reason(sleepy)
        );
        (chosen, why)
    } else {
        (
            fast.winner.clone(),
            "the fastest measured, separated from the runner-up (the 95 % interval of their ratio lies above 1)".to_string(),
        )
    };

    // The VM: the simulator's best kind of waiter, if the measured choice
    // waits another way and that way did clearly worse there.
    let sim = if w.vm { sim_of(meta) } else { None };
    if let Some(s) = &sim {
        let mine = waiter_kind(&lock);
        if let (Some(best), Some(own)) = (s.best(), s.case(mine)) {
            if best.waiter != mine && best.sections_per_s > 1.2 * own.sections_per_s {
                if let Some((other, _)) = order.iter().find(|(n, _)| waiter_kind(n) == best.waiter)
                {
                    why = format!(
                        "{lock} was fastest here, but in a VM {} waiters completed {}× the critical \
                         sections of {} waiters (simulated); {other} is the fastest measured of those",
                        best.waiter,
                        sig3(best.sections_per_s / own.sections_per_s),
                        mine
                    );
                    lock = other.clone();
                } else {
                    notes.push(format!(
                        "in a VM the simulator favours {} waiters ({}); none of those was measured: \
                         add one with --locks",
                        best.waiter, best.like
                    ));
                }
            }
        }
    }

    let runner_up = order.iter().map(|(n, _)| n.clone()).find(|n| *n != lock);
    let mut evidence = Vec::new();
    let rec = point(&lock)?;
    let rec_x = median(rec, |r| r.throughput_ops_s);
    let over = if w.threads as usize > cores {
        format!(" ({} threads on {cores} cores: oversubscribed)", w.threads)
    } else {
        String::new()
    };
    match runner_up.as_deref().and_then(|r| Some((r, point(r)?))) {
        Some((r, rp)) => {
            let ratio = paired_ratio(
                &values(rp, |x| x.throughput_ops_s),
                &values(rec, |x| x.throughput_ops_s),
            );
            // A tie by the interval, or by the verdict's rule (`pick`).
            let tied = fast.tied.contains(&lock) && fast.tied.iter().any(|n| n == r);
            let sure = if ratio.separated().is_some() && !tied {
                ""
            } else {
                ", a tie"
            };
            evidence.push(Evidence {
                kind: Kind::Measured,
                topic: "throughput".into(),
                claim: format!(
                    "{lock} {} vs {r} {} (medians); {lock}/{r} {}{sure}{over}",
                    rate(rec_x),
                    rate(median(rp, |x| x.throughput_ops_s)),
                    ratio.text()
                ),
                data: json!({ "lock": lock, "runner_up": r, "ratio": ratio.json(),
                              "throughput_ops_s": rec_x,
                              "runner_up_throughput_ops_s": median(rp, |x| x.throughput_ops_s) }),
            });
        }
        None => evidence.push(Evidence {
            kind: Kind::Measured,
            topic: "throughput".into(),
            claim: format!("{lock} {}{over} (the only lock measured)", rate(rec_x)),
            data: json!({ "lock": lock, "throughput_ops_s": rec_x }),
        }),
    }
    if let Some(c) = &cheap {
        evidence.push(Evidence {
            kind: Kind::Measured,
            topic: "CPU per acquisition".into(),
            claim: format!(
                "least: {} at {} per acquisition{}{}",
                c.answer(),
                fmt_ns(median(point(&c.winner)?, cpu_ns_per_op)),
                match (&c.runner_up, &c.margin) {
                    (Some(r), Some(m)) => format!(
                        " ({r} uses {} that{})",
                        m.text(),
                        if m.separated().is_some() {
                            ""
                        } else {
                            ", not separated"
                        }
                    ),
                    _ => String::new(),
                },
                if c.winner == lock {
                    String::new()
                } else {
                    format!("; {lock} {}", fmt_ns(median(rec, cpu_ns_per_op)))
                }
            ),
            data: c.json(),
        });
    }
    evidence.push(Evidence {
        kind: Kind::Measured,
        topic: "fairness".into(),
        claim: format!(
            "Jain's index {lock} {}{}",
            sig3(median(rec, |r| r.jain)),
            runner_up
                .as_deref()
                .and_then(point)
                .map(|p| format!(", {} {}", p.lock, sig3(median(p, |r| r.jain))))
                .unwrap_or_default()
        ),
        data: json!({ "jain": median(rec, |r| r.jain) }),
    });

    if let Some(n) = w.cores_model {
        let z = w.delay_ns as f64;
        let mut parts = Vec::new();
        let mut data = Vec::new();
        for name in std::iter::once(lock.as_str()).chain(runner_up.as_deref()) {
            let Some(p) = point(name) else { continue };
            let x = median(p, |r| r.throughput_ops_s);
            match model_at(x, w.threads, z, n) {
                Some((s, y)) => {
                    parts.push(format!("{name} {} (S = {})", rate(y), fmt_ns(s)));
                    data.push(json!({ "lock": name, "service_ns": s, "throughput_ops_s": y }));
                }
                None => parts.push(format!(
                    "{name}: no service time fits its measured throughput"
                )),
            }
        }
        let ratio = match (data.first(), data.get(1)) {
            (Some(a), Some(b)) => {
                let (a, b) = (
                    a["throughput_ops_s"].as_f64(),
                    b["throughput_ops_s"].as_f64(),
                );
                a.zip(b).map(|(a, b)| format!("; ratio {}×", sig3(a / b)))
            }
            _ => None,
        };
        let oversub = if w.threads as usize > cores {
            "; fitted at an oversubscribed point, so S includes preemption"
        } else {
            ""
        };
        evidence.push(Evidence {
            kind: Kind::Model,
            topic: format!("at {n} cores"),
            claim: format!(
                "model prediction (assumes the machine-repairman queue: one lock, a service time S \
                 per lock fitted to its measured throughput at {} threads and constant as cores \
                 grow, delay Z = {}, no hand-off cost growing with the waiters{oversub}): {}{}",
                w.threads,
                fmt_ns(z),
                parts.join(", "),
                ratio.unwrap_or_default()
            ),
            data: json!({ "cores": n, "model": "repairman", "delay_ns": z, "locks": data }),
        });
    }

    if let Some(s) = &sim {
        let cases: Vec<String> = s
            .cases
            .iter()
            .map(|c| {
                format!(
                    "{} {} sections/s ({:.0} % spinning)",
                    c.waiter,
                    rate(c.sections_per_s).trim_end_matches("/s"),
                    c.spin_share * 100.0
                )
            })
            .collect();
        evidence.push(Evidence {
            kind: Kind::Simulated,
            topic: "in a VM".into(),
            claim: format!(
                "simulated (lock-holder-preemption simulator, {}; {lock} waits as {}): {}",
                s.setting(),
                waiter_kind(&lock),
                cases.join(", ")
            ),
            data: serde_json::to_value(s).unwrap_or(Value::Null),
        });
    } else if w.vm {
        notes.push("the VM simulation is missing from this run".into());
    }

    if let Some(m) = machine_sim_of(meta) {
        let ranked: Vec<String> = m
            .locks
            .iter()
            .map(|l| {
                format!(
                    "{} {} ({:.0} % of hand-overs across sockets)",
                    l.lock,
                    rate(l.throughput),
                    l.across * 100.0
                )
            })
            .collect();
        let lead = match (m.locks.first(), m.locks.get(1)) {
            (Some(a), Some(b)) if b.throughput > 0.0 => format!(
                "; fastest {}, {}× {}",
                a.lock,
                sig3(a.throughput / b.throughput),
                b.lock
            ),
            (Some(a), _) => format!("; fastest {}", a.lock),
            _ => String::new(),
        };
        evidence.push(Evidence {
            kind: Kind::Simulated,
            topic: format!("on {} cores, {} sockets", m.cores, m.sockets),
            claim: format!(
                "simulated (the spin-lock simulator of `sim spin`, seed 002's costs, one thread \
                 on each of {} cores over {} sockets, critical section {} on one line, delay {} \
                 exponential): {}{lead}",
                m.cores,
                m.sockets,
                fmt_ns(w.cs_ns as f64),
                fmt_ns(w.delay_ns as f64),
                ranked.join(", ")
            ),
            data: serde_json::to_value(&m).unwrap_or(Value::Null),
        });
    }

    let read_mostly = if w.read_pct > 0 && !mostly.is_empty() {
        read_mostly(&w, mostly).map(|(choice, e)| {
            evidence.push(e);
            choice
        })
    } else {
        None
    };
    if w.read_pct > 0 && mostly.is_empty() {
        notes.push(format!(
            "{} % of acquisitions only read: advise measures mutexes; reader-writer locks under \
             this mix are measured by `locklab bench hash --update-pct {} --strategies \
             global-spin,global-rw(rw-fair),global-rw(rw-reader),brlock`",
            w.read_pct,
            100 - w.read_pct
        ));
    }
    // The locks measured because they fit this workload: where each came.
    for f in meta
        .params
        .get("fitting")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let (Some(name), Some(fits)) = (
            f.get("lock").and_then(Value::as_str),
            f.get("why").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some(place) = order.iter().position(|(n, _)| n == name) else {
            continue;
        };
        notes.push(format!(
            "{name} was measured because {fits}; it came {} of {} at {}× the recommended {lock}",
            place + 1,
            order.len(),
            sig3(order[place].1 / rec_x)
        ));
    }
    if w.source != "stated" {
        notes.push(format!("workload taken from {}", w.source));
    }
    Some(Advice {
        workload: w,
        lock,
        runner_up,
        why,
        read_mostly,
        evidence,
        notes,
    })
}

/// The exclusive lock of the read-mostly measurement: every reader and
/// writer takes one spin lock over the whole table, what a program without
/// a read-mostly mechanism has.
pub const EXCLUSIVE: &str = "global-spin";

/// The read-mostly answer from the hash-table points at the workload's
/// update fraction: the best mechanism by paired repetitions, its margin
/// over the runner-up and over one exclusive lock ([`EXCLUSIVE`]).
fn read_mostly(w: &Workload, mostly: &[&Point]) -> Option<(String, Evidence)> {
    let entrants: Vec<Entrant> = mostly
        .iter()
        .filter(|p| !p.reps.is_empty())
        .map(|p| Entrant {
            name: p.lock.clone(),
            values: values(p, |r| r.throughput_ops_s),
        })
        .collect();
    let best = pick(&entrants, false)?;
    let excl = mostly.iter().find(|p| p.lock == EXCLUSIVE);
    let win = mostly.iter().find(|p| p.lock == best.winner)?;
    let versus = match excl {
        Some(x) if x.lock != best.winner => {
            let r = paired_ratio(
                &values(x, |r| r.throughput_ops_s),
                &values(win, |r| r.throughput_ops_s),
            );
            format!("; {} over one exclusive lock ({EXCLUSIVE})", r.text())
        }
        _ => String::new(),
    };
    let shape = mostly[0]
        .params
        .get("keys")
        .and_then(Value::as_u64)
        .map_or_else(String::new, |k| format!(" of {k} keys"));
    let claim = format!(
        "lookups and updates of a hash table{shape} at {} % updates, {} threads: {}: {}{versus}",
        100 - w.read_pct,
        mostly[0].threads,
        best.answer(),
        best.evidence("over"),
    );
    let data = json!({ "pick": best.json(), "strategies": mostly.iter().map(|p| &p.lock).collect::<Vec<_>>() });
    let choice = if best.tied.len() > 1 {
        best.answer()
    } else {
        best.winner.clone()
    };
    Some((
        choice,
        Evidence {
            kind: Kind::Measured,
            topic: "read-mostly".into(),
            claim,
            data,
        },
    ))
}

/// The fastest pick alone (for the table's ratio column).
pub fn fastest(points: &[&Point]) -> Option<Pick> {
    let tput: Vec<Entrant> = points
        .iter()
        .map(|p| Entrant {
            name: p.lock.clone(),
            values: values(p, |r| r.throughput_ops_s),
        })
        .collect();
    pick(&tput, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fitted_service_time_gives_back_the_throughput() {
        let (s, z, n) = (150.0, 1000.0, 4);
        let x = Repairman::new(s, z).unwrap().throughput(n).unwrap();
        let got = fit_service(x, n, z).unwrap();
        assert!((got / s - 1.0).abs() < 1e-6, "{got}");
        // More than the model can give at any S: no fit.
        assert!(fit_service(f64::from(n) / z * 1.01, n, z).is_none());
    }

    #[test]
    fn ties_prefer_fair_spinning_within_the_cores_and_sleeping_beyond() {
        let mut names = ["tas", "mutex", "ticket", "pthread"];
        names.sort_by_key(|n| preference(n, false));
        assert_eq!(names[0], "ticket");
        names.sort_by_key(|n| preference(n, true));
        assert_eq!(names[0], "mutex");
        assert_eq!(waiter_kind("mcs"), "fifo-spin");
        assert_eq!(waiter_kind("ttas"), "tas-spin");
        assert_eq!(waiter_kind("futex3"), "sleep");
    }
}
