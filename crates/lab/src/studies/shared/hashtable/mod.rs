//! The hash-table lookup benchmark of seed 003 (McKenney, "Using RCU in
//! the Linux 2.5 Kernel", Figures 1, 4 and 5) that `bench hash`,
//! `advise` and the suite run.
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
//! with ([`crate::core::heap`]), sampled likewise.

pub mod epoch;
pub mod peers;
pub mod point;
pub mod rcu;
pub mod runner;
pub mod strategies;
pub mod tables;
#[cfg(locklab_liburcu)]
pub mod urcu;

use crate::core::error::{LabError, Result};
use crate::core::progress::Progress;
use crate::core::results::Point;
use crate::core::sweep::{Group, RepRun};
pub use runner::{HashConfig, HashTable};
use strategies::Strategy;

/// The name its points are stored under (`bench hash`'s).
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
