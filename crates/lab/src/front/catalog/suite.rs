//! `locklab bench` alone: the standard quick suite, several studies in
//! one run.

use crate::core::error::Result;
use crate::core::progress::Progress;
use crate::core::registry::{self, Entry};
use crate::core::run::stored_run_as;
use crate::core::study::{Ctx, Outcome};
use crate::studies::shared::contention::runner::SpinConfig;
use crate::studies::shared::contention::workload::DelayDist;
use crate::studies::shared::contention::{self as contention, SpinPlan};
use crate::studies::shared::hashtable;
use crate::studies::shared::hashtable::{strategies, HashConfig, HashPlan};
use crate::studies::uncontended::{runner as unc_runner, UncontendedPlan};
use crate::studies::{lhp, spin, uncontended};
use serde_json::json;

/// The standard quick suite: uncontended; spin at 1, 2 and 8 threads (cs
/// 100 ns on one shared line, exponential delay with mean 200 ns); and the
/// lock-holder-preemption sweep at one thread and 1, 2, 4 and 8 × the cores
/// (cs 100 ns, no delay). Every lock, adapter and peer, three repetitions each.
/// Then a short hash-table study (seed 003): every strategy of `bench
/// hash` at 1, 2 and 4 threads and 0, 10 and 50 % updates, 1024 keys in
/// 1024 buckets, 0.1 s repetitions (about 45 s).
pub fn command(ctx: &Ctx) -> Result<Outcome> {
    let all: Vec<&'static Entry> = registry::all().iter().collect();
    let unc = UncontendedPlan {
        locks: all.clone(),
        reps: 3,
        cfg: unc_runner::Config { secs: 0.1 },
    };
    let spin = SpinPlan {
        bench: spin::BENCH,
        locks: all.clone(),
        threads: vec![1, 2, 8],
        reps: 3,
        cfg: SpinConfig {
            cs_ns: 100,
            cs_lines: 1,
            delay_ns: 200,
            delay_dist: DelayDist::Exp,
            secs: 0.25,
            pin: false,
            stall_every: 0,
            stall_ns: 0,
            topology: crate::studies::shared::contention::runner::topology_param(),
        },
    };
    let lhp = SpinPlan {
        bench: lhp::BENCH,
        locks: all,
        threads: lhp::lhp_threads(&[1, 2, 4, 8])?,
        reps: 3,
        cfg: SpinConfig {
            cs_ns: 100,
            cs_lines: 1,
            delay_ns: 0,
            delay_dist: DelayDist::Exp,
            secs: 0.2,
            pin: false,
            stall_every: 0,
            stall_ns: 0,
            topology: crate::studies::shared::contention::runner::topology_param(),
        },
    };
    let hash = HashPlan {
        strategies: strategies::all(),
        threads: vec![1, 2, 4],
        update_pcts: vec![0, 10, 50],
        reps: 3,
        cfg: HashConfig::new(1024, 1024, 0.1, false),
    };
    let hash_names: Vec<&str> = hash.strategies.iter().map(|s| s.name.as_str()).collect();
    let params = json!({
        "locks": registry::names_of(&spin.locks), "reps": spin.reps, "threads": spin.threads,
        "uncontended": unc.cfg, "spin": spin.cfg,
        "lhp_threads": lhp.threads, "lhp": lhp.cfg,
        "hash_strategies": hash_names, "hash_threads": hash.threads,
        "hash_update_pcts": hash.update_pcts, "hash": hash.cfg,
    });
    let progress = Progress::new(
        unc.units() + spin.units() + lhp.units() + hash.units(),
        ctx.progress_quiet(),
    );
    let r = stored_run_as(ctx, "bench", params, &progress, true, |sink| {
        Ok(uncontended::run(&unc, &progress, sink)?
            && contention::run(&spin, &progress, sink)?
            && contention::run(&lhp, &progress, sink)?
            && hashtable::run(&hash, &progress, sink)?)
    });
    progress.finish();
    r
}
