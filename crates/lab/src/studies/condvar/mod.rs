//! `bench condvar`: condition variables in a producer-consumer queue.
//! P producers and C consumers move items through one bounded queue
//! behind a mutex with two condition variables ([`queues`]), once with
//! each implementation: locklab's `Mutex` and `Condvar`, and as peers
//! `std`'s and `parking_lot`'s. [`runner`] measures one repetition (items
//! per second, CPU time per item, the consumers' shares, and that every
//! item arrived exactly once); the implementations' repetitions are
//! interleaved at each pairing, and [`report`] gives each one's rate as a
//! ratio to the best other one's, paired by repetition.

pub mod args;
pub mod queues;
pub mod report;
pub mod runner;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::results::{Point, Rep, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::{Ctx, Outcome, RunCommand, Study};
use crate::core::sweep::{Group, RepRun};
use args::CondvarArgs;
use queues::{Impl, LocklabQueue, ParkingLotQueue, Signal, StdQueue};
pub use runner::BENCH;
use runner::{CondvarConfig, Pair};
use serde_json::{json, Value};

/// What `bench condvar` measures.
pub struct CondvarPlan {
    /// Implementations, in display order.
    pub impls: Vec<Impl>,
    /// Pairings, in order.
    pub pairs: Vec<Pair>,
    /// Where to notify, each a setting of its own.
    pub signals: Vec<Signal>,
    /// Repetitions per point.
    pub reps: u32,
    /// Capacity, the producers' sleep and the window (`signal` is set per
    /// setting from `signals`).
    pub cfg: CondvarConfig,
}

impl CondvarPlan {
    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        (self.impls.len() * self.pairs.len() * self.signals.len()) as u64 * u64::from(self.reps)
    }
}

/// One repetition of an implementation.
pub type RepFn = fn(&CondvarConfig, Pair) -> std::result::Result<Rep, String>;

/// The repetition of `i`, monomorphized for its queue.
pub fn rep_fn(i: Impl) -> RepFn {
    match i {
        Impl::Locklab => runner::run_rep::<LocklabQueue>,
        Impl::Std => runner::run_rep::<StdQueue>,
        Impl::ParkingLot => runner::run_rep::<ParkingLotQueue>,
    }
}

/// A point's parameters: the configuration and the pairing.
fn point_params(cfg: &CondvarConfig, pair: Pair) -> Value {
    let mut v = serde_json::to_value(cfg).expect("config serialises");
    v["producers"] = json!(pair.producers);
    v["consumers"] = json!(pair.consumers);
    v
}

/// Runs the plan: per setting and pairing, every implementation's
/// repetitions interleaved. Returns `Ok(false)` if interrupted.
pub fn run(
    plan: &CondvarPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    for &signal in &plan.signals {
        let cfg = CondvarConfig {
            signal,
            ..plan.cfg.clone()
        };
        for &pair in &plan.pairs {
            let cfg = &cfg;
            let group = Group {
                bench: BENCH,
                threads: pair.threads(),
                params: point_params(cfg, pair),
                reps: plan.reps,
                contenders: plan
                    .impls
                    .iter()
                    .map(|&i| {
                        let run = rep_fn(i);
                        (
                            i.name().to_string(),
                            Box::new(move || run(cfg, pair)) as RepRun<'_>,
                        )
                    })
                    .collect(),
            };
            let done = group.run(
                progress,
                |name, rep| {
                    format!(
                        "condvar: {name} {pair}, notify {}, rep {rep}",
                        signal.as_str()
                    )
                },
                |name, e| LabError::failed(format!("bench condvar: {name} at {pair}: {e}")),
                sink,
            )?;
            if !done {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// `bench condvar`: measures and stores.
pub fn command(ctx: &Ctx, a: &CondvarArgs) -> Result<Outcome> {
    let plan = CondvarPlan {
        impls: a.impls.0.clone(),
        pairs: a.pairs.0.clone(),
        signals: a.signal.0.clone(),
        reps: a.reps,
        cfg: CondvarConfig {
            capacity: a.capacity,
            signal: a.signal.0[0],
            producer_sleep_ns: a.producer_sleep_ns,
            secs: a.secs,
        },
    };
    let params = json!({
        "impls": plan.impls.iter().map(|i| i.name()).collect::<Vec<_>>(),
        "pairs": plan.pairs.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
        "signal": plan.signals.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
        "capacity": plan.cfg.capacity,
        "producer_sleep_ns": plan.cfg.producer_sleep_ns,
        "secs": plan.cfg.secs,
        "reps": plan.reps,
    });
    let progress = Progress::new(plan.units(), ctx.progress_quiet());
    let r = stored_run(ctx, "bench condvar", params, &progress, |sink| {
        run(&plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The study's reports.
pub struct Condvar;

impl Study for Condvar {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        for (setting, group) in report::by_setting(points) {
            out.push('\n');
            report::tables(out, &setting, &group);
        }
    }

    fn brief(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        for (setting, group) in report::by_setting(points) {
            out.push('\n');
            report::rate_table(out, &setting, &group);
        }
    }

    fn point_json(&self, _meta: &RunMeta, p: &Point, of_study: &[&Point], _all: &[Point]) -> Value {
        report::point_json(p, of_study)
    }

    fn verdict(
        &self,
        _meta: &RunMeta,
        points: &[&Point],
        _all: &[Point],
    ) -> Vec<crate::core::verdict::Section> {
        report::verdict(points)
    }
}

impl RunCommand for CondvarArgs {
    const STUDY: Option<&'static dyn Study> = Some(&Condvar);

    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        command(ctx, self)
    }
}
