//! Queue nodes for a thread that holds more locks than its table row has
//! slots, and the claim that hides where a node came from.
//!
//! A queue lock with a node type of its own (CNA's, HMCS's, the Malthusian
//! and time-published MCS locks') keeps a [`NodeTable`] of it: each thread
//! claims one of its [`DEPTH`] slots per lock held. A thread that holds
//! more at once (nested locks, rare) gets a *spare*: a node from a pool
//! of this type, mapped a page at a time and never unmapped, so a pointer
//! to a node stays valid for the life of the process as a table row's
//! does. [`Claimed`] is one acquisition's node, either kind; the lock's
//! token holds it and gives it back with [`Claimed::free`]. (`mcs.rs`
//! keeps its own spares of its own node type, tuned for its fast path.)

use core::marker::PhantomData;
use core::ptr::NonNull;

use crate::util::nodes::{NodeTable, DEPTH};
use crate::util::thread_index::MAX_THREADS;

/// `Claimed::place` of a spare node (no thread index comes near it).
const SPARE: u32 = u32::MAX;
const _: () = assert!(DEPTH <= 1 << 8 && MAX_THREADS < 1 << 24);

/// A spare node, for a thread whose table row is full: padded like a
/// table slot, and `repr(C)` so that the node sits at offset 0 and a
/// pointer to it is a pointer to the spare. `link` chains free spares
/// (used only while the spare is on the free list).
#[repr(C, align(128))]
struct Spare<N> {
    node: N,
    link: core::sync::atomic::AtomicPtr<Spare<N>>,
}

/// A pool of spare nodes of type `N`, as `mcs.rs` keeps for its own: a
/// free list behind a test-and-set lock of its own (spares are rare: a
/// thread needs one only while it holds more than [`DEPTH`] locks that
/// share a table), refilled a page at a time from `mmap`, never from the
/// allocator (these locks may run inside `malloc`). Spares are never
/// unmapped, so a pointer to one stays valid. The pool lock's
/// Acquire/Release orders one owner's last use of a spare before the next
/// owner's first. Under loom a spare is a leaked box, and the pool holds
/// nothing.
pub(crate) struct Spares<N> {
    #[cfg(not(loom))]
    lock: core::sync::atomic::AtomicBool,
    #[cfg(not(loom))]
    free: core::sync::atomic::AtomicPtr<Spare<N>>,
    _nodes: PhantomData<fn() -> N>,
}

impl<N: Default> Spares<N> {
    /// An empty pool (usable in a `static`).
    pub(crate) const fn new() -> Self {
        Self {
            #[cfg(not(loom))]
            lock: core::sync::atomic::AtomicBool::new(false),
            #[cfg(not(loom))]
            free: core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()),
            _nodes: PhantomData,
        }
    }

    #[cfg(not(loom))]
    fn locked<T>(&self, f: impl FnOnce() -> T) -> T {
        use core::sync::atomic::Ordering::{Acquire, Relaxed, Release};
        let mut spins = 0u32;
        while self.lock.swap(true, Acquire) {
            while self.lock.load(Relaxed) {
                spins += 1;
                if spins % 64 == 0 {
                    std::thread::yield_now();
                } else {
                    core::hint::spin_loop();
                }
            }
        }
        let r = f();
        self.lock.store(false, Release);
        r
    }

    /// A spare, its node fresh (`N::default()`).
    #[cfg(not(loom))]
    fn take(&self) -> NonNull<Spare<N>> {
        use core::sync::atomic::{AtomicPtr, Ordering::Relaxed};
        const {
            assert!(
                core::mem::size_of::<Spare<N>>() <= 4096,
                "a page holds at least one spare"
            )
        };
        let per_page = 4096 / core::mem::size_of::<Spare<N>>();
        let p = self.locked(|| {
            let head = self.free.load(Relaxed);
            if !head.is_null() {
                // SAFETY: a spare on the free list: mapped, ours to unlink.
                self.free
                    .store(unsafe { (*head).link.load(Relaxed) }, Relaxed);
                return head;
            }
            let base = crate::util::map_anon(4096, "locklab: cannot map memory for queue nodes\n")
                .cast::<Spare<N>>();
            // Spares 1.. go on the list, 0 to the caller.
            for i in 1..per_page {
                // SAFETY: inside the fresh page, aligned (page-aligned base,
                // 128-byte multiples); each written once.
                unsafe {
                    base.add(i).write(Spare {
                        node: N::default(),
                        link: AtomicPtr::new(self.free.load(Relaxed)),
                    });
                    self.free.store(base.add(i), Relaxed);
                }
            }
            base
        });
        // SAFETY: a spare nobody else owns, (re)initialised in place (its
        // old node holds atomics only: nothing to drop).
        unsafe {
            p.write(Spare {
                node: N::default(),
                link: AtomicPtr::new(core::ptr::null_mut()),
            });
            NonNull::new_unchecked(p)
        }
    }

    /// Under loom: a fresh boxed spare.
    #[cfg(loom)]
    fn take(&self) -> NonNull<Spare<N>> {
        let b = Box::new(Spare {
            node: N::default(),
            link: core::sync::atomic::AtomicPtr::new(core::ptr::null_mut()),
        });
        // SAFETY: from a Box: non-null.
        unsafe { NonNull::new_unchecked(Box::into_raw(b)) }
    }

    /// Gives a spare back.
    ///
    /// # Safety
    /// `p` came from [`take`](Self::take) of this pool, is owned by the
    /// caller, and no thread will touch it again.
    #[cfg(not(loom))]
    unsafe fn give(&self, p: NonNull<Spare<N>>) {
        use core::sync::atomic::Ordering::Relaxed;
        self.locked(|| {
            // SAFETY: ours until it is on the list.
            unsafe { p.as_ref() }
                .link
                .store(self.free.load(Relaxed), Relaxed);
            self.free.store(p.as_ptr(), Relaxed);
        });
    }

    /// Under loom: leaks the boxed spare, so that, as in the std build, a
    /// late access to a node (a futex wake-up after the hand-over) never
    /// touches freed memory. No model holds enough locks to need one.
    ///
    /// # Safety
    /// As in the std build.
    #[cfg(loom)]
    unsafe fn give(&self, _p: NonNull<Spare<N>>) {}
}

/// A queue node claimed for one acquisition: a free slot of the calling
/// thread's row in a node table, else a spare. Not `Send`: a table slot
/// must be given back by the thread that claimed it.
///
/// A pointer and a `u32`, so that a token built on it travels in
/// registers.
pub(crate) struct Claimed<N: 'static> {
    node: NonNull<N>,
    /// Claiming thread's index `<< 8 | slot` in its row, or [`SPARE`].
    place: u32,
    _not_send: PhantomData<*mut ()>,
}

impl<N> core::fmt::Debug for Claimed<N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Claimed")
            .field("node", &self.node)
            .field("place", &self.place)
            .finish()
    }
}

impl<N: Default + Sync + 'static> Claimed<N> {
    /// Claims a node: a free slot of this thread's row in `table`, else a
    /// spare from `spares`. The node's fields hold whatever its last use
    /// left (a spare's are fresh): the lock initialises what it needs.
    #[inline]
    pub(crate) fn claim(table: &NodeTable<N>, spares: &Spares<N>) -> Self {
        match table.claim() {
            Some(c) => Self {
                node: NonNull::from(c.node),
                place: c.thread << 8 | u32::from(c.slot),
                _not_send: PhantomData,
            },
            None => Self::spare(spares),
        }
    }

    #[cold]
    #[inline(never)]
    fn spare(spares: &Spares<N>) -> Self {
        Self {
            // `Spare` is `repr(C)` with the node first: same address.
            node: spares.take().cast::<N>(),
            place: SPARE,
            _not_send: PhantomData,
        }
    }

    /// The node.
    #[inline]
    pub(crate) fn node(&self) -> &N {
        // SAFETY: table nodes live as long as the table (the locks' tables
        // are statics); a spare lives until `free` consumes this claim.
        unsafe { self.node.as_ref() }
    }

    /// The node's address, as other threads find it in a lock word or a
    /// `next` link.
    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut N {
        self.node.as_ptr()
    }

    /// Whether the node is a spare rather than a table slot.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn is_spare(&self) -> bool {
        self.place == SPARE
    }

    /// Gives the node back to where it came from. Only once no other
    /// thread will touch it, on the claiming thread.
    #[inline]
    pub(crate) fn free(self, table: &NodeTable<N>, spares: &Spares<N>) {
        if self.place == SPARE {
            // SAFETY: the node is the spare's (same address, see `spare`),
            // taken from `spares` by `claim`, owned by this claim alone,
            // and the caller guarantees nobody else reaches it.
            unsafe { spares.give(self.node.cast::<Spare<N>>()) };
        } else {
            table.release(self.place >> 8, self.place as u8);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::sync::{AtomicU32, Ordering};

    #[derive(Default)]
    struct Probe(AtomicU32);

    crate::node_table!(static TABLE: Probe);
    static SPARES: Spares<Probe> = Spares::new();

    #[test]
    fn a_full_row_falls_back_to_spares_that_come_back_fresh_and_are_reused() {
        let rows: Vec<_> = (0..DEPTH)
            .map(|_| Claimed::claim(&TABLE, &SPARES))
            .collect();
        assert!(rows.iter().all(|c| !c.is_spare()));
        let a = Claimed::claim(&TABLE, &SPARES);
        let b = Claimed::claim(&TABLE, &SPARES);
        assert!(a.is_spare() && b.is_spare());
        assert_ne!(a.as_ptr(), b.as_ptr(), "one spare handed out twice");
        a.node().0.store(7, Ordering::Relaxed);
        let a_addr = a.as_ptr();
        a.free(&TABLE, &SPARES);
        let c = Claimed::claim(&TABLE, &SPARES);
        assert_eq!(c.as_ptr(), a_addr, "the freed spare is reused first");
        assert_eq!(c.node().0.load(Ordering::Relaxed), 0, "came back dirty");
        for x in [b, c].into_iter().chain(rows) {
            x.free(&TABLE, &SPARES);
        }
        let again = Claimed::claim(&TABLE, &SPARES);
        assert!(!again.is_spare(), "table slots are given back");
        again.free(&TABLE, &SPARES);
    }

    #[test]
    fn claims_are_two_words() {
        assert_eq!(core::mem::size_of::<Claimed<Probe>>(), 16);
    }
}
