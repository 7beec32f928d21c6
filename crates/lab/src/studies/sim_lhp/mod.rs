//! `locklab sim lhp`: seed 004's experiments on lock-holder preemption in
//! VMs (or a scenario file's), simulated by `locklab_model::lhp` under each
//! host policy, stored as a run like a benchmark's and reported as a table
//! per experiment ([`report`]) or plotted ([`plot`]).
//!
//! Everything the command line and the file say is checked, every
//! simulation's scenario included, before the database is opened: bad
//! input leaves the database as it was.

pub mod args;
pub mod metrics;
pub mod plot;
pub mod report;
pub mod runner;
pub mod scenario;

use locklab_model::lhp::{ConfigError, Experiment, Params, Policy, Scenario, Setup};
use serde_json::{json, Value};

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::results::{Point, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use args::{PleChoice, SimLhpArgs};
pub use metrics::{BENCH, KIND};

/// Simulated seconds measured per simulation unless `--secs` says otherwise.
pub const DEFAULT_SECS: f64 = 1.0;
/// Simulated seconds of warm-up unless `--warmup-secs` says otherwise.
pub const DEFAULT_WARMUP_SECS: f64 = 0.2;

/// What `sim lhp` will run, checked.
#[derive(Debug, Clone)]
pub struct SimPlan {
    /// One setup per repetition, seeds counting up from the first.
    pub setups: Vec<Setup>,
    /// Worker threads.
    pub threads: usize,
    /// Every point's parameters (the experiment and all its settings).
    pub point_params: Value,
    /// The run's parameters (the same, with repetitions and threads).
    pub run_params: Value,
}

impl SimPlan {
    /// Simulations to run, for progress.
    pub fn units(&self) -> u64 {
        self.setups
            .iter()
            .map(|s| locklab_model::lhp::experiment::plan(s).len() as u64)
            .sum()
    }
}

/// Runs `sim lhp`; returns the exit code.
pub fn run(ctx: &Ctx, a: &SimLhpArgs) -> Result<Outcome> {
    let plan = resolve(a)?;
    let progress = Progress::counting(plan.units(), ctx.progress_quiet(), "simulations");
    let r = stored_run(ctx, KIND, plan.run_params.clone(), &progress, |sink| {
        let out = runner::run(
            &plan.setups,
            plan.threads,
            locklab_model::lhp::simulate,
            &progress,
        )?;
        for p in runner::points(&out, &plan.point_params) {
            sink(p)?;
        }
        Ok(out.complete)
    });
    progress.finish();
    r
}

impl crate::core::study::RunCommand for SimLhpArgs {
    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        run(ctx, self)
    }
}

/// The plan of a command line: an experiment from the flags, or a scenario
/// file with the flags that override it.
pub fn resolve(a: &SimLhpArgs) -> Result<SimPlan> {
    let threads = a
        .threads
        .map_or_else(crate::core::machine::cpus, |t| t as usize);
    let reps = u64::from(a.reps);
    let (setups, mut params) = match &a.config {
        Some(path) => from_file(a, path, reps)?,
        None => from_flags(a, reps)?,
    };
    // No more workers than simulations: the run records the threads used.
    let jobs: usize = setups
        .iter()
        .map(|s| locklab_model::lhp::experiment::plan(s).len())
        .sum();
    let threads = threads.clamp(1, jobs.max(1));
    let point_params = params.clone();
    if let Value::Object(m) = &mut params {
        // The scenario of a file is on every point; the run keeps its name.
        m.remove("scenario");
        m.insert("reps".into(), json!(a.reps));
        m.insert("threads".into(), json!(threads));
    }
    Ok(SimPlan {
        setups,
        threads,
        point_params,
        run_params: params,
    })
}

/// Refuses a flag that only means something for an experiment.
fn experiment_only(a: &SimLhpArgs) -> Result<()> {
    let given = [
        ("--pcpus", a.pcpus.is_some(), "[host] pcpus"),
        ("--vcpus", a.vcpus.is_some(), "vcpus of each [[vm]]"),
        ("--lock", a.lock.is_some(), "lock of each [[vm]]"),
        ("--ple", a.ple.is_some(), "the [ple] table"),
        ("--max-vms", a.max_vms.is_some(), "the [[vm]] tables"),
    ];
    for (flag, set, instead) in given {
        if set {
            return Err(LabError::input(format!(
                "{flag} is for --experiment; with --config the scenario file sets it ({instead})"
            )));
        }
    }
    Ok(())
}

fn too_long(secs: f64, warmup: f64) -> Result<()> {
    if secs + warmup > args::MAX_SIM_SECS {
        return Err(LabError::input(format!(
            "--secs {secs} plus --warmup-secs {warmup} is more than one simulated hour \
             ({} s): allowed up to that in all",
            args::MAX_SIM_SECS
        )));
    }
    Ok(())
}

fn names(policies: &[Policy]) -> Vec<&'static str> {
    policies.iter().map(|p| p.name()).collect()
}

fn from_flags(a: &SimLhpArgs, reps: u64) -> Result<(Vec<Setup>, Value)> {
    let e = a.experiment.unwrap_or(Experiment::Performance);
    if a.max_vms.is_some() && e != Experiment::Scalability {
        return Err(LabError::input(format!(
            "--max-vms is for --experiment scalability (the VM counts it sweeps); {} has a fixed set of VMs",
            e.name()
        )));
    }
    let secs = a.secs.unwrap_or(DEFAULT_SECS);
    let warmup = a.warmup_secs.unwrap_or(DEFAULT_WARMUP_SECS);
    too_long(secs, warmup)?;
    let defaults = Params::default();
    let ple = a.ple.unwrap_or(PleChoice::Seed);
    let base = Params {
        host: locklab_model::lhp::Host::new(a.pcpus.unwrap_or(defaults.host.pcpus)),
        ple: ple.ple(),
        vcpus: a.vcpus.unwrap_or(defaults.vcpus),
        lock: a.lock.unwrap_or(defaults.lock),
        policies: a
            .policies
            .as_ref()
            .map_or_else(|| Policy::ALL.to_vec(), |p| p.0.clone()),
        max_vms: a.max_vms.unwrap_or(defaults.max_vms),
        duration_ns: secs * 1e9,
        warmup_ns: warmup * 1e9,
        seed: a.seed.unwrap_or(defaults.seed),
    };
    let setups: Vec<Setup> = (0..reps)
        .map(|r| {
            Setup::experiment(
                e,
                &Params {
                    seed: base.seed.wrapping_add(r),
                    ..base.clone()
                },
            )
        })
        .collect();
    check_jobs(&setups, |err| {
        let flag = match err.field.as_str() {
            "host.pcpus" => "--pcpus".to_string(),
            "duration" => "--secs".to_string(),
            "warmup" => "--warmup-secs".to_string(),
            f if f.starts_with("vm[") && f.ends_with("].vcpus") => "--vcpus".to_string(),
            "vm" => "--vcpus and the experiment's VMs".to_string(),
            f => format!("{} (from the flags)", f),
        };
        LabError::input(format!("{flag}: {}", err.message))
    })?;
    let mut params = json!({
        "experiment": e.name(),
        "policies": names(&setups[0].policies),
        "pcpus": base.host.pcpus,
        "vcpus": base.vcpus,
        "lock": base.lock.name(),
        "ple": ple.name(),
        "max_vms": (e == Experiment::Scalability).then_some(base.max_vms),
        "secs": secs,
        "warmup_secs": warmup,
        "seed": base.seed,
    });
    if let Value::Object(m) = &mut params {
        m.retain(|_, v| !v.is_null());
    }
    Ok((setups, params))
}

fn from_file(a: &SimLhpArgs, path: &std::path::Path, reps: u64) -> Result<(Vec<Setup>, Value)> {
    experiment_only(a)?;
    if let (Some(s), Some(w)) = (a.secs, a.warmup_secs) {
        too_long(s, w)?;
    }
    let overrides = scenario::Overrides {
        secs: a.secs,
        warmup_secs: a.warmup_secs,
        seed: a.seed,
    };
    let file = scenario::load(path, &overrides)?;
    let policies = match (&a.policies, &file.policies) {
        (Some(p), _) => p.0.clone(),
        (None, Some(p)) => p.clone(),
        (None, None) => Policy::ALL.to_vec(),
    };
    let shown = path.display().to_string();
    let s = &file.scenario;
    let setups: Vec<Setup> = (0..reps)
        .map(|r| {
            let sc = Scenario {
                seed: s.seed.wrapping_add(r),
                ..s.clone()
            };
            Setup::custom(&file.name, &sc, &policies)
        })
        .collect();
    check_jobs(&setups, |err| {
        LabError::input(format!("{shown}: a simulation of the scenario: {err}"))
    })?;
    let params = json!({
        "experiment": file.name,
        "config": shown,
        "policies": names(&setups[0].policies),
        "secs": s.duration_ns / 1e9,
        "warmup_secs": s.warmup_ns / 1e9,
        "seed": s.seed,
        "scenario": scenario_json(s),
    });
    Ok((setups, params))
}

/// Checks every simulation's scenario before anything runs.
fn check_jobs(setups: &[Setup], err: impl Fn(&ConfigError) -> LabError) -> Result<()> {
    for setup in setups {
        for job in locklab_model::lhp::experiment::plan(setup) {
            job.scenario.validate().map_err(|e| err(&e))?;
        }
    }
    Ok(())
}

/// A scenario as stored with its points (the model's field names and ns).
pub fn scenario_json(s: &Scenario) -> Value {
    use locklab_model::lhp::{Dist, PleMode};
    let dist = |d: Dist| Value::String(d.to_string());
    let h = &s.host;
    let ple = match s.ple.mode {
        PleMode::Fixed => json!({
            "mode": "fixed", "gap_cycles": s.ple.gap_cycles, "window_cycles": s.ple.window_cycles,
        }),
        PleMode::Kvm {
            grow,
            shrink,
            max_cycles,
        } => json!({
            "mode": "kvm", "gap_cycles": s.ple.gap_cycles, "window_cycles": s.ple.window_cycles,
            "grow": grow, "shrink": shrink, "max_cycles": max_cycles,
        }),
    };
    let vms: Vec<Value> = s
        .vms
        .iter()
        .map(|v| {
            let w = &v.workload;
            json!({
                "name": v.name, "count": v.count, "vcpus": v.vcpus, "weight": v.weight,
                "workload": {
                    "name": w.name, "user": dist(w.user), "kernel": dist(w.kernel),
                    "hold": dist(w.hold), "sections": w.sections, "locks": w.locks,
                    "lock": w.lock.name(), "threads": w.threads, "think": w.think.map(dist),
                },
            })
        })
        .collect();
    json!({
        "host": {
            "pcpus": h.pcpus, "cpu_ghz": h.cpu_ghz, "sched_latency_ns": h.sched_latency_ns,
            "min_granularity_ns": h.min_granularity_ns,
            "wakeup_granularity_ns": h.wakeup_granularity_ns, "tick_ns": h.tick_ns,
            "balance_ns": h.balance_ns, "switch_ns": h.switch_ns, "exit_ns": h.exit_ns,
            "handoff_ns": h.handoff_ns, "spin_loop_cycles": h.spin_loop_cycles,
            "pv_spin_ns": h.pv_spin_ns,
        },
        "ple": ple,
        "vms": vms,
        "duration_ns": s.duration_ns,
        "warmup_ns": s.warmup_ns,
        "seed": s.seed,
    })
}

/// The study's reports: a table per experiment beside the seed's figures,
/// its own JSON object for a run of its kind, and bars per policy.
pub struct SimLhp;

impl Study for SimLhp {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        report::tables(out, meta, points);
    }

    fn own_json(&self, meta: &RunMeta, points: &[Point]) -> Option<serde_json::Value> {
        report::is_sim(meta, points).then(|| report::run_json(meta, points))
    }

    fn plot(&self) -> Option<crate::core::study::PlotFn> {
        Some(plot::plot)
    }

    fn plot_help(&self) -> Option<&'static str> {
        Some("`sim-lhp` draws a `sim lhp` run's normalized throughput per policy")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> SimLhpArgs {
        let mut argv = vec!["locklab"];
        argv.extend_from_slice(extra);
        #[derive(clap::Parser)]
        struct Line {
            #[command(flatten)]
            a: SimLhpArgs,
        }
        Line::try_parse_from(argv).unwrap().a
    }

    #[test]
    fn flags_make_one_setup_per_repetition_with_counting_seeds() {
        let p = resolve(&args(&[
            "--pcpus",
            "2",
            "--vcpus",
            "3",
            "--policies",
            "itcs",
            "--reps",
            "3",
            "--seed",
            "10",
            "--threads",
            "2",
            "--secs",
            "0.5",
            "--lock",
            "tas",
            "--ple",
            "kvm",
        ]))
        .unwrap();
        assert_eq!(p.setups.len(), 3);
        let seeds: Vec<u64> = p.setups.iter().map(|s| s.base.seed).collect();
        assert_eq!(seeds, vec![10, 11, 12]);
        let s = &p.setups[0];
        assert_eq!(s.name, "performance");
        assert_eq!(s.policies, vec![Policy::None, Policy::Itcs]);
        assert_eq!(s.base.host.pcpus, 2);
        assert_eq!(s.base.duration_ns, 5e8);
        assert_eq!(s.base.warmup_ns, 2e8);
        assert_eq!(s.base.ple, locklab_model::lhp::Ple::kvm());
        assert_eq!(s.cases[0].specs[0].vcpus, 3);
        assert_eq!(
            s.cases[0].specs[0].workload.lock,
            locklab_model::lhp::LockKind::Tas
        );
        assert_eq!(p.threads, 2);
        let few = resolve(&args(&["--policies", "itcs", "--threads", "64"])).unwrap();
        assert_eq!(few.threads, 3, "one worker per simulation at most");
        assert_eq!(few.run_params["threads"], 3);
        assert_eq!(p.point_params["experiment"], "performance");
        assert_eq!(p.point_params.get("max_vms"), None, "only for scalability");
        assert_eq!(p.point_params["policies"], json!(["none", "itcs"]));
        assert_eq!(p.run_params["reps"], 3);
        assert_eq!(p.point_params.get("reps"), None);
        // Two cases' worth? No: one baseline and two policies, three times.
        assert_eq!(p.units(), 9);
    }

    #[test]
    fn experiment_flags_are_refused_where_they_mean_nothing() {
        let e = resolve(&args(&["--max-vms", "4"])).unwrap_err();
        assert!(
            e.msg.contains("--max-vms is for --experiment scalability"),
            "{}",
            e.msg
        );
        let e = resolve(&args(&["--config", "x.toml", "--pcpus", "4"])).unwrap_err();
        assert!(
            e.msg.starts_with("--pcpus is for --experiment"),
            "{}",
            e.msg
        );
        let e = resolve(&args(&["--secs", "3000", "--warmup-secs", "700"])).unwrap_err();
        assert!(e.msg.contains("more than one simulated hour"), "{}", e.msg);
        // The whole experiment's vCPUs are checked before anything runs.
        let e = resolve(&args(&[
            "--experiment",
            "scalability",
            "--max-vms",
            "256",
            "--vcpus",
            "1024",
        ]))
        .unwrap_err();
        assert!(e.msg.contains("vCPUs in all is too many"), "{}", e.msg);
    }

    #[test]
    fn a_file_gives_the_scenario_and_flags_override_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.toml");
        std::fs::write(
            &path,
            "policies = [\"dtcs\"]\nseed = 4\n[host]\npcpus = 2\n[[vm]]\nworkload = \"hackbench\"\ncount = 2\nvcpus = 2\n",
        )
        .unwrap();
        let p = resolve(&args(&["--config", path.to_str().unwrap(), "--reps", "2"])).unwrap();
        let s = &p.setups[1];
        assert_eq!(s.name, "two");
        assert_eq!(s.policies, vec![Policy::None, Policy::Dtcs]);
        assert_eq!(s.base.seed, 5);
        assert_eq!(s.cases[0].vms, 2);
        assert_eq!(p.point_params["scenario"]["host"]["pcpus"], 2);
        // The preset's hold time, stored in Dist's own notation.
        let hold = locklab_model::lhp::Workload::preset("hackbench")
            .unwrap()
            .hold;
        assert_eq!(
            p.point_params["scenario"]["vms"][0]["workload"]["hold"],
            hold.to_string()
        );
        assert_eq!(p.run_params.get("scenario"), None);
        assert_eq!(p.run_params["config"], path.display().to_string());
        let p = resolve(&args(&[
            "--config",
            path.to_str().unwrap(),
            "--policies",
            "itcs",
            "--seed",
            "9",
        ]))
        .unwrap();
        assert_eq!(p.setups[0].policies, vec![Policy::None, Policy::Itcs]);
        assert_eq!(p.setups[0].base.seed, 9);
    }
}
