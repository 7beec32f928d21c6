//! `bench ipc`: the emulated microkernel's IPC path under each kernel
//! concurrency control (seeds 000 and 002); [`runner`] has the
//! measurements and one repetition.

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
use crate::studies::shared::ipc_points::BENCH;
use crate::studies::shared::kernel::{
    check_fallback_used, chosen_variants, contenders, cores_or_default, measure_and_store, notes,
    run_group, NONE,
};
use args::IpcArgs;
use serde_json::{json, Value};

/// The kernel IPC benchmarks: every variant at every point of every mode.
pub struct IpcPlan {
    /// Kernel variants, in display order.
    pub variants: Vec<runner::IpcVariant>,
    /// Measurements, in order.
    pub modes: Vec<runner::Mode>,
    /// Core counts of `multi`, `shared` and `hold`.
    pub cores: Vec<u32>,
    /// Server delays of `multi`, ns; `shared` and `hold` use the first.
    pub delays_ns: Vec<u64>,
    /// Repetitions per point.
    pub reps: u32,
    /// Shared by every point.
    pub cfg: runner::IpcConfig,
}

impl IpcPlan {
    /// Every point, in the order they run.
    pub fn points(&self) -> Vec<runner::IpcPoint> {
        use runner::{IpcPoint, Mode};
        let first = self.delays_ns.first().copied().unwrap_or(0);
        let mut out = Vec::new();
        for &mode in &self.modes {
            match mode {
                Mode::Single => out.push(IpcPoint {
                    mode,
                    cores: 1,
                    delay_ns: 0,
                }),
                Mode::Multi => {
                    for &delay_ns in &self.delays_ns {
                        for &cores in &self.cores {
                            out.push(IpcPoint {
                                mode,
                                cores,
                                delay_ns,
                            });
                        }
                    }
                }
                Mode::Shared | Mode::Hold => {
                    for &cores in &self.cores {
                        out.push(IpcPoint {
                            mode,
                            cores,
                            delay_ns: first,
                        });
                    }
                }
            }
        }
        out
    }

    /// The variants that run at a point: all but `none` where cores share
    /// an endpoint (it has no synchronization).
    pub fn runs_at(&self, pt: &runner::IpcPoint) -> impl Iterator<Item = &runner::IpcVariant> {
        let shared = pt.mode == runner::Mode::Shared;
        self.variants
            .iter()
            .filter(move |v| !(shared && v.name == NONE))
    }

    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        self.points()
            .iter()
            .map(|p| self.runs_at(p).count() as u64)
            .sum::<u64>()
            * u64::from(self.reps)
    }
}

/// Runs the kernel IPC benchmarks. Returns `Ok(false)` if interrupted; a
/// kernel whose invariants break (or that hangs) is a failed check (exit
/// code 1), after the points finished before it are stored.
pub fn run(
    plan: &IpcPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    for pt in plan.points() {
        let mut params = serde_json::to_value(&plan.cfg).expect("config serialises");
        params["mode"] = pt.mode.name().into();
        params["delay_ns"] = pt.delay_ns.into();
        let at = format!(
            "{} × {} cores, delay {} ns",
            pt.mode.name(),
            pt.cores,
            pt.delay_ns
        );
        let group = Group {
            bench: BENCH,
            threads: pt.cores,
            params,
            reps: plan.reps,
            contenders: contenders(plan.runs_at(&pt), &plan.cfg, &pt),
        };
        if !run_group(group, &at, progress, sink)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// `bench ipc`: checks the arguments against this CPU (RTM) and each
/// other, then measures and stores; returns the exit code.
pub fn command(ctx: &Ctx, a: &IpcArgs) -> Result<Outcome> {
    let (variants, left_out) =
        chosen_variants::<runner::IpcRuns>(a.variants.as_deref(), a.rep.allow_fallback)?;
    ipc_options_used(a, &variants)?;
    let cores = cores_or_default(a.cores.as_ref());
    let plan = IpcPlan {
        variants,
        modes: a.modes.0.clone(),
        cores,
        delays_ns: a
            .delay_ns
            .as_ref()
            .map_or_else(|| DEFAULT_IPC_DELAYS_NS.to_vec(), |d| d.0.clone()),
        reps: a.rep.reps,
        cfg: runner::IpcConfig {
            secs: a.rep.secs,
            switch_ns: a.switch_ns,
            switch_inside: a.switch_inside,
            pin: a.rep.pin,
        },
    };
    if plan.units() == 0 {
        return Err(LabError::input(
            "nothing to measure: `none` is the only variant, and the only measurement is `shared`, \
             where cores share an endpoint that `none` cannot protect",
        ));
    }
    let oversubscribed = plan.modes.iter().any(|m| *m != runner::Mode::Single);
    notes(&plan.variants, &plan.cores, oversubscribed, left_out);
    let modes: Vec<&str> = plan.modes.iter().map(|m| m.name()).collect();
    let params = json!({
        "modes": modes, "cores": plan.cores, "delays_ns": plan.delays_ns, "reps": plan.reps,
        "ipc": plan.cfg,
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

impl crate::core::study::RunCommand for IpcArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Ipc);

    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        command(ctx, self)
    }
}

/// The server delays `bench ipc` sweeps unless `--delay-ns` says otherwise.
const DEFAULT_IPC_DELAYS_NS: [u64; 4] = [0, 250, 1000, 4000];

/// Refuses the `bench ipc` options that the chosen measurements and
/// variants would ignore.
fn ipc_options_used(a: &IpcArgs, variants: &[runner::IpcVariant]) -> Result<()> {
    use runner::Mode;
    let modes = &a.modes.0;
    let only_single = modes.iter().all(|m| *m == Mode::Single);
    if only_single && a.cores.is_some() {
        return Err(LabError::input(
            "--cores: the only measurement is single (one-way IPC on one core); \
             --cores is for multi, shared and hold",
        ));
    }
    if let Some(d) = &a.delay_ns {
        if only_single {
            return Err(LabError::input(
                "--delay-ns: the only measurement is single, which has no server delay; \
                 --delay-ns is for multi (every delay), shared and hold (the first)",
            ));
        }
        if d.0.len() > 1 && !modes.contains(&Mode::Multi) {
            return Err(LabError::input(format!(
                "--delay-ns lists {} delays, but only multi sweeps them (shared and hold use \
                 one); give one delay or add multi to --modes",
                d.0.len()
            )));
        }
    }
    check_fallback_used(variants, a.variants.is_some(), a.rep.allow_fallback)
}

/// The study's reports: IPC cost, throughput against cores, hold times,
/// and the throughput plot with the fitted queueing model.
pub struct Ipc;

impl Study for Ipc {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        report::tables(out, meta, points);
    }

    fn point_json(&self, meta: &RunMeta, p: &Point, of_study: &[&Point], _all: &[Point]) -> Value {
        report::point_json(meta, p, of_study)
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
        Some("`ipc` draws IPC throughput against cores with the fitted queueing model")
    }
}
