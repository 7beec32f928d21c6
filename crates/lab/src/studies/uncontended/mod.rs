//! `bench uncontended`: one thread, nanoseconds per acquire+release of
//! every lock and peer, beside the physical floor the ratios refer to
//! ([`runner`] measures one repetition).

pub mod args;
pub mod floor;
pub mod report;
pub mod runner;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::registry::{self, Entry};
use crate::core::results::{Point, Rep, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::core::sweep::{Group, RepRun};
use args::UncontendedArgs;
use floor::{Floor, Floor2Rmw, FloorU8};
pub use runner::{BENCH, FLOOR};
use serde_json::{json, Value};

/// One repetition of the uncontended benchmark for one lock.
pub type RepFn = fn(&runner::Config) -> std::result::Result<Rep, String>;

/// The references every uncontended comparison measures besides the locks:
/// the physical floor (which ratios refer to), the same on a byte, and the
/// two-RMW floor.
pub const REFERENCES: [(&str, RepFn); 3] = [
    (FLOOR, runner::run_rep::<Floor>),
    ("floor-u8", runner::run_rep::<FloorU8>),
    ("floor-2rmw", runner::run_rep::<Floor2Rmw>),
];

/// The uncontended comparison: every lock, plus the references.
pub struct UncontendedPlan {
    /// Locks, in display order.
    pub locks: Vec<&'static Entry>,
    /// Repetitions per lock.
    pub reps: u32,
    /// Target seconds per repetition.
    pub cfg: runner::Config,
}

impl UncontendedPlan {
    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        (self.locks.len() + REFERENCES.len()) as u64 * self.reps as u64
    }
}

struct Runs;
impl registry::MutexMaker<RepFn> for Runs {
    fn make<L: crate::core::lablock::LabMutex>(&self) -> RepFn {
        runner::run_rep::<L>
    }
}

/// The repetition of every mutex, in the registry's order.
fn runs() -> &'static [RepFn] {
    static RUNS: std::sync::OnceLock<Vec<RepFn>> = std::sync::OnceLock::new();
    RUNS.get_or_init(|| registry::per_mutex(Runs))
}

/// Runs the uncontended comparison: the references, then every lock, one
/// repetition of each in turn. Returns `Ok(false)` if interrupted.
pub fn run(
    plan: &UncontendedPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    let _companion = runner::Companion::start();
    let cfg = &plan.cfg;
    let references = REFERENCES.iter().copied();
    let locks = plan.locks.iter().map(|e| (e.info.name, runs()[e.index]));
    let group = Group {
        bench: BENCH,
        threads: 1,
        params: serde_json::to_value(cfg).expect("config serialises"),
        reps: plan.reps,
        contenders: references
            .chain(locks)
            .map(|(name, run)| (name.to_string(), Box::new(move || run(cfg)) as RepRun<'_>))
            .collect(),
    };
    group.run(
        progress,
        |name, _| format!("uncontended: {name}"),
        |name, e| LabError::failed(format!("bench uncontended: {name}: {e}")),
        sink,
    )
}

/// `bench uncontended`: measures and stores; returns the exit code.
pub fn command(ctx: &Ctx, a: &UncontendedArgs) -> Result<Outcome> {
    let plan = UncontendedPlan {
        locks: crate::core::locks::parse_list(&a.locks)?,
        reps: a.reps,
        cfg: runner::Config { secs: a.secs },
    };
    let params = json!({ "locks": registry::names_of(&plan.locks), "reps": plan.reps, "uncontended": plan.cfg });
    let progress = Progress::new(plan.units(), ctx.progress_quiet());
    let r = stored_run(ctx, "bench uncontended", params, &progress, |sink| {
        run(&plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The study's reports.
pub struct Uncontended;

impl Study for Uncontended {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], all: &[Point]) {
        for (params, group) in crate::core::report::by_params(points) {
            out.push('\n');
            report::table(out, params, &group, all);
        }
    }

    fn point_json(&self, _meta: &RunMeta, p: &Point, _of_study: &[&Point], all: &[Point]) -> Value {
        json!({ "ratio_to_floor": report::ratio_to_floor(p, all).map_or(Value::Null, Value::from) })
    }

    /// The cheapest lock per parameter set (ns per acquire+release, lower
    /// is better; the references are not locks) against its runner-up, and
    /// what it costs over the floor.
    fn verdict(
        &self,
        _meta: &RunMeta,
        points: &[&Point],
        all: &[Point],
    ) -> Vec<crate::core::verdict::Section> {
        crate::core::report::by_params(points)
            .into_iter()
            .map(|(_, group)| {
                let entrants: Vec<crate::core::verdict::Entrant> = group
                    .iter()
                    .filter(|p| !REFERENCES.iter().any(|(r, _)| *r == p.lock))
                    .map(|p| crate::core::verdict::Entrant {
                        name: p.lock.clone(),
                        values: p.reps.iter().map(|r| r.ns_per_op).collect(),
                    })
                    .collect();
                let lines = crate::core::verdict::pick(&entrants, true)
                    .map(|pk| {
                        let floor = group
                            .iter()
                            .find(|p| p.lock == pk.winner)
                            .and_then(|p| report::ratio_to_floor(p, all));
                        let cost = floor.map_or(String::new(), |f| {
                            format!("; {} the floor", crate::core::verdict::times(f))
                        });
                        crate::core::verdict::Line {
                            group: "1 thread".into(),
                            question: "cheapest".into(),
                            answer: pk.answer(),
                            evidence: format!("{}{cost}", pk.evidence("over")),
                            json: json!({ "pick": pk.json(), "ratio_to_floor": floor }),
                        }
                    })
                    .into_iter()
                    .collect();
                crate::core::verdict::Section {
                    study: BENCH.into(),
                    title: "no contention".into(),
                    lines,
                }
            })
            .collect()
    }

    fn plot(&self) -> Option<crate::core::study::PlotFn> {
        Some(|meta, points, out, log_x| {
            crate::core::plot::bars::by_lock(meta, points, BENCH, out, log_x)
        })
    }

    fn plot_help(&self) -> Option<&'static str> {
        Some("`uncontended` draws ns per acquire–release pair, one bar per lock and reference")
    }
}

impl crate::core::study::RunCommand for UncontendedArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Uncontended);

    fn run(&self, ctx: &crate::core::study::Ctx) -> crate::Result<crate::core::study::Outcome> {
        command(ctx, self)
    }
}
