//! Every lock the lab knows, by name, each instantiated for its own type.
//!
//! The metadata comes from the library (`locklab::Described`), so the CLI,
//! the docs and the lab list the same set. The registry names no study: a
//! study that measures locks hands a visitor to [`visit_mutexes`] or
//! [`visit_rwlocks`], which calls it once per lock with the lock's type,
//! and keeps the function it monomorphizes for each (in the registry's
//! order, so [`Entry::index`] finds it). Picking a lock by name then costs
//! one indirect call per measured point, never one per acquisition.
//!
//! A mutex is anything the lab can run a critical section under
//! ([`LabMutex`]): the locks, which run it on the calling thread, and the
//! delegation lock `combining`, which runs it on its combiner's thread
//! ([`Entry::delegates`]). The studies that time a critical section take
//! both; what needs a lock and unlock of its own (the interposer, the
//! emulated kernel's big lock) takes only locklab's `lock_api` mutexes
//! ([`MutexVisitor::own`]) and refuses the rest by name.

use crate::core::error::{LabError, Result};
use crate::core::lablock::{Combining, LabMutex, LabRwLock, Raw, RawRw};
use crate::core::peers::{PthreadPeer, PthreadRwPeer, StdPeer, StdRwPeer};
use crate::core::table::Table;
use locklab::{Described, Family, LockInfo};
use std::sync::OnceLock;

/// One mutex the lab can measure.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Name, family, fairness, source.
    pub info: LockInfo,
    /// Whether this is a peer from outside locklab.
    pub peer: bool,
    /// Whether its critical sections run on another thread than their
    /// caller's (a delegation lock: [`LabMutex::DELEGATES`]); it then has
    /// no lock and unlock a program or the emulated kernel could call.
    pub delegates: bool,
    /// Its place in the registry's order: the visitors see the locks in
    /// this order, so a study's table of runners has its runner here.
    pub index: usize,
}

/// What a study does with each mutex type: typically, keep a function
/// monomorphized for it.
pub trait MutexVisitor {
    /// Called once per mutex, in the registry's order, with its lab type.
    fn visit<L: LabMutex>(&mut self, info: LockInfo, peer: bool);

    /// Called just before [`MutexVisitor::visit`] for each of locklab's
    /// own mutexes, with its `lock_api` raw type (which a lock that owns
    /// its guard's mutex, like the kernel's big lock, can embed). Nothing
    /// by default.
    fn own<R>(&mut self)
    where
        R: lock_api::RawMutex + Described + Send + Sync + 'static,
    {
    }
}

/// What a study does with each reader-writer lock type.
pub trait RwVisitor {
    /// Called once per reader-writer lock, in the registry's order.
    fn visit<L: LabRwLock>(&mut self, info: LockInfo, peer: bool);
}

fn own<R, V>(v: &mut V)
where
    R: lock_api::RawMutex + Described + Send + Sync + 'static,
    V: MutexVisitor,
{
    v.own::<R>();
    v.visit::<Raw<R>>(R::INFO, false);
}

const STD: LockInfo = LockInfo {
    name: "std",
    family: Family::Peer,
    fair: false,
    blocking: true,
    numa_aware: false,
    source: "Rust standard library std::sync::Mutex (futex-based on Linux)",
    summary: "spins briefly, then sleeps on a futex",
};

const PARKING_LOT: LockInfo = LockInfo {
    name: "parking_lot",
    family: Family::Peer,
    fair: false,
    blocking: true,
    numa_aware: false,
    source: "parking_lot 0.13 RawMutex",
    summary: "one-byte lock; adaptive spinning, then parks in a global hash table; eventually fair",
};

const PTHREAD: LockInfo = LockInfo {
    name: "pthread",
    family: Family::Peer,
    fair: false,
    blocking: true,
    numa_aware: false,
    source: "glibc pthread_mutex_t (PTHREAD_MUTEX_DEFAULT) via libc",
    summary: "futex-based mutex of the C library",
};

/// `spin-yield(L)` and `spin-park(L)` over the spin lock `L`.
fn adapters<L, V>(v: &mut V)
where
    L: locklab::SpinCore + 'static,
    locklab::SpinYield<L>: lock_api::RawMutex + Described + Send + Sync + 'static,
    locklab::SpinPark<L>: lock_api::RawMutex + Described + Send + Sync + 'static,
    V: MutexVisitor,
{
    own::<locklab::SpinYield<L>, V>(v);
    own::<locklab::SpinPark<L>, V>(v);
}

/// Calls `v` for every mutex: locklab's own (the spin locks, the sleeping
/// locks, the adapters, the delegation lock), then the peers.
pub fn visit_mutexes<V: MutexVisitor>(v: &mut V) {
    own::<locklab::RawTas, V>(v);
    own::<locklab::RawTtas, V>(v);
    own::<locklab::RawBackoff, V>(v);
    own::<locklab::RawTicket, V>(v);
    own::<locklab::RawTicketBackoff, V>(v);
    own::<locklab::RawTwa, V>(v);
    own::<locklab::RawK42, V>(v);
    own::<locklab::RawMcs, V>(v);
    own::<locklab::RawClh, V>(v);
    own::<locklab::RawQspin, V>(v);
    own::<locklab::RawHemlock, V>(v);
    own::<locklab::RawAnderson, V>(v);
    own::<locklab::RawMalthusian, V>(v);
    own::<locklab::RawMcsTp, V>(v);
    own::<locklab::RawCboMcs, V>(v);
    own::<locklab::RawHmcs, V>(v);
    own::<locklab::RawCna, V>(v);
    own::<locklab::RawHybridMutex<locklab::AdaptiveSpin>, V>(v);
    own::<locklab::RawHybridMutex<locklab::FixedSpin>, V>(v);
    own::<locklab::RawFutex3, V>(v);
    adapters::<locklab::RawTas, V>(v);
    adapters::<locklab::RawTtas, V>(v);
    adapters::<locklab::RawBackoff, V>(v);
    adapters::<locklab::RawTicket, V>(v);
    adapters::<locklab::RawTicketBackoff, V>(v);
    adapters::<locklab::RawK42, V>(v);
    adapters::<locklab::RawMcs, V>(v);
    adapters::<locklab::RawClh, V>(v);
    adapters::<locklab::RawQspin, V>(v);
    v.visit::<Combining>(<locklab::CombiningMutex<()> as Described>::INFO, false);
    v.visit::<StdPeer>(STD, true);
    v.visit::<Raw<parking_lot::RawMutex>>(PARKING_LOT, true);
    v.visit::<PthreadPeer>(PTHREAD, true);
}

/// The families in the order charts and tables show them.
pub const FAMILIES: [locklab::Family; 8] = [
    locklab::Family::Spin,
    locklab::Family::Ticket,
    locklab::Family::Queue,
    locklab::Family::Numa,
    locklab::Family::Blocking,
    locklab::Family::Delegation,
    locklab::Family::ReaderWriter,
    locklab::Family::Peer,
];

/// The family of the mutex or reader-writer lock named `name`; `None` if
/// the registry holds no lock of that name.
pub fn family_of(name: &str) -> Option<locklab::Family> {
    all()
        .iter()
        .map(|e| e.info)
        .chain(rw_all().iter().map(|e| e.info))
        .find(|i| i.name == name)
        .map(|i| i.family)
}

/// Every mutex, in the registry's order.
pub fn all() -> &'static [Entry] {
    static ALL: OnceLock<Vec<Entry>> = OnceLock::new();
    ALL.get_or_init(|| {
        struct Listing(Vec<Entry>);
        impl MutexVisitor for Listing {
            fn visit<L: LabMutex>(&mut self, info: LockInfo, peer: bool) {
                let index = self.0.len();
                self.0.push(Entry {
                    info,
                    peer,
                    delegates: L::DELEGATES,
                    index,
                });
            }
        }
        let mut l = Listing(Vec::new());
        visit_mutexes(&mut l);
        l.0
    })
}

/// A study's function for every mutex, in the registry's order (index it
/// with [`Entry::index`]): `make::<L>()` for each lock type `L`.
pub fn per_mutex<F>(make: impl MutexMaker<F>) -> Vec<F> {
    struct V<M, F>(M, Vec<F>);
    impl<M: MutexMaker<F>, F> MutexVisitor for V<M, F> {
        fn visit<L: LabMutex>(&mut self, _: LockInfo, _: bool) {
            self.1.push(self.0.make::<L>());
        }
    }
    let mut v = V(make, Vec::new());
    visit_mutexes(&mut v);
    v.1
}

/// Makes a study's function for one mutex type (see [`per_mutex`]).
pub trait MutexMaker<F> {
    /// The function for the lock type `L`.
    fn make<L: LabMutex>(&self) -> F;
}

/// A study's function for every reader-writer lock, in the registry's
/// order (index it with [`RwEntry::index`]).
pub fn per_rwlock<F>(make: impl RwMaker<F>) -> Vec<F> {
    struct V<M, F>(M, Vec<F>);
    impl<M: RwMaker<F>, F> RwVisitor for V<M, F> {
        fn visit<L: LabRwLock>(&mut self, _: LockInfo, _: bool) {
            self.1.push(self.0.make::<L>());
        }
    }
    let mut v = V(make, Vec::new());
    visit_rwlocks(&mut v);
    v.1
}

/// Makes a study's function for one reader-writer lock type (see
/// [`per_rwlock`]).
pub trait RwMaker<F> {
    /// The function for the lock type `L`.
    fn make<L: LabRwLock>(&self) -> F;
}

/// One reader-writer lock the lab can measure.
#[derive(Debug, Clone, Copy)]
pub struct RwEntry {
    /// Name, family, fairness, source.
    pub info: LockInfo,
    /// Whether this is a peer from outside locklab.
    pub peer: bool,
    /// Its place in the registry's order (see [`Entry::index`]).
    pub index: usize,
}

fn own_rw<R, V>(v: &mut V)
where
    R: lock_api::RawRwLock + Described + Send + Sync + 'static,
    V: RwVisitor,
{
    v.visit::<RawRw<R>>(R::INFO, false);
}

const STD_RW: LockInfo = LockInfo {
    name: "std-rw",
    family: Family::Peer,
    fair: false,
    blocking: true,
    numa_aware: false,
    source: "Rust standard library std::sync::RwLock (futex-based on Linux)",
    summary: "one futex word for the reader count and flags, another that writers sleep on; waiting writers hold back new readers",
};

const PARKING_LOT_RW: LockInfo = LockInfo {
    name: "parking_lot-rw",
    family: Family::Peer,
    fair: false,
    blocking: true,
    numa_aware: false,
    source: "parking_lot 0.13 RawRwLock",
    summary:
        "one word; adaptive spinning, then parks; task-fair (neither readers nor writers starve)",
};

const PTHREAD_RW: LockInfo = LockInfo {
    name: "pthread-rw",
    family: Family::Peer,
    fair: false,
    blocking: true,
    numa_aware: false,
    source: "glibc pthread_rwlock_t (default: prefer readers) via libc",
    summary: "futex-based reader-writer lock of the C library",
};

/// Calls `v` for every reader-writer lock: locklab's own, then the peers.
/// Their names differ from every mutex's, so one name picks one lock
/// anywhere.
pub fn visit_rwlocks<V: RwVisitor>(v: &mut V) {
    own_rw::<locklab::RawRwReader, V>(v);
    own_rw::<locklab::RawRwWriter, V>(v);
    own_rw::<locklab::RawRwFair, V>(v);
    own_rw::<locklab::RawBrLock, V>(v);
    own_rw::<locklab::RawRwSem, V>(v);
    v.visit::<StdRwPeer>(STD_RW, true);
    v.visit::<RawRw<parking_lot::RawRwLock>>(PARKING_LOT_RW, true);
    v.visit::<PthreadRwPeer>(PTHREAD_RW, true);
}

/// Every reader-writer lock, in the registry's order.
pub fn rw_all() -> &'static [RwEntry] {
    static ALL: OnceLock<Vec<RwEntry>> = OnceLock::new();
    ALL.get_or_init(|| {
        struct Listing(Vec<RwEntry>);
        impl RwVisitor for Listing {
            fn visit<L: LabRwLock>(&mut self, info: LockInfo, peer: bool) {
                let index = self.0.len();
                self.0.push(RwEntry { info, peer, index });
            }
        }
        let mut l = Listing(Vec::new());
        visit_rwlocks(&mut l);
        l.0
    })
}

/// A `--locks` value picked out of `every`: `all`, or comma-separated names
/// each resolved by `find` (duplicates removed, order kept). `valid` lists
/// the names for the error about an empty one.
pub fn pick<T: Copy>(
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
    let names = crate::core::args::name_items(list).ok_or_else(|| {
        LabError::input(format!(
            "--locks '{list}': empty name in the list; valid locks: all, {valid}"
        ))
    })?;
    for n in names {
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

/// The names of `locks`, in order (for a run's parameters).
pub fn names_of(locks: &[&Entry]) -> Vec<&'static str> {
    locks.iter().map(|e| e.info.name).collect()
}

/// Every lock of the registry, mutexes then reader-writer locks, as one
/// table: name, kind (`mutex` or `rwlock`), family, fair, blocking,
/// NUMA-aware, peer,
/// what it does and where it comes from. `locklab locks --format csv`
/// prints it as it is; [`markdown`] is the same table for the docs.
pub fn table() -> Table {
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let row = |kind: &str, i: &LockInfo, peer: bool| {
        vec![
            i.name.to_string(),
            kind.to_string(),
            i.family.as_str().to_string(),
            yes(i.fair),
            yes(i.blocking),
            yes(i.numa_aware),
            yes(peer),
            i.summary.to_string(),
            i.source.to_string(),
        ]
    };
    let header = [
        "lock", "kind", "family", "fair", "blocking", "numa", "peer", "what", "source",
    ];
    Table {
        header: header.iter().map(|h| h.to_string()).collect(),
        rows: all()
            .iter()
            .map(|e| row("mutex", &e.info, e.peer))
            .chain(rw_all().iter().map(|e| row("rwlock", &e.info, e.peer)))
            .collect(),
    }
}

/// [`table`] as a Markdown table (the lock's name set as code), as
/// `locklab locks --format markdown` prints it and the docs hold it
/// between `<!-- locks:begin … -->` and `<!-- locks:end -->`.
pub fn markdown() -> String {
    let mut t = table();
    for r in &mut t.rows {
        r[0] = format!("`{}`", r[0]);
    }
    t.markdown(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A study's table from [`per_mutex`] has one function per entry, in
    /// the entries' order: the function at `Entry::index` is the one made
    /// for that entry's type.
    #[test]
    fn a_study_table_lines_up_with_the_entries() {
        struct TypeName;
        impl MutexMaker<&'static str> for TypeName {
            fn make<L: LabMutex>(&self) -> &'static str {
                std::any::type_name::<L>()
            }
        }
        struct RwTypeName;
        impl RwMaker<&'static str> for RwTypeName {
            fn make<L: LabRwLock>(&self) -> &'static str {
                std::any::type_name::<L>()
            }
        }
        let types = per_mutex(TypeName);
        assert_eq!(types.len(), all().len());
        let ticket = all().iter().find(|e| e.info.name == "ticket").unwrap();
        assert!(
            types[ticket.index].ends_with("RawTicket>"),
            "{}",
            types[ticket.index]
        );
        let pthread = all().iter().find(|e| e.info.name == "pthread").unwrap();
        assert!(
            types[pthread.index].ends_with("PthreadPeer"),
            "{}",
            types[pthread.index]
        );
        for (i, e) in all().iter().enumerate() {
            assert_eq!(e.index, i);
        }
        let rw = per_rwlock(RwTypeName);
        assert_eq!(rw.len(), rw_all().len());
        let rwsem = rw_all().iter().find(|e| e.info.name == "rwsem").unwrap();
        assert!(
            rw[rwsem.index].ends_with("RawRwSem>"),
            "{}",
            rw[rwsem.index]
        );
    }

    /// `combining` is the one delegation lock: its entry says so, and its
    /// runner is made for the lab's combining type.
    #[test]
    fn the_delegation_lock_is_marked() {
        struct TypeName;
        impl MutexMaker<&'static str> for TypeName {
            fn make<L: LabMutex>(&self) -> &'static str {
                std::any::type_name::<L>()
            }
        }
        let types = per_mutex(TypeName);
        let delegating: Vec<_> = all().iter().filter(|e| e.delegates).collect();
        assert_eq!(delegating.len(), 1, "{delegating:?}");
        let e = delegating[0];
        assert_eq!(e.info.name, "combining");
        assert_eq!(e.info.family, Family::Delegation);
        assert!(!e.peer && !e.info.fair && !e.info.blocking);
        assert!(e.info.source.contains("SPAA 2010"), "{}", e.info.source);
        assert!(types[e.index].ends_with("Combining"), "{}", types[e.index]);
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
}
