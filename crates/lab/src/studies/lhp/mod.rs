//! `bench lhp`: lock-holder preemption. The contention sweep of
//! [`crate::studies::shared::contention`] at one thread and at multiples of this
//! machine's cores, with each lock's preemption sensitivity.

pub mod args;
pub mod report;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::registry;
use crate::core::results::{Point, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::studies::shared::contention::{self as spin, spin_cfg, SpinPlan};
use args::LhpArgs;
use serde_json::{json, Value};

/// The name its points are stored under.
pub const BENCH: &str = "lhp";

/// The thread counts of `bench lhp`: one thread (the rate every
/// oversubscribed point is compared with), then the multiples of this
/// machine's cores; an input error names the first multiple that exceeds
/// the thread limit.
pub(crate) fn lhp_threads(multiples: &[u32]) -> Result<Vec<u32>> {
    let cores = crate::core::machine::cpus() as u32;
    let mut threads = vec![1];
    for &m in multiples {
        let t = m * cores;
        if t > crate::core::args::MAX_THREADS {
            return Err(LabError::input(format!(
                "--multiples {m}: {m} × {cores} cores = {t} threads; allowed up to {} threads",
                crate::core::args::MAX_THREADS
            )));
        }
        if !threads.contains(&t) {
            threads.push(t);
        }
    }
    Ok(threads)
}

/// `bench lhp`: measures and stores the sweep; returns the exit code.
pub fn command(ctx: &Ctx, a: &LhpArgs) -> Result<Outcome> {
    let plan = SpinPlan {
        bench: BENCH,
        locks: crate::core::locks::parse_list(&a.locks)?,
        threads: lhp_threads(&a.multiples.0)?,
        reps: a.reps,
        cfg: spin_cfg(&a.work, a.delay_ns, a.secs)?,
    };
    let params = json!({ "locks": registry::names_of(&plan.locks), "threads": plan.threads, "reps": plan.reps, "lhp": plan.cfg });
    let progress = Progress::new(plan.units(), ctx.progress_quiet());
    let r = stored_run(ctx, "bench lhp", params, &progress, |sink| {
        spin::run(&plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The study's reports: the contention tables, then the sensitivity.
pub struct Lhp;

impl Study for Lhp {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        for (params, group) in crate::core::report::by_params(points) {
            out.push('\n');
            spin::report::tables(out, BENCH, params, &group);
            report::sensitivity_table(out, &group, meta.machine.cores as u32);
        }
    }

    fn run_keys(&self, meta: &RunMeta, points: &[&Point]) -> Vec<(&'static str, Value)> {
        let sensitivity: serde_json::Map<String, Value> =
            report::preemption_sensitivity(points, meta.machine.cores as u32)
                .into_iter()
                .map(|(lock, r)| (lock.to_string(), r.map_or(Value::Null, Value::from)))
                .collect();
        vec![("preemption_sensitivity", Value::Object(sensitivity))]
    }

    fn verdict(
        &self,
        meta: &RunMeta,
        points: &[&Point],
        _all: &[Point],
    ) -> Vec<crate::core::verdict::Section> {
        spin::verdict::sections(BENCH, meta, points)
    }

    fn brief(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        for (params, group) in crate::core::report::by_params(points) {
            out.push('\n');
            spin::report::throughput_table(out, BENCH, params, &group);
        }
    }

    fn plot(&self) -> Option<crate::core::study::PlotFn> {
        Some(|meta, points, out, log_y| {
            crate::core::plot::threads::by_threads(meta, points, BENCH, out, log_y)
        })
    }
}

impl crate::core::study::RunCommand for LhpArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Lhp);

    fn run(&self, ctx: &crate::core::study::Ctx) -> crate::Result<crate::core::study::Outcome> {
        command(ctx, self)
    }
}
