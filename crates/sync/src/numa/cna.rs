//! `cna`: compact NUMA-aware lock: an MCS lock in one word whose holder
//! prefers a successor on its own node.
//!
//! The lock word is an MCS tail and nothing else. Waiters queue as in MCS
//! (`spin::mcs`), each recording its NUMA node in its queue node before it
//! links in. On release, the holder looks along the queue for the first
//! waiter on its own node; the waiters it skips, all on other nodes, are
//! cut out of the queue and appended to a *secondary queue*, and the lock
//! goes to that local waiter. The secondary queue lives in the waiters'
//! own nodes: its head travels with the lock, in the word the holder
//! writes to grant the lock, and the head's `sec_tail` points at its last
//! node. When no waiter of the holder's node is queued, or after a fixed
//! number of local hand-overs made while the secondary queue waits (the
//! fairness bound), the secondary queue is spliced back in front of the
//! main queue and the lock passes to its head: the longest-skipped
//! waiter.
//!
//! Source: D. Dice and A. Kogan, "Compact NUMA-aware Locks", EuroSys 2019
//! (arXiv 1810.05600); the Linux patch series by A. Kogan, "locking/
//! qspinlock: Introduce CNA into the slow path of qspinlock" (v8, 2019,
//! and later), whose patch 4/5, "Introduce starvation avoidance into
//! CNA", replaces the paper's pseudo-random decision to flush the
//! secondary queue by a count of intra-node hand-overs, incremented only
//! while the secondary queue is non-empty, with a default threshold of
//! `1 << 16` (`intra_node_handoff_threshold`). This file takes that count
//! and that default ([`CNA_BOUND`]); the count is deterministic, so tests
//! can rely on it.
//!
//! ```text
//!  lock word: tail ───────────────────────────────────────────┐
//!                                                             ▼
//!  holder (node 0) ──next──► w1 (node 0) ──► w2 (node 1) ──► w3 (node 0)
//!    grant: head of the secondary queue ─┐
//!                                        ▼
//!                       s1 (node 1) ──► s2 (node 1)     secondary queue
//!                       sec_tail: s2 ───────┘           (skipped earlier)
//!
//!  grant word of a queue node:  null     waiting
//!                               GRANTED  lock is yours, no secondary queue
//!                               p        lock is yours, secondary head p
//! ```
//!
//! # The bound and fairness
//!
//! `count` travels with the lock too (the predecessor writes it into the
//! successor's node before the grant). A hand-over to a local waiter adds
//! 1 to it if the secondary queue is non-empty afterwards (some waiter
//! was passed over and is still waiting), 0 otherwise; any other
//! hand-over resets it. A holder whose count has reached `BOUND` does not
//! look for a local waiter: it hands the lock to the secondary queue's
//! head (the count is non-zero only while that queue is non-empty). So
//! once a waiter has been skipped, at most `BOUND` critical sections of
//! the skipping node follow before the skipped waiters' turn, and each
//! waiter is served after a bounded number of others: starvation-free,
//! not FIFO (`LockInfo::fair` is false).
//!
//! # Orderings
//!
//! The MCS orderings (see `spin::mcs`): the tail swap is `AcqRel`, linking
//! (`pred.next = me`) `Release` and the holder's reads of `next` (its own
//! and, scanning, every waiter's) `Acquire`, the grant a `Release` store
//! and the wait for it an `Acquire` load, swinging the tail back a
//! `Release` compare-exchange.
//!
//! - A waiter writes its `numa` before it links in, so the `Release` link
//!   and the scanning holder's `Acquire` read of it make the node number
//!   visible; a node found by the scan is a waiter until the holder
//!   itself grants it the lock, so nothing in it changes under the scan
//!   but its `next` (written by its own successor when it links).
//! - Everything else in the waiters' nodes (`next` when a segment is cut
//!   or spliced, `sec_tail`, `count`) is written only by lock holders, one
//!   after another, and read only by later holders or by the node's owner
//!   once granted, so the grant's Release/Acquire orders it: `Relaxed`.
//! - When the main queue is empty but the secondary queue is not, the
//!   holder swings the tail from its own node to the secondary queue's
//!   last node (`Release`): a newcomer whose swap reads that tail then
//!   sees that node's `next` null before it links there.

use core::ptr::{self, NonNull};

use crate::info::{Described, Family, LockInfo};
use crate::topology;
use crate::util::spares::{Claimed, Spares};
use crate::util::sync::{spin_loop, AtomicPtr, AtomicU32, Ordering};

/// The default bound: consecutive local hand-overs while skipped waiters
/// wait (see the module documentation).
pub const CNA_BOUND: u32 = 1 << 16;

/// The grant without a secondary queue: an address no node has (the
/// nodes' alignment, where nothing is allocated), never dereferenced.
const GRANTED: *mut CnaNode = NonNull::dangling().as_ptr();

/// A waiter's queue node.
#[derive(Debug, Default)]
struct CnaNode {
    /// The waiter queued right behind this one (main or secondary queue).
    next: AtomicPtr<CnaNode>,
    /// Null while waiting; then [`GRANTED`] or the secondary queue's head.
    grant: AtomicPtr<CnaNode>,
    /// The waiter's NUMA node, recorded before it links in.
    numa: AtomicU32,
    /// Consecutive local hand-overs with waiters skipped, as of this
    /// node's grant.
    count: AtomicU32,
    /// In the secondary queue's head: the queue's last node.
    sec_tail: AtomicPtr<CnaNode>,
}

crate::node_table!(static NODES: CnaNode);
static SPARES: Spares<CnaNode> = Spares::new();

/// A node, from a pointer another thread published (the tail, a `next`
/// link, a grant).
///
/// # Safety
/// `p` is a non-null pointer to a `CnaNode` from the table or the spares,
/// which are never freed; the caller must also only touch it while the
/// algorithm gives it the right (see the module documentation).
#[inline]
unsafe fn node<'a>(p: *mut CnaNode) -> &'a CnaNode {
    debug_assert!(!p.is_null() && p != GRANTED);
    // SAFETY: the caller's guarantee.
    unsafe { &*p }
}

/// One acquisition of a [`RawCna`]: its queue node, which holds the
/// secondary queue and the count while the lock is held. Not `Send`: a
/// table node goes back to the thread that claimed it.
#[derive(Debug)]
pub struct CnaToken {
    node: Claimed<CnaNode>,
}

// SAFETY: a shared `&CnaToken` exposes nothing; all use of the node
// happens through `release`, which takes the token by value on the
// owning thread.
unsafe impl Sync for CnaToken {}

/// Compact NUMA-aware lock: one word, at most `BOUND` consecutive local
/// hand-overs while skipped waiters wait. See the module documentation.
#[derive(Debug)]
pub struct RawCna<const BOUND: u32 = CNA_BOUND> {
    tail: AtomicPtr<CnaNode>,
}

impl<const BOUND: u32> RawCna<BOUND> {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { tail: AtomicPtr::new(ptr::null_mut()) }
        }
    }

    /// Queues up and spins until the lock is ours.
    #[inline]
    pub fn acquire(&self) -> CnaToken {
        let me = Claimed::claim(&NODES, &SPARES);
        let n = me.node();
        n.next.store(ptr::null_mut(), Ordering::Relaxed);
        n.grant.store(ptr::null_mut(), Ordering::Relaxed);
        let pred = self.tail.swap(me.as_ptr(), Ordering::AcqRel);
        if pred.is_null() {
            // Ours at once: no secondary queue, nothing counted. Only we
            // read these until we release.
            n.grant.store(GRANTED, Ordering::Relaxed);
            n.count.store(0, Ordering::Relaxed);
        } else {
            self.wait(&me, pred);
        }
        CnaToken { node: me }
    }

    /// The queued path: record our node, link in, wait for the grant.
    #[cold]
    #[inline(never)]
    fn wait(&self, me: &Claimed<CnaNode>, pred: *mut CnaNode) {
        let n = me.node();
        n.numa
            .store(topology::current_node() as u32, Ordering::Relaxed);
        // SAFETY: a node from the tail; the predecessor cannot give it
        // back before it has read this link and handed the lock on.
        unsafe { node(pred) }
            .next
            .store(me.as_ptr(), Ordering::Release);
        while n.grant.load(Ordering::Acquire).is_null() {
            spin_loop();
        }
    }

    /// Takes the lock if nobody holds it or waits for it right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<CnaToken> {
        // Look before claiming a node: a busy lock costs one load.
        if !self.tail.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let me = Claimed::claim(&NODES, &SPARES);
        let n = me.node();
        n.next.store(ptr::null_mut(), Ordering::Relaxed);
        n.grant.store(GRANTED, Ordering::Relaxed);
        n.count.store(0, Ordering::Relaxed);
        match self.tail.compare_exchange(
            ptr::null_mut(),
            me.as_ptr(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) {
            Ok(_) => Some(CnaToken { node: me }),
            Err(_) => {
                // Never published: nobody else saw the node.
                me.free(&NODES, &SPARES);
                None
            }
        }
    }

    /// Hands the lock on: to a waiter of this node if there is one and the
    /// bound allows, else to the secondary queue's head, else to the next
    /// waiter; or frees it.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock, on this thread.
    #[inline]
    pub unsafe fn release(&self, token: CnaToken) {
        let me = token.node;
        let n = me.node();
        let sec = n.grant.load(Ordering::Relaxed);
        let mut next = n.next.load(Ordering::Acquire);
        if next.is_null() {
            // Nobody behind us in the main queue: the lock goes free, or
            // the secondary queue becomes the queue.
            let (to, head) = if sec == GRANTED {
                (ptr::null_mut(), None)
            } else {
                // SAFETY: the secondary head is a waiter (see `node`).
                (
                    unsafe { node(sec) }.sec_tail.load(Ordering::Relaxed),
                    Some(sec),
                )
            };
            if self
                .tail
                .compare_exchange(me.as_ptr(), to, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                if let Some(head) = head {
                    Self::grant(head, GRANTED, 0);
                }
                me.free(&NODES, &SPARES);
                return;
            }
            // A waiter has swapped itself in and is about to link.
            while next.is_null() {
                spin_loop();
                next = n.next.load(Ordering::Acquire);
            }
        }
        self.hand_over(me, next, sec);
    }

    /// The release with a main-queue successor `next`: kept out of line so
    /// that the uncontended release stays small.
    #[cold]
    #[inline(never)]
    fn hand_over(&self, me: Claimed<CnaNode>, next: *mut CnaNode, mut sec: *mut CnaNode) {
        let count = me.node().count.load(Ordering::Relaxed);
        if count < BOUND {
            let here = topology::current_node() as u32;
            if let Some(local) = Self::find_local(next, here, &mut sec) {
                Self::grant(local, sec, count + u32::from(sec != GRANTED));
                me.free(&NODES, &SPARES);
                return;
            }
        }
        if sec == GRANTED {
            Self::grant(next, GRANTED, 0);
        } else {
            // The secondary queue goes first, in front of the main queue.
            // SAFETY: the secondary queue's nodes are waiters.
            let last = unsafe { node(node(sec).sec_tail.load(Ordering::Relaxed)) };
            last.next.store(next, Ordering::Relaxed);
            Self::grant(sec, GRANTED, 0);
        }
        // Our node: our successor linked before we read `next`, and nobody
        // else has it.
        me.free(&NODES, &SPARES);
    }

    /// The first waiter of node `here` in the main queue from `first` on,
    /// if any. The waiters before it (all of other nodes) are cut out and
    /// appended to the secondary queue headed by `*sec` (`GRANTED`: empty),
    /// which `*sec` then heads.
    fn find_local(first: *mut CnaNode, here: u32, sec: &mut *mut CnaNode) -> Option<*mut CnaNode> {
        // Every node reached below is a waiter, found through the holder's
        // `next` and the waiters' `next` links (or the secondary queue,
        // which the holder owns); only the lock holder, us, grants or
        // moves waiters, so each stays a waiter while we look.
        // SAFETY: `first` is our successor (see above).
        let f = unsafe { node(first) };
        if f.numa.load(Ordering::Relaxed) == here {
            return Some(first);
        }
        let mut prev = f;
        let mut cur = f.next.load(Ordering::Acquire);
        while !cur.is_null() {
            // SAFETY: linked behind `prev`, so a waiter (see above).
            let c = unsafe { node(cur) };
            if c.numa.load(Ordering::Relaxed) == here {
                // Cut `first..=prev` out and append it to the secondary
                // queue. `prev.next` was written by `cur`, which has
                // linked: nobody else writes it now.
                prev.next.store(ptr::null_mut(), Ordering::Relaxed);
                let prev = ptr::from_ref(prev).cast_mut();
                if *sec == GRANTED {
                    f.sec_tail.store(prev, Ordering::Relaxed);
                    *sec = first;
                } else {
                    // SAFETY: the secondary queue's head and last node are
                    // waiters (see above).
                    let (head, last) = unsafe {
                        let head = node(*sec);
                        (head, node(head.sec_tail.load(Ordering::Relaxed)))
                    };
                    last.next.store(first, Ordering::Relaxed);
                    head.sec_tail.store(prev, Ordering::Relaxed);
                }
                return Some(cur);
            }
            prev = c;
            cur = c.next.load(Ordering::Acquire);
        }
        None
    }

    /// Grants the lock to the waiter `to`, with the secondary queue `sec`
    /// and the count that travel with the lock.
    #[inline]
    fn grant(to: *mut CnaNode, sec: *mut CnaNode, count: u32) {
        // SAFETY: `to` is a waiter, spinning until the store below.
        let t = unsafe { node(to) };
        t.count.store(count, Ordering::Relaxed);
        t.grant.store(sec, Ordering::Release);
    }

    /// Whether some thread holds or waits for the lock (a momentary
    /// snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }

    /// Whether the holder of `token` got the lock from a holder of its
    /// node while skipped waiters wait in the secondary queue: the NUMA
    /// known-answer test's view. The holder's own grant word.
    #[cfg(all(test, not(loom)))]
    fn passed_within_node(&self, token: &CnaToken) -> bool {
        token.node.node().grant.load(Ordering::Relaxed) != GRANTED
    }
}

impl<const BOUND: u32> Default for RawCna<BOUND> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const BOUND: u32> Described for RawCna<BOUND> {
    const INFO: LockInfo = LockInfo {
        name: "cna",
        family: Family::Numa,
        fair: false,
        blocking: false,
        numa_aware: true,
        source: "Dice & Kogan, Compact NUMA-aware Locks, EuroSys 2019; Kogan, locking/qspinlock: Introduce CNA into the slow path of qspinlock (Linux patch series, v8 2019)",
        summary: "one-word MCS lock that hands over to a waiter on the holder's node, parking the skipped ones in a secondary queue for at most 65536 local hand-overs; starvation-free with that bound, not FIFO",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{CnaToken, RawCna};

    // SAFETY: `acquire` returns only when the previous holder has granted
    // this waiter the lock (or the queue was empty), and a holder grants
    // exactly one waiter, so at most one token is outstanding; the
    // Release/Acquire pairs on the tail and the grant word order the
    // critical sections. `CnaToken` is `!Send`, so `unlock` runs on the
    // thread that claimed the node.
    unsafe impl<const BOUND: u32> lock_api::RawMutex for RawCna<BOUND> {
        const INIT: Self = Self::new();
        type Guard = CnaToken;

        #[inline]
        fn lock(&self) -> CnaToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<CnaToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: CnaToken) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    /// A mutex protected by a compact NUMA-aware lock.
    pub type CnaMutex<T> = lock_api::Mutex<RawCna, T>;
}

#[cfg(not(loom))]
pub use raw::CnaMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::nodes::DEPTH;
    use crate::util::testing::{
        churn_threads, hammer_fifo, nested_non_lifo, numa_log, until, Watchdog, HANG,
    };

    /// A bound the known-answer test can reach in a few hundred sections.
    const TEST_BOUND: u32 = if cfg!(miri) { 2 } else { 4 };

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawCna>(6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        nested_non_lifo::<RawCna>(3);
    }

    #[test]
    fn six_locks_at_once_overflow_to_spare_nodes() {
        const N: usize = 6;
        const { assert!(N > DEPTH) };
        nested_non_lifo::<RawCna>(N);
        let locks: Vec<RawCna> = (0..N).map(|_| RawCna::new()).collect();
        let mut tokens: Vec<Option<CnaToken>> = locks.iter().map(|l| Some(l.acquire())).collect();
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
        churn_threads::<RawCna>();
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let m = CnaMutex::new(());
        let g = m.lock();
        assert!(m.is_locked());
        std::thread::scope(|s| {
            s.spawn(|| assert!(m.try_lock().is_none()));
        });
        drop(g);
        assert!(!m.is_locked());
        drop(m.try_lock().expect("free lock"));
        assert!(!m.is_locked());
    }

    /// The order in which waiters get the lock, without timing: while
    /// this thread (node 0) holds it, `waiters` (name, node) queue one
    /// after another, each started once the previous one has swapped
    /// itself into the tail and linked in; then the holder lets go.
    fn grant_order<const BOUND: u32>(waiters: &[(&'static str, usize)]) -> Vec<&'static str> {
        let _w = Watchdog::new("cna grant order", HANG);
        topology::set_thread_node(Some(0));
        let lock = RawCna::<BOUND>::new();
        let order = std::sync::Mutex::new(Vec::new());
        let held = lock.acquire();
        std::thread::scope(|s| {
            for &(name, numa) in waiters {
                let before = lock.tail.load(Ordering::Relaxed);
                let (lock, order) = (&lock, &order);
                s.spawn(move || {
                    topology::set_thread_node(Some(numa));
                    let t = lock.acquire();
                    order.lock().unwrap().push(name);
                    // SAFETY: acquired above, on this thread.
                    unsafe { lock.release(t) };
                });
                // Swapped into the tail and linked behind `before`: the
                // holder's scan will see it.
                until(|| {
                    let t = lock.tail.load(Ordering::Acquire);
                    // SAFETY: `before` is a queued node (the holder's or
                    // a waiter's), and nodes are never freed.
                    let linked = unsafe { node(before) }.next.load(Ordering::Acquire);
                    !t.is_null() && t != before && linked == t
                });
            }
            // SAFETY: acquired above, on this thread.
            unsafe { lock.release(held) };
        });
        assert!(!lock.is_held());
        topology::set_thread_node(None);
        order.into_inner().unwrap()
    }

    /// Waiters `B1 A1 B2 A2 A3` (A on node 0, B on node 1) behind a node-0
    /// holder, bound 2: the holder skips B1 for A1 (count 1), A1 skips B2
    /// for A2 (count 2), and A2, at the bound, hands the secondary queue
    /// `B1 B2` the lock in front of A3.
    #[test]
    fn skipped_waiters_wait_at_most_the_bound_then_go_first() {
        let order = grant_order::<2>(&[("B1", 1), ("A1", 0), ("B2", 1), ("A2", 0), ("A3", 0)]);
        assert_eq!(order, ["A1", "A2", "B1", "B2", "A3"]);
        // Bound 0: no skipping at all, FIFO.
        let order = grant_order::<0>(&[("B1", 1), ("A1", 0), ("B2", 1), ("A2", 0), ("A3", 0)]);
        assert_eq!(order, ["B1", "A1", "B2", "A2", "A3"]);
    }

    /// Below the bound too, a holder with no waiter of its node queued
    /// hands the lock to the secondary queue first (`B1 A1 B2`: A1 finds
    /// only B2); and a holder with nobody behind it in the main queue
    /// makes the secondary queue the queue (`B1 A1`: the tail moves from
    /// A1 to B1).
    #[test]
    fn without_a_local_waiter_the_secondary_queue_goes_next() {
        let order = grant_order::<CNA_BOUND>(&[("B1", 1), ("A1", 0), ("B2", 1)]);
        assert_eq!(order, ["A1", "B1", "B2"]);
        let order = grant_order::<CNA_BOUND>(&[("B1", 1), ("A1", 0)]);
        assert_eq!(order, ["A1", "B1"]);
        let order = grant_order::<CNA_BOUND>(&[("B1", 1), ("B2", 1), ("A1", 0), ("B3", 1)]);
        assert_eq!(order, ["A1", "B1", "B2", "B3"]);
    }

    /// The shared known answer (`testing::numa_log`): a local pass is a
    /// holder granted the lock with a non-empty secondary queue, that is
    /// by a holder of its node that (or whose predecessors) skipped other
    /// nodes' waiters who still wait. Such grants count, and the holder at
    /// the bound flushes the secondary queue, so runs of them are at most
    /// `BOUND` long (no slack), each after a holder of its own node.
    #[test]
    fn passes_stay_within_a_node_and_within_the_bound() {
        let lock = RawCna::<TEST_BOUND>::new();
        let log = numa_log(
            &lock,
            4,
            100,
            RawCna::acquire,
            // SAFETY: the shape releases each token once, on its thread.
            |l, t| unsafe { l.release(t) },
            RawCna::passed_within_node,
        );
        log.assert_local_runs(TEST_BOUND as usize);
    }

    #[test]
    fn metadata() {
        let i = RawCna::<CNA_BOUND>::INFO;
        assert_eq!(i.name, "cna");
        assert_eq!(i.family, Family::Numa);
        assert_eq!((i.fair, i.blocking, i.numa_aware), (false, false, true));
        assert_eq!(
            core::mem::size_of::<RawCna>(),
            core::mem::size_of::<usize>(),
            "one word"
        );
        assert_eq!(core::mem::size_of::<CnaToken>(), 16);
    }
}
