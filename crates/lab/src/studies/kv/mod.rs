//! `bench kv`: the seeds' key-value macro-benchmark on the emulated
//! microkernel (seed 000 §4.3 and §5.2, seed 002 §5.2): throughput, each
//! core's utilisation and Xput against cores under each kernel variant;
//! [`runner`] has the measurement and one repetition.

pub mod args;
pub mod plot;
pub mod report;
pub mod runner;
pub mod verdict;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::results::{Point, RunMeta};
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::core::sweep::Group;
use crate::noteln;
use crate::studies::shared::kernel::{
    check_fallback_used, chosen_variants, contenders, cores_or_default, measure_and_store, notes,
    run_group, NONE,
};
use args::KvArgs;
use report::BENCH;
use serde_json::{json, Value};

/// Every variant at every core count.
pub struct KvPlan {
    /// Kernel variants, in display order.
    pub variants: Vec<runner::KvVariant>,
    /// Emulated core counts.
    pub cores: Vec<u32>,
    /// Repetitions per point.
    pub reps: u32,
    /// Shared by every point.
    pub cfg: runner::KvConfig,
}

impl KvPlan {
    /// The variants that run at `cores`: all but `none` beyond one core,
    /// where the driver on core 0 signals servers on other cores (shared
    /// notifications and ready queues that `none` cannot protect).
    pub fn runs_at(&self, cores: u32) -> impl Iterator<Item = &runner::KvVariant> {
        self.variants
            .iter()
            .filter(move |v| cores == 1 || v.name != NONE)
    }

    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        self.cores
            .iter()
            .map(|&c| self.runs_at(c).count() as u64)
            .sum::<u64>()
            * u64::from(self.reps)
    }
}

/// Runs the plan. Returns `Ok(false)` if interrupted; a kernel whose
/// invariants break (or that hangs) is a failed check, after the points
/// finished before it are stored.
pub fn run(
    plan: &KvPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    for &cores in &plan.cores {
        let params = serde_json::to_value(&plan.cfg).expect("config serialises");
        let pt = runner::KvPoint { cores };
        let at = format!("{cores} cores");
        let group = Group {
            bench: BENCH,
            threads: cores,
            params,
            reps: plan.reps,
            contenders: contenders(plan.runs_at(cores), &plan.cfg, &pt),
        };
        if !run_group(group, &at, progress, sink)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `bench kv`: checks the arguments, then measures and stores; returns the
/// exit code.
pub fn command(ctx: &Ctx, a: &KvArgs) -> Result<Outcome> {
    let (variants, left_out) =
        chosen_variants::<runner::KvRuns>(a.variants.as_deref(), a.rep.allow_fallback)?;
    check_fallback_used(&variants, a.variants.is_some(), a.rep.allow_fallback)?;
    let cores = cores_or_default(a.cores.as_ref());
    let plan = KvPlan {
        variants,
        cores,
        reps: a.rep.reps,
        cfg: runner::KvConfig {
            secs: a.rep.secs,
            pin: a.rep.pin,
            records: a.records,
            workload: a.workload.0,
            keys: a.keys.0,
        },
    };
    if plan.units() == 0 {
        return Err(LabError::input(
            "nothing to measure: `none` is the only variant, and it runs at 1 core only (beyond, \
             the driver on core 0 and the servers share kernel objects); add 1 to --cores or \
             another variant",
        ));
    }
    if plan.variants.iter().any(|v| v.name == NONE) && plan.cores.iter().any(|&c| c > 1) {
        noteln!(
            "note: none runs at 1 core only: beyond, the driver on core 0 signals servers on other cores"
        );
    }
    notes(&plan.variants, &plan.cores, true, left_out);
    let params = json!({
        "cores": plan.cores, "reps": plan.reps, "kv": plan.cfg,
        "clients_per_server": locklab_kernel::kv::CLIENTS_PER_SERVER,
    });
    measure_and_store(
        ctx,
        BENCH,
        &plan.variants,
        params,
        plan.units(),
        |progress, sink| run(&plan, progress, sink),
    )
}

impl crate::core::study::RunCommand for KvArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Kv);

    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        command(ctx, self)
    }
}

/// The study's reports: throughput, utilisation and Xput against cores.
pub struct Kv;

impl Study for Kv {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        report::tables(out, meta, points);
    }

    fn point_json(&self, _meta: &RunMeta, p: &Point, _of: &[&Point], _all: &[Point]) -> Value {
        report::point_json(p)
    }

    fn verdict(
        &self,
        _meta: &RunMeta,
        points: &[&Point],
        _all: &[Point],
    ) -> Vec<crate::core::verdict::Section> {
        verdict::sections(points)
    }

    fn plot(&self) -> Option<crate::core::study::PlotFn> {
        Some(plot::plot)
    }

    fn plot_help(&self) -> Option<&'static str> {
        Some("`kv` draws key-value throughput and Xput against cores, per kernel variant")
    }
}
