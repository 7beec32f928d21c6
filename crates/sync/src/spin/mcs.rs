//! `mcs`: the Mellor-Crummey–Scott queue lock.
//!
//! Waiters form a FIFO queue of nodes. The lock word is just the tail
//! pointer: a newcomer swaps its node into the tail, links itself behind the
//! old tail and spins on a flag in its *own* node, so every waiter spins on
//! its own cache line and each hand-over costs a constant number of cache
//! misses. The holder hands the lock to its successor by clearing the
//! successor's flag; with no successor it swings the tail back to null.
//! Source: J. M. Mellor-Crummey and M. L. Scott, "Algorithms for Scalable
//! Synchronization on Shared-Memory Multiprocessors", ACM TOCS 9(1), 1991;
//! seed 001 (Bueso) on MCS in Linux.
//!
//! **A free lock is taken with a node inside the lock.** The lock carries
//! one node of its own, and an acquirer that finds the tail null swings it
//! from null to that embedded node with one compare-and-swap: no node to
//! claim from a table, nothing to initialise, nothing to give back. An
//! uncontended pair is then that compare-and-swap and the releasing one,
//! the two read-modify-writes that an MCS release cannot do without (it
//! must atomically find out whether a successor swapped itself in). The
//! embedded node enters the queue only from an empty tail, so it is always
//! the queue's head: nobody ever waits on its `grant`, and the only
//! field in use is `next`, which successors write to link behind it. Its
//! invariant: **`next` is null whenever the embedded node is out of the
//! queue.** The fast path cannot reset it before its compare-and-swap (a
//! successor of the current holder may be writing it right then), so the
//! holder that leaves does: a release with no successor leaves `next` null
//! (it read null, and its successful compare-and-swap proves nobody came
//! to write it), and a hand-over resets `next` before its releasing store.
//! Because the embedded node lives in the lock, a held `RawMcs` must not
//! move (no lock with waiters can: they borrow it).
//!
//! **The hand-over carries a word.** A waiter spins on its node's `grant`
//! while it reads `WAITING` (`u32::MAX`); the holder hands over by storing
//! any other value there, which `RawMcs::acquire_granted` returns beside
//! the token. A plain `RawMcs` always grants 0, and an acquisition that
//! found the queue empty reads 0. The cohort lock (`numa::cohort`) grants
//! the count of consecutive local passes of its global lock, so that the
//! news travels in the line the successor already waits on, as HMCS's
//! `status` word carries its count (`numa::hmcs`). (The grant is not
//! kept in the token: a token of a pointer and one `u32` keeps the plain
//! lock's uncontended pair at the two read-modify-writes' cost, which a
//! wider one measurably did not.)
//!
//! Contended acquirers queue with nodes from a per-thread
//! `util::nodes::NodeTable`
//! row (four slots, as Linux's per-CPU qspinlock nodes), so one thread can
//! hold up to four MCS locks at once and release them in any order; the
//! guard carries the node's (thread, slot). A thread that holds more than
//! four falls back to a spare node, owned by the guard and given back in
//! `unlock`: an MCS node is untouched by others once its acquisition has been
//! handed on, so reusing it then is safe. Spare nodes come from a free
//! list fed by `mmap`, never from the allocator: an allocator that takes
//! pthread mutexes may be what holds the other four (jemalloc's fork
//! handlers take many of its mutexes at once), and it must not be
//! re-entered from its own lock. Under loom they are boxed.
//!
//! Orderings:
//! - The tail swap is `AcqRel`. Release publishes our node's initialisation
//!   (`next = null`, `grant = WAITING`) to the successor, which reads our
//!   pointer from the tail and then writes our `next`. Acquire, when the old
//!   tail was null, pairs with the releasing CAS of the previous holder, and
//!   otherwise makes the predecessor's initialisation visible before we
//!   write its `next`.
//! - The fast path's compare-and-swap (null to the embedded node) is
//!   `AcqRel` for the same two reasons: Acquire pairs with the release that
//!   emptied the tail, which (through the chain of hand-overs before it)
//!   happens after the last reset of the embedded `next`; Release hands that
//!   on to a successor that swaps the embedded node out of the tail, so its
//!   link is written after the reset. Its failure carries no data:
//!   `Relaxed`.
//! - Linking (`pred.next = me`) is `Release` and the holder's read of `next`
//!   is `Acquire`: the holder must see our `grant = WAITING` before it
//!   stores its grant, or its store could be ordered before ours and we
//!   would wait forever.
//! - Hand-over (`next.grant = g`) is `Release` and the waiter's spin is
//!   `Acquire`: that pair carries the critical section to the next holder,
//!   and with it the reset of the embedded `next` (a `Relaxed` store
//!   sequenced before it) and whatever the grantor wrote before it.
//! - Unlocking with no successor is a CAS of the tail to null with
//!   `Release`, picked up by the next swap's Acquire. Its failure (someone
//!   is linking in) carries no data: `Relaxed`.

use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use crate::info::{Described, Family, LockInfo};
use crate::util::nodes::DEPTH;
use crate::util::sync::{spin_loop, AtomicPtr, AtomicU32, Ordering};
use crate::util::thread_index::MAX_THREADS;

/// A queue node's `grant` while its owner waits; any other value is the
/// hand-over, and what it says.
const WAITING: u32 = u32::MAX;

/// A waiter's queue node.
#[derive(Debug, Default)]
pub struct McsNode {
    next: AtomicPtr<McsNode>,
    /// [`WAITING`] until the predecessor hands over with another value.
    grant: AtomicU32,
}

impl McsNode {
    crate::loom_const_fn! {
        /// A node out of any queue.
        fn new() -> Self {
            Self { next: AtomicPtr::new(ptr::null_mut()), grant: AtomicU32::new(0) }
        }
    }
}

crate::node_table!(static NODES: McsNode);

/// `McsToken::place` of a node that is not in the table but on the heap
/// (no thread index comes near it).
const HEAP: u32 = u32::MAX;
/// `McsToken::place` of the lock's own node, taken by the fast path.
const EMBEDDED: u32 = u32::MAX - 1;
// A table place is at most `(MAX_THREADS - 1) << 8 | 255`, below both.
const _: () = assert!(DEPTH <= 1 << 8 && MAX_THREADS < 1 << 24);

/// A spare node, for a thread that already holds all its table slots:
/// padded like the table's, and `repr(C)` so the node sits at offset 0 and
/// a pointer to it is a pointer to the spare. `link` chains free spares
/// (used only while the node is on the free list).
#[repr(C, align(128))]
struct HeapNode(McsNode, core::sync::atomic::AtomicPtr<HeapNode>);

/// Spare nodes in the std build: a free list behind a test-and-set lock of
/// its own (spares are rare: the lock is taken only past four MCS locks
/// held at once), refilled a page of nodes at a time from `mmap`. Spares
/// are never unmapped, so the list's memory stays valid. The lock's
/// Acquire/Release orders a spare's last use by one thread before its
/// next owner's first.
#[cfg(not(loom))]
mod spare {
    use super::{HeapNode, McsNode};
    use core::ptr::{self, NonNull};
    use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};

    static LOCK: AtomicBool = AtomicBool::new(false);
    static FREE: AtomicPtr<HeapNode> = AtomicPtr::new(ptr::null_mut());
    /// Spares mapped at once: a page.
    const PER_MAP: usize = 4096 / core::mem::size_of::<HeapNode>();

    fn locked<T>(f: impl FnOnce() -> T) -> T {
        let mut spins = 0u32;
        while LOCK.swap(true, Acquire) {
            while LOCK.load(Relaxed) {
                spins += 1;
                if spins % 64 == 0 {
                    std::thread::yield_now();
                } else {
                    core::hint::spin_loop();
                }
            }
        }
        let r = f();
        LOCK.store(false, Release);
        r
    }

    /// A spare node, fresh (`McsNode::default()`).
    pub(super) fn take() -> NonNull<HeapNode> {
        let p = locked(|| {
            let head = FREE.load(Relaxed);
            if !head.is_null() {
                // SAFETY: a spare on the free list: mapped, ours to unlink.
                FREE.store(unsafe { (*head).1.load(Relaxed) }, Relaxed);
                return head;
            }
            let base = crate::util::map_anon(4096, "locklab: cannot map memory for MCS nodes\n")
                .cast::<HeapNode>();
            // Spares 1.. go on the list, 0 to the caller.
            for i in 1..PER_MAP {
                // SAFETY: inside the fresh page, aligned (page-aligned base,
                // 128-byte nodes); each written once.
                unsafe {
                    base.add(i).write(HeapNode(
                        McsNode::default(),
                        AtomicPtr::new(FREE.load(Relaxed)),
                    ));
                    FREE.store(base.add(i), Relaxed);
                }
            }
            base
        });
        // SAFETY: a spare nobody else owns: (re)initialised in place.
        unsafe {
            p.write(HeapNode(
                McsNode::default(),
                AtomicPtr::new(ptr::null_mut()),
            ));
            NonNull::new_unchecked(p)
        }
    }

    /// Gives a spare back.
    ///
    /// # Safety
    /// `p` came from [`take`], is owned by the caller and no thread will
    /// touch it again.
    pub(super) unsafe fn give(p: NonNull<HeapNode>) {
        locked(|| {
            // SAFETY: ours until it is on the list.
            unsafe { p.as_ref() }.1.store(FREE.load(Relaxed), Relaxed);
            FREE.store(p.as_ptr(), Relaxed);
        });
    }
}

/// One acquisition of a [`RawMcs`]: its queue node. Not `Send`: a table node
/// must be given back by the thread that claimed it.
///
/// A pointer and one `u32`, so that it travels in two registers between
/// `lock` and `unlock`, not through memory.
#[derive(Debug)]
pub struct McsToken {
    node: NonNull<McsNode>,
    /// Claiming thread's index `<< 8 | slot` in its row, [`HEAP`] or
    /// [`EMBEDDED`].
    place: u32,
    _not_send: PhantomData<*mut ()>,
}

// SAFETY: a shared `&McsToken` exposes nothing but its fields' values; all
// use of the node happens through `release`, which takes the token by value
// on the owning thread.
unsafe impl Sync for McsToken {}

impl McsToken {
    /// Claims a node: a free slot of this thread's row, else a heap node.
    #[inline]
    fn claim() -> Self {
        match NODES.claim() {
            Some(c) => Self {
                node: NonNull::from(c.node),
                place: c.thread << 8 | u32::from(c.slot),
                _not_send: PhantomData,
            },
            None => Self::heap(),
        }
    }

    #[cold]
    #[inline(never)]
    fn heap() -> Self {
        #[cfg(not(loom))]
        let spare = spare::take().as_ptr();
        #[cfg(loom)]
        let spare = Box::into_raw(Box::new(HeapNode(
            McsNode::default(),
            core::sync::atomic::AtomicPtr::new(ptr::null_mut()),
        )));
        Self {
            // SAFETY: `HeapNode` is `repr(C)` with the node as its first
            // field, so the spare's address is the node's; non-null.
            node: unsafe { NonNull::new_unchecked(spare.cast::<McsNode>()) },
            place: HEAP,
            _not_send: PhantomData,
        }
    }

    #[inline]
    fn node(&self) -> &McsNode {
        // SAFETY: table nodes live as long as the table (forever); a heap
        // node lives until `free` consumes the token; the embedded node
        // lives as long as its lock, which stays put while held (module
        // documentation) and outlives its tokens (`release` takes both).
        unsafe { self.node.as_ref() }
    }

    /// The lock's own node, taken by the fast path.
    #[inline]
    fn embedded(lock: &RawMcs) -> Self {
        Self {
            node: NonNull::from(&lock.node),
            place: EMBEDDED,
            _not_send: PhantomData,
        }
    }

    /// Whether the node is a heap node rather than a table slot.
    #[inline]
    fn on_heap(&self) -> bool {
        self.place == HEAP
    }

    /// Whether the node is the lock's own.
    #[inline]
    fn is_embedded(&self) -> bool {
        self.place == EMBEDDED
    }

    /// Gives the node back. Only once no other thread will touch it. The
    /// lock's own node needs nothing: it is free again when the tail is.
    #[inline]
    fn free(self) {
        if self.is_embedded() {
            return;
        }
        if self.on_heap() {
            let spare = self.node.cast::<HeapNode>();
            // SAFETY: the pointer is the spare of `heap` (same address, see
            // there), owned by this token alone, and the caller guarantees
            // nobody else reaches the node.
            #[cfg(not(loom))]
            unsafe {
                spare::give(spare)
            };
            // SAFETY: as above; under loom the spare came from a Box.
            #[cfg(loom)]
            drop(unsafe { Box::from_raw(spare.as_ptr()) });
        } else {
            NODES.release(self.place >> 8, self.place as u8);
        }
    }
}

/// Mellor-Crummey–Scott queue lock. See the module documentation.
#[derive(Debug)]
pub struct RawMcs {
    tail: AtomicPtr<McsNode>,
    /// The fast path's node: the queue's head when it is in the queue.
    node: McsNode,
}

impl RawMcs {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { tail: AtomicPtr::new(ptr::null_mut()), node: McsNode::new() }
        }
    }

    /// Takes a free lock with the embedded node: one compare-and-swap.
    #[inline]
    fn take_free(&self) -> Option<McsToken> {
        // The cast only makes a pointer; `next` is written through it by
        // successors, as an atomic.
        let mine = ptr::from_ref(&self.node).cast_mut();
        self.tail
            .compare_exchange(ptr::null_mut(), mine, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
            .then(|| McsToken::embedded(self))
    }

    /// Queues up and spins until the lock is ours.
    #[inline]
    pub fn acquire(&self) -> McsToken {
        if let Some(token) = self.take_free() {
            return token;
        }
        self.enqueue().0
    }

    /// [`acquire`](Self::acquire), and what the previous holder's
    /// hand-over said: 0 from a plain [`release`](Self::release) or when
    /// the queue was empty, else the value of its
    /// [`release_granting`](Self::release_granting).
    #[inline]
    pub(crate) fn acquire_granted(&self) -> (McsToken, u32) {
        if let Some(token) = self.take_free() {
            return (token, 0);
        }
        self.enqueue()
    }

    /// The contended acquisition: a node from this thread's row, queued;
    /// and the hand-over's grant.
    #[inline(never)]
    fn enqueue(&self) -> (McsToken, u32) {
        let me = McsToken::claim();
        let node = me.node();
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.grant.store(WAITING, Ordering::Relaxed);
        let pred = self.tail.swap(me.node.as_ptr(), Ordering::AcqRel);
        if let Some(pred) = NonNull::new(pred) {
            // SAFETY: the predecessor cannot give its node back before it
            // has read this link and handed the lock on to us.
            unsafe { pred.as_ref() }
                .next
                .store(me.node.as_ptr(), Ordering::Release);
            loop {
                let grant = node.grant.load(Ordering::Acquire);
                if grant != WAITING {
                    return (me, grant);
                }
                spin_loop();
            }
        }
        (me, 0)
    }

    /// Takes the lock if nobody holds it or waits for it right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<McsToken> {
        // Look before the compare-and-swap: a busy lock costs one load.
        if !self.tail.load(Ordering::Relaxed).is_null() {
            return None;
        }
        self.take_free()
    }

    /// Hands the lock to the next waiter, or frees it.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock, on this thread,
    /// and the lock must not have moved since.
    #[inline]
    pub unsafe fn release(&self, token: McsToken) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.release_granting(token, 0) }
    }

    /// [`release`](Self::release), telling a successor, if there is one,
    /// `grant` (its [`acquire_granted`](Self::acquire_granted) returns it).
    ///
    /// # Safety
    /// As for [`release`](Self::release); `grant` is not [`WAITING`]
    /// (`u32::MAX`).
    #[inline]
    pub(crate) unsafe fn release_granting(&self, token: McsToken, grant: u32) {
        debug_assert_ne!(grant, WAITING);
        let next = token.node().next.load(Ordering::Acquire);
        if next.is_null()
            && self
                .tail
                .compare_exchange(
                    token.node.as_ptr(),
                    ptr::null_mut(),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            token.free();
            return;
        }
        Self::hand_over(token, next, grant);
    }

    /// The release with a successor (linked as `next`, or about to link
    /// if `next` is null), kept out of line so the uncontended release
    /// stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn hand_over(token: McsToken, mut next: *mut McsNode, grant: u32) {
        let node = token.node();
        while next.is_null() {
            // A successor has swapped itself in and is about to link.
            spin_loop();
            next = node.next.load(Ordering::Acquire);
        }
        if token.is_embedded() {
            // Out of the queue with `next` null (the module's invariant):
            // the next fast path takes it as it finds it. Nobody else writes
            // it now: our successor has linked, and only the node's own
            // successor ever does.
            node.next.store(ptr::null_mut(), Ordering::Relaxed);
        }
        // SAFETY: the successor spins until this store, so its node lives.
        unsafe { &*next }.grant.store(grant, Ordering::Release);
        // Our node: the successor wrote `next` before we read it, and nobody
        // else has it. It can be reused.
        token.free();
    }

    /// Whether some thread holds or waits for the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }

    /// Whether a waiter has queued behind the holder of `token`, so that
    /// [`release`](Self::release) will hand the lock to it (the "cohort
    /// detection" that `numa::cohort` asks of its per-node MCS locks).
    ///
    /// `true` is certain: the holder's own swap is in the tail's
    /// modification order before anything it can read there, so a tail
    /// that is not its node was swapped in by a later arrival, and only a
    /// successor writes `next`; a queued waiter cannot leave. `false` may
    /// miss a waiter arriving right now, which `release` then still finds.
    /// Both loads carry no data: Relaxed.
    #[inline]
    pub(crate) fn has_waiter(&self, token: &McsToken) -> bool {
        !token.node().next.load(Ordering::Relaxed).is_null()
            || self.tail.load(Ordering::Relaxed) != token.node.as_ptr()
    }
}

impl Default for RawMcs {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawMcs {
    const INFO: LockInfo = LockInfo {
        name: "mcs",
        family: Family::Queue,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "Mellor-Crummey & Scott, Algorithms for Scalable Synchronization on Shared-Memory Multiprocessors, ACM TOCS 9(1), 1991; Bueso (seed 001)",
        summary: "FIFO queue of nodes; each waiter spins on its own node until its predecessor hands over",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{McsToken, RawMcs};

    // SAFETY: `acquire` returns only when the previous holder has handed
    // over (or the queue was empty), so at most one token is outstanding;
    // Acquire/Release pairs on the tail and the hand-over flag order the
    // critical sections. `McsToken` is `!Send`, so `unlock` runs on the
    // thread that claimed the node, as the node table requires.
    unsafe impl lock_api::RawMutex for RawMcs {
        const INIT: Self = Self::new();
        type Guard = McsToken;

        #[inline]
        fn lock(&self) -> McsToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<McsToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: McsToken) {
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
    unsafe impl lock_api::RawMutexFair for RawMcs {
        #[inline]
        unsafe fn unlock_fair(&self, guard: McsToken) {
            // SAFETY: as for `unlock`.
            unsafe { self.release(guard) }
        }
    }

    /// A mutex protected by an MCS queue lock.
    pub type McsMutex<T> = lock_api::Mutex<RawMcs, T>;
}

#[cfg(not(loom))]
pub use raw::McsMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{churn_threads, hammer_fifo, nested_non_lifo, try_lock_while_held};

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawMcs>(6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        nested_non_lifo::<RawMcs>(3);
    }

    #[test]
    fn six_locks_at_once_overflow_to_heap_nodes() {
        const N: usize = 6;
        const { assert!(N > DEPTH) };
        assert_eq!(core::mem::size_of::<McsToken>(), 16);
        // Through lock_api, with waiters queued behind the holder.
        nested_non_lifo::<RawMcs>(N);
        // The queued path, taken on free locks (as when each was contended),
        // to see where the nodes live; `acquire` would take each free lock
        // with its embedded node.
        let locks: Vec<RawMcs> = (0..N).map(|_| RawMcs::new()).collect();
        let mut tokens: Vec<Option<McsToken>> = locks.iter().map(|l| Some(l.enqueue().0)).collect();
        let on_heap = |t: &Option<McsToken>| t.as_ref().unwrap().on_heap();
        assert_eq!(tokens.iter().filter(|t| on_heap(t)).count(), N - DEPTH);
        assert!(tokens[..DEPTH].iter().all(|t| !on_heap(t)));
        // Release a table node first and a heap node next; the freed slot
        // is reused by the next acquisition.
        for i in [1, DEPTH, 0, N - 1, 2, 3] {
            // SAFETY: each token is released once, on this thread.
            unsafe { locks[i].release(tokens[i].take().unwrap()) };
            if i == 1 {
                let t = locks[1].enqueue().0;
                assert!(!t.on_heap() && !t.is_embedded());
                // SAFETY: just acquired.
                unsafe { locks[1].release(t) };
            }
        }
        assert!(locks.iter().all(|l| !l.is_held()));
    }

    /// A free lock is taken with its own node, a held one with a node of
    /// the thread's row; and the lock's node goes back out of the queue
    /// clean after a hand-over, so that the next fast-path holder does not
    /// hand the lock to a waiter long gone (without the reset in
    /// `hand_over`, the last release below "hands over" to the waiter's old
    /// node and leaves the tail set: the lock stays held forever).
    #[test]
    fn the_fast_path_takes_the_embedded_node_and_leaves_it_clean() {
        let _w = crate::util::testing::Watchdog::new("mcs fast path", crate::util::testing::HANG);
        let lock = RawMcs::new();
        let first = lock.acquire();
        assert!(first.is_embedded());
        assert!(lock.try_acquire().is_none());
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                let t = lock.acquire();
                let queued = !t.is_embedded() && !t.on_heap();
                // SAFETY: acquired just now, on this thread.
                unsafe { lock.release(t) };
                queued
            });
            while !lock.has_waiter(&first) {
                std::thread::yield_now();
            }
            // SAFETY: acquired above, on this thread; a waiter has swapped
            // itself in (`hand_over` waits for its link).
            unsafe { lock.release(first) };
            assert!(
                waiter.join().unwrap(),
                "the waiter queued with a table node"
            );
        });
        assert!(!lock.is_held());
        for _ in 0..3 {
            let t = lock.acquire();
            assert!(t.is_embedded());
            assert!(!lock.has_waiter(&t), "a stale successor in the lock's node");
            // SAFETY: acquired just now, on this thread.
            unsafe { lock.release(t) };
            assert!(!lock.is_held(), "the release did not free the lock");
        }
        let t = lock.try_acquire().expect("a free lock");
        assert!(t.is_embedded());
        // SAFETY: acquired just now, on this thread.
        unsafe { lock.release(t) };
    }

    /// Spares come back fresh, are reused rather than mapped anew, and
    /// two at once are two (no spare handed out twice).
    #[test]
    fn spares_are_reused_and_never_shared() {
        let a = spare::take();
        let b = spare::take();
        assert_ne!(a, b);
        // SAFETY: both nodes are ours and nobody else reaches them.
        unsafe {
            a.as_ref().0.grant.store(WAITING, Ordering::Relaxed);
            spare::give(a);
        }
        let c = spare::take();
        // SAFETY: ours.
        let fresh = unsafe { c.as_ref() };
        assert!(
            fresh.0.grant.load(Ordering::Relaxed) != WAITING,
            "a spare came back dirty"
        );
        assert!(fresh.0.next.load(Ordering::Relaxed).is_null());
        assert_ne!(c, b);
        // SAFETY: ours, given back once each.
        unsafe {
            spare::give(b);
            spare::give(c);
        }
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        try_lock_while_held::<RawMcs>();
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawMcs>();
    }

    #[test]
    fn metadata() {
        assert_eq!(RawMcs::INFO.name, "mcs");
        assert_eq!(RawMcs::INFO.family, Family::Queue);
        assert_eq!((RawMcs::INFO.fair, RawMcs::INFO.blocking), (true, false));
    }
}
