//! `hmcs`: the hierarchical MCS lock, two levels.
//!
//! An MCS lock per NUMA node (the *leaf*) under one *root* MCS lock. A
//! thread queues at its node's leaf; the leaf's first holder then queues
//! at the root, not with a node of its own but with the leaf's: each leaf
//! owns one root queue node, so the root queue holds at most one entry per
//! NUMA node and the root lock belongs to a leaf, not to a thread. While
//! a leaf holds the root, its holders pass the lock to each other down the
//! leaf queue, each telling its successor in the successor's `status` word
//! how many of the node's threads have held the lock in a row; at the
//! threshold, or when nobody waits at the leaf, the holder releases the
//! root (to the next node in the root queue) and hands the leaf on with
//! `ACQUIRE_PARENT`, telling its successor to queue at the root again.
//!
//! Source: M. Chabbi, M. Fagan and J. Mellor-Crummey, "High Performance
//! Locks for Multi-level NUMA Systems", PPoPP 2015. The paper builds a
//! tree of any depth, one MCS lock per level of the machine's hierarchy;
//! this is its two-level case (node, machine), the shape of the cohort
//! lock with MCS locks at both levels (C-MCS) that the paper models and
//! compares it with. The `status` values are the paper's: `WAIT`
//! while queued, `ACQUIRE_PARENT` for "the leaf is yours, queue at the
//! root", otherwise the count of consecutive holders on this node,
//! starting at `COHORT_START` = 1 for the thread that took the root.
//!
//! ```text
//!  RawHmcs
//!  root: tail ──► leaves[a].root_node ──► leaves[b].root_node    root queue:
//!                  (held)                  (waiting)             one node
//!  leaves[a]: tail ──► holder ──► waiter ──► waiter                per leaf
//!             root_node { next, status }
//!  leaves[b]: tail ──► first (waits for the root) ──► waiter
//!  …          (MAX_NODES leaves)
//! ```
//!
//! # The bound and fairness
//!
//! `BOUND` is the most consecutive hand-overs within a leaf: a holder
//! whose `status` is `s` (the `s`-th holder of this tenure of the root)
//! passes within the leaf only if `s <= BOUND`, so a tenure serves at most
//! `BOUND + 1` critical sections (the paper's threshold `h` counts holders:
//! `h = BOUND + 1`). The default, 63, is `h = 64`, the threshold the
//! authors' experiment scripts use below the root (`experiments/HMCS/
//! run_ppc.sh` in github.com/chabbimilind/nwchem); the paper itself
//! derives thresholds per machine from its throughput and fairness model.
//! The root is a plain FIFO MCS lock (the paper's top level has no
//! threshold: there is no parent to keep). So a waiting node gets the
//! root after at most one tenure of each node queued before it, and
//! within a node the leaf is FIFO: HMCS is starvation-free with a bound,
//! but not FIFO (`LockInfo::fair` is false).
//!
//! # Orderings
//!
//! Both levels are MCS locks and use `spin::mcs`'s orderings: the tail
//! swaps are `AcqRel` (publishing a node's initialisation to the
//! successor that links behind it, and the predecessor's to us); linking
//! (`pred.next = me`) is `Release` and the holder's read of `next`
//! `Acquire`, so our `status = WAIT` is ordered before the predecessor's
//! hand-over store; swinging a tail back to null is a `Release`
//! compare-exchange that the next swap's Acquire picks up.
//!
//! - A hand-over (`status = s + 1`, `ACQUIRE_PARENT`, or the root's grant)
//!   is a `Release` store, and the wait for it an `Acquire` load: the
//!   critical section reaches the next holder through whichever of the
//!   two it got the lock by, a leaf pass or the root.
//! - The root is released before the leaf is handed on with
//!   `ACQUIRE_PARENT`, and the successor then re-initialises the leaf's
//!   root node: the leaf hand-over's Release/Acquire orders the last use
//!   of that node in the previous tenure (reading its `next`, swinging
//!   the root tail) before its reuse.
//! - A holder's own `status` (its count) is read back `Relaxed`: it was
//!   written by this thread or read by its Acquire wait.

use core::ptr::{self, NonNull};

use crate::info::{Described, Family, LockInfo};
use crate::topology::{self, MAX_NODES};
use crate::util::spares::{Claimed, Spares};
use crate::util::sync::{spin_loop, AtomicPtr, AtomicU32, Ordering};
use crate::util::CachePadded;

/// The default bound on consecutive hand-overs within a leaf (see the
/// module documentation).
pub const HMCS_BOUND: u32 = 63;

/// Queued, not yet served.
const WAIT: u32 = u32::MAX;
/// The leaf lock is yours, the root is not: queue at the root.
const ACQUIRE_PARENT: u32 = u32::MAX - 1;
/// The count of the thread that took the root: the first of a tenure.
const COHORT_START: u32 = 1;

/// A queue node, at either level: the successor's link and the hand-over
/// word (`WAIT`, `ACQUIRE_PARENT` or a count).
#[derive(Debug, Default)]
struct QNode {
    next: AtomicPtr<QNode>,
    status: AtomicU32,
}

impl QNode {
    crate::loom_const_fn! {
        fn new() -> Self {
            Self { next: AtomicPtr::new(ptr::null_mut()), status: AtomicU32::new(WAIT) }
        }
    }
}

crate::node_table!(static NODES: QNode);
static SPARES: Spares<QNode> = Spares::new();

/// One node's leaf: its MCS lock's tail, and the node it queues with at
/// the root (on a line of its own: the root predecessor writes it while
/// this node's threads swap the tail).
#[derive(Debug)]
struct Leaf {
    tail: AtomicPtr<QNode>,
    root_node: CachePadded<QNode>,
}

impl Leaf {
    crate::loom_const_fn! {
        fn new() -> Self {
            Self { tail: AtomicPtr::new(ptr::null_mut()), root_node: CachePadded::new(QNode::new()) }
        }
    }
}

#[cfg(not(loom))]
const fn leaves() -> [CachePadded<Leaf>; MAX_NODES] {
    [const { CachePadded::new(Leaf::new()) }; MAX_NODES]
}

#[cfg(loom)]
fn leaves() -> [CachePadded<Leaf>; MAX_NODES] {
    core::array::from_fn(|_| CachePadded::new(Leaf::new()))
}

/// One acquisition of a [`RawHmcs`]: the leaf queue node and the leaf.
/// Not `Send`: a table node goes back to the thread that claimed it.
#[derive(Debug)]
pub struct HmcsToken {
    node: Claimed<QNode>,
    leaf: u32,
}

// SAFETY: a shared `&HmcsToken` exposes nothing; all use of the node
// happens through `release`, which takes the token by value on the
// owning thread.
unsafe impl Sync for HmcsToken {}

/// Hierarchical MCS lock, two levels, at most `BOUND` consecutive
/// hand-overs within a node. See the module documentation.
#[derive(Debug)]
pub struct RawHmcs<const BOUND: u32 = HMCS_BOUND> {
    root: CachePadded<AtomicPtr<QNode>>,
    leaves: [CachePadded<Leaf>; MAX_NODES],
}

impl<const BOUND: u32> RawHmcs<BOUND> {
    const _COUNT_FITS: () = assert!(BOUND < ACQUIRE_PARENT - 1, "counts stay below the markers");

    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { root: CachePadded::new(AtomicPtr::new(ptr::null_mut())), leaves: leaves() }
        }
    }

    /// Queues at this node's leaf, and at the root unless the leaf's
    /// previous holder passed the root on with the leaf.
    #[inline]
    pub fn acquire(&self) -> HmcsToken {
        let () = Self::_COUNT_FITS;
        let l = topology::current_node() % MAX_NODES;
        let leaf = &self.leaves[l];
        let me = Claimed::claim(&NODES, &SPARES);
        let node = me.node();
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.status.store(WAIT, Ordering::Relaxed);
        let pred = leaf.tail.swap(me.as_ptr(), Ordering::AcqRel);
        if let Some(pred) = NonNull::new(pred) {
            // SAFETY: the predecessor cannot give its node back before it
            // has read this link and handed the leaf on to us.
            unsafe { pred.as_ref() }
                .next
                .store(me.as_ptr(), Ordering::Release);
            let status = loop {
                let s = node.status.load(Ordering::Acquire);
                if s != WAIT {
                    break s;
                }
                spin_loop();
            };
            if status != ACQUIRE_PARENT {
                // Passed within the node: the root came with the leaf.
                return HmcsToken {
                    node: me,
                    leaf: l as u32,
                };
            }
        }
        // The first of a tenure: queue at the root with the leaf's node.
        node.status.store(COHORT_START, Ordering::Relaxed);
        self.acquire_root(leaf);
        HmcsToken {
            node: me,
            leaf: l as u32,
        }
    }

    /// Queues the leaf's root node at the root and waits for its turn.
    fn acquire_root(&self, leaf: &Leaf) {
        let r = &*leaf.root_node;
        r.next.store(ptr::null_mut(), Ordering::Relaxed);
        r.status.store(WAIT, Ordering::Relaxed);
        let pred = self
            .root
            .swap(ptr::from_ref(r).cast_mut(), Ordering::AcqRel);
        if let Some(pred) = NonNull::new(pred) {
            // SAFETY: root nodes live in the lock, which `&self` keeps
            // alive, and the predecessor waits for this link before it
            // lets its node be reused.
            unsafe { pred.as_ref() }
                .next
                .store(ptr::from_ref(r).cast_mut(), Ordering::Release);
            while r.status.load(Ordering::Acquire) == WAIT {
                spin_loop();
            }
        }
    }

    /// Takes the lock if this node's leaf and the root are both free right
    /// now.
    #[inline]
    pub fn try_acquire(&self) -> Option<HmcsToken> {
        let l = topology::current_node() % MAX_NODES;
        let leaf = &self.leaves[l];
        // Look before claiming a node: a busy lock costs two loads.
        if !leaf.tail.load(Ordering::Relaxed).is_null()
            || !self.root.load(Ordering::Relaxed).is_null()
        {
            return None;
        }
        let me = Claimed::claim(&NODES, &SPARES);
        let node = me.node();
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.status.store(COHORT_START, Ordering::Relaxed);
        if leaf
            .tail
            .compare_exchange(
                ptr::null_mut(),
                me.as_ptr(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_err()
        {
            // Never published: nobody else saw the node.
            me.free(&NODES, &SPARES);
            return None;
        }
        // The leaf is ours and empty before us, so its root node is in no
        // queue (the last tenure released the root before the leaf).
        let r = &*leaf.root_node;
        r.next.store(ptr::null_mut(), Ordering::Relaxed);
        if self
            .root
            .compare_exchange(
                ptr::null_mut(),
                ptr::from_ref(r).cast_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            return Some(HmcsToken {
                node: me,
                leaf: l as u32,
            });
        }
        // The root is busy: give the leaf back, telling any thread that
        // queued behind us meanwhile to take the root itself.
        Self::release_leaf(leaf, me, ACQUIRE_PARENT);
        None
    }

    /// Passes the lock to the next waiter of this node if there is one and
    /// the bound allows; otherwise releases the root and hands the leaf on
    /// with `ACQUIRE_PARENT`.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock, on this thread.
    #[inline]
    pub unsafe fn release(&self, token: HmcsToken) {
        let leaf = &self.leaves[token.leaf as usize];
        let node = token.node.node();
        let count = node.status.load(Ordering::Relaxed);
        if count <= BOUND {
            let next = node.next.load(Ordering::Acquire);
            if let Some(next) = NonNull::new(next) {
                // SAFETY: the successor spins until this store, so its node
                // lives.
                unsafe { next.as_ref() }
                    .status
                    .store(count + 1, Ordering::Release);
                token.node.free(&NODES, &SPARES);
                return;
            }
        }
        self.release_root(leaf);
        Self::release_leaf(leaf, token.node, ACQUIRE_PARENT);
    }

    /// Hands the root on to the next node in the root queue, or frees it.
    fn release_root(&self, leaf: &Leaf) {
        let r = &*leaf.root_node;
        let mut next = r.next.load(Ordering::Acquire);
        if next.is_null() {
            if self
                .root
                .compare_exchange(
                    ptr::from_ref(r).cast_mut(),
                    ptr::null_mut(),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return;
            }
            // Another node has swapped itself in and is about to link.
            while next.is_null() {
                spin_loop();
                next = r.next.load(Ordering::Acquire);
            }
        }
        // SAFETY: the next node's first holder spins until this store; root
        // nodes live as long as the lock.
        unsafe { &*next }
            .status
            .store(COHORT_START, Ordering::Release);
    }

    /// Hands the leaf to the next waiter with `status`, or frees it; then
    /// gives the node back.
    fn release_leaf(leaf: &Leaf, me: Claimed<QNode>, status: u32) {
        let node = me.node();
        let mut next = node.next.load(Ordering::Acquire);
        if next.is_null() {
            if leaf
                .tail
                .compare_exchange(
                    me.as_ptr(),
                    ptr::null_mut(),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                me.free(&NODES, &SPARES);
                return;
            }
            while next.is_null() {
                spin_loop();
                next = node.next.load(Ordering::Acquire);
            }
        }
        // SAFETY: the successor spins until this store, so its node lives.
        unsafe { &*next }.status.store(status, Ordering::Release);
        // Our node: the successor wrote `next` before we read it, and
        // nobody else has it.
        me.free(&NODES, &SPARES);
    }

    /// Whether some node holds or waits for the root (a momentary
    /// snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        !self.root.load(Ordering::Relaxed).is_null()
    }

    /// Whether the holder of `token` was passed the root within its node
    /// rather than queueing for it: the NUMA known-answer test's view. Its
    /// own count, read by the holder.
    #[cfg(all(test, not(loom)))]
    fn passed_within_node(&self, token: &HmcsToken) -> bool {
        token.node.node().status.load(Ordering::Relaxed) > COHORT_START
    }
}

impl<const BOUND: u32> Default for RawHmcs<BOUND> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BOUND: u32> Described for RawHmcs<BOUND> {
    const INFO: LockInfo = LockInfo {
        name: "hmcs",
        family: Family::Numa,
        fair: false,
        blocking: false,
        numa_aware: true,
        source: "Chabbi, Fagan & Mellor-Crummey, High Performance Locks for Multi-level NUMA Systems, PPoPP 2015",
        summary: "hierarchical MCS, two levels: an MCS lock per node under a root MCS lock queued by node, passed within a node at most 63 times in a row; starvation-free with that bound, not FIFO",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{HmcsToken, RawHmcs};

    // SAFETY: `acquire` returns only once this thread holds its leaf and
    // its leaf holds the root (queued for, or passed down the leaf by a
    // previous holder that no longer holds either), so at most one token
    // is outstanding; the Release/Acquire hand-overs at both levels order
    // the critical sections. `HmcsToken` is `!Send`, so `unlock` runs on
    // the thread that claimed the node.
    unsafe impl<const BOUND: u32> lock_api::RawMutex for RawHmcs<BOUND> {
        const INIT: Self = Self::new();
        type Guard = HmcsToken;

        #[inline]
        fn lock(&self) -> HmcsToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<HmcsToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: HmcsToken) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    /// A mutex protected by a two-level hierarchical MCS lock.
    pub type HmcsMutex<T> = lock_api::Mutex<RawHmcs, T>;
}

#[cfg(not(loom))]
pub use raw::HmcsMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::nodes::DEPTH;
    use crate::util::testing::{churn_threads, hammer_fifo, nested_non_lifo, numa_log};

    /// A bound the known-answer test can reach in a few hundred sections.
    const TEST_BOUND: u32 = if cfg!(miri) { 2 } else { 4 };

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawHmcs>(6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        nested_non_lifo::<RawHmcs>(3);
    }

    #[test]
    fn six_locks_at_once_overflow_to_spare_nodes() {
        const N: usize = 6;
        const { assert!(N > DEPTH) };
        nested_non_lifo::<RawHmcs>(N);
        let locks: Vec<RawHmcs> = (0..N).map(|_| RawHmcs::new()).collect();
        let mut tokens: Vec<Option<HmcsToken>> = locks.iter().map(|l| Some(l.acquire())).collect();
        let spares = tokens
            .iter()
            .filter(|t| t.as_ref().unwrap().node.is_spare())
            .count();
        assert_eq!(spares, N - DEPTH);
        for i in [1, DEPTH, 0, N - 1, 2, 3] {
            // SAFETY: each token is released once, on this thread.
            unsafe { locks[i].release(tokens[i].take().unwrap()) };
        }
        assert!(locks.iter().all(|l| !l.is_held()));
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawHmcs>();
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let m = HmcsMutex::new(());
        let g = m.lock();
        assert!(m.is_locked());
        std::thread::scope(|s| {
            s.spawn(|| assert!(m.try_lock().is_none()));
        });
        drop(g);
        assert!(!m.is_locked());
        drop(m.try_lock().expect("free lock"));
    }

    /// A try on another node finds its leaf free and the root held: it
    /// fails and leaves its leaf free again.
    #[test]
    fn a_failed_try_leaves_its_leaf_free() {
        topology::set_thread_node(Some(0));
        let l = RawHmcs::<HMCS_BOUND>::new();
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
        assert!(l
            .leaves
            .iter()
            .skip(1)
            .all(|f| f.tail.load(Ordering::Relaxed).is_null()));
        // SAFETY: acquired above, on this thread.
        unsafe { l.release(t) };
        assert!(!l.is_held());
        let t = l.try_acquire().expect("free lock");
        // SAFETY: just acquired, on this thread.
        unsafe { l.release(t) };
        assert!(l
            .leaves
            .iter()
            .all(|f| f.tail.load(Ordering::Relaxed).is_null()));
        topology::set_thread_node(None);
    }

    /// The shared known answer (`testing::numa_log`): a local pass is a
    /// holder whose count is above `COHORT_START`, handed the root down
    /// its leaf. A tenure is one root acquisition and at most `BOUND`
    /// passes, so runs of passes are at most `BOUND` long (no slack) and
    /// every pass follows a holder of its own node. (With two nodes and
    /// both queued, the FIFO root even bounds plain runs of one node's
    /// holders by `BOUND + 1`; but who is queued the test cannot see.)
    #[test]
    fn passes_stay_within_a_node_and_within_the_bound() {
        let lock = RawHmcs::<TEST_BOUND>::new();
        let log = numa_log(
            &lock,
            4,
            100,
            RawHmcs::acquire,
            // SAFETY: the shape releases each token once, on its thread.
            |l, t| unsafe { l.release(t) },
            RawHmcs::passed_within_node,
        );
        log.assert_local_runs(TEST_BOUND as usize);
    }

    #[test]
    fn metadata() {
        let i = RawHmcs::<HMCS_BOUND>::INFO;
        assert_eq!(i.name, "hmcs");
        assert_eq!(i.family, Family::Numa);
        assert_eq!((i.fair, i.blocking, i.numa_aware), (false, false, true));
        assert_eq!(core::mem::size_of::<HmcsToken>(), 24);
    }
}
