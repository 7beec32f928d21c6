//! The locks `locklab torture` takes: every mutex and reader-writer lock
//! of the registry, each with its torture monomorphized for its type.

use super::runner::{self, TortureConfig, TortureReport};
use crate::core::error::{LabError, Result};
use crate::core::lablock::{LabMutex, LabRwLock};
use crate::core::registry::{self, MutexMaker, RwMaker};
use locklab::LockInfo;
use std::sync::OnceLock;

/// A torture run of one lock.
type Run = fn(&TortureConfig) -> TortureReport;

struct Mutexes;
impl MutexMaker<Run> for Mutexes {
    fn make<L: LabMutex>(&self) -> Run {
        runner::run::<L>
    }
}

struct RwLocks;
impl RwMaker<Run> for RwLocks {
    fn make<L: LabRwLock>(&self) -> Run {
        runner::run_rw::<L>
    }
}

/// Every lock's torture: the mutexes', then the reader-writer locks', in
/// the registry's order.
static RUNS: OnceLock<(Vec<Run>, Vec<Run>)> = OnceLock::new();

fn runs() -> (Vec<Run>, Vec<Run>) {
    (registry::per_mutex(Mutexes), registry::per_rwlock(RwLocks))
}

/// What `locklab torture` runs for one lock: its metadata and its torture.
#[derive(Clone, Copy)]
pub struct Tortured {
    /// Name, family, fairness, source.
    pub info: LockInfo,
    /// Whether readers share it (a reader-writer lock).
    pub rw: bool,
    /// The torture run.
    pub run: fn(&TortureConfig) -> TortureReport,
}

/// Whether `name` is a lock `torture --locks` takes (for the message of
/// an RCU flavour list that names one).
pub fn is_lock(name: &str) -> bool {
    parse_torture_list(name, |_| false).is_ok()
}

/// Parses `torture --locks`: names of mutexes or reader-writer locks, or
/// `all` for every one of both (duplicates removed, order kept).
/// `is_flavour` says whether an unknown name is an RCU flavour, for the
/// message that points to `--rcu`.
pub fn parse_torture_list(list: &str, is_flavour: impl Fn(&str) -> bool) -> Result<Vec<Tortured>> {
    let every: Vec<Tortured> = registry::all()
        .iter()
        .map(|e| Tortured {
            info: e.info,
            rw: false,
            run: RUNS.get_or_init(runs).0[e.index],
        })
        .chain(registry::rw_all().iter().map(|e| Tortured {
            info: e.info,
            rw: true,
            run: RUNS.get_or_init(runs).1[e.index],
        }))
        .collect();
    let valid = every
        .iter()
        .map(|t| t.info.name)
        .collect::<Vec<_>>()
        .join(", ");
    registry::pick(
        list,
        &every,
        |t| t.info.name,
        &valid,
        |name| {
            every
                .iter()
                .find(|t| t.info.name == name)
                .copied()
                .ok_or_else(|| {
                    if is_flavour(name) {
                        LabError::input(format!(
                            "'{name}' is an RCU flavour, not a lock \
                             (`locklab torture --rcu --locks {name}` tortures it); valid locks: all, {valid}"
                        ))
                    } else {
                        LabError::input(format!("unknown lock '{name}'; valid locks: all, {valid}"))
                    }
                })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_name_space_for_mutexes_and_rwlocks() {
        let mut names: Vec<_> = registry::all()
            .iter()
            .map(|e| e.info.name)
            .chain(registry::rw_all().iter().map(|e| e.info.name))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a name used twice");
        let t = parse_torture_list("all", |_| false).unwrap();
        assert_eq!(t.len(), n);
        assert_eq!(t.iter().filter(|t| t.rw).count(), registry::rw_all().len());
        let picked = parse_torture_list("rwsem, tas,rwsem", |_| false).unwrap();
        let got: Vec<_> = picked.iter().map(|t| (t.info.name, t.rw)).collect();
        assert_eq!(got, [("rwsem", true), ("tas", false)]);
        assert_eq!(
            parse_torture_list("tas,nosuch", |_| false)
                .err()
                .unwrap()
                .code,
            2
        );
        assert_eq!(
            parse_torture_list("tas,,rwsem", |_| false)
                .err()
                .unwrap()
                .code,
            2
        );
    }
}
