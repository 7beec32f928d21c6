//! `bench spin`: contention. Threads take one lock in a loop with work
//! inside and a delay outside; the sweep of
//! [`crate::studies::shared::contention`] measures every lock's
//! repetitions, interleaved. `bench lhp` runs the same sweep over other
//! thread counts.

pub mod args;

use crate::core::error::Result;
use crate::core::progress::Progress;
use crate::core::registry;
use crate::core::results::{Point, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::{Ctx, Outcome, RunCommand, Study};
use crate::studies::shared::contention::{report, run, spin_cfg, verdict, SpinPlan};
use args::SpinArgs;
use serde_json::json;

/// The name its points are stored under.
pub const BENCH: &str = "spin";

/// `bench spin`: measures and stores the sweep; returns the exit code.
pub fn command(ctx: &Ctx, a: &SpinArgs) -> Result<Outcome> {
    let plan = SpinPlan {
        bench: BENCH,
        locks: crate::core::locks::parse_list(&a.locks)?,
        threads: a.threads.0.clone(),
        reps: a.reps,
        cfg: spin_cfg(&a.work, a.delay_ns, a.secs)?,
    };
    let params = json!({ "locks": registry::names_of(&plan.locks), "threads": plan.threads, "reps": plan.reps, "spin": plan.cfg });
    let progress = Progress::new(plan.units(), ctx.progress_quiet());
    let r = stored_run(ctx, "bench spin", params, &progress, |sink| {
        run(&plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The study's reports: by parameter set, throughput, fairness, latency and
/// CPU time against threads.
pub struct Spin;

impl Study for Spin {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        for (params, group) in crate::core::report::by_params(points) {
            out.push('\n');
            report::tables(out, BENCH, params, &group);
        }
    }

    fn verdict(
        &self,
        meta: &RunMeta,
        points: &[&Point],
        _all: &[Point],
    ) -> Vec<crate::core::verdict::Section> {
        verdict::sections(BENCH, meta, points)
    }

    fn brief(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        for (params, group) in crate::core::report::by_params(points) {
            out.push('\n');
            report::throughput_table(out, BENCH, params, &group);
        }
    }

    fn plot(&self) -> Option<crate::core::study::PlotFn> {
        Some(|meta, points, out, log_y| {
            crate::core::plot::threads::by_threads(meta, points, BENCH, out, log_y)
        })
    }
}

impl RunCommand for SpinArgs {
    const STUDY: Option<&'static dyn Study> = Some(&Spin);

    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        command(ctx, self)
    }
}
