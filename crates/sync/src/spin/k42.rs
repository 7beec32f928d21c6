//! `k42`: the K42 queue lock, an MCS lock whose interface needs no node.
//!
//! MCS (Mellor-Crummey & Scott, ACM TOCS 9(1), 1991) queues waiters in a
//! linked list of nodes, each waiter spinning on a flag in its own node, so a
//! release touches one waiter's cache line instead of all of them (seed 001,
//! Bueso, explains why that makes it scale). Its price is in the interface:
//! `lock` and `unlock` take a node that must stay put for the whole critical
//! section. The variant from IBM's K42 operating system (Auslander et al.;
//! presented in Scott, *Shared-Memory Synchronization*, 2013, ch. 4)
//! removes it: the lock itself is a two-pointer node — `tail` (last waiter)
//! and `next` (first waiter) — and a waiter's node lives on its own stack
//! only while it waits. Before
//! `acquire` returns, the new holder copies its successor's address from its
//! node into the lock's `next`, after which nothing refers to its node.
//!
//! # Protocol
//!
//! `tail` is null (free), `HELD` (held, no waiter), or the address of the
//! last waiter's node. `next` is the first waiter's node once that waiter
//! has linked itself in, else null; only meaningful while the lock is held.
//!
//! - Uncontended acquire: `tail` null → `HELD` by compare-exchange.
//! - Contended acquire: build a node `{granted: false, next: null}` on the
//!   stack; swing `tail` from its current value `prev` to the node by
//!   compare-exchange (retry on change; take the lock if it became free).
//!   Link in: if `prev` is `HELD` the predecessor is the holder, so write the
//!   node's address into the lock's `next`; else into `prev.next`. Spin on
//!   `granted`. Once granted, read the node's `next`:
//!   - a successor: copy it into the lock's `next`; done.
//!   - none: clear the lock's `next`, then try to swing `tail` from our node
//!     back to `HELD`. If that fails, a successor swung `tail` away from our
//!     node and is about to link itself into our node's `next`: wait for it
//!     and copy it. Clearing `next` *before* the swing matters: once `tail`
//!     is `HELD`, a newcomer writes the lock's `next`, and a later clear
//!     would erase it.
//! - Release: read the lock's `next`. If null, swing `tail` from `HELD` to
//!   null; if that fails, a newcomer is linking in: wait for `next`. Then set
//!   the successor's `granted` (its node is still on its stack, since it
//!   cannot leave before `granted` is set); the successor overwrites the
//!   lock's `next` before it returns.
//!
//! Invariant: when `acquire` returns, neither `tail` nor `next` points at the
//! returning thread's node, and no thread will touch it again: its
//! predecessor's only access (setting `granted`) is done, and its successor,
//! if any, has already linked in (we read it) or never saw our node as tail.
//! A node address reused by a later acquisition is harmless: swinging `tail`
//! from it succeeds only while that address is the current tail, i.e. names
//! the current node.
//!
//! Where the published algorithm marks "held, no waiter" with the address
//! of the lock itself, this one uses a sentinel that is no node's address.
//! `lock_api` allows moving (or dropping) a mutex that is locked with its
//! guard forgotten; a self-pointer would then send a later waiter writing
//! to the lock's old address, while `HELD` keeps a moved lock merely locked.
//!
//! # Orderings
//!
//! - Taking a free lock (`tail` null → `HELD`) is `Acquire`: it reads the
//!   value written by the `Release` swing `HELD` → null of the last release.
//! - Enqueueing (swinging `tail` to our node) is `AcqRel`. `Release` publishes
//!   the node's initialisation to the successor that will read `tail` and
//!   write our `next`; `Acquire` makes the predecessor's node (whose `next`
//!   we write) initialised before our write, and orders our link after the
//!   previous holder's clear of the lock's `next` (see below).
//! - Linking (writing `prev.next` or the lock's `next`) is `Release`, and
//!   every read of a `next` that leads to setting `granted` is `Acquire`: the
//!   one who grants must see our node initialised (else our own
//!   initialisation could overwrite its grant).
//! - Granting is a `Release` store, the waiter's spin an `Acquire` load: this
//!   is the lock hand-over that publishes the critical section.
//! - The new holder's writes to the lock's `next` are `Relaxed`: only the
//!   holder reads `next` (its next release, or whoever receives its guard
//!   through a synchronizing hand-off). Newcomers write it, but only after an
//!   `Acquire` swing of `tail` away from `HELD`, which reads our `Release`
//!   swing to `HELD`, so our clear comes first — the reason that swing is
//!   `Release`.
//! - Releasing a lock with no waiter swings `tail` `HELD` → null with
//!   `Release`, publishing the critical section to the next fast-path taker.
//! - Failed compare-exchanges and the reads of `tail` before them only decide
//!   what to try next: `Relaxed`.

use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{spin_loop, AtomicBool, AtomicPtr, Ordering};
use core::ptr;

/// A waiter's queue node, on its stack for as long as it waits.
#[derive(Debug)]
struct Waiter {
    /// Set by the previous holder when it hands the lock over.
    granted: AtomicBool,
    /// The waiter behind this one, once it has linked itself in.
    next: AtomicPtr<Waiter>,
}

/// `tail` of a lock that is held and has no waiter: a non-null address at
/// which no `Waiter` can be (nothing is allocated in the first page).
const HELD: *mut Waiter = ptr::dangling_mut();

/// K42 queue lock. See the module documentation.
#[derive(Debug)]
pub struct RawK42 {
    /// Null (free), [`HELD`], or the last waiter's node.
    tail: AtomicPtr<Waiter>,
    /// The first waiter's node, written by it or by the holder.
    next: AtomicPtr<Waiter>,
}

impl RawK42 {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self {
                tail: AtomicPtr::new(ptr::null_mut()),
                next: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// Spins (in the queue if the lock is held) until the lock is ours.
    #[inline]
    pub fn acquire(&self) {
        if !self.try_acquire() {
            self.acquire_contended();
        }
    }

    #[cold]
    fn acquire_contended(&self) {
        let me = Waiter {
            granted: AtomicBool::new(false),
            next: AtomicPtr::new(ptr::null_mut()),
        };
        let me_ptr = &me as *const Waiter as *mut Waiter;
        loop {
            let prev = self.tail.load(Ordering::Relaxed);
            if prev.is_null() {
                if self.try_acquire() {
                    return;
                }
                continue;
            }
            if self
                .tail
                .compare_exchange(prev, me_ptr, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                // `tail` moved on; `me` was not published, reuse it as is.
                continue;
            }
            let link = if prev == HELD {
                &self.next
            } else {
                // SAFETY: `prev` was the tail, so it is a node whose owner
                // waits in `acquire_contended` until its `next` is non-null
                // whenever `tail` has moved away from it (as we just moved
                // it): the node outlives this write.
                unsafe { &(*prev).next }
            };
            link.store(me_ptr, Ordering::Release);
            break;
        }

        while !me.granted.load(Ordering::Acquire) {
            spin_loop();
        }

        // The lock is ours; hand our successor (if any) over to the lock
        // itself, so that nothing refers to `me` once we return.
        let mut succ = me.next.load(Ordering::Acquire);
        if succ.is_null() {
            self.next.store(ptr::null_mut(), Ordering::Relaxed);
            if self
                .tail
                .compare_exchange(me_ptr, HELD, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            // A successor swung `tail` away from `me` and is linking in.
            loop {
                succ = me.next.load(Ordering::Acquire);
                if !succ.is_null() {
                    break;
                }
                spin_loop();
            }
        }
        self.next.store(succ, Ordering::Relaxed);
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        self.tail
            .compare_exchange(ptr::null_mut(), HELD, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Releases the lock, handing it to the first waiter if there is one.
    ///
    /// # Safety
    /// The caller must hold the lock.
    #[inline]
    pub unsafe fn release(&self) {
        let mut succ = self.next.load(Ordering::Acquire);
        if succ.is_null() {
            if self
                .tail
                .compare_exchange(HELD, ptr::null_mut(), Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
            // A newcomer swung `tail` away from `HELD` and is linking in.
            loop {
                succ = self.next.load(Ordering::Acquire);
                if !succ.is_null() {
                    break;
                }
                spin_loop();
            }
        }
        // SAFETY: `succ` is a waiter's node, and that waiter spins in
        // `acquire_contended` until this store, so the node is alive for it.
        // After the store we do not touch the node again (it may be gone
        // once the waiter sees `granted`; the stack it lives on stays mapped).
        unsafe { (*succ).granted.store(true, Ordering::Release) };
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }
}

impl Default for RawK42 {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawK42 {
    const INFO: LockInfo = LockInfo {
        name: "k42",
        family: Family::Queue,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "K42 variant of MCS (Auslander et al., IBM K42), as presented in Scott, Shared-Memory Synchronization, 2013; MCS: Mellor-Crummey & Scott, ACM TOCS 9(1) 1991",
        summary: "MCS queue lock whose two-pointer lock word is the head node; waiters' nodes live on their stacks only while they wait",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawK42;
    use lock_api::GuardSend;

    // SAFETY: a thread enters either by swinging `tail` from null (free) to
    // `HELD`, or by being granted by the holder's release, which grants only
    // the first waiter and only instead of freeing the lock. So at most one
    // guard exists at a time. Entry is `Acquire` (the null → HELD swing or
    // the read of `granted`), release is `Release` (the HELD → null swing or
    // the store to `granted`). The guard carries no state: release reads
    // the lock only, so it may run on another thread.
    crate::guardless_raw_mutex!(RawK42);

    // SAFETY: as for `RawMutex`; a release with a waiter already hands the
    // lock to the first one in the queue.
    unsafe impl lock_api::RawMutexFair for RawK42 {
        #[inline]
        unsafe fn unlock_fair(&self, _guard: GuardSend) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release() }
        }
    }

    /// A mutex protected by a K42 queue lock.
    pub type K42Mutex<T> = lock_api::Mutex<RawK42, T>;
}

#[cfg(not(loom))]
pub use raw::K42Mutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{fifo_order, hammer_yielding};

    #[test]
    fn uncontended_acquire_release_and_try() {
        let l = RawK42::new();
        assert!(!l.is_held());
        assert!(l.try_acquire());
        assert!(l.is_held());
        assert!(!l.try_acquire());
        // SAFETY: held by this test.
        unsafe { l.release() };
        assert!(!l.is_held());
        for _ in 0..3 {
            l.acquire();
            assert!(l.is_held());
            // SAFETY: held by this test.
            unsafe { l.release() };
        }
        assert!(l.tail.load(Ordering::Relaxed).is_null());
        assert!(l.next.load(Ordering::Relaxed).is_null());
    }

    #[test]
    fn a_moved_locked_lock_stays_merely_locked() {
        let l = RawK42::new();
        l.acquire();
        let moved = Box::new(l);
        assert!(moved.is_held());
        assert!(!moved.try_acquire());
        // SAFETY: locked above, before the move.
        unsafe { moved.release() };
        assert!(!moved.is_held());
    }

    #[test]
    fn served_in_the_order_queued() {
        fifo_order(
            &RawK42::new(),
            |l: &RawK42| l.tail.load(Ordering::Relaxed) as usize,
            RawK42::acquire,
            |l, ()| {
                // SAFETY: the helper releases what it acquired.
                unsafe { l.release() }
            },
        );
    }

    #[test]
    fn four_threads_count_exactly() {
        hammer_yielding(RawK42::new(), 4, 20_000);
    }
}
