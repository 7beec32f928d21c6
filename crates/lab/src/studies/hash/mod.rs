//! `bench hash`: the hash-table lookup benchmark of seed 003 (McKenney,
//! "Using RCU in the Linux 2.5 Kernel", Figures 1, 4 and 5), measured by
//! [`crate::studies::shared::hashtable`]: its arguments, tables, chart and
//! verdict.

pub mod args;
pub mod peers;
pub mod plot;
pub mod report;
pub mod verdict;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::results::{Point, RunMeta};
use crate::core::run::stored_run;
use crate::core::study::Study;
use crate::core::study::{Ctx, Outcome};
use crate::noteln;
use crate::studies::shared::hashtable::{
    point, run, runner, strategies, HashConfig, HashPlan, BENCH,
};
use args::HashArgs;
use serde_json::{json, Value};

/// The table's keys from `--buckets`, `--keys` and `--chain`: the one of
/// keys and chain not given follows from the other (keys = buckets ×
/// chain; one element per bucket when neither is given); both given must
/// agree.
fn hash_keys(buckets: u64, keys: Option<u64>, chain: Option<u64>) -> Result<u64> {
    let max = runner::MAX_KEYS;
    let keys = match (keys, chain) {
        (Some(k), None) => k,
        (k, c) => {
            let c = c.unwrap_or(1);
            let product = buckets.saturating_mul(c);
            if let Some(k) = k.filter(|&k| k != product) {
                return Err(LabError::input(format!(
                    "--keys {k} disagrees with --buckets {buckets} × --chain {c} = {product}; \
                     give two of the three, or all three with keys = buckets × chain"
                )));
            }
            if product > max {
                return Err(LabError::input(format!(
                    "--buckets {buckets} × --chain {c} = {product} keys: allowed up to {max}"
                )));
            }
            product
        }
    };
    Ok(keys)
}

/// `bench hash`: checks the arguments, then measures and stores; returns
/// the exit code.
pub fn command(ctx: &Ctx, a: &HashArgs) -> Result<Outcome> {
    let strategies = strategies::parse(&a.strategies)?;
    let keys = hash_keys(a.buckets, a.keys, a.chain)?;
    let plan = HashPlan {
        strategies,
        threads: a.threads.0.clone(),
        update_pcts: a.update_pct.0.clone(),
        reps: a.reps,
        cfg: HashConfig::new(a.buckets as usize, keys, a.secs, a.pin),
    };
    run_plan(ctx, "bench hash", &plan)
}

/// Says where the read-only strategy is left out, then measures and stores.
pub(crate) fn run_plan(ctx: &Ctx, kind: &str, plan: &HashPlan) -> Result<Outcome> {
    if plan.units() == 0 {
        return Err(LabError::input(
            "nothing to measure: the only strategy chosen is `none`, which runs at 0 % updates only; \
             add 0 to --update-pct or choose other strategies",
        ));
    }
    let skipped: Vec<String> = plan
        .update_pcts
        .iter()
        .filter(|&&u| u > 0)
        .map(|u| format!("{u} %"))
        .collect();
    for s in plan.strategies.iter().filter(|s| s.read_only) {
        if !skipped.is_empty() {
            noteln!(
                "note: {} is unsynchronized and runs at 0 % updates only; skipped at {}",
                s.name,
                skipped.join(", ")
            );
        }
    }
    let names: Vec<&str> = plan.strategies.iter().map(|s| s.name.as_str()).collect();
    let params = json!({
        "strategies": names, "threads": plan.threads, "update_pcts": plan.update_pcts,
        "reps": plan.reps, "hash": plan.cfg,
    });
    let progress = Progress::new(plan.units(), ctx.progress_quiet());
    let r = stored_run(ctx, kind, params, &progress, |sink| {
        run(plan, &progress, sink)
    });
    progress.finish();
    r
}

/// The study's reports: one set of tables over every update fraction,
/// the crossovers, and the lookup and update-fraction plots.
pub struct Hash;

impl Study for Hash {
    fn name(&self) -> &'static str {
        BENCH
    }

    fn text(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        // One report over every update fraction: they are its columns.
        out.push('\n');
        report::tables(out, points);
    }

    fn brief(&self, out: &mut String, _meta: &RunMeta, points: &[&Point], _all: &[Point]) {
        report::brief(out, points);
    }

    fn point_json(
        &self,
        _meta: &RunMeta,
        p: &Point,
        _of_study: &[&Point],
        _all: &[Point],
    ) -> Value {
        point::point_json(p)
    }

    fn run_keys(&self, _meta: &RunMeta, points: &[&Point]) -> Vec<(&'static str, Value)> {
        vec![
            ("hash_crossover", report::crossover_json(points)),
            ("hash_peers", report::peers_json(points)),
        ]
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
        Some("`hash` draws lookups against threads at 0 % updates and throughput against the update fraction")
    }
}

impl crate::core::study::RunCommand for HashArgs {
    const STUDY: Option<&'static dyn crate::core::study::Study> = Some(&Hash);

    fn run(&self, ctx: &crate::core::study::Ctx) -> crate::Result<crate::core::study::Outcome> {
        command(ctx, self)
    }
}
