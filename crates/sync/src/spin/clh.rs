//! `clh`: the Craig–Landin–Hagersten queue lock.
//!
//! The lock word is the tail of an implicit queue. To acquire, a thread
//! marks its node busy, swaps it into the tail and spins on the node it got
//! back (its predecessor's) until that one is released; to release, it
//! stores "released" into its own node: one plain store, no read-modify-write.
//! Each waiter spins on a different node, and unlike MCS nobody ever writes
//! into someone else's node, so there is no `next` link to wait for. The
//! price is that nodes migrate: the releaser's node stays in the queue for
//! its successor to read, and the successor adopts its predecessor's node in
//! exchange. Nodes therefore come from a pool of wandering nodes
//! (`util::clh_pool`) rather than per-thread rows.
//! Sources: T. Craig, "Building FIFO and priority-queuing spin locks from
//! atomic swap", TR 93-02-02, University of Washington, 1993; P. Magnusson,
//! A. Landin and E. Hagersten, "Queue locks on cache coherent
//! multiprocessors", IPPS 1994; seL4's big kernel lock (seed 002).
//!
//! Details of this version:
//! - No dummy node, so `new` is `const`: a null tail means "free, no node"
//!   and a null predecessor means "acquired at once".
//! - A node's word is `RELEASED` (null), `LOCKED`, or, for `try_acquire`,
//!   a pointer to a predecessor: "abandoned, wait on that one instead". A
//!   CLH thread cannot leave the queue once it has swapped itself in, and a
//!   compare-and-swap on the tail would be fooled by a node that left the
//!   tail and came back (ABA). So `try_acquire` swaps like `acquire`, and if
//!   the predecessor turns out to be held it leaves its node behind, marked
//!   abandoned, for its successor to step over; this is the timeout
//!   mechanism of M. L. Scott and W. N. Scherer III, "Scalable queue-based
//!   spin locks with timeout", PPoPP 2001, with a timeout of zero.
//!   `acquire_while` is the same with a caller-chosen patience; the hybrid
//!   mutex's queue of optimistic spinners uses it to let spinners leave.
//! - Whoever reads a predecessor's final state (released or abandoned) owns
//!   that node and gives it to its pool cache at once, so the guard carries
//!   only the holder's own node and `release` is the single store.
//! - Dropping the lock gives back the node(s) still in its queue.
//!
//! Orderings:
//! - The tail swap is `AcqRel`. Release publishes our node's `LOCKED` mark
//!   to the successor, which reads our pointer out of the tail; Acquire
//!   makes the predecessor's node (and its earlier history) visible before
//!   we read it or adopt it.
//! - Release is a `Release` store of `RELEASED` and the successor's spin is
//!   an `Acquire` load: that pair carries the critical section over, and
//!   also orders the releaser's last touch of its node before the adopter's
//!   first write to it.
//! - Abandoning is a `Release` store for the same second reason.
//! - `try_acquire` first peeks at the tail with Acquire loads (so that the
//!   node it points to is fully visible); the peek only decides whether to
//!   try, and the peeked node may be stale by then, which is harmless
//!   because nodes are never freed.

use core::ptr::{self, NonNull};

use crate::info::{Described, Family, LockInfo};
use crate::util::clh_pool::{self, ClhNode};
use crate::util::sync::{spin_loop, AtomicPtr, Ordering};

/// The node's word when its owner has released the lock.
const RELEASED: *mut ClhNode = ptr::null_mut();
/// The node's word while its owner holds the lock or waits for it.
const LOCKED: *mut ClhNode = ptr::without_provenance_mut(1);
/// How far `is_held` follows abandoned nodes before it answers "held".
const PEEK_LIMIT: usize = 16;

/// One acquisition of a [`RawClh`]: the holder's node, which `release`
/// marks released. Unlike MCS the node is not tied to the thread (the
/// release is one store to a pool node), so the token is `Send`.
#[derive(Debug)]
pub struct ClhToken {
    node: NonNull<ClhNode>,
}

// SAFETY: releasing is a single atomic store to a pool node, which any
// thread may do; the token holds no thread-local state.
unsafe impl Send for ClhToken {}
// SAFETY: a shared `&ClhToken` exposes only the pointer value.
unsafe impl Sync for ClhToken {}

/// Craig–Landin–Hagersten queue lock. See the module documentation.
#[derive(Debug)]
pub struct RawClh {
    tail: AtomicPtr<ClhNode>,
}

/// A fresh node of ours, marked `LOCKED` (published by the tail swap).
#[inline]
fn fresh_node() -> NonNull<ClhNode> {
    let me = clh_pool::take();
    // SAFETY: the pool hands out live nodes that we now own.
    unsafe { me.as_ref() }
        .state()
        .store(LOCKED, Ordering::Relaxed);
    me
}

impl RawClh {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { tail: AtomicPtr::new(ptr::null_mut()) }
        }
    }

    /// Queues up and spins until the lock is ours.
    #[inline]
    pub fn acquire(&self) -> ClhToken {
        let me = fresh_node();
        let mut pred = self.tail.swap(me.as_ptr(), Ordering::AcqRel);
        while let Some(p) = NonNull::new(pred) {
            // SAFETY: pool nodes are never freed; `p` is our predecessor.
            let state = unsafe { clh_pool::peek(p, Ordering::Acquire) };
            if state == LOCKED {
                spin_loop();
                continue;
            }
            // Released (we hold the lock) or abandoned (wait on its
            // predecessor instead): either way its owner is done with `p`
            // and we are the only one behind it. It is ours now.
            // SAFETY: as just said; we do not touch `p` again.
            unsafe { clh_pool::give(p) };
            pred = state; // RELEASED is null and ends the loop
        }
        ClhToken { node: me }
    }

    /// Takes the lock if it is free right now.
    ///
    /// If the lock is taken between the peek and the swap, the node is left
    /// in the queue marked abandoned (see the module documentation), so this
    /// never waits.
    #[inline]
    pub fn try_acquire(&self) -> Option<ClhToken> {
        if let Some(t) = NonNull::new(self.tail.load(Ordering::Acquire)) {
            // SAFETY: pool nodes are never freed; a stale answer is fine.
            if unsafe { clh_pool::peek(t, Ordering::Relaxed) } == LOCKED {
                return None;
            }
        }
        self.acquire_while(|| false)
    }

    /// Queues up and waits for the lock while `keep_waiting()` says so:
    /// the lock, or `None` once it says stop while a predecessor still holds
    /// or waits. Giving up leaves the node in the queue marked abandoned for
    /// the successor to step over (Scott & Scherer's timeout), so leaving
    /// costs one store and never waits for anyone.
    ///
    /// `keep_waiting` is called once per spin; a spinner queue that must
    /// let its members leave (the hybrid mutex's) builds on this.
    #[inline]
    pub fn acquire_while(&self, mut keep_waiting: impl FnMut() -> bool) -> Option<ClhToken> {
        let me = fresh_node();
        let mut pred = self.tail.swap(me.as_ptr(), Ordering::AcqRel);
        while let Some(p) = NonNull::new(pred) {
            // SAFETY: as in `acquire`.
            let state = unsafe { clh_pool::peek(p, Ordering::Acquire) };
            if state == LOCKED {
                if keep_waiting() {
                    spin_loop();
                    continue;
                }
                // Held: hand our place to whoever comes next.
                // SAFETY: `me` is ours until this store gives it away.
                unsafe { me.as_ref() }
                    .state()
                    .store(p.as_ptr(), Ordering::Release);
                return None;
            }
            // SAFETY: as in `acquire`.
            unsafe { clh_pool::give(p) };
            pred = state;
        }
        Some(ClhToken { node: me })
    }

    /// Releases the lock: one store into the holder's node.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock.
    #[inline]
    pub unsafe fn release(&self, token: ClhToken) {
        // SAFETY: the node stays live; after this store it belongs to the
        // queue and we never touch it again.
        unsafe { token.node.as_ref() }
            .state()
            .store(RELEASED, Ordering::Release);
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        let mut p = self.tail.load(Ordering::Acquire);
        for _ in 0..PEEK_LIMIT {
            let Some(n) = NonNull::new(p) else {
                return false;
            };
            // SAFETY: pool nodes are never freed; a stale answer is fine.
            p = unsafe { clh_pool::peek(n, Ordering::Acquire) };
            if p == LOCKED {
                return true;
            }
        }
        true
    }
}

impl Drop for RawClh {
    fn drop(&mut self) {
        // With `&mut self` nobody is in the queue: the nodes left in it (the
        // last holder's, and any abandoned ones with the node they point
        // to) belong to nobody else. A `LOCKED` node here is that of a
        // forgotten guard, which can no longer be used.
        let mut p = self.tail.load(Ordering::Relaxed);
        while let Some(n) = NonNull::new(p) {
            // SAFETY: pool nodes are never freed.
            let state = unsafe { clh_pool::peek(n, Ordering::Relaxed) };
            // SAFETY: no thread can reach `n` through this lock any more.
            unsafe { clh_pool::give(n) };
            p = if state == LOCKED { RELEASED } else { state };
        }
    }
}

impl Default for RawClh {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawClh {
    const INFO: LockInfo = LockInfo {
        name: "clh",
        family: Family::Queue,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "Craig, Building FIFO and priority-queuing spin locks from atomic swap, TR 93-02-02, 1993; Magnusson, Landin & Hagersten, Queue locks on cache coherent multiprocessors, IPPS 1994; seL4 big lock (seed 002)",
        summary: "swap a node into the tail, spin on the predecessor's node, release with one store",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{ClhToken, RawClh};

    // SAFETY: `acquire` returns only once the predecessor's node reads
    // released (or there was none), so at most one token is outstanding;
    // the Release store / Acquire load on that node orders the critical
    // sections. `try_acquire` never returns a token while a predecessor
    // holds the lock.
    unsafe impl lock_api::RawMutex for RawClh {
        const INIT: Self = Self::new();
        type Guard = ClhToken;

        #[inline]
        fn lock(&self) -> ClhToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<ClhToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: ClhToken) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    // SAFETY: `unlock` already hands the lock straight to the next waiter in
    // FIFO order.
    unsafe impl lock_api::RawMutexFair for RawClh {
        #[inline]
        unsafe fn unlock_fair(&self, guard: ClhToken) {
            // SAFETY: as for `unlock`.
            unsafe { self.release(guard) }
        }
    }

    /// A mutex protected by a CLH queue lock.
    pub type ClhMutex<T> = lock_api::Mutex<RawClh, T>;
}

#[cfg(not(loom))]
pub use raw::ClhMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{churn_threads, hammer_fifo, nested_non_lifo};

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawClh>(6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        // More than a node-table row would allow: CLH has no depth limit.
        nested_non_lifo::<RawClh>(6);
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawClh>();
    }

    #[test]
    fn free_lock_uses_no_node_and_release_leaves_one_in_the_tail() {
        let l = RawClh::new();
        assert!(l.tail.load(Ordering::Relaxed).is_null());
        assert!(!l.is_held());
        let t = l.acquire();
        assert!(l.is_held());
        let node = t.node;
        // SAFETY: held.
        unsafe { l.release(t) };
        assert!(!l.is_held());
        assert_eq!(l.tail.load(Ordering::Relaxed), node.as_ptr());
        // The next acquisition adopts that node and leaves its own.
        let t = l.acquire();
        assert_ne!(t.node, node);
        // SAFETY: held.
        unsafe { l.release(t) };
    }

    #[test]
    fn failed_try_leaves_an_abandoned_node_that_the_next_waiter_steps_over() {
        let l = RawClh::new();
        let held = l.acquire();
        // Force the swap past the peek, as if the lock was taken between.
        let me = fresh_node();
        let pred = l.tail.swap(me.as_ptr(), Ordering::AcqRel);
        assert_eq!(pred, held.node.as_ptr());
        // SAFETY: ours until given away.
        unsafe { me.as_ref() }
            .state()
            .store(pred, Ordering::Release);
        assert!(l.is_held(), "is_held follows the abandoned node");
        // Held: the peek sees the abandoned node, so it swaps, steps over
        // that node, finds the holder and abandons its own.
        assert!(l.try_acquire().is_none());
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let t = l.acquire();
                // SAFETY: held.
                unsafe { l.release(t) };
            });
            std::thread::sleep(std::time::Duration::from_millis(10));
            assert!(!waiter.is_finished());
            // SAFETY: held.
            unsafe { l.release(held) };
            waiter.join().unwrap();
        });
        assert!(!l.is_held());
        let t = l.try_acquire().expect("free");
        // SAFETY: held.
        unsafe { l.release(t) };
    }

    #[test]
    fn try_lock_races_with_lock_and_stays_exclusive() {
        // Threads mixing try_lock and lock build and step over abandoned
        // nodes all the time.
        let m = ClhMutex::new((0u64, 0u64));
        let taken = std::sync::atomic::AtomicU64::new(0);
        use crate::util::testing::{iters, threads, Watchdog, HANG};
        let _w = Watchdog::new("clh try race", HANG);
        std::thread::scope(|s| {
            for i in 0..threads(4) {
                let (m, taken) = (&m, &taken);
                s.spawn(move || {
                    for _ in 0..iters(2_000) {
                        let g = if i % 2 == 0 {
                            m.try_lock()
                        } else {
                            Some(m.lock())
                        };
                        if let Some(mut g) = g {
                            assert_eq!(g.0, g.1);
                            g.0 += 1;
                            g.1 = g.0;
                            taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(m.lock().0, taken.into_inner());
    }

    #[test]
    fn guard_may_move_to_another_thread() {
        let m = ClhMutex::new(1);
        let g = m.lock();
        std::thread::scope(|s| {
            s.spawn(move || drop(g));
        });
        assert_eq!(*m.try_lock().expect("released by the other thread"), 1);
    }

    #[test]
    fn metadata() {
        assert_eq!(RawClh::INFO.name, "clh");
        assert_eq!(RawClh::INFO.family, Family::Queue);
        assert_eq!((RawClh::INFO.fair, RawClh::INFO.blocking), (true, false));
    }
}
