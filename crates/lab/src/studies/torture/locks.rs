//! The locks `locklab torture` takes: every mutex and reader-writer lock
//! of the registry, each with its torture monomorphized for its type.

use super::runner::{self, TortureConfig, TortureReport};
use crate::core::error::{LabError, Result};
use crate::core::lablock::{LabLock, LabRwLock};
use crate::core::registry::{self, MutexMaker, RwMaker};
use locklab::LockInfo;
use std::sync::OnceLock;

/// A torture run of one lock.
type Run = fn(&TortureConfig) -> TortureReport;

struct Mutexes;
impl MutexMaker<Run> for Mutexes {
    fn make<L: LabLock>(&self) -> Run {
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

/// Parses `torture --locks`: names of mutexes or reader-writer locks, or
/// `all` for every one of both (duplicates removed, order kept).
pub fn parse_torture_list(list: &str) -> Result<Vec<Tortured>> {
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
                    if crate::studies::torture::rcu::find(name).is_some() {
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
        let t = parse_torture_list("all").unwrap();
        assert_eq!(t.len(), n);
        assert_eq!(t.iter().filter(|t| t.rw).count(), registry::rw_all().len());
        let picked = parse_torture_list("rwsem, tas,rwsem").unwrap();
        let got: Vec<_> = picked.iter().map(|t| (t.info.name, t.rw)).collect();
        assert_eq!(got, [("rwsem", true), ("tas", false)]);
        assert_eq!(parse_torture_list("tas,nosuch").err().unwrap().code, 2);
        assert_eq!(parse_torture_list("tas,,rwsem").err().unwrap().code, 2);
    }
    #[test]
    fn rcu_flavours_share_the_name_space_and_are_refused_as_locks() {
        for f in crate::studies::torture::rcu::flavors() {
            assert!(
                registry::all().iter().all(|e| e.info.name != f.name)
                    && registry::rw_all().iter().all(|e| e.info.name != f.name),
                "{} is also a lock name",
                f.name
            );
            let e = parse_torture_list(f.name).err().expect("not a lock");
            assert!(e.msg.contains("--rcu"), "{}", e.msg);
        }
        let all_rcu = crate::studies::torture::rcu::parse_flavors("all").unwrap();
        let got: Vec<_> = all_rcu.iter().map(|f| f.name).collect();
        assert_eq!(
            got,
            ["rcu", "rcu-qsbr", "rcu-fenced"],
            "rcu-broken stays out of all"
        );
        assert_eq!(
            crate::studies::torture::rcu::parse_flavors("rcu-broken,rcu")
                .unwrap()
                .len(),
            2
        );
    }
}
