//! `c-bo-mcs`: lock cohorting with a global backoff lock over per-node MCS
//! locks.
//!
//! A cohort lock is two levels of ordinary locks: one *local* lock per NUMA
//! node and one *global* lock. A thread takes its node's local lock, then
//! the global lock, unless the local lock's previous holder, a thread of
//! the same node (its *cohort*), passed the global lock on with it. On
//! release, if another thread of the node waits for the local lock and the
//! node has not yet passed the global lock on [`BOUND`](RawCboMcs) times
//! in a row, the holder hands both over; otherwise it releases the global
//! lock and then hands the local lock on, telling its successor to take
//! the global lock itself. While a node holds the global lock, its
//! threads hand the lock to each other through their local MCS queue, and
//! the lock and the data it guards stay in that node's caches.
//!
//! Source: D. Dice, V. J. Marathe and N. Shavit, "Lock Cohorting: A
//! General Technique for Designing NUMA Locks", ACM Transactions on
//! Parallel Computing 1(2), 2015 (first at PPoPP 2012). The general
//! technique needs a global lock that one thread may release for another
//! (*thread-oblivious*: a test-and-set lock is) and local locks that can
//! tell whether a thread waits (*cohort detection*: an MCS lock can, from
//! its tail and its holder's `next`). This is the paper's C-BO-MCS: the
//! global lock is [`RawBackoff`] (test-and-test-and-set with randomized
//! exponential backoff) and the local locks are [`RawMcs`], reused whole,
//! nodes, table and spares included; `RawMcs::has_waiter` is its cohort
//! detection, and its hand-over's word (`RawMcs::release_granting`, read
//! by `RawMcs::acquire_granted`) says whether the global lock comes with
//! the local one, in the line the successor already spins on, as HMCS's
//! `status` word carries its count (`numa::hmcs`).
//!
//! ```text
//!  RawCboMcs
//!  ┌────────────────────────┐
//!  │ global: RawBackoff     │  held by one node at a time
//!  ├────────────────────────┤
//!  │ cohorts[0]: RawMcs     │  node 0's threads queue here; the holder
//!  │ cohorts[1]: …          │  grants its successor n: "the global lock
//!  │ …   (MAX_NODES)        │  is yours, passed n times in a row" (n > 0)
//!  └────────────────────────┘  or 0: "take it yourself"
//! ```
//!
//! Whether the global lock comes with the local one travels in the MCS
//! hand-over itself: the holder grants its successor `n + 1`, where `n` is
//! its own grant, to pass the global lock on, or 0 to make it take the
//! global lock itself (and an acquisition that found the local queue empty
//! reads 0). The count rides in the line the successor already spins on
//! and ends up in its token, so a pass within a node costs no cache miss
//! beyond the MCS hand-over's. (An earlier version kept it in a word
//! beside each node's MCS tail, which the holder wrote and its successor
//! read: two more transfers of a line that arrivals keep taking for the
//! tail swap, enough for `locklab sim spin` to put this lock behind plain
//! MCS, within a socket and across two.)
//!
//! # The bound and fairness
//!
//! `BOUND` (default 100, the paper's setting as LiTL's C-BO-MCS records
//! it: `BATCH_COUNT` in `include/cbomcs.h` of github.com/multicore-locks/
//! litl, "default number in the paper") is the most consecutive local
//! hand-overs of the global lock:
//! one node's *tenure* of the global lock serves at most `BOUND + 1`
//! critical sections, the first by the thread that took the global lock.
//! Within a node the local MCS lock is FIFO. Across nodes nothing is
//! promised: when a tenure ends, the node's next waiter and the other
//! nodes' waiters race for the test-and-set global lock, and the same node
//! may win again (backoff makes a long streak unlikely, not impossible).
//! So C-BO-MCS is neither FIFO nor, in theory, starvation-free; its
//! `LockInfo` says `fair: false`.
//!
//! # Orderings
//!
//! - The critical section reaches the next holder either through the
//!   global lock (its release is a `Release` store, its acquisition an
//!   `Acquire` compare-exchange: see `spin::backoff`) or, when the global
//!   lock is passed, through the local MCS hand-over (`Release` store of
//!   the successor's grant word, `Acquire` spin: see `spin::mcs`).
//! - The count is the MCS hand-over's own word, stored with its Release
//!   and read with its Acquire; the holder keeps its own in its token. A
//!   grant of `n + 1` is given only after `has_waiter` saw a waiter, which
//!   the MCS release then serves, so a passed global lock always reaches
//!   a thread of the node; a thread that finds the local queue empty gets
//!   0 and takes the global lock itself.
//! - The global lock is released before the local lock is handed on with
//!   a grant of 0; the successor's own acquisition of the global lock is
//!   ordered after that release like any other.

use crate::info::{Described, Family, LockInfo};
use crate::spin::{McsToken, RawBackoff, RawMcs};
use crate::topology::{self, MAX_NODES};
use crate::util::CachePadded;

/// The default bound on consecutive local hand-overs (see the module
/// documentation).
pub const COHORT_BOUND: u32 = 100;

#[cfg(not(loom))]
const fn cohorts() -> [CachePadded<RawMcs>; MAX_NODES] {
    [const { CachePadded::new(RawMcs::new()) }; MAX_NODES]
}

#[cfg(loom)]
fn cohorts() -> [CachePadded<RawMcs>; MAX_NODES] {
    core::array::from_fn(|_| CachePadded::new(RawMcs::new()))
}

/// One acquisition of a [`RawCboMcs`]: the local MCS lock's token, which
/// node's cohort it belongs to, and the count of passes of the global lock
/// it was granted. Not `Send`, like [`McsToken`].
#[derive(Debug)]
pub struct CboMcsToken {
    local: McsToken,
    cohort: u32,
    /// 0 if this holder took the global lock; else the count of
    /// consecutive local passes that brought it.
    passes: u32,
}

/// C-BO-MCS cohort lock: a global backoff lock over one MCS lock per NUMA
/// node, at most `BOUND` consecutive hand-overs within a node. See the
/// module documentation.
#[derive(Debug)]
pub struct RawCboMcs<const BOUND: u32 = COHORT_BOUND> {
    global: CachePadded<RawBackoff>,
    /// Each node's local lock.
    cohorts: [CachePadded<RawMcs>; MAX_NODES],
}

impl<const BOUND: u32> RawCboMcs<BOUND> {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            // A grant of `BOUND` must not be the MCS node's "waiting".
            const { assert!(BOUND < u32::MAX, "BOUND must be below u32::MAX") };
            Self { global: CachePadded::new(RawBackoff::new()), cohorts: cohorts() }
        }
    }

    /// Takes this node's local lock, then the global lock unless it came
    /// with the local one.
    #[inline]
    pub fn acquire(&self) -> CboMcsToken {
        let c = topology::current_node() % MAX_NODES;
        let (local, passes) = self.cohorts[c].acquire_granted();
        if passes == 0 {
            self.global.acquire();
        }
        CboMcsToken {
            local,
            cohort: c as u32,
            passes,
        }
    }

    /// Takes the lock if this node's local lock has no holder or waiter and
    /// the global lock is free, right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<CboMcsToken> {
        let c = topology::current_node() % MAX_NODES;
        let cohort = &self.cohorts[c];
        // A free local lock comes with no grant: the global lock is not
        // ours yet.
        let local = cohort.try_acquire()?;
        if self.global.try_acquire() {
            Some(CboMcsToken {
                local,
                cohort: c as u32,
                passes: 0,
            })
        } else {
            // A plain release grants 0: a local waiter that arrived
            // meanwhile takes the global lock itself.
            // SAFETY: `local` is the token of the acquisition just made.
            unsafe { cohort.release(local) };
            None
        }
    }

    /// Passes the global lock to the next waiter of this node if there is
    /// one and the bound allows; otherwise releases it. Then hands on (or
    /// frees) the local lock.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock, on this thread.
    #[inline]
    pub unsafe fn release(&self, token: CboMcsToken) {
        let local = &self.cohorts[token.cohort as usize];
        let passes = token.passes;
        let grant = if passes < BOUND && local.has_waiter(&token.local) {
            passes + 1
        } else {
            // SAFETY: we hold the global lock: taken in `acquire` or
            // passed to us with the local lock.
            unsafe { self.global.release() };
            0
        };
        // SAFETY: the caller's token is this local lock's acquisition, on
        // this thread; `grant` is at most `BOUND`, below `u32::MAX`.
        unsafe { local.release_granting(token.local, grant) };
    }

    /// Whether some node holds the global lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.global.is_held()
    }

    /// Whether the holder of `token` got the global lock from a holder on
    /// its node rather than taking it: the NUMA known-answer test's view.
    /// Read by the holder, after the hand-over that wrote it.
    #[cfg(all(test, not(loom)))]
    fn passed_within_node(&self, token: &CboMcsToken) -> bool {
        token.passes > 0
    }
}

impl<const BOUND: u32> Default for RawCboMcs<BOUND> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BOUND: u32> Described for RawCboMcs<BOUND> {
    const INFO: LockInfo = LockInfo {
        name: "c-bo-mcs",
        family: Family::Numa,
        fair: false,
        blocking: false,
        numa_aware: true,
        source: "Dice, Marathe & Shavit, Lock Cohorting: A General Technique for Designing NUMA Locks, ACM TOPC 1(2), 2015 (PPoPP 2012)",
        summary: "cohort lock: a test-and-set backoff lock over one MCS lock per node, passed within a node at most 100 times in a row; not FIFO, and the global lock promises no order between nodes",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{CboMcsToken, RawCboMcs};

    // SAFETY: `acquire` returns only once this thread holds its node's
    // local MCS lock and the global lock (taken, or passed to it by the
    // previous local holder, who then no longer holds either), so at most
    // one token is outstanding; the global lock's and the MCS hand-over's
    // Release/Acquire pairs order the critical sections. The token holds
    // an `McsToken`, `!Send`, so `unlock` runs on the claiming thread.
    unsafe impl<const BOUND: u32> lock_api::RawMutex for RawCboMcs<BOUND> {
        const INIT: Self = Self::new();
        type Guard = CboMcsToken;

        #[inline]
        fn lock(&self) -> CboMcsToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<CboMcsToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: CboMcsToken) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    /// A mutex protected by a C-BO-MCS cohort lock.
    pub type CboMcsMutex<T> = lock_api::Mutex<RawCboMcs, T>;
}

#[cfg(not(loom))]
pub use raw::CboMcsMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{churn_threads, hammer_fifo, nested_non_lifo, numa_log};

    /// A bound the known-answer test can reach in a few hundred sections.
    const TEST_BOUND: u32 = if cfg!(miri) { 2 } else { 4 };

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawCboMcs>(6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        // Six: past the MCS node table's four slots, into its spares.
        nested_non_lifo::<RawCboMcs>(6);
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawCboMcs>();
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let m = CboMcsMutex::new(());
        let g = m.lock();
        assert!(m.is_locked());
        std::thread::scope(|s| {
            s.spawn(|| assert!(m.try_lock().is_none()));
        });
        drop(g);
        assert!(!m.is_locked());
        drop(m.try_lock().expect("free lock"));
    }

    /// A try on another node finds its local lock free and the global lock
    /// held: it fails and leaves its local lock free again; a try on the
    /// holder's node fails at the local lock.
    #[test]
    fn a_failed_try_leaves_its_nodes_local_lock_free() {
        topology::set_thread_node(Some(0));
        let l = RawCboMcs::<COHORT_BOUND>::new();
        let t = l.acquire();
        std::thread::scope(|s| {
            for node in [0, 1] {
                let l = &l;
                s.spawn(move || {
                    topology::set_thread_node(Some(node));
                    assert!(l.try_acquire().is_none(), "node {node}");
                });
            }
        });
        assert!(l.cohorts[0].is_held());
        assert!(!l.cohorts[1].is_held());
        // SAFETY: acquired above, on this thread.
        unsafe { l.release(t) };
        assert!(!l.is_held());
        let t = l.try_acquire().expect("free lock");
        // SAFETY: just acquired, on this thread.
        unsafe { l.release(t) };
        assert!(l.cohorts.iter().all(|c| !c.is_held()));
        topology::set_thread_node(None);
    }

    /// A node's threads hand the global lock on at most `BOUND` times in
    /// a row, and do hand it on: the shared known answer
    /// (`testing::numa_log`). A local pass here is a holder whose grant
    /// is non-zero: it got the global lock with the local one. Each tenure
    /// is one taker and at most `BOUND` passes, so no slack: runs of
    /// passes are at most `BOUND` long, and every pass follows a holder of
    /// its own node. Runs of plain same-node holders can be longer (a node
    /// may win the global lock again, and a node's threads run alone while
    /// the others are between sections), which is why the test reads the
    /// lock's count rather than guess from nodes.
    #[test]
    fn passes_stay_within_a_node_and_within_the_bound() {
        let lock = RawCboMcs::<TEST_BOUND>::new();
        let log = numa_log(
            &lock,
            4,
            100,
            RawCboMcs::acquire,
            // SAFETY: the shape releases each token once, on its thread.
            |l, t| unsafe { l.release(t) },
            RawCboMcs::passed_within_node,
        );
        log.assert_local_runs(TEST_BOUND as usize);
    }

    #[test]
    fn metadata() {
        let i = RawCboMcs::<COHORT_BOUND>::INFO;
        assert_eq!(i.name, "c-bo-mcs");
        assert_eq!(i.family, Family::Numa);
        assert_eq!((i.fair, i.blocking, i.numa_aware), (false, false, true));
        assert_eq!(
            RawCboMcs::<COHORT_BOUND>::INFO,
            <RawCboMcs as Described>::INFO
        );
    }
}
