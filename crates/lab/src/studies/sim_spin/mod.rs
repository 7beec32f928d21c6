//! `sim spin`: spin locks on a simulated machine of sockets × cores
//! (`locklab_model::locksim`), for the questions no machine at hand can
//! answer: how each algorithm's throughput moves from 1 to 30 cores of
//! two sockets (seed 001's Table 2 and Figs. 1–3). The workload is
//! `bench spin`'s (a critical section of some time on some lines, a delay
//! outside), each point repeated with its own seed, and the run is stored
//! like a benchmark's: `show`, `plot`, `report` and the verdict read it.
//! Every figure is *simulated*: the tables and the verdict say so, with
//! the topology and the costs they assumed.

pub mod args;
mod calibrate;

use std::fmt::Write as _;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::report::{by_params, distinct, grid, lock_width, sig, throughput_unit};
use crate::core::results::{Point, Rep, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::{Ctx, Outcome, RunCommand, Study};
use crate::core::verdict::{pick, Line, Section};
use crate::studies::shared::contention::report::fairness;
use crate::studies::shared::contention::verdict::entrants;
use args::SimSpinArgs;
use locklab_model::lhp::config::Dist;
use locklab_model::locksim::{simulate, Algorithm, Config, Placement};
use serde_json::{json, Value};

/// The name its points are stored under.
pub const BENCH: &str = "sim-spin";

/// The run's kind.
const KIND: &str = "sim spin";

fn algorithm(name: &str) -> Option<Algorithm> {
    Algorithm::ALL.into_iter().find(|a| a.name() == name)
}

fn allowed() -> String {
    Algorithm::ALL.map(Algorithm::name).join(", ")
}

/// `sim spin`: simulates and stores the sweep.
pub fn command(ctx: &Ctx, a: &SimSpinArgs) -> Result<Outcome> {
    let topo = a.topology.0;
    let mut locks = Vec::new();
    for name in a.locks.split(',').map(str::trim) {
        let alg = algorithm(name).ok_or_else(|| {
            LabError::input(format!(
                "--locks: '{name}' is not a simulated lock: allowed {}",
                allowed()
            ))
        })?;
        if !locks.contains(&alg) {
            locks.push(alg);
        }
    }
    let cores = topo.cores();
    let threads: Vec<u32> = match &a.threads {
        Some(list) => list.0.clone(),
        None => (1..=cores).collect(),
    };
    if let Some(&t) = threads.iter().find(|&&t| t > cores) {
        return Err(LabError::input(format!(
            "--threads: {t} threads on a {}x{} machine: allowed 1 to {cores} (one thread a core)",
            topo.sockets, topo.cores_per_socket
        )));
    }
    let (mut costs, costs_name) = args::costs(&a.costs)?;
    costs.home_snoop |= a.home_snoop;
    if a.lock_socket >= topo.sockets {
        return Err(LabError::input(format!(
            "--lock-socket {}: allowed 0 to {} on a {}x{} machine (sockets count from 0)",
            a.lock_socket,
            topo.sockets - 1,
            topo.sockets,
            topo.cores_per_socket
        )));
    }
    costs
        .check()
        .map_err(|e| LabError::input(format!("--costs {}: {e}", a.costs)))?;
    let delay = if a.delay_dist == "const" {
        Dist::Const(a.delay_ns as f64)
    } else {
        Dist::Exp(a.delay_ns as f64)
    };
    let window_ns = a.sim_ms * 1e6;
    let placement = match a.placement {
        Placement::Fill => "fill",
        Placement::RoundRobin => "round-robin",
    };
    let point_params = json!({
        "topology": format!("{}x{}", topo.sockets, topo.cores_per_socket),
        "placement": placement,
        "costs": costs_name,
        "cost_cycles": {
            "hit": costs.hit, "same_socket": costs.same_socket,
            "other_socket": costs.other_socket, "memory_local": costs.memory_local,
            "memory_remote": costs.memory_remote, "atomic": costs.atomic, "ghz": costs.ghz,
            "home_snoop": costs.home_snoop,
        },
        "lock_socket": a.lock_socket,
        "cs_ns": a.cs_ns, "cs_lines": a.cs_lines,
        "delay_ns": a.delay_ns, "delay_dist": a.delay_dist, "sim_ms": a.sim_ms,
    });
    let mut params = point_params.clone();
    if let Value::Object(m) = &mut params {
        m.insert(
            "locks".into(),
            json!(locks.iter().map(|l| l.name()).collect::<Vec<_>>()),
        );
        m.insert("threads".into(), json!(threads));
        m.insert("reps".into(), json!(a.reps));
    }
    let units = (locks.len() * threads.len()) as u64 * u64::from(a.reps);
    let progress = Progress::counting(units, ctx.progress_quiet(), "simulations");
    let r = stored_run(ctx, KIND, params, &progress, |sink| {
        for &t in &threads {
            for &alg in &locks {
                let mut reps = Vec::new();
                for rep in 0..a.reps {
                    if crate::core::interrupt::requested() {
                        return Ok(false);
                    }
                    let c = Config {
                        algorithm: alg,
                        topology: topo,
                        placement: a.placement,
                        costs,
                        threads: t,
                        cs: Dist::Const(a.cs_ns as f64),
                        cs_lines: a.cs_lines,
                        delay,
                        lock_socket: a.lock_socket,
                        warmup_ns: window_ns / 10.0,
                        window_ns,
                        seed: u64::from(rep) + 1,
                    };
                    let o = simulate(&c).map_err(|e| LabError::input(e.to_string()))?;
                    let mut r = Rep::counted(window_ns * 1e-9, f64::NAN, o.per_thread.clone());
                    r.rep = rep;
                    r.metrics.insert(
                        BENCH.into(),
                        json!({
                            "within_socket": o.within_socket,
                            "across_sockets": o.across_sockets,
                            "transfer_ns": o.transfer_ns,
                        }),
                    );
                    reps.push(r);
                    progress.done_one();
                }
                sink(Point {
                    bench: BENCH.into(),
                    lock: alg.name().into(),
                    threads: t,
                    params: point_params.clone(),
                    reps,
                })?;
            }
        }
        Ok(true)
    });
    progress.finish();
    r
}

/// A metric of the simulation kept in a repetition's metrics.
fn metric(r: &Rep, key: &str) -> f64 {
    r.metrics
        .get(BENCH)
        .and_then(|m| m.get(key))
        .and_then(Value::as_f64)
        .unwrap_or(f64::NAN)
}

/// The share of hand-overs that crossed sockets, %.
fn across_pct(r: &Rep) -> f64 {
    let (w, x) = (metric(r, "within_socket"), metric(r, "across_sockets"));
    if w + x > 0.0 {
        100.0 * x / (w + x)
    } else {
        f64::NAN
    }
}

/// The share of the window that lines spent moving (summed over lines;
/// above 100 % where several move at once), %.
fn moving_pct(r: &Rep) -> f64 {
    100.0 * metric(r, "transfer_ns") / (r.wall_s * 1e9)
}

/// How many sockets `threads` span under the point's parameters.
fn sockets_spanned(params: &Value, threads: u32) -> u32 {
    let topo = params
        .get("topology")
        .and_then(Value::as_str)
        .unwrap_or("1x1");
    let (s, c) = topo.split_once('x').unwrap_or(("1", "1"));
    let (s, c): (u32, u32) = (s.parse().unwrap_or(1), c.parse().unwrap_or(1).max(1));
    match params.get("placement").and_then(Value::as_str) {
        Some("round-robin") => threads.min(s),
        _ => threads.div_ceil(c).min(s),
    }
}

/// A question of the verdict and the value per repetition it asks of.
type Question = (&'static str, fn(&Rep) -> f64);

/// The study's reports.
pub struct SimSpin;

impl SimSpin {
    fn table(
        out: &mut String,
        group: &[&Point],
        title: &str,
        width: usize,
        f: impl Fn(&Point) -> Option<String>,
    ) {
        let locks = distinct(group.iter().map(|p| p.lock.as_str()));
        let mut threads = distinct(group.iter().map(|p| p.threads));
        threads.sort_unstable();
        let _ = writeln!(out, "  {title}");
        grid(
            out,
            lock_width(group),
            width,
            0,
            &locks,
            &threads,
            |l, t| {
                group
                    .iter()
                    .find(|p| p.lock == l && p.threads == t)
                    .and_then(|p| f(p))
            },
        );
    }
}

impl Study for SimSpin {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        for (params, group) in by_params(points) {
            let p = |k: &str| {
                params
                    .get(k)
                    .map_or_else(String::new, |v| v.to_string().trim_matches('"').to_string())
            };
            let _ = writeln!(
                out,
                "\nsim spin: SIMULATED on {} cores ({}), costs {}; critical section {} ns on {} \
                 line(s), delay {} ns ({}); medians over the seeds",
                p("topology"),
                p("placement"),
                p("costs"),
                p("cs_ns"),
                p("cs_lines"),
                p("delay_ns"),
                p("delay_dist"),
            );
            let top = group
                .iter()
                .map(|p| p.stat(|r| r.throughput_ops_s).0)
                .fold(0.0, f64::max);
            let (scale, unit) = throughput_unit(top);
            Self::table(out, &group, &format!("throughput, {unit}"), 9, |p| {
                Some(sig(p.stat(|r| r.throughput_ops_s).0 / scale))
            });
            let per_core_top = group
                .iter()
                .map(|p| p.stat(|r| r.throughput_ops_s).0 / f64::from(p.threads))
                .fold(0.0, f64::max);
            let (pscale, punit) = throughput_unit(per_core_top);
            Self::table(out, &group, &format!("per core, {punit}"), 9, |p| {
                Some(sig(p.stat(|r| r.throughput_ops_s).0
                    / f64::from(p.threads)
                    / pscale))
            });
            Self::table(
                out,
                &group,
                "per-thread shares: Jain's index (1 = even), least–most acquisitions of a \
                 thread in % of an even share",
                16,
                |p| {
                    let (jain, lo, hi) = fairness(p)?;
                    Some(format!("{jain:.2} {lo:>3.0}–{hi:<3.0}%"))
                },
            );
            Self::table(out, &group, "hand-overs across sockets, %", 9, |p| {
                let x = p.stat(across_pct).0;
                x.is_finite().then(|| format!("{x:.0}"))
            });
            Self::table(
                out,
                &group,
                "time lines spent moving, % of the window",
                9,
                |p| {
                    let x = p.stat(moving_pct).0;
                    x.is_finite().then(|| format!("{x:.0}"))
                },
            );
        }
    }

    fn verdict(&self, _meta: &RunMeta, points: &[&Point], _all: &[Point]) -> Vec<Section> {
        by_params(points)
            .into_iter()
            .map(|(params, group)| {
                let locks = distinct(group.iter().map(|p| p.lock.as_str()));
                let mut threads = distinct(group.iter().map(|p| p.threads));
                threads.sort_unstable();
                let mut lines = Vec::new();
                for (label, pred) in [("1 socket", 1u32..=1), ("2+ sockets", 2..=u32::MAX)] {
                    let ts: Vec<u32> = threads
                        .iter()
                        .copied()
                        .filter(|&t| t > 1 && pred.contains(&sockets_spanned(params, t)))
                        .collect();
                    if ts.is_empty() {
                        continue;
                    }
                    let group_label = format!(
                        "{} ({label})",
                        if ts.len() == 1 {
                            format!("{} threads", ts[0])
                        } else {
                            format!("{}–{} threads", ts[0], ts[ts.len() - 1])
                        }
                    );
                    let questions: [Question; 2] =
                        [("fastest", |r| r.throughput_ops_s), ("fairest", |r| r.jain)];
                    for (q, f) in questions {
                        let entrants = entrants(&group, &locks, &ts, f);
                        if let Some(p) = pick(&entrants, false) {
                            lines.push(Line {
                                group: group_label.clone(),
                                question: q.to_string(),
                                answer: p.answer(),
                                evidence: p.evidence("over"),
                                json: json!({
                                    "group": group_label, "threads": ts, "question": q,
                                    "pick": p.json(), "simulated": true,
                                }),
                            });
                        }
                    }
                }
                Section {
                    study: BENCH.to_string(),
                    title: format!(
                        "simulated {} ({}), critical section {} ns",
                        params
                            .get("topology")
                            .and_then(Value::as_str)
                            .unwrap_or("?"),
                        params
                            .get("placement")
                            .and_then(Value::as_str)
                            .unwrap_or("?"),
                        params.get("cs_ns").and_then(Value::as_u64).unwrap_or(0)
                    ),
                    lines,
                }
            })
            .collect()
    }

    fn plot(&self) -> Option<crate::core::study::PlotFn> {
        Some(|meta, points, out, log_y| {
            crate::core::plot::threads::by_threads(meta, points, BENCH, out, log_y)
        })
    }
}

impl RunCommand for SimSpinArgs {
    const STUDY: Option<&'static dyn Study> = Some(&SimSpin);

    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        command(ctx, self)
    }
}
