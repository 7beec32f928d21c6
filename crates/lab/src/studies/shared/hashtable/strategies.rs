//! The hash-table strategies by name: each one the benchmark's runner
//! ([`run_rep`]) instantiated for its table type, so picking a strategy by
//! name costs one indirect call per repetition and none per operation.
//!
//! Adding a strategy is one `HashTable` impl and one line in
//! [`CATALOGUE`]. `global-rw(L)` and `bucket-rw(L)` take any
//! reader-writer lock of the lock registry, instantiated for each by the
//! registry's visitor ([`registry::per_rwlock`]), so the list of
//! reader-writer locks stays in one place.

use super::epoch::EpochTable;
use super::peers::DashTable;
use super::runner::{run_rep, HashConfig};
use super::tables::{Combined, Global, PerBucket, Refcnt, SeqTable, SpinLock, Unsync};
use crate::core::error::{LabError, Result};
use crate::core::lablock::{LabRwLock, RawRw};
use crate::core::registry::{self, RwEntry, RwMaker};
use crate::core::results::Rep;
use std::sync::OnceLock;

/// One repetition of one strategy: `(config, threads, update_pct)`.
pub type HashRun = fn(&HashConfig, u32, u32) -> std::result::Result<Rep, String>;

/// The reader-writer lock of `global-rw` and `bucket-rw` when none is
/// named: `rw-fair`, locklab's queued fair lock after Linux's qrwlock, the
/// rwlock_t of today's kernels; like the rwlock of seed 003 it avoids
/// starvation (and pays for it).
pub const DEFAULT_RW: &str = "rw-fair";

/// How a catalogue entry becomes a runnable strategy.
#[derive(Clone, Copy)]
pub enum Kind {
    /// One table type.
    Fixed(HashRun),
    /// A table over a reader-writer lock of the registry, named in
    /// parentheses: the instantiation for that lock.
    WithRwLock(fn(&RwEntry) -> HashRun),
    /// Not in this build, and why.
    Unavailable(&'static str),
}

/// A catalogue entry.
pub struct Base {
    /// The name, without a lock in parentheses.
    pub name: &'static str,
    /// Only at 0 % updates (the unsynchronized table).
    pub read_only: bool,
    /// What it is, one line.
    pub summary: &'static str,
    /// How to run it.
    pub kind: Kind,
}

/// The tables over each reader-writer lock of the registry, in its order.
struct RwRuns {
    /// One lock over the whole table (`global-rw(L)`).
    global: Vec<HashRun>,
    /// One lock per bucket (`bucket-rw(L)`).
    bucket: Vec<HashRun>,
}

struct GlobalRw;
impl RwMaker<HashRun> for GlobalRw {
    fn make<L: LabRwLock>(&self) -> HashRun {
        run_rep::<Global<L>>
    }
}

struct BucketRw;
impl RwMaker<HashRun> for BucketRw {
    fn make<L: LabRwLock>(&self) -> HashRun {
        run_rep::<PerBucket<L>>
    }
}

fn rw_runs() -> &'static RwRuns {
    static RUNS: OnceLock<RwRuns> = OnceLock::new();
    RUNS.get_or_init(|| RwRuns {
        global: registry::per_rwlock(GlobalRw),
        bucket: registry::per_rwlock(BucketRw),
    })
}

#[cfg(locklab_liburcu)]
const LIBURCU: Kind = Kind::Fixed(run_rep::<super::urcu::UrcuMemb>);
#[cfg(locklab_liburcu)]
const LIBURCU_QSBR: Kind = Kind::Fixed(run_rep::<super::urcu::UrcuQsbr>);
#[cfg(not(locklab_liburcu))]
const LIBURCU: Kind = Kind::Unavailable(NO_LIBURCU);
#[cfg(not(locklab_liburcu))]
const LIBURCU_QSBR: Kind = Kind::Unavailable(NO_LIBURCU);

/// Why the liburcu strategies may be missing.
pub const NO_LIBURCU: &str = "liburcu not built: install liburcu-dev and rebuild";

/// Every strategy, in display order (the order of `all`).
pub const CATALOGUE: &[Base] = &[
    Base {
        name: "none",
        read_only: true,
        summary: "no synchronization; lookups only (skipped where updates are asked for)",
        kind: Kind::Fixed(run_rep::<Unsync>),
    },
    Base {
        name: "global-spin",
        read_only: false,
        summary: "one test-and-test-and-set spin lock (locklab ttas) for the table",
        kind: Kind::Fixed(run_rep::<Global<SpinLock>>),
    },
    Base {
        name: "bucket-spin",
        read_only: false,
        summary: "a test-and-test-and-set spin lock (locklab ttas) per bucket",
        kind: Kind::Fixed(run_rep::<PerBucket<SpinLock>>),
    },
    Base {
        name: "global-rw",
        read_only: false,
        summary: "one reader-writer lock L for the table (default rw-fair)",
        kind: Kind::WithRwLock(|e| rw_runs().global[e.index]),
    },
    Base {
        name: "bucket-rw",
        read_only: false,
        summary: "a reader-writer lock L per bucket (default rw-fair)",
        kind: Kind::WithRwLock(|e| rw_runs().bucket[e.index]),
    },
    Base {
        name: "combining",
        read_only: false,
        summary: "the table inside one flat-combining mutex (locklab CombiningMutex): every \
                  lookup and update a request the combiner runs",
        kind: Kind::Fixed(run_rep::<Combined>),
    },
    Base {
        name: "refcnt",
        read_only: false,
        summary: "per-bucket spin lock held to find the element and count a reference; \
                  read outside the lock (seed 003)",
        kind: Kind::Fixed(run_rep::<Refcnt>),
    },
    Base {
        name: "brlock",
        read_only: false,
        summary: "one big-reader lock (locklab brlock, 64 padded reader slots) for the table",
        kind: Kind::Fixed(run_rep::<Global<RawRw<locklab::RawBrLock>>>),
    },
    Base {
        name: "seqlock",
        read_only: false,
        summary: "per-bucket sequence count, readers retry; per-bucket spin lock for \
                  updates; elements recycled within their bucket",
        kind: Kind::Fixed(run_rep::<SeqTable>),
    },
    Base {
        name: "rcu",
        read_only: false,
        summary: "locklab RcuHashMap, general-purpose RCU (membarrier, or fenced readers where \
                  missing): lock-free lookups, per-bucket locks for updates, old elements \
                  freed after a grace period",
        kind: Kind::Fixed(run_rep::<super::rcu::RcuTable<locklab::rcu::General>>),
    },
    Base {
        name: "rcu-qsbr",
        read_only: false,
        summary: "locklab RcuHashMap, QSBR RCU: free read side, a quiescent state every 64 \
                  operations",
        kind: Kind::Fixed(run_rep::<super::rcu::RcuTable<locklab::rcu::QuiescentState>>),
    },
    Base {
        name: "crossbeam-epoch",
        read_only: false,
        summary: "readers pinned by crossbeam-epoch, no lock; per-bucket spin lock for \
                  updates; old elements freed by deferred destruction",
        kind: Kind::Fixed(run_rep::<EpochTable>),
    },
    Base {
        name: "dashmap",
        read_only: false,
        summary: "dashmap 6 DashMap (sharded reader-writer-locked tables); an update is insert",
        kind: Kind::Fixed(run_rep::<DashTable>),
    },
    Base {
        name: "liburcu",
        read_only: false,
        summary: "liburcu memb readers, no lock; per-bucket pthread spin lock for updates; \
                  old elements freed by call_rcu",
        kind: LIBURCU,
    },
    Base {
        name: "liburcu-qsbr",
        read_only: false,
        summary: "liburcu QSBR readers (quiescent state every 64 operations); per-bucket \
                  pthread spin lock for updates; call_rcu",
        kind: LIBURCU_QSBR,
    },
];

/// A strategy ready to run.
#[derive(Clone)]
pub struct Strategy {
    /// Its full name: `bucket-rw(rw-fair)`, `seqlock`.
    pub name: String,
    /// Only at 0 % updates.
    pub read_only: bool,
    /// One repetition.
    pub run: HashRun,
}

/// Every strategy built into this lab, reader-writer ones with their
/// default lock: what `all` means.
pub fn all() -> Vec<Strategy> {
    CATALOGUE
        .iter()
        .filter(|b| !matches!(b.kind, Kind::Unavailable(_)))
        .map(|b| resolve(b, None).expect("a built strategy with its default lock resolves"))
        .collect()
}

/// The valid names, for messages and help.
pub fn valid_names() -> String {
    let names: Vec<String> = CATALOGUE
        .iter()
        .map(|b| match b.kind {
            Kind::WithRwLock(_) => format!("{}(L)", b.name),
            _ => b.name.to_string(),
        })
        .collect();
    let locks: Vec<&str> = registry::rw_all().iter().map(|e| e.info.name).collect();
    format!(
        "all, {} (L: {}; default {DEFAULT_RW})",
        names.join(", "),
        locks.join(", ")
    )
}

fn resolve(b: &Base, lock: Option<&str>) -> Result<Strategy> {
    let strategy = |name: String, run| Strategy {
        name,
        read_only: b.read_only,
        run,
    };
    match (b.kind, lock) {
        (Kind::Unavailable(why), _) => {
            Err(LabError::input(format!("strategy '{}': {why}", b.name)))
        }
        (Kind::Fixed(run), None) => Ok(strategy(b.name.to_string(), run)),
        (Kind::Fixed(_), Some(l)) => Err(LabError::input(format!(
            "strategy '{}' takes no lock, but '({l})' was given; valid strategies: {}",
            b.name,
            valid_names()
        ))),
        (Kind::WithRwLock(pick), lock) => {
            let lock = lock.unwrap_or(DEFAULT_RW);
            let Some(e) = registry::rw_all().iter().find(|e| e.info.name == lock) else {
                let rw: Vec<&str> = registry::rw_all().iter().map(|e| e.info.name).collect();
                let what = if registry::all().iter().any(|e| e.info.name == lock) {
                    "is a mutex, not a reader-writer lock"
                } else {
                    "is no reader-writer lock"
                };
                return Err(LabError::input(format!(
                    "strategy '{}({lock})': '{lock}' {what}; valid locks: {}",
                    b.name,
                    rw.join(", ")
                )));
            };
            Ok(strategy(format!("{}({})", b.name, e.info.name), pick(e)))
        }
    }
}

/// Parses `--strategies`: `all`, or comma-separated names, each maybe with
/// a reader-writer lock in parentheses (duplicates removed, order kept).
pub fn parse(list: &str) -> Result<Vec<Strategy>> {
    let mut out: Vec<Strategy> = Vec::new();
    let mut add = |s: Strategy| {
        if !out.iter().any(|o| o.name == s.name) {
            out.push(s);
        }
    };
    let items = crate::core::args::name_items(list).ok_or_else(|| {
        LabError::input(format!(
            "--strategies '{list}': empty name in the list; valid strategies: {}",
            valid_names()
        ))
    })?;
    for item in items {
        if item == "all" {
            all().into_iter().for_each(&mut add);
            continue;
        }
        let (name, lock) = match item.split_once('(') {
            Some((name, rest)) => match rest.strip_suffix(')') {
                Some(lock) if !lock.trim().is_empty() => (name.trim(), Some(lock.trim())),
                _ => {
                    return Err(LabError::input(format!(
                        "strategy '{item}': write a lock as NAME(LOCK), e.g. bucket-rw(rw-fair)"
                    )))
                }
            },
            None => (item, None),
        };
        let Some(b) = CATALOGUE.iter().find(|b| b.name == name) else {
            return Err(LabError::input(format!(
                "unknown strategy '{item}'; valid strategies: {}",
                valid_names()
            )));
        };
        add(resolve(b, lock)?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_has_each_built_strategy_once_with_default_locks() {
        let names: Vec<String> = all().into_iter().map(|s| s.name).collect();
        for n in [
            "none",
            "global-rw(rw-fair)",
            "bucket-rw(rw-fair)",
            "combining",
            "seqlock",
            "rcu",
            "rcu-qsbr",
            "dashmap",
        ] {
            assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
        }
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        assert_eq!(
            names.iter().any(|n| n == "liburcu"),
            cfg!(locklab_liburcu),
            "liburcu in `all` exactly when built"
        );
    }

    #[test]
    fn names_parse_with_and_without_locks() {
        let got: Vec<String> =
            parse("bucket-rw, global-rw(parking_lot-rw),bucket-rw(rw-fair), none")
                .unwrap()
                .into_iter()
                .map(|s| s.name)
                .collect();
        assert_eq!(
            got,
            ["bucket-rw(rw-fair)", "global-rw(parking_lot-rw)", "none"]
        );
        for rw in registry::rw_all() {
            let s = parse(&format!("bucket-rw({})", rw.info.name)).unwrap();
            assert_eq!(s[0].name, format!("bucket-rw({})", rw.info.name));
        }
    }

    #[test]
    fn bad_names_are_input_errors_naming_what_is_allowed() {
        for (list, needle) in [
            ("nosuch", "unknown strategy 'nosuch'"),
            ("bucket-rw(tas)", "'tas' is a mutex"),
            ("bucket-rw(nosuch)", "'nosuch' is no reader-writer lock"),
            ("seqlock(rw-fair)", "takes no lock"),
            ("bucket-rw(", "NAME(LOCK)"),
            ("bucket-rw()", "NAME(LOCK)"),
            ("none,,seqlock", "empty name"),
        ] {
            let e = parse(list)
                .err()
                .unwrap_or_else(|| panic!("{list} must fail"));
            assert_eq!(e.code, 2);
            assert!(e.msg.contains(needle), "{list}: {}", e.msg);
            assert!(!e.msg.contains('\n'));
        }
        let e = parse("nosuch").err().unwrap();
        assert!(e.msg.contains("crossbeam-epoch") && e.msg.contains("rw-fair"));
    }

    #[cfg(not(locklab_liburcu))]
    #[test]
    fn liburcu_says_how_to_get_it() {
        let e = parse("liburcu").err().unwrap();
        assert!(
            e.msg.contains("install liburcu-dev and rebuild"),
            "{}",
            e.msg
        );
    }
}
