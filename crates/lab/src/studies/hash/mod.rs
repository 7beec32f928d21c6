//! `bench hash`: the hash-table lookup benchmark of seed 003 (McKenney,
//! "Using RCU in the Linux 2.5 Kernel", Figures 1, 4 and 5).
//!
//! A chained hash table of `buckets` buckets holds the integer keys
//! `0..keys`, key `k` in bucket `k % buckets`, so every chain has
//! `keys / buckets` elements (within one). Threads pick keys uniformly at
//! random; a share `update_pct` of their operations are updates, the rest
//! lookups. A lookup walks the key's chain comparing integers, as the
//! seed's benchmark does, and reads the element's value.
//!
//! An **update** replaces the element of a key by a new element (a new
//! allocation, or for `seqlock` a recycled one) holding a new value: the
//! element is unlinked and the new one linked in its place in one step as
//! lookups see it (one critical section under a lock, or one pointer store
//! for the lock-free readers). So the key set never changes, and **every
//! lookup of a key finds it**, in its old or its new element: a lookup that
//! misses, or finds an element whose value does not carry its key, is a
//! broken table. Values are `key << 32 | generation` (`tag`), so a reader
//! that looked at a freed, recycled or half-written element would see a
//! foreign key in the value. After each repetition the table is walked
//! (`verify`): every key must be there exactly once, in its bucket.
//!
//! Each strategy is a type implementing [`HashTable`]; `run_rep` is
//! monomorphized per strategy (the registry in [`strategies`] holds the
//! instantiations), so the measured loop calls the table directly.
//!
//! Per repetition it records lookups and updates, the latency of one lookup
//! in `SAMPLE_EVERY` (time-stamp counter, HDR histogram), the peak of
//! bytes awaiting reclamation (sampled about every millisecond), and the
//! peak growth of the heap in use over the table the repetition started
//! with ([`crate::heap`]), sampled likewise.

pub mod args;
pub mod epoch;
pub mod peers;
pub mod plot;
pub mod rcu;
pub mod report;
pub mod runner;
pub mod strategies;
pub mod tables;
#[cfg(locklab_liburcu)]
pub mod urcu;
pub mod verdict;

use crate::cli::Cli;
use crate::error::{LabError, Result};
use crate::noteln;
use crate::progress::Progress;
use crate::results::{Point, RunMeta};
use crate::run::{progress_quiet, stored_run};
use crate::studies::Study;
use crate::sweep::{Group, RepRun};
use args::HashArgs;
pub use runner::{HashConfig, HashTable};
use serde_json::{json, Value};
use strategies::Strategy;

/// The name its points are stored under.
pub const BENCH: &str = "hash";

/// The hash-table study: every strategy at every update fraction and
/// thread count.
pub struct HashPlan {
    /// Strategies, in display order.
    pub strategies: Vec<Strategy>,
    /// Thread counts.
    pub threads: Vec<u32>,
    /// Update fractions in percent, ascending.
    pub update_pcts: Vec<u32>,
    /// Repetitions per point.
    pub reps: u32,
    /// The table and the repetition length.
    pub cfg: HashConfig,
}

impl HashPlan {
    /// The strategies that run at `pct` % updates: all but the read-only
    /// one where there are updates.
    pub fn runs_at(&self, pct: u32) -> impl Iterator<Item = &Strategy> {
        self.strategies
            .iter()
            .filter(move |s| pct == 0 || !s.read_only)
    }

    /// Repetitions to run, for progress.
    pub fn units(&self) -> u64 {
        let per_threads: usize = self
            .update_pcts
            .iter()
            .map(|&u| self.runs_at(u).count())
            .sum();
        (per_threads * self.threads.len()) as u64 * u64::from(self.reps)
    }
}

/// Runs the hash-table study. Returns `Ok(false)` if interrupted; a
/// strategy that breaks its table is a failed check (exit code 1), after
/// the points finished before it are stored.
pub fn run(
    plan: &HashPlan,
    progress: &Progress,
    sink: &mut dyn FnMut(Point) -> Result<()>,
) -> Result<bool> {
    for &pct in &plan.update_pcts {
        let mut params = serde_json::to_value(&plan.cfg).expect("config serialises");
        params["update_pct"] = pct.into();
        for &threads in &plan.threads {
            let cfg = &plan.cfg;
            let group = Group {
                bench: BENCH,
                threads,
                params: params.clone(),
                reps: plan.reps,
                contenders: plan
                    .runs_at(pct)
                    .map(|s| {
                        let run = s.run;
                        (
                            s.name.clone(),
                            Box::new(move || run(cfg, threads, pct)) as RepRun<'_>,
                        )
                    })
                    .collect(),
            };
            let done = group.run(
                progress,
                |name, rep| format!("hash: {name} × {threads} threads, {pct} % updates, rep {rep}"),
                |name, e| {
                    LabError::failed(format!(
                        "bench hash: {name} at {threads} threads and {pct} % updates broke its table: {e}"
                    ))
                },
                sink,
            )?;
            if !done {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

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
pub fn command(cli: &Cli, argv: &[String], a: &HashArgs) -> Result<i32> {
    let strategies = strategies::parse(&a.strategies)?;
    let keys = hash_keys(a.buckets, a.keys, a.chain)?;
    let plan = HashPlan {
        strategies,
        threads: a.threads.0.clone(),
        update_pcts: a.update_pct.0.clone(),
        reps: a.reps,
        cfg: HashConfig::new(a.buckets as usize, keys, a.secs, a.pin),
    };
    run_plan(cli, argv, "bench hash", &plan)
}

/// Says where the read-only strategy is left out, then measures and stores.
pub(crate) fn run_plan(cli: &Cli, argv: &[String], kind: &str, plan: &HashPlan) -> Result<i32> {
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
    let progress = Progress::new(plan.units(), progress_quiet(cli));
    let r = stored_run(cli, argv, kind, params, &progress, |sink| {
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
        report::point_json(p)
    }

    fn run_keys(&self, _meta: &RunMeta, points: &[&Point]) -> Vec<(&'static str, Value)> {
        vec![("hash_crossover", report::crossover_json(points))]
    }

    fn verdict(
        &self,
        _meta: &RunMeta,
        points: &[&Point],
        _all: &[Point],
    ) -> Vec<crate::verdict::Section> {
        verdict::sections(points)
    }

    fn plot(&self) -> Option<crate::studies::PlotFn> {
        Some(plot::plot)
    }

    fn plot_help(&self) -> Option<&'static str> {
        Some("`hash` draws lookups against threads at 0 % updates and throughput against the update fraction")
    }
}
