//! Runs the simulations of `sim lhp` side by side and turns their tables
//! into stored points.
//!
//! Every repetition is the whole plan of its setup (`experiment::plan`)
//! with the repetition's seed. The simulations of all repetitions are
//! independent and single-threaded, so worker threads take them one at a
//! time from one list; a repetition is tabulated once every simulation of
//! it has finished. Ctrl-C stops the workers between simulations: the
//! repetitions already whole are kept.
//!
//! The simulator is a parameter, so the runner, the tabulation and the
//! mapping to points can be checked without the engine.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Instant;

use locklab_model::lhp::experiment::{plan, tabulate, Job, Role};
use locklab_model::lhp::{ConfigError, Scenario, Setup, SimResult, Table};
use serde_json::Value;

pub use super::metrics::{SimMetrics, BENCH};
use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::results::{Point, Rep};

/// One repetition with every simulation finished, tabulated.
#[derive(Debug, Clone, PartialEq)]
pub struct RepRun {
    /// Repetition number, from 0.
    pub rep: u32,
    /// Its seed.
    pub seed: u64,
    /// Its table.
    pub table: Table,
    /// Per row of the table: wall-clock and CPU seconds of the row's
    /// simulation.
    pub row_times: Vec<(f64, f64)>,
    /// Events of every simulation of the repetition, baselines included.
    pub events: u64,
    /// Wall-clock seconds those simulations took, summed.
    pub sim_s: f64,
}

/// What a run of the plans produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The repetitions that finished, in order.
    pub reps: Vec<RepRun>,
    /// Wall-clock seconds from the first simulation to the last.
    pub wall_s: f64,
    /// Worker threads used.
    pub threads: usize,
    /// Whether every simulation of every repetition ran (false after Ctrl-C).
    pub complete: bool,
}

/// One simulation's result and what it cost.
struct Timed {
    result: SimResult,
    wall_s: f64,
    cpu_s: f64,
}

/// What a worker reports when a simulation panicked.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_string())
}

/// How often the caller's thread looks for Ctrl-C while simulations run.
const POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// What the workers share with the caller's thread.
struct Shared<F> {
    plans: Vec<Vec<Job>>,
    work: Vec<(usize, usize)>,
    many_reps: bool,
    simulate: F,
    progress: Progress,
    done: Mutex<Vec<Vec<Option<Timed>>>>,
    next: AtomicUsize,
    stop: AtomicBool,
    failure: Mutex<Option<LabError>>,
}

impl<F> Shared<F>
where
    F: Fn(&Scenario) -> Result<SimResult, ConfigError>,
{
    fn fail(&self, e: LabError) {
        self.stop.store(true, Ordering::Relaxed);
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert(e);
    }

    /// A worker: takes simulations from the list until it is empty, a
    /// simulation failed, or the user asked to stop.
    fn work(&self) {
        loop {
            if self.stop.load(Ordering::Relaxed) || crate::core::interrupt::requested() {
                return;
            }
            let Some(&(r, j)) = self.work.get(self.next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            let job = &self.plans[r][j];
            let label = if self.many_reps {
                format!("rep {}: {}", r + 1, job.label)
            } else {
                job.label.clone()
            };
            self.progress.step(label.clone());
            let t0 = Instant::now();
            let c0 = crate::core::clock::thread_cpu_s();
            let out = catch_unwind(AssertUnwindSafe(|| (self.simulate)(&job.scenario)));
            let (wall_s, cpu_s) = (
                t0.elapsed().as_secs_f64(),
                crate::core::clock::thread_cpu_s() - c0,
            );
            match out {
                Ok(Ok(result)) => {
                    // After Ctrl-C the caller has taken the results and
                    // left an empty list: a late result goes nowhere.
                    let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(slot) = done.get_mut(r).and_then(|rep| rep.get_mut(j)) {
                        *slot = Some(Timed {
                            result,
                            wall_s,
                            cpu_s,
                        });
                        self.progress.done_one();
                    }
                }
                Ok(Err(e)) => self.fail(LabError::input(format!(
                    "simulation `{label}` refused its scenario: {e}"
                ))),
                Err(p) => self.fail(LabError::failed(format!(
                    "simulation `{label}` (seed {}) failed: the simulator panicked: {}",
                    job.scenario.seed,
                    panic_text(p.as_ref())
                ))),
            }
        }
    }
}

/// Runs every simulation of every setup (one setup per repetition, in
/// repetition order) on up to `threads` worker threads with `simulate`,
/// and tabulates each repetition that finished.
///
/// Ctrl-C returns within `POLL` with the repetitions already whole
/// (`complete` false): a simulation cannot be cut short from outside and
/// one can take minutes, so the workers still in one are left to the
/// process, which ends them as it exits.
pub fn run<F>(setups: &[Setup], threads: usize, simulate: F, progress: &Progress) -> Result<Outcome>
where
    F: Fn(&Scenario) -> Result<SimResult, ConfigError> + Send + Sync + 'static,
{
    let plans: Vec<Vec<Job>> = setups.iter().map(plan).collect();
    let work: Vec<(usize, usize)> = plans
        .iter()
        .enumerate()
        .flat_map(|(r, jobs)| (0..jobs.len()).map(move |j| (r, j)))
        .collect();
    let done = Mutex::new(
        plans
            .iter()
            .map(|jobs| jobs.iter().map(|_| None).collect())
            .collect(),
    );
    let workers = threads.clamp(1, work.len().max(1));
    let shared = Arc::new(Shared {
        many_reps: setups.len() > 1,
        plans,
        work,
        simulate,
        progress: progress.clone(),
        done,
        next: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
        failure: Mutex::new(None),
    });
    let start = Instant::now();
    // Each worker holds a sender; the channel disconnects when the last
    // one has returned.
    let (alive, finished) = mpsc::channel::<()>();
    let mut started = 0;
    for w in 0..workers {
        let (mine, alive) = (Arc::clone(&shared), alive.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("sim-{w}"))
            .spawn(move || {
                mine.work();
                drop(alive);
            });
        match spawned {
            Ok(_) => started += 1,
            Err(e) if started == 0 => shared.fail(LabError::failed(format!(
                "cannot start a simulation thread: {e}"
            ))),
            Err(_) => break,
        }
    }
    drop(alive);
    let interrupted = loop {
        match finished.recv_timeout(POLL) {
            Err(mpsc::RecvTimeoutError::Disconnected) => break false,
            _ if crate::core::interrupt::requested() => {
                shared.stop.store(true, Ordering::Relaxed);
                break true;
            }
            _ => {}
        }
    };
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(e) = shared
        .failure
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(e);
    }
    let plans = &shared.plans;
    // The results so far. A worker still in a simulation after Ctrl-C
    // would store its result in what is left behind, which is not read.
    let done: Vec<Vec<Option<Timed>>> =
        std::mem::take(&mut *shared.done.lock().unwrap_or_else(|p| p.into_inner()));
    let complete = !interrupted && done.iter().flatten().all(Option::is_some);
    let mut reps = Vec::new();
    for (r, (results, (setup, jobs))) in done.into_iter().zip(setups.iter().zip(plans)).enumerate()
    {
        let Some(timed) = results.into_iter().collect::<Option<Vec<Timed>>>() else {
            continue;
        };
        let sims: Vec<SimResult> = timed.iter().map(|t| t.result.clone()).collect();
        let table =
            catch_unwind(AssertUnwindSafe(|| tabulate(setup, jobs, &sims))).map_err(|p| {
                LabError::failed(format!(
                    "the simulator's results do not fit the plan of repetition {}: {}",
                    r + 1,
                    panic_text(p.as_ref())
                ))
            })?;
        // Rows are the plan's cells in order.
        let row_times = jobs
            .iter()
            .zip(&timed)
            .filter(|(job, _)| matches!(job.role, Role::Cell { .. }))
            .map(|(_, t)| (t.wall_s, t.cpu_s))
            .collect();
        reps.push(RepRun {
            rep: r as u32,
            seed: setup.base.seed,
            table,
            row_times,
            events: timed.iter().map(|t| t.result.events).sum(),
            sim_s: timed.iter().map(|t| t.wall_s).sum(),
        });
    }
    Ok(Outcome {
        reps,
        wall_s,
        threads: workers,
        complete,
    })
}

/// The points to store: one per row (a case under a policy), one
/// repetition per finished repetition, each with `params`.
pub fn points(out: &Outcome, params: &Value) -> Vec<Point> {
    let Some(first) = out.reps.first() else {
        return Vec::new();
    };
    first
        .table
        .rows
        .iter()
        .enumerate()
        .map(|(i, head)| Point {
            bench: BENCH.to_string(),
            lock: head.policy.name().to_string(),
            threads: head.vms,
            params: params.clone(),
            reps: out
                .reps
                .iter()
                .filter_map(|rr| {
                    let row = rr.table.rows.get(i)?;
                    if (row.policy, row.vms) != (head.policy, head.vms) {
                        return None;
                    }
                    let (wall_s, cpu_s) = rr.row_times.get(i).copied()?;
                    Some(rep_of(rr, row, wall_s, cpu_s, out.wall_s))
                })
                .collect(),
        })
        .collect()
}

/// One stored repetition of a row: the simulator's work in the `Rep`
/// fields, the row in `sim`.
fn rep_of(
    rr: &RepRun,
    row: &locklab_model::lhp::Row,
    wall_s: f64,
    cpu_s: f64,
    run_wall_s: f64,
) -> Rep {
    let mut rep = Rep::one_thread(rr.rep, wall_s, cpu_s, row.events);
    rep.set_metrics(&SimMetrics {
        seed: rr.seed,
        row: row.metrics.clone(),
        plan_events: rr.events,
        plan_sim_s: rr.sim_s,
        run_wall_s,
    });
    rep
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use locklab_model::lhp::{Experiment, Params, Percentiles, Policy, VmResult};

    /// A stand-in for the engine, for these tests only: every VM runs at a
    /// throughput set by its workload, its policy and its seed, so the
    /// tables have numbers to check. It simulates nothing.
    pub(crate) fn fake_simulate(s: &Scenario) -> std::result::Result<SimResult, ConfigError> {
        s.validate()?;
        let alone = s.vms.len() == 1 && s.vms[0].count == 1;
        let factor = match s.policy {
            Policy::None => 1.0,
            Policy::Itcs => 3.0,
            Policy::Sitcs => 2.5,
            _ => 1.5,
        };
        let secs = s.duration_ns / 1e9;
        let mut vms = Vec::new();
        for spec in &s.vms {
            for k in 0..spec.count {
                let base = 1000.0 + (s.seed % 7) as f64;
                let tput = if alone {
                    base
                } else if spec.workload.sections > 0 {
                    base * 0.1 * factor
                } else {
                    base * 0.5
                };
                vms.push(VmResult {
                    name: format!("{}#{}", spec.name, k + 1),
                    workload: spec.workload.name.clone(),
                    vcpus: spec.vcpus,
                    work: (tput * secs) as u64,
                    sections: 0,
                    user_ns: 0.0,
                    throughput: tput,
                    cpu_ns: 1e6,
                    spin_ns: 2e5 / factor,
                    overhead_ns: 1e4,
                    utilization: 0.1,
                    ple_exits: 50,
                    switches: 500,
                    halts: 0,
                    holder_preemptions: 3,
                    response: Percentiles {
                        count: u64::from(spec.workload.think.is_some()) * 100,
                        p50_ns: 40_000.0 / factor,
                        p99_ns: 90_000.0 / factor,
                        mean_ns: 50_000.0,
                    },
                });
            }
        }
        Ok(SimResult {
            sim_ns: s.duration_ns,
            pcpus: s.host.pcpus,
            idle_ns: 0.0,
            events: 1000 * vms.len() as u64,
            vms,
            switches: 1000,
            migrations: 10,
        })
    }

    fn setups(e: Experiment, policies: &[Policy], reps: u64) -> Vec<Setup> {
        (0..reps)
            .map(|r| {
                let p = Params {
                    policies: policies.to_vec(),
                    max_vms: 3,
                    duration_ns: 1e7,
                    warmup_ns: 0.0,
                    seed: 5 + r,
                    ..Params::default()
                };
                Setup::experiment(e, &p)
            })
            .collect()
    }

    #[test]
    fn every_repetition_is_tabulated_with_its_seed_and_times() {
        let s = setups(Experiment::Performance, &[Policy::Itcs], 3);
        let progress = Progress::counting(0, true, "simulations");
        let out = run(&s, 4, fake_simulate, &progress).unwrap();
        assert!(out.complete);
        assert_eq!(out.reps.len(), 3);
        assert!(out.threads >= 1 && out.threads <= 4);
        for (r, rr) in out.reps.iter().enumerate() {
            assert_eq!(rr.rep, r as u32);
            assert_eq!(rr.seed, 5 + r as u64);
            let policies: Vec<Policy> = rr.table.rows.iter().map(|r| r.policy).collect();
            assert_eq!(policies, vec![Policy::None, Policy::Itcs]);
            assert_eq!(rr.row_times.len(), 2);
            // One baseline (one oltp VM) and two cells of 4 VMs.
            assert_eq!(rr.events, 1000 + 2 * 4000);
            assert!((rr.table.rows[1].metrics.speedup - 3.0).abs() < 1e-9);
        }
        let points = points(&out, &serde_json::json!({"experiment": "performance"}));
        assert_eq!(points.len(), 2);
        let itcs = &points[1];
        assert_eq!(
            (itcs.bench.as_str(), itcs.lock.as_str(), itcs.threads),
            (BENCH, "itcs", 4)
        );
        assert_eq!(itcs.reps.len(), 3);
        let r = &itcs.reps[2];
        assert_eq!(
            (r.rep, r.total_ops, r.thread_ops.clone()),
            (2, 4000, vec![4000])
        );
        let m = r.metrics_of::<SimMetrics>().unwrap();
        assert_eq!(m.seed, 7);
        assert_eq!(m.plan_events, 9000);
        assert_eq!(m.row.per_vm.len(), 4);
        assert!((m.row.speedup - 3.0).abs() < 1e-9);
        assert!((m.row.throughput_norm - 0.3).abs() < 1e-9);
        assert_eq!(m.row.response_p50_us, None);
    }

    #[test]
    fn scalability_has_a_row_per_policy_and_vm_count() {
        let s = setups(Experiment::Scalability, &[Policy::Dtcs], 1);
        let out = run(&s, 2, fake_simulate, &Progress::counting(0, true, "x")).unwrap();
        let points = points(&out, &Value::Null);
        let keys: Vec<(String, u32)> = points.iter().map(|p| (p.lock.clone(), p.threads)).collect();
        let want: Vec<(String, u32)> = (1..=3)
            .flat_map(|n| [("none".to_string(), n), ("dtcs".to_string(), n)])
            .collect();
        assert_eq!(keys, want);
    }

    #[test]
    fn a_refused_scenario_or_a_panic_is_an_error_not_a_crash() {
        let s = setups(Experiment::Performance, &[Policy::Itcs], 2);
        let progress = Progress::counting(0, true, "simulations");
        let e = run(
            &s,
            3,
            |_: &Scenario| -> std::result::Result<SimResult, ConfigError> {
                panic!("engine missing")
            },
            &progress,
        )
        .unwrap_err();
        assert_eq!(e.code, crate::core::error::EXIT_FAILED);
        assert!(
            e.msg.contains("the simulator panicked: engine missing"),
            "{}",
            e.msg
        );
        let e = run(
            &s,
            1,
            |_: &Scenario| Err(ConfigError::new("host.pcpus", "bad")),
            &progress,
        )
        .unwrap_err();
        assert_eq!(e.code, crate::core::error::EXIT_INPUT);
        assert!(e.msg.contains("host.pcpus: bad"), "{}", e.msg);
    }

    #[test]
    fn latency_rows_carry_response_times() {
        let s = setups(Experiment::Latency, &[Policy::Itcs], 1);
        let out = run(&s, 1, fake_simulate, &Progress::counting(0, true, "x")).unwrap();
        let p = points(&out, &Value::Null);
        let m = p[1].reps[0].metrics_of::<SimMetrics>().unwrap();
        assert_eq!(m.row.response_p50_us, Some(40.0 / 3.0));
        assert!((m.row.response_change.unwrap() - (1.0 / 3.0 - 1.0)).abs() < 1e-9);
    }
}
