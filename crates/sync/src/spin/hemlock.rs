//! `hemlock`: Dice and Kogan's Hemlock, a FIFO queue lock of one word per
//! lock and one word per thread.
//!
//! Source: D. Dice and A. Kogan, "Hemlock: Compact and Scalable Mutual
//! Exclusion", SPAA 2021.
//!
//! Like CLH and MCS, waiters form an implicit FIFO queue through the lock's
//! tail and each waits on a word of its predecessor's, but there are no
//! queue nodes: a thread's one *grant* word serves every lock it uses.
//!
//! ```text
//!   lock:   tail ──► grant word of the last thread in the queue (null: free)
//!   thread: grant = null                (not releasing anything)
//!                 | address of lock L   (releasing L to its successor)
//! ```
//!
//! - Acquire: swap our grant word into the tail. A null predecessor means
//!   the lock was free. Otherwise spin until the predecessor's grant word
//!   holds *this lock's* address, then write null there: the
//!   acknowledgement, which lets the predecessor go.
//! - Release: compare-and-swap the tail from our word back to null; that
//!   succeeds when nobody queued behind us. Otherwise write the lock's
//!   address into our own grant word and wait until the successor has
//!   cleared it.
//!
//! Uncontended, a pair costs one swap and one compare-and-swap on the
//! lock's word, as MCS; there is no node to claim or initialise and the lock
//! is one pointer.
//!
//! Several locks at once: a thread holding locks A and B may be the
//! predecessor of a waiter on A and of another on B, both spinning on the
//! same grant word. Each waits for its own lock's address and ignores the
//! other's, so the thread may release them in any order. A grant word
//! holds at most one address at a time because the release waits for the
//! acknowledgement before it returns: a thread is inside at most one
//! release at a time, and outside a release its word is null.
//!
//! Where the grant words live: a static array with one cache-padded word
//! per thread index (`util::thread_index`; 16383 indexes × 128 bytes,
//! 2 MiB of zero-initialised memory that the kernel backs with pages only
//! where indexes are used; indexes are handed out lowest first; 1024 words
//! under Miri, whose Tree Borrows checks slow down with the array's
//! length). Nothing is
//! allocated, on the lock path or anywhere else. Indexes are recycled when
//! threads exit, so the word of a dead thread becomes the next thread's.
//! That is safe because nobody reads a grant word once its owner's last
//! release has returned: only a thread's successors read its word, a
//! successor exists only while the thread is in that lock's queue, and the
//! thread leaves every queue through a release, which returns only after
//! the successor's acknowledgement (its last access to the word); with no
//! successor the tail is swung back to null, so no later arrival can find
//! the word there. The word is then null, as a fresh thread expects. The
//! index allocator's Release/Acquire pair orders the old owner's last
//! access before the new owner's first. (A thread that leaks a guard and
//! exits leaves its word in the tail; that lock stays locked for ever, as
//! any leaked lock does, and its waiter ignores every address but that
//! lock's, which the new owner of the word cannot be releasing.) The guard
//! carries a pointer to the word, and is `!Send`: a release from another
//! thread could use the word while its owner releases another lock.
//!
//! Orderings:
//! - The tail swap is `AcqRel`. Acquire, when the old tail was null, pairs
//!   with the releasing compare-and-swap of the last holder. Release is for
//!   the successor's reads of *our* grant word: our word may still hold an
//!   old value written by our last release (this lock's address, if we
//!   released this same lock before), and the read of its acknowledgement
//!   that ended that release must happen before the successor's spin, or
//!   the successor could read the stale address and enter while we hold the
//!   lock. The swap's Release, read by the successor's Acquire swap, makes
//!   it so. `try_acquire`'s compare-and-swap is `AcqRel` for both reasons.
//! - Granting (our word := lock address) is `Release` and the successor's
//!   spin is `Acquire`: the pair carries the critical section over.
//! - The acknowledgement (store null) and the releaser's wait for it are
//!   `Relaxed`: nothing is published by them. The releaser's later writes to
//!   its word are ordered after the acknowledgement by coherence (it read
//!   the null before writing), and later readers of the word reach it
//!   through a tail swap, as above.
//! - Releasing with no successor is a compare-and-swap of the tail back to
//!   null with `Release`, picked up by the next swap's Acquire. Its failure
//!   carries no data: `Relaxed`.

use core::marker::PhantomData;
use core::ptr::{self, NonNull};

use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{spin_loop, AtomicPtr, Ordering};
use crate::util::thread_index;
#[cfg(not(any(loom, miri)))]
use crate::util::thread_index::MAX_THREADS;
use crate::util::CachePadded;

/// A thread's grant word: null, or the address of the lock the thread is
/// handing to its successor right now.
#[derive(Debug)]
struct Grant {
    lock: AtomicPtr<RawHemlock>,
}

impl Grant {
    crate::loom_const_fn! {
        fn new() -> Self {
            Self { lock: AtomicPtr::new(ptr::null_mut()) }
        }
    }
}

/// How many grant words: one per possible thread index.
#[cfg(not(any(loom, miri)))]
const WORDS: usize = MAX_THREADS;
/// Under Miri, the first 1024 indexes only: under Tree Borrows the cost
/// of the tests grew with the static's length (the hemlock tests took
/// 6 minutes of CPU with 16383 words, 35 s with 1024; presumably each
/// access retags the whole static, as `testing::table` observes for
/// scans), and Miri's tests run a few threads at a time, whose indexes are
/// the lowest free ones. A thread past it would panic on the bounds check,
/// not go astray.
#[cfg(all(miri, not(loom)))]
const WORDS: usize = 1024;

/// One grant word per thread index, never freed (see the module
/// documentation).
#[cfg(not(loom))]
static GRANTS: [CachePadded<Grant>; WORDS] = [const { CachePadded::new(Grant::new()) }; WORDS];

// Under loom: fresh words in every execution, one per possible thread
// (loom's thread indexes are never recycled within an execution).
#[cfg(loom)]
loom::lazy_static! {
    static ref GRANTS: Vec<CachePadded<Grant>> =
        (0..loom::MAX_THREADS).map(|_| CachePadded::new(Grant::new())).collect();
}

/// The calling thread's grant word.
#[inline]
fn my_grant() -> &'static Grant {
    &GRANTS[thread_index::current() as usize]
}

/// One acquisition of a [`RawHemlock`]: the acquiring thread's grant word.
/// Not `Send`: the word is shared by all the thread's Hemlock locks, so
/// only that thread may release with it.
#[derive(Debug)]
pub struct HemlockToken {
    grant: NonNull<Grant>,
    _not_send: PhantomData<*mut ()>,
}

// SAFETY: a shared `&HemlockToken` exposes nothing but the pointer's value;
// the word is used only through `release`, which takes the token by value
// on the owning thread.
unsafe impl Sync for HemlockToken {}

impl HemlockToken {
    #[inline]
    fn new(grant: &'static Grant) -> Self {
        Self {
            grant: NonNull::from(grant),
            _not_send: PhantomData,
        }
    }

    #[inline]
    fn grant(&self) -> &Grant {
        // SAFETY: grant words are never freed (a static array, or under
        // loom a lazy static that lives as long as the execution).
        unsafe { self.grant.as_ref() }
    }
}

/// Hemlock queue lock. See the module documentation.
#[derive(Debug)]
pub struct RawHemlock {
    /// The grant word of the last thread in the queue, or null when free.
    tail: AtomicPtr<Grant>,
}

impl RawHemlock {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            // Under loom the words are made now, before any thread runs, so
            // that no lock operation pays for (or is ordered by) the lazy
            // static's initialisation.
            #[cfg(loom)]
            let _ = &*GRANTS;
            Self { tail: AtomicPtr::new(ptr::null_mut()) }
        }
    }

    /// This lock's address, as a grant word holds it. Only compared, never
    /// dereferenced.
    #[inline]
    fn addr(&self) -> *mut RawHemlock {
        ptr::from_ref(self).cast_mut()
    }

    /// Queues up and spins until the lock is ours.
    #[inline]
    pub fn acquire(&self) -> HemlockToken {
        let me = my_grant();
        let pred = self
            .tail
            .swap(ptr::from_ref(me).cast_mut(), Ordering::AcqRel);
        if let Some(pred) = NonNull::new(pred) {
            // SAFETY: grant words are never freed.
            Self::wait_for_grant(unsafe { pred.as_ref() }, self.addr());
        }
        HemlockToken::new(me)
    }

    /// Waits until `pred` grants `lock`, then acknowledges.
    #[cold]
    #[inline(never)]
    fn wait_for_grant(pred: &Grant, lock: *mut RawHemlock) {
        // The predecessor's word may hold another lock's address meanwhile
        // (it releases that one to a waiter of its own): not ours, so wait on.
        while pred.lock.load(Ordering::Acquire) != lock {
            spin_loop();
        }
        pred.lock.store(ptr::null_mut(), Ordering::Relaxed);
    }

    /// Takes the lock if nobody holds it or waits for it right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<HemlockToken> {
        // Look first: a failed compare-and-swap would still take the line.
        if !self.tail.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let me = my_grant();
        self.tail
            .compare_exchange(
                ptr::null_mut(),
                ptr::from_ref(me).cast_mut(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .ok()
            .map(|_| HemlockToken::new(me))
    }

    /// Hands the lock to the next waiter, or frees it.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock, on this thread.
    #[inline]
    pub unsafe fn release(&self, token: HemlockToken) {
        if self
            .tail
            .compare_exchange(
                token.grant.as_ptr(),
                ptr::null_mut(),
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_err()
        {
            self.hand_over(token.grant());
        }
    }

    /// The release with a successor, out of line so that the uncontended
    /// release stays small.
    #[cold]
    #[inline(never)]
    fn hand_over(&self, me: &Grant) {
        me.lock.store(self.addr(), Ordering::Release);
        // Wait for the acknowledgement: until then the successor may still
        // read the word, which must not change under it.
        while !me.lock.load(Ordering::Relaxed).is_null() {
            spin_loop();
        }
    }

    /// Whether some thread holds or waits for the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }
}

impl Default for RawHemlock {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawHemlock {
    const INFO: LockInfo = LockInfo {
        name: "hemlock",
        family: Family::Queue,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "Dice & Kogan, Hemlock: Compact and Scalable Mutual Exclusion, SPAA 2021",
        summary: "one word per lock, one grant word per thread: a waiter spins on its predecessor's grant word until it names this lock, then acknowledges",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{HemlockToken, RawHemlock};

    // SAFETY: `acquire` returns only when the lock was free (null tail) or
    // the predecessor granted this very lock, which it does only from its
    // release; so at most one token is outstanding. The tail swap, the grant
    // and the releasing compare-and-swap order the critical sections (see
    // the module documentation). `HemlockToken` is `!Send`, so `unlock`
    // runs on the thread whose grant word the token names.
    unsafe impl lock_api::RawMutex for RawHemlock {
        const INIT: Self = Self::new();
        type Guard = HemlockToken;

        #[inline]
        fn lock(&self) -> HemlockToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<HemlockToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: HemlockToken) {
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
    unsafe impl lock_api::RawMutexFair for RawHemlock {
        #[inline]
        unsafe fn unlock_fair(&self, guard: HemlockToken) {
            // SAFETY: as for `unlock`.
            unsafe { self.release(guard) }
        }
    }

    /// A mutex protected by a Hemlock queue lock.
    pub type HemlockMutex<T> = lock_api::Mutex<RawHemlock, T>;
}

#[cfg(not(loom))]
pub use raw::HemlockMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{
        churn_threads, fifo_order, hammer_fifo, hammer_yielding, nested_non_lifo, threads,
        try_lock_while_held, until, Watchdog, HANG,
    };
    use core::cell::UnsafeCell;

    #[test]
    fn one_word_per_lock() {
        assert_eq!(
            core::mem::size_of::<RawHemlock>(),
            core::mem::size_of::<usize>()
        );
    }

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawHemlock>(6, 500);
    }

    #[test]
    fn four_threads_count_exactly_yielding() {
        hammer_yielding(RawHemlock::new(), 4, 20_000);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        // More than the four table nodes an MCS thread has: Hemlock needs
        // none.
        nested_non_lifo::<RawHemlock>(6);
    }

    /// A lock with a counter it protects.
    struct Counted {
        lock: RawHemlock,
        count: UnsafeCell<u64>,
    }

    // SAFETY: `count` is only touched with `lock` held.
    unsafe impl Sync for Counted {}

    /// One thread holds three locks; a waiter queues on each (seen in the
    /// tail, so all three spin on the holder's one grant word), and the
    /// holder releases them in the order 1, 0, 2. Every waiter must get its
    /// own lock, and only after its release.
    #[test]
    fn waiters_on_several_locks_share_the_holders_word() {
        let _w = Watchdog::new("hemlock waiters share a word", HANG);
        let locks: Vec<Counted> = (0..3)
            .map(|_| Counted {
                lock: RawHemlock::new(),
                count: UnsafeCell::new(0),
            })
            .collect();
        let mine: Vec<HemlockToken> = locks.iter().map(|c| c.lock.acquire()).collect();
        let my_word = mine[0].grant.as_ptr();
        assert!(mine.iter().all(|t| t.grant.as_ptr() == my_word));
        std::thread::scope(|s| {
            for c in &locks {
                s.spawn(move || {
                    let t = c.lock.acquire();
                    // SAFETY: the lock is held.
                    unsafe { *c.count.get() += 1 };
                    // SAFETY: acquired above, on this thread.
                    unsafe { c.lock.release(t) };
                });
            }
            for c in &locks {
                until(|| c.lock.tail.load(Ordering::Relaxed) != my_word);
            }
            let mut mine: Vec<Option<HemlockToken>> = mine.into_iter().map(Some).collect();
            for i in [1, 0, 2] {
                // SAFETY: nobody else has entered: the waiter is queued.
                assert_eq!(unsafe { *locks[i].count.get() }, 0);
                // SAFETY: held by this thread with this token.
                unsafe { locks[i].lock.release(mine[i].take().unwrap()) };
                // The acknowledgement came before the release returned.
                assert!(my_grant().lock.load(Ordering::Relaxed).is_null());
            }
        });
        for c in &locks {
            assert!(!c.lock.is_held());
            // SAFETY: every thread that touched it has been joined.
            assert_eq!(unsafe { *c.count.get() }, 1);
        }
    }

    /// Holders of several locks at once on every thread, each taking its
    /// locks in its own order and releasing them in yet another: the
    /// counts come out exact.
    #[test]
    fn threads_holding_several_locks_count_exactly() {
        let _w = Watchdog::new("hemlock several locks", HANG);
        let n = threads(4);
        let iters = crate::util::testing::iters(2_000);
        let locks: Vec<Counted> = (0..3)
            .map(|_| Counted {
                lock: RawHemlock::new(),
                count: UnsafeCell::new(0),
            })
            .collect();
        std::thread::scope(|s| {
            for k in 0..n {
                let locks = &locks;
                s.spawn(move || {
                    // Always in index order (no deadlock), released rotated.
                    let first = k % 3;
                    for _ in 0..iters {
                        let tokens: Vec<HemlockToken> =
                            locks.iter().map(|c| c.lock.acquire()).collect();
                        for c in locks {
                            // SAFETY: every lock is held.
                            unsafe { *c.count.get() += 1 };
                        }
                        let mut tokens: Vec<Option<HemlockToken>> =
                            tokens.into_iter().map(Some).collect();
                        for j in 0..3 {
                            let i = (first + j) % 3;
                            // SAFETY: held by this thread with this token.
                            unsafe { locks[i].lock.release(tokens[i].take().unwrap()) };
                        }
                        if k == 0 {
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        for c in &locks {
            // SAFETY: every thread that touched it has been joined.
            assert_eq!(unsafe { *c.count.get() }, n as u64 * iters);
        }
    }

    #[test]
    fn served_in_the_order_queued() {
        fifo_order(
            &RawHemlock::new(),
            |l: &RawHemlock| l.tail.load(Ordering::Relaxed) as usize,
            RawHemlock::acquire,
            |l, t| {
                // SAFETY: the helper releases what it acquired.
                unsafe { l.release(t) }
            },
        );
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        try_lock_while_held::<RawHemlock>();
        // Nor does the holder's own try succeed.
        let m = HemlockMutex::new(());
        let g = m.lock();
        assert!(m.try_lock().is_none());
        drop(g);
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawHemlock>();
    }

    #[test]
    fn metadata() {
        assert_eq!(RawHemlock::INFO.name, "hemlock");
        assert_eq!(RawHemlock::INFO.family, Family::Queue);
        assert_eq!(
            (
                RawHemlock::INFO.fair,
                RawHemlock::INFO.blocking,
                RawHemlock::INFO.numa_aware
            ),
            (true, false, false)
        );
    }
}
