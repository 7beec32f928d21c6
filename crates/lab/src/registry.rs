//! Every lock the lab knows, by name, each instantiated for its own type.
//!
//! The metadata comes from the library (`locklab::Described`), so the CLI,
//! the docs and the lab list the same set. Each entry holds plain function
//! pointers to the benchmarks monomorphized for that lock: picking a lock by
//! name costs one indirect call per measured point, never one per
//! acquisition.

use crate::bench::hash::{self, strategies::HashRun};
use crate::bench::ipc::{self, IpcRun};
use crate::bench::spin::{self, SpinConfig};
use crate::bench::uncontended;
use crate::error::{LabError, Result};
use crate::lablock::{LabLock, LabRwLock, Raw, RawRw};
use crate::peers::{PthreadPeer, PthreadRwPeer, StdPeer, StdRwPeer};
use crate::results::Rep;
use crate::torture::{self, TortureConfig, TortureReport};
use locklab::{Described, Family, LockInfo};
use locklab_kernel::cc::{Bkl, Elide};
use std::sync::OnceLock;

/// One lock the lab can measure.
pub struct Entry {
    /// Name, family, fairness, source.
    pub info: LockInfo,
    /// Whether this is a peer from outside locklab.
    pub peer: bool,
    /// One repetition of the contention benchmark at `threads` threads.
    pub spin: fn(&SpinConfig, u32) -> std::result::Result<Rep, String>,
    /// One repetition of the uncontended benchmark.
    pub uncontended: crate::bench::UncontendedRep,
    /// A torture run.
    pub torture: fn(&TortureConfig) -> TortureReport,
    /// One repetition of `bench ipc` with this lock as the big kernel lock
    /// (`bkl(name)`); `None` for peers, whose guards borrow the mutex.
    pub ipc_bkl: Option<IpcRun>,
    /// The same with the big lock elided (`elide(name)`).
    pub ipc_elide: Option<IpcRun>,
}

fn entry<L: LabLock>(info: LockInfo, peer: bool) -> Entry {
    Entry {
        info,
        peer,
        spin: spin::run_rep::<L>,
        uncontended: uncontended::run_rep::<L>,
        torture: torture::run::<L>,
        ipc_bkl: None,
        ipc_elide: None,
    }
}

fn own<R>() -> Entry
where
    R: lock_api::RawMutex + Described + Send + Sync + 'static,
{
    Entry {
        ipc_bkl: Some(ipc::run_rep::<Bkl<R>>),
        ipc_elide: Some(ipc::run_rep::<Elide<R>>),
        ..entry::<Raw<R>>(R::INFO, false)
    }
}

const STD: LockInfo = LockInfo {
    name: "std",
    family: Family::Peer,
    fair: false,
    blocking: true,
    source: "Rust standard library std::sync::Mutex (futex-based on Linux)",
    summary: "spins briefly, then sleeps on a futex",
};

const PARKING_LOT: LockInfo = LockInfo {
    name: "parking_lot",
    family: Family::Peer,
    fair: false,
    blocking: true,
    source: "parking_lot 0.13 RawMutex",
    summary: "one-byte lock; adaptive spinning, then parks in a global hash table; eventually fair",
};

const PTHREAD: LockInfo = LockInfo {
    name: "pthread",
    family: Family::Peer,
    fair: false,
    blocking: true,
    source: "glibc pthread_mutex_t (PTHREAD_MUTEX_DEFAULT) via libc",
    summary: "futex-based mutex of the C library",
};

/// `spin-yield(L)` and `spin-park(L)` over the spin lock `L`.
fn adapters<L>(v: &mut Vec<Entry>)
where
    L: locklab::SpinCore + 'static,
    locklab::SpinYield<L>: lock_api::RawMutex + Described + Send + Sync + 'static,
    locklab::SpinPark<L>: lock_api::RawMutex + Described + Send + Sync + 'static,
{
    v.push(own::<locklab::SpinYield<L>>());
    v.push(own::<locklab::SpinPark<L>>());
}

/// Every lock: locklab's own (the spin locks, the sleeping locks, the
/// adapters), then the peers.
pub fn all() -> &'static [Entry] {
    static ALL: OnceLock<Vec<Entry>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = vec![
            own::<locklab::RawTas>(),
            own::<locklab::RawTtas>(),
            own::<locklab::RawBackoff>(),
            own::<locklab::RawTicket>(),
            own::<locklab::RawTicketBackoff>(),
            own::<locklab::RawK42>(),
            own::<locklab::RawMcs>(),
            own::<locklab::RawClh>(),
            own::<locklab::RawQspin>(),
            own::<locklab::RawHybridMutex<locklab::AdaptiveSpin>>(),
            own::<locklab::RawHybridMutex<locklab::FixedSpin>>(),
            own::<locklab::RawFutex3>(),
        ];
        adapters::<locklab::RawTas>(&mut v);
        adapters::<locklab::RawTtas>(&mut v);
        adapters::<locklab::RawBackoff>(&mut v);
        adapters::<locklab::RawTicket>(&mut v);
        adapters::<locklab::RawTicketBackoff>(&mut v);
        adapters::<locklab::RawK42>(&mut v);
        adapters::<locklab::RawMcs>(&mut v);
        adapters::<locklab::RawClh>(&mut v);
        adapters::<locklab::RawQspin>(&mut v);
        v.extend([
            entry::<StdPeer>(STD, true),
            entry::<Raw<parking_lot::RawMutex>>(PARKING_LOT, true),
            entry::<PthreadPeer>(PTHREAD, true),
        ]);
        v
    })
}

/// One reader-writer lock the lab can torture and measure in the hash table.
pub struct RwEntry {
    /// Name, family, fairness, source.
    pub info: LockInfo,
    /// Whether this is a peer from outside locklab.
    pub peer: bool,
    /// A torture run with readers and writers.
    pub torture: fn(&TortureConfig) -> TortureReport,
    /// One repetition of `bench hash` with this lock over the whole table
    /// (`global-rw(name)`).
    pub hash_global: HashRun,
    /// One repetition of `bench hash` with this lock per bucket
    /// (`bucket-rw(name)`).
    pub hash_bucket: HashRun,
}

fn rw_entry<L: LabRwLock>(info: LockInfo, peer: bool) -> RwEntry {
    RwEntry {
        info,
        peer,
        torture: torture::run_rw::<L>,
        hash_global: hash::run_rep::<hash::tables::Global<L>>,
        hash_bucket: hash::run_rep::<hash::tables::PerBucket<L>>,
    }
}

fn own_rw<R>() -> RwEntry
where
    R: lock_api::RawRwLock + Described + Send + Sync + 'static,
{
    rw_entry::<RawRw<R>>(R::INFO, false)
}

const STD_RW: LockInfo = LockInfo {
    name: "std-rw",
    family: Family::Peer,
    fair: false,
    blocking: true,
    source: "Rust standard library std::sync::RwLock (futex-based on Linux)",
    summary: "one futex word for the reader count and flags, another that writers sleep on; waiting writers hold back new readers",
};

const PARKING_LOT_RW: LockInfo = LockInfo {
    name: "parking_lot-rw",
    family: Family::Peer,
    fair: false,
    blocking: true,
    source: "parking_lot 0.13 RawRwLock",
    summary:
        "one word; adaptive spinning, then parks; task-fair (neither readers nor writers starve)",
};

const PTHREAD_RW: LockInfo = LockInfo {
    name: "pthread-rw",
    family: Family::Peer,
    fair: false,
    blocking: true,
    source: "glibc pthread_rwlock_t (default: prefer readers) via libc",
    summary: "futex-based reader-writer lock of the C library",
};

/// Every reader-writer lock: locklab's own, then the peers. Their names
/// differ from every mutex's, so one name picks one lock anywhere.
pub fn rw_all() -> &'static [RwEntry] {
    static ALL: OnceLock<Vec<RwEntry>> = OnceLock::new();
    ALL.get_or_init(|| {
        vec![
            own_rw::<locklab::RawRwReader>(),
            own_rw::<locklab::RawRwWriter>(),
            own_rw::<locklab::RawRwFair>(),
            own_rw::<locklab::RawBrLock>(),
            own_rw::<locklab::RawRwSem>(),
            rw_entry::<StdRwPeer>(STD_RW, true),
            rw_entry::<RawRw<parking_lot::RawRwLock>>(PARKING_LOT_RW, true),
            rw_entry::<PthreadRwPeer>(PTHREAD_RW, true),
        ]
    })
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
    let every: Vec<Tortured> = all()
        .iter()
        .map(|e| Tortured {
            info: e.info,
            rw: false,
            run: e.torture,
        })
        .chain(rw_all().iter().map(|e| Tortured {
            info: e.info,
            rw: true,
            run: e.torture,
        }))
        .collect();
    let valid = every
        .iter()
        .map(|t| t.info.name)
        .collect::<Vec<_>>()
        .join(", ");
    pick(
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
                    if crate::rcutorture::find(name).is_some() {
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

/// A `--locks` value picked out of `every`: `all`, or comma-separated names
/// each resolved by `find` (duplicates removed, order kept). `valid` lists
/// the names for the error about an empty one.
pub(crate) fn pick<T: Copy>(
    list: &str,
    every: &[T],
    name: impl Fn(&T) -> &'static str,
    valid: &str,
    find: impl Fn(&str) -> Result<T>,
) -> Result<Vec<T>> {
    let mut out: Vec<T> = Vec::new();
    let add = |t: T, out: &mut Vec<T>| {
        if !out.iter().any(|o| name(o) == name(&t)) {
            out.push(t);
        }
    };
    for n in list.split(',').map(str::trim) {
        if n.is_empty() {
            return Err(LabError::input(format!(
                "--locks '{list}': empty name in the list; valid locks: all, {valid}"
            )));
        }
        if n == "all" {
            for &t in every {
                add(t, &mut out);
            }
        } else {
            add(find(n)?, &mut out);
        }
    }
    Ok(out)
}

/// The names of every lock, comma-separated (for error messages).
pub fn names() -> String {
    all()
        .iter()
        .map(|e| e.info.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Looks a mutex up by name (the benchmarks measure mutexes).
pub fn find(name: &str) -> Result<&'static Entry> {
    if let Some(e) = all().iter().find(|e| e.info.name == name) {
        return Ok(e);
    }
    if rw_all().iter().any(|e| e.info.name == name) {
        return Err(LabError::input(format!(
            "'{name}' is a reader-writer lock: this benchmark measures mutexes \
             (`locklab torture --locks {name}` checks it); valid locks: all, {}",
            names()
        )));
    }
    Err(LabError::input(format!(
        "unknown lock '{name}'; valid locks: all, {}",
        names()
    )))
}

/// Parses a `--locks` value: `all`, or a comma-separated list of names
/// (duplicates removed, order kept).
pub fn parse_list(list: &str) -> Result<Vec<&'static Entry>> {
    let every: Vec<&'static Entry> = all().iter().collect();
    pick(list, &every, |e| e.info.name, &names(), find)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_all_is_everything() {
        let mut names: Vec<_> = all().iter().map(|e| e.info.name).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "duplicate lock name");
        assert_eq!(parse_list("all").unwrap().len(), n);
    }

    #[test]
    fn lists_keep_order_and_drop_duplicates() {
        let l = parse_list("pthread, tas,pthread").unwrap();
        let got: Vec<_> = l.iter().map(|e| e.info.name).collect();
        assert_eq!(got, ["pthread", "tas"]);
    }

    #[test]
    fn unknown_names_are_input_errors_listing_the_valid_ones() {
        let e = parse_list("tas,nosuch").err().expect("must fail");
        assert_eq!(e.code, 2);
        assert!(
            e.msg.contains("'nosuch'") && e.msg.contains("parking_lot"),
            "{}",
            e.msg
        );
        assert_eq!(parse_list("tas,,std").err().unwrap().code, 2);
    }

    #[test]
    fn peers_are_marked() {
        for e in all() {
            assert_eq!(e.peer, e.info.family == Family::Peer, "{}", e.info.name);
        }
        for e in rw_all() {
            assert_eq!(e.peer, e.info.family == Family::Peer, "{}", e.info.name);
        }
    }

    #[test]
    fn one_name_space_for_mutexes_and_rwlocks() {
        let mut names: Vec<_> = all()
            .iter()
            .map(|e| e.info.name)
            .chain(rw_all().iter().map(|e| e.info.name))
            .collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n, "a name used twice");
        let t = parse_torture_list("all").unwrap();
        assert_eq!(t.len(), n);
        assert_eq!(t.iter().filter(|t| t.rw).count(), rw_all().len());
        let picked = parse_torture_list("rwsem, tas,rwsem").unwrap();
        let got: Vec<_> = picked.iter().map(|t| (t.info.name, t.rw)).collect();
        assert_eq!(got, [("rwsem", true), ("tas", false)]);
        assert_eq!(parse_torture_list("tas,nosuch").err().unwrap().code, 2);
        assert_eq!(parse_torture_list("tas,,rwsem").err().unwrap().code, 2);
    }

    #[test]
    fn rcu_flavours_share_the_name_space_and_are_refused_as_locks() {
        for f in crate::rcutorture::flavors() {
            assert!(
                all().iter().all(|e| e.info.name != f.name)
                    && rw_all().iter().all(|e| e.info.name != f.name),
                "{} is also a lock name",
                f.name
            );
            let e = parse_torture_list(f.name).err().expect("not a lock");
            assert!(e.msg.contains("--rcu"), "{}", e.msg);
        }
        let all_rcu = crate::rcutorture::parse_flavors("all").unwrap();
        let got: Vec<_> = all_rcu.iter().map(|f| f.name).collect();
        assert_eq!(
            got,
            ["rcu", "rcu-qsbr", "rcu-fenced"],
            "rcu-broken stays out of all"
        );
        assert_eq!(
            crate::rcutorture::parse_flavors("rcu-broken,rcu")
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_benchmark_given_an_rwlock_says_what_it_is() {
        let e = parse_list("tas,rwsem").err().expect("must fail");
        assert_eq!(e.code, 2);
        assert!(e.msg.contains("reader-writer"), "{}", e.msg);
    }
}
