//! `malthusian`: an MCS queue lock that restricts concurrency.
//!
//! A lock that many threads hammer needs only a few of them to stay
//! saturated: the holder and the waiter it hands over to. The others add
//! nothing but contention for caches, pipelines and processors. A
//! Malthusian lock keeps them out of circulation: the releaser *culls*
//! surplus waiters from the MCS queue into a *passive set*, where they
//! sleep, and only the *active circulating set* competes. For long-term
//! fairness the holder regularly moves a passive waiter back.
//! Source: D. Dice, "Malthusian Locks", EuroSys 2017 (arXiv 1511.06035),
//! the MCS variant (MCSCR) with its spin-then-park waiting.
//!
//! # The algorithm
//!
//! Waiters queue as in MCS (see `mcs.rs`): swap a node into `tail`, link
//! behind the old tail, wait on a flag in the node. The release is where
//! the policy lives; only the holder runs it, so the passive set (as in
//! the paper, a stack owned by the lock and touched only by its holder)
//! needs no synchronisation of its own.
//!
//! ```text
//!   tail ─────────────────────────────────────────────┐
//!                                                     ▼
//!   [holder] ─next─► [y0] ─► [y1] ─► … ─► [ym] ─► (unlinked arrivals)
//!                     └──── culled ────┘   kept: ym.next read as null
//!
//!   top ──► [p_k] ─down─► … ─► [p_1] ◄── bottom     the passive set:
//!           (newest)              (oldest)          holder-only links
//!
//!   a node's state (its futex word):
//!     WAITING ──cull──► PASSIVE ──waiter──► PARKED ──┐ (sleeps)
//!        │                 │                         │
//!        └──── grant ──────┴──── re-admit ──────────►┴──► GRANTED
//! ```
//!
//! The releaser, holding node `h`:
//!
//! 1. counts the release; a *rotation* is due when `period` releases have
//!    passed since the last one and the passive set is not empty;
//! 2. with no successor linked: if the passive set is empty, frees the
//!    lock (CAS `tail` from `h` to null) as MCS does; otherwise the main
//!    queue has *drained* and it re-admits a passive waiter `p` (the
//!    newest, or the oldest if a rotation is due) by making `p` the tail
//!    (CAS `tail` from `h` to `p`) and granting it the lock. If either CAS
//!    fails a waiter is linking in behind `h`; it waits for the link and
//!    goes on:
//! 3. walks the linked waiters `y0 … ym`, stopping at the first whose
//!    `next` reads null, and culls `y0 … y(m-1)` onto the passive set (each
//!    has a successor linked behind it, so no arrival will write its
//!    `next` again and it can leave the queue without touching `tail`);
//!    `ym` may still be the tail, or be about to get a successor, so it
//!    stays;
//! 4. grants the lock to `ym`, or, when a rotation is due, takes the
//!    oldest passive waiter `p`, sets `p.next = ym` and grants it to `p`.
//!
//! A culled waiter sees `PASSIVE`, announces `PARKED` with a CAS and
//! sleeps on its state word with [`futex`]. The
//! re-admitting holder swaps in `GRANTED` and wakes it only if the swap
//! returned `PARKED` (a waiter that has not announced it will see
//! `GRANTED` before it sleeps: its CAS fails or its futex wait finds the
//! word changed). The woken thread owns the lock and queues no more: a
//! re-admission is a hand-over.
//!
//! The price is in the re-admissions: a passive waiter is granted the lock
//! while it sleeps, and the lock stays idle until the scheduler runs it.
//! With a processor free that is a wake-up's latency; with every processor
//! busy (spinning waiters of the active set, other work) it can be a
//! scheduler tick or more. Hence a long default period; a drain costs the
//! same, but happens only when no active waiter is there to take over.
//!
//! The paper culls one surplus waiter per release and lets the set shrink
//! over several; this file culls all of them at once, which gives the
//! hard bound below. It keeps the newest linked waiter, not the oldest,
//! because only the last linked one cannot be moved (step 3).
//!
//! # The bounds
//!
//! **Active set.** After each hand-over, of the waiters the releaser saw
//! at most [`ACTIVE_MAX`] = 1 is left spinning in the main queue behind
//! the new holder: none after step 4's plain grant (the kept `ym` *is* the
//! new holder) or a drain, one (`ym`, behind the re-admitted `p`) after a
//! rotation. Threads that arrive after the releaser's walk spin too, until
//! the next release culls them. So in a lock that every thread re-enters
//! right after leaving it, the circulating set is the holder, the previous
//! holder that re-queued behind it, and at most one more: the rest sleep.
//! [`RawMalthusian::restriction`] reports the holder's counts.
//!
//! **Waiting.** Let `N` threads use the lock and `P = period ≥ 2`. While
//! a thread X waits, every release takes the slow path (X's node is in the
//! queue or the passive set), so every release counts towards rotations.
//! - In the main queue: each release that neither grants nor culls X
//!   grants a waiter queued ahead of X, or is a rotation. At most `N - 2`
//!   waiters are ahead of X when it queues (besides the holder) and nobody
//!   joins ahead of it (arrivals queue behind it; a re-admitted waiter is
//!   granted, it does not wait). Rotations are at least `P` releases
//!   apart, so at most one follows each other release. X is granted or
//!   culled within `(N - 1) + N = 2N - 1` releases; a rotation that keeps
//!   X as `ym` behind `p` is followed by `p`'s release, which is no
//!   rotation and decides X, and is counted there.
//! - In the passive set: culled nodes go on top, a drain takes the top,
//!   a rotation the bottom, so the number of nodes below X only shrinks,
//!   by one at each rotation. At most `N - 2` are below it (the set holds
//!   at most the `N - 1` threads that are not the holder), and rotations
//!   come every `P` releases while the set is not empty: X is re-admitted,
//!   and so holds the lock, within `(N - 1)·P` releases.
//!
//! So between queuing and holding the lock, X sees at most
//! `(N - 1)·(P + 2) + 1` acquisitions by others, however the threads are
//! scheduled (a test checks exactly this). It is not FIFO: within the
//! active set the newest waiter goes first, and passive waiters wait out
//! rotations; hence `fair: false`.
//!
//! # Orderings
//!
//! - As in MCS: the tail swap is `AcqRel` (Release publishes our node's
//!   reset to the next arrival, which writes our `next`; Acquire sees the
//!   predecessor's reset before we write its `next`); linking is Release
//!   and the releaser reads `next` with Acquire; freeing the lock is a
//!   Release CAS, picked up by the next swap's Acquire.
//! - A grant (`GRANTED`, to a spinning waiter by a store, to a passive one
//!   by a swap) is Release and the waiter reads its state with Acquire:
//!   that pair carries the critical section, and with it the holder-only
//!   fields (the passive set's links and counts, the rotation counter),
//!   which are therefore Relaxed. When the lock is freed and retaken they
//!   travel the same way through `tail`.
//! - A drain resets `p.next` (Relaxed) before the Release CAS that makes
//!   `p` the tail, so an arrival that finds `p` there (Acquire) links into
//!   a reset field. A rotation sets `p.next` before the Release grant.
//! - Culling (`PASSIVE`) and the waiter's `PARKED` CAS carry no data:
//!   Relaxed. The re-admitting swap reads `PARKED` or `PASSIVE` from the
//!   same word's modification order, so the waiter either announced its
//!   sleep before the swap (and is woken) or reads `GRANTED` after.
//!
//! Nodes come from a per-thread `node_table!` row as in `mcs.rs`, with
//! spare nodes past four locks held at once (`util::spares`). Table rows
//! and spares are never freed, so a wake-up on a node whose thread has
//! moved on touches live memory; at worst it wakes a later sleeper on the same node early,
//! which the futex contract allows (every sleeper re-checks).

use core::ptr::{self, NonNull};

use crate::block::futex;
use crate::info::{Described, Family, LockInfo};
use crate::util::spares::{Claimed, Spares};
use crate::util::sync::{spin_loop, AtomicPtr, AtomicU32, Ordering};

/// The lock is this waiter's: the node's state after a grant.
const GRANTED: u32 = 0;
/// In the main queue, spinning.
const WAITING: u32 = 1;
/// Culled to the passive set; not yet asleep.
const PASSIVE: u32 = 2;
/// In the passive set and asleep (or about to be) on the state word.
const PARKED: u32 = 3;

/// Releases between two rotations of [`RawMalthusian::new`].
pub const DEFAULT_PERIOD: u32 = 1024;

/// The most waiters a hand-over leaves spinning in the main queue, of
/// those the releaser saw (see the module documentation).
pub const ACTIVE_MAX: u32 = 1;

/// A waiter's node: its MCS link, its state (a futex word), and its links
/// in the passive set.
#[derive(Debug, Default)]
struct MalthusianNode {
    next: AtomicPtr<MalthusianNode>,
    state: AtomicU32,
    /// Passive set: the node above (newer); holder-only.
    up: AtomicPtr<MalthusianNode>,
    /// Passive set: the node below (older); holder-only.
    down: AtomicPtr<MalthusianNode>,
}

crate::node_table!(static NODES: MalthusianNode);
static SPARES: Spares<MalthusianNode> = Spares::new();

/// One acquisition of a [`RawMalthusian`]: its queue node. Not `Send`: a
/// table node must be given back by the thread that claimed it.
#[derive(Debug)]
pub struct MalthusianToken {
    node: Claimed<MalthusianNode>,
}

// SAFETY: a shared `&MalthusianToken` exposes nothing but its fields'
// values; the node is used only through `release`, which takes the token
// by value on the owning thread.
unsafe impl Sync for MalthusianToken {}

impl MalthusianToken {
    #[inline]
    fn claim() -> Self {
        Self {
            node: Claimed::claim(&NODES, &SPARES),
        }
    }

    #[inline]
    fn node(&self) -> &MalthusianNode {
        self.node.node()
    }

    /// Gives the node back. Only once no other thread will touch it.
    #[inline]
    fn free(self) {
        // Claimed by `claim` on this thread (the token is not `Send`),
        // given back once (the token is consumed); the callers free it
        // only when nobody reaches the node.
        self.node.free(&NODES, &SPARES);
    }

    /// Whether the node is a spare rather than a table slot.
    #[cfg(all(test, not(loom)))]
    fn on_heap(&self) -> bool {
        self.node.is_spare()
    }
}

/// What the holder knows of the restriction: a snapshot of
/// [`RawMalthusian::restriction`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Restriction {
    /// Waiters the last hand-over left spinning in the main queue behind
    /// the holder, of those it saw: at most [`ACTIVE_MAX`]. Threads that
    /// queued since are not counted until a release walks past them.
    pub active: u32,
    /// Waiters in the passive set (culled, asleep or falling asleep).
    pub passive: u32,
}

/// Malthusian MCS lock. See the module documentation.
#[derive(Debug)]
pub struct RawMalthusian {
    tail: AtomicPtr<MalthusianNode>,
    /// Passive set: newest node; holder-only.
    top: AtomicPtr<MalthusianNode>,
    /// Passive set: oldest node; holder-only.
    bottom: AtomicPtr<MalthusianNode>,
    /// Nodes in the passive set; written by the holder only.
    passive: AtomicU32,
    /// Waiters the last hand-over left behind the holder; holder-only.
    active: AtomicU32,
    /// Slow releases since the last rotation; holder-only.
    since: AtomicU32,
    /// Releases between rotations.
    period: u32,
}

impl RawMalthusian {
    crate::loom_const_fn! {
        /// An unlocked lock that rotates every [`DEFAULT_PERIOD`] releases.
        pub fn new() -> Self {
            Self::with_period(DEFAULT_PERIOD)
        }
    }

    crate::loom_const_fn! {
        /// An unlocked lock that moves its oldest passive waiter back every
        /// `period` releases (at least 1; the waiting bound of the module
        /// documentation assumes at least 2).
        pub fn with_period(period: u32) -> Self {
            assert!(period > 0, "a rotation period of 0 releases");
            Self {
                tail: AtomicPtr::new(ptr::null_mut()),
                top: AtomicPtr::new(ptr::null_mut()),
                bottom: AtomicPtr::new(ptr::null_mut()),
                passive: AtomicU32::new(0),
                active: AtomicU32::new(0),
                since: AtomicU32::new(0),
                period,
            }
        }
    }

    /// The rotation period this lock was made with.
    pub fn period(&self) -> u32 {
        self.period
    }

    /// Queues up and waits (spinning, or asleep while passive) until the
    /// lock is ours.
    #[inline]
    pub fn acquire(&self) -> MalthusianToken {
        let me = MalthusianToken::claim();
        let node = me.node();
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.state.store(WAITING, Ordering::Relaxed);
        let pred = self.tail.swap(me.node.as_ptr(), Ordering::AcqRel);
        if let Some(pred) = NonNull::new(pred) {
            // SAFETY: the predecessor's node stays claimed until we link:
            // a holder waits for our link before it gives its node back,
            // and a waiter with a null `next` is neither culled nor granted
            // past (see the module documentation).
            unsafe { pred.as_ref() }
                .next
                .store(me.node.as_ptr(), Ordering::Release);
            #[cfg(all(test, not(loom)))]
            hooks::queued();
            Self::wait(node);
        }
        me
    }

    /// Waits for `GRANTED`: spinning while in the main queue, asleep while
    /// passive.
    fn wait(node: &MalthusianNode) {
        loop {
            match node.state.load(Ordering::Acquire) {
                GRANTED => return,
                WAITING => spin_loop(),
                PASSIVE => {
                    // Culled. Announce the sleep; a failed CAS means we were
                    // re-admitted meanwhile, which the next load sees.
                    let _ = node.state.compare_exchange(
                        PASSIVE,
                        PARKED,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    );
                }
                _ => {
                    // PARKED: sleep until the word changes (a spurious return
                    // just loops).
                    futex::wait(&node.state, PARKED, None);
                }
            }
        }
    }

    /// Takes the lock if nobody holds it or waits for it right now. A free
    /// lock has an empty passive set (the lock is never freed while it
    /// has passive waiters), so this bypasses nobody who sleeps.
    #[inline]
    pub fn try_acquire(&self) -> Option<MalthusianToken> {
        if !self.tail.load(Ordering::Relaxed).is_null() {
            return None;
        }
        let me = MalthusianToken::claim();
        let node = me.node();
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.state.store(WAITING, Ordering::Relaxed);
        match self.tail.compare_exchange(
            ptr::null_mut(),
            me.node.as_ptr(),
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) {
            Ok(_) => Some(me),
            Err(_) => {
                // Never published: nobody else saw the node.
                me.free();
                None
            }
        }
    }

    /// Hands the lock over (culling and re-admitting as the module
    /// documentation says), or frees it.
    ///
    /// # Safety
    /// `token` must come from an acquisition of this lock, on this thread.
    #[inline]
    pub unsafe fn release(&self, token: MalthusianToken) {
        let next = token.node().next.load(Ordering::Acquire);
        if next.is_null()
            && self.top.load(Ordering::Relaxed).is_null()
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
        self.release_slow(token, next);
    }

    /// Every release with a successor or a passive waiter: steps 1–4 of
    /// the module documentation. Out of line so that the uncontended
    /// release stays small.
    #[cold]
    #[inline(never)]
    fn release_slow(&self, token: MalthusianToken, mut next: *mut MalthusianNode) {
        let h = token.node();
        // 1. Count; is a rotation due? (The set as it is before this
        // release's culls: a rotation re-admits an older waiter.)
        let since = self.since.load(Ordering::Relaxed).saturating_add(1);
        let rotate = since >= self.period && !self.top.load(Ordering::Relaxed).is_null();
        self.since
            .store(if rotate { 0 } else { since }, Ordering::Relaxed);

        // 2. Nobody linked behind us: free the lock, or re-admit.
        if next.is_null() {
            let p = if rotate {
                self.bottom.load(Ordering::Relaxed)
            } else {
                self.top.load(Ordering::Relaxed)
            };
            if let Some(p) = NonNull::new(p) {
                // SAFETY: a passive node: its thread sleeps until granted,
                // its fields are the holder's (us) to write.
                let pn = unsafe { p.as_ref() };
                pn.next.store(ptr::null_mut(), Ordering::Relaxed);
                if self
                    .tail
                    .compare_exchange(
                        token.node.as_ptr(),
                        p.as_ptr(),
                        Ordering::Release,
                        Ordering::Relaxed,
                    )
                    .is_ok()
                {
                    let popped = self.pop(rotate);
                    debug_assert!(ptr::eq(popped, pn));
                    self.active.store(0, Ordering::Relaxed);
                    Self::readmit(pn);
                    token.free();
                    return;
                }
            } else if self
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
            // A waiter has swapped itself in and is about to link.
            while next.is_null() {
                spin_loop();
                next = h.next.load(Ordering::Acquire);
            }
        }

        // 3. Cull every linked waiter but the last.
        // SAFETY: a linked waiter spins until granted or culled, and only
        // the holder does either: its node is claimed and in place.
        let mut last = unsafe { &*next };
        loop {
            let after = last.next.load(Ordering::Acquire);
            if after.is_null() {
                break;
            }
            // `last` has a successor linked: nobody writes its `next` again
            // and `tail` has moved past it, so it may leave the queue.
            self.cull(last);
            // SAFETY: as above, for the waiter behind it.
            last = unsafe { &*after };
        }

        // 4. Hand over.
        if rotate {
            let p = self.pop(true);
            p.next
                .store(ptr::from_ref(last).cast_mut(), Ordering::Relaxed);
            self.active.store(1, Ordering::Relaxed);
            Self::readmit(p);
        } else {
            self.active.store(0, Ordering::Relaxed);
            last.state.store(GRANTED, Ordering::Release);
        }
        // Our node: the successor linked before we read it, and nobody
        // else has it.
        token.free();
    }

    /// Moves a linked waiter with a successor to the top of the passive
    /// set. Holder only.
    fn cull(&self, n: &MalthusianNode) {
        let np = ptr::from_ref(n).cast_mut();
        let top = self.top.load(Ordering::Relaxed);
        n.up.store(ptr::null_mut(), Ordering::Relaxed);
        n.down.store(top, Ordering::Relaxed);
        match NonNull::new(top) {
            // SAFETY: a passive node, holder-owned links.
            Some(t) => unsafe { t.as_ref() }.up.store(np, Ordering::Relaxed),
            None => self.bottom.store(np, Ordering::Relaxed),
        }
        self.top.store(np, Ordering::Relaxed);
        let passive = self.passive.load(Ordering::Relaxed);
        self.passive.store(passive + 1, Ordering::Relaxed);
        n.state.store(PASSIVE, Ordering::Relaxed);
    }

    /// Takes the bottom (oldest) or top (newest) node off the non-empty
    /// passive set. Holder only.
    fn pop(&self, bottom: bool) -> &MalthusianNode {
        let (end, other) = if bottom {
            (&self.bottom, &self.top)
        } else {
            (&self.top, &self.bottom)
        };
        let n = end.load(Ordering::Relaxed);
        debug_assert!(!n.is_null(), "pop from an empty passive set");
        // SAFETY: a passive node (the set is not empty); its thread sleeps
        // until granted, and its links are the holder's.
        let node = unsafe { &*n };
        let inward = if bottom { &node.up } else { &node.down };
        let rest = inward.load(Ordering::Relaxed);
        end.store(rest, Ordering::Relaxed);
        match NonNull::new(rest) {
            Some(r) => {
                // SAFETY: as for `node`.
                let r = unsafe { r.as_ref() };
                let outward = if bottom { &r.down } else { &r.up };
                outward.store(ptr::null_mut(), Ordering::Relaxed);
            }
            None => other.store(ptr::null_mut(), Ordering::Relaxed),
        }
        let passive = self.passive.load(Ordering::Relaxed);
        self.passive.store(passive - 1, Ordering::Relaxed);
        node
    }

    /// Grants the lock to a node taken off the passive set, waking its
    /// thread if it sleeps.
    fn readmit(p: &MalthusianNode) {
        if p.state.swap(GRANTED, Ordering::Release) == PARKED {
            futex::wake_one(&p.state);
        }
    }

    /// The holder's counts of active and passive waiters. Exact when read
    /// by the holder: only a holder writes them, before the hand-over
    /// that orders its writes before the next holder's reads, and nobody
    /// writes them while the lock is held. From anyone else, a momentary
    /// and possibly torn snapshot (the two fields are read separately).
    pub fn restriction(&self) -> Restriction {
        Restriction {
            active: self.active.load(Ordering::Relaxed),
            passive: self.passive.load(Ordering::Relaxed),
        }
    }

    /// Whether some thread holds or waits for the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        !self.tail.load(Ordering::Relaxed).is_null()
    }

    /// Whether a waiter has linked behind the holder of `token`.
    #[cfg(all(test, not(loom)))]
    fn successor_linked(token: &MalthusianToken) -> bool {
        !token.node().next.load(Ordering::Acquire).is_null()
    }

    /// Passive waiters that have announced their sleep: walks the passive
    /// set, so only for the holder.
    #[cfg(all(test, not(loom)))]
    fn parked(&self) -> usize {
        let mut n = 0;
        let mut p = self.top.load(Ordering::Relaxed);
        while let Some(node) = NonNull::new(p) {
            // SAFETY: a passive node; the caller holds the lock.
            let node = unsafe { node.as_ref() };
            n += usize::from(node.state.load(Ordering::Relaxed) == PARKED);
            p = node.down.load(Ordering::Relaxed);
        }
        n
    }
}

impl Default for RawMalthusian {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawMalthusian {
    const INFO: LockInfo = LockInfo {
        name: "malthusian",
        family: Family::Queue,
        fair: false,
        blocking: true,
        numa_aware: false,
        source: "Dice, Malthusian Locks, EuroSys 2017 (MCSCR)",
        summary: "MCS whose releaser culls surplus waiters to a sleeping passive set and rotates them back every so many releases",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{MalthusianToken, RawMalthusian};

    // SAFETY: `acquire` returns only after a grant (a Release store or swap
    // of `GRANTED` into our node, read with Acquire) or on an empty queue
    // (an AcqRel swap that found a null tail, after the Release CAS that
    // freed the lock), and every grant is made by the one holder as its
    // last act, so at most one token is outstanding and the critical
    // sections are ordered. `MalthusianToken` is `!Send`, so `unlock` runs
    // on the thread that claimed the node, as the node table requires.
    unsafe impl lock_api::RawMutex for RawMalthusian {
        const INIT: Self = Self::new();
        type Guard = MalthusianToken;

        #[inline]
        fn lock(&self) -> MalthusianToken {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<MalthusianToken> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: MalthusianToken) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    /// A mutex protected by a Malthusian MCS lock.
    pub type MalthusianMutex<T> = lock_api::Mutex<RawMalthusian, T>;
}

#[cfg(not(loom))]
pub use raw::MalthusianMutex;

/// Test hooks: a closure that `acquire` runs on this thread each time it
/// has linked into the queue (compiled only for the unit tests).
#[cfg(all(test, not(loom)))]
mod hooks {
    use std::cell::RefCell;

    type Hook = Box<dyn FnMut()>;

    std::thread_local! {
        static QUEUED: RefCell<Option<Hook>> = const { RefCell::new(None) };
    }

    /// Sets (or with `None` clears) this thread's hook.
    pub(super) fn on_queued(f: Option<Hook>) {
        QUEUED.with(|q| *q.borrow_mut() = f);
    }

    pub(super) fn queued() {
        QUEUED.with(|q| {
            if let Some(f) = q.borrow_mut().as_mut() {
                f();
            }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::nodes::DEPTH;
    use crate::util::testing::{
        churn_threads, hammer_fifo, iters, nested_non_lifo, threads, until, Watchdog, HANG,
    };
    use std::cell::Cell;
    use std::rc::Rc;
    use std::sync::atomic::{AtomicU64, AtomicUsize};
    use std::sync::Arc;

    /// A log that only the lock under test protects (no lock of its own),
    /// so that Miri and the tests see a hand-over that does not order the
    /// critical sections.
    struct Log<T>(std::cell::UnsafeCell<Vec<T>>);

    // SAFETY: pushed to only under the lock under test, read after the
    // threads joined.
    unsafe impl<T: Send> Sync for Log<T> {}

    impl<T> Log<T> {
        fn new() -> Self {
            Self(std::cell::UnsafeCell::new(Vec::new()))
        }

        /// # Safety
        /// The caller holds the lock under test.
        unsafe fn push(&self, t: T) {
            // SAFETY: the caller holds the lock, so no other access overlaps.
            unsafe { (*self.0.get()).push(t) }
        }

        fn into_inner(self) -> Vec<T> {
            self.0.into_inner()
        }
    }

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawMalthusian>(6, 500);
    }

    #[test]
    fn six_threads_count_exactly_rotating_every_other_release() {
        crate::util::testing::hammer_yielding(RawMalthusian::with_period(2), 6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        nested_non_lifo::<RawMalthusian>(3);
    }

    #[test]
    fn six_locks_at_once_overflow_to_spare_nodes() {
        const N: usize = 6;
        const { assert!(N > DEPTH) };
        nested_non_lifo::<RawMalthusian>(N);
        let locks: Vec<RawMalthusian> = (0..N).map(|_| RawMalthusian::new()).collect();
        let mut tokens: Vec<Option<MalthusianToken>> =
            locks.iter().map(|l| Some(l.acquire())).collect();
        let on_heap = |t: &Option<MalthusianToken>| t.as_ref().unwrap().on_heap();
        assert_eq!(tokens.iter().filter(|t| on_heap(t)).count(), N - DEPTH);
        for i in [1, DEPTH, 0, N - 1, 2, 3] {
            // SAFETY: each token is released once, on this thread.
            unsafe { locks[i].release(tokens[i].take().unwrap()) };
        }
        assert!(locks.iter().all(|l| !l.is_held()));
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let m = MalthusianMutex::new(());
        let g = m.lock();
        assert!(m.is_locked());
        std::thread::scope(|s| {
            s.spawn(|| assert!(m.try_lock().is_none()));
        });
        drop(g);
        assert!(m.try_lock().is_some());
        assert!(!m.is_locked());
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawMalthusian>();
    }

    #[test]
    fn metadata() {
        let i = RawMalthusian::INFO;
        assert_eq!(i.name, "malthusian");
        assert_eq!(i.family, Family::Queue);
        assert_eq!((i.fair, i.blocking, i.numa_aware), (false, true, false));
        assert_eq!(RawMalthusian::new().period(), DEFAULT_PERIOD);
    }

    /// Known answer (a). While this thread holds the lock, `K` threads
    /// queue one after another. The release sees them all linked: it
    /// culls all but the newest and grants it, so the new holder finds
    /// `K - 1` passive waiters and none active, and waits until every
    /// passive one has gone to sleep. Each later release finds the main
    /// queue drained and re-admits the newest passive waiter: the threads
    /// enter newest first, and the passive count falls by one each time.
    #[test]
    fn a_release_culls_all_but_the_newest_and_the_passive_sleep_and_come_back_newest_first() {
        let k = threads(5);
        let _w = Watchdog::new("malthusian cull", HANG);
        let lock = RawMalthusian::new();
        let queued = Arc::new(AtomicUsize::new(0));
        let log = Log::new();
        let held = lock.acquire();
        std::thread::scope(|s| {
            for i in 0..k {
                let (lock, log, q) = (&lock, &log, queued.clone());
                s.spawn(move || {
                    hooks::on_queued(Some(Box::new(move || {
                        q.fetch_add(1, Ordering::SeqCst);
                    })));
                    let t = lock.acquire();
                    hooks::on_queued(None);
                    let r = lock.restriction();
                    // Every passive waiter sleeps (or has announced it).
                    until(|| lock.parked() == r.passive as usize);
                    // SAFETY: we hold the lock.
                    unsafe { log.push((i, r)) };
                    // SAFETY: acquired above, on this thread.
                    unsafe { lock.release(t) };
                });
                until(|| queued.load(Ordering::SeqCst) == i + 1);
            }
            assert_eq!(lock.restriction(), Restriction::default());
            // SAFETY: acquired above, on this thread.
            unsafe { lock.release(held) };
        });
        let log = log.into_inner();
        let expected: Vec<_> = (0..k)
            .rev()
            .map(|i| {
                (
                    i,
                    Restriction {
                        active: 0,
                        passive: i as u32,
                    },
                )
            })
            .collect();
        assert_eq!(log, expected, "(thread, restriction) in order of entry");
        assert!(!lock.is_held());
        assert_eq!(lock.restriction(), Restriction::default());
    }

    /// Known answer (b), step by step, with a rotation every second
    /// release. While this thread holds the lock, P1, P2 and A queue in
    /// that order; the release culls P1 and P2 (P1 at the bottom) and
    /// grants A: the first release since the lock was made. B queues
    /// behind A, and A, which waits for that, releases: the second
    /// release, a rotation, so the oldest passive waiter P1 is grafted in
    /// front of B and enters, with B active behind it. P1's release hands
    /// to B; B's, the fourth, finds the queue drained and rotates P2 in.
    /// Without the rotation B would enter after A and the passive set
    /// would drain newest first: A, B, P2, P1.
    #[test]
    fn a_rotation_grafts_the_oldest_passive_waiter_in_front_of_the_successor() {
        let _w = Watchdog::new("malthusian rotation", HANG);
        let lock = RawMalthusian::with_period(2);
        let queued = Arc::new(AtomicUsize::new(0));
        let a_entered = AtomicUsize::new(0);
        let log = Log::new();
        let enter = |name: &'static str, wait_for_successor: bool| {
            let (lock, log, a_entered, q) = (&lock, &log, &a_entered, queued.clone());
            move || {
                hooks::on_queued(Some(Box::new(move || {
                    q.fetch_add(1, Ordering::SeqCst);
                })));
                let t = lock.acquire();
                hooks::on_queued(None);
                // SAFETY: we hold the lock.
                unsafe { log.push((name, lock.restriction())) };
                if wait_for_successor {
                    a_entered.store(1, Ordering::SeqCst);
                    until(|| RawMalthusian::successor_linked(&t));
                }
                // SAFETY: acquired above, on this thread.
                unsafe { lock.release(t) };
            }
        };
        let held = lock.acquire();
        std::thread::scope(|s| {
            for (i, name) in ["P1", "P2", "A"].into_iter().enumerate() {
                s.spawn(enter(name, name == "A"));
                until(|| queued.load(Ordering::SeqCst) == i + 1);
            }
            // SAFETY: acquired above, on this thread.
            unsafe { lock.release(held) };
            until(|| a_entered.load(Ordering::SeqCst) == 1);
            s.spawn(enter("B", false));
        });
        let r = |active, passive| Restriction { active, passive };
        assert_eq!(
            log.into_inner(),
            [
                ("A", r(0, 2)),
                ("P1", r(1, 1)),
                ("B", r(0, 1)),
                ("P2", r(0, 0))
            ]
        );
        assert!(!lock.is_held());
    }

    /// A waiter culled and re-admitted before it ever looks at its state
    /// (stalled in the test hook right after linking) enters without
    /// sleeping, and nobody makes a wake-up call for it. While this thread
    /// holds the lock, P queues and stalls, then A queues; the release
    /// culls P and grants A; A's release finds the queue drained and
    /// re-admits P. Only then does P go on: it reads `GRANTED` at its
    /// first look. Nothing but the grant orders A's critical section
    /// before P's (this thread learns of the re-admission from a Relaxed
    /// load), so a grant without Release shows here as a data race on the
    /// log, under Miri.
    #[test]
    fn a_waiter_readmitted_before_it_looks_enters_without_sleeping() {
        let _w = Watchdog::new("malthusian early readmission", HANG);
        let lock = RawMalthusian::new();
        let log = Log::new();
        let (queued_tx, queued_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let held = lock.acquire();
        std::thread::scope(|s| {
            let (lock, log) = (&lock, &log);
            let queued = queued_tx.clone();
            s.spawn(move || {
                hooks::on_queued(Some(Box::new(move || {
                    queued.send(()).unwrap();
                    go_rx.recv().unwrap();
                })));
                let t = lock.acquire();
                hooks::on_queued(None);
                // SAFETY: we hold the lock.
                unsafe { log.push(("P", lock.restriction())) };
                // SAFETY: acquired above, on this thread.
                unsafe { lock.release(t) };
            });
            queued_rx.recv().unwrap();
            s.spawn(move || {
                hooks::on_queued(Some(Box::new(move || queued_tx.send(()).unwrap())));
                let t = lock.acquire();
                hooks::on_queued(None);
                // SAFETY: we hold the lock.
                unsafe { log.push(("A", lock.restriction())) };
                let wakes = futex::wake_calls();
                // SAFETY: acquired above, on this thread.
                unsafe { lock.release(t) };
                assert_eq!(futex::wake_calls(), wakes, "a wake-up for a waiter awake");
            });
            queued_rx.recv().unwrap();
            // SAFETY: acquired above, on this thread.
            unsafe { lock.release(held) };
            // Our release culled P (we stored `passive = 1`); the first 0
            // we read after that is A's re-admission of P.
            assert_eq!(lock.restriction().passive, 1);
            until(|| lock.restriction().passive == 0);
            go_tx.send(()).unwrap();
        });
        let r = |active, passive| Restriction { active, passive };
        assert_eq!(log.into_inner(), [("A", r(0, 1)), ("P", r(0, 0))]);
        assert!(!lock.is_held());
    }

    /// Known answer (b), and (a) under load. `n` threads hammer a lock
    /// that rotates every `P` releases; this thread holds it until all
    /// have queued, so the first release culls `n - 1` of them whatever
    /// the scheduling. Each thread notes the count of critical sections
    /// when it has queued (a hook in `acquire`, after linking; read with
    /// an RMW, so it is the latest count) and again once it holds the
    /// lock: the difference, the acquisitions by others while it waited,
    /// must stay within the module documentation's bound
    /// `(N - 1)·(P + 2) + 1` for the `N = n + 1` threads that use the lock
    /// (this one too, once). Every holder also checks the restriction:
    /// at most `ACTIVE_MAX` active, and never more waiters counted than
    /// there are other threads.
    #[test]
    fn with_a_short_period_no_waiter_waits_past_the_rotation_bound() {
        const P: u32 = 4;
        let n = threads(4);
        let rounds = iters(300);
        let bound = n as u64 * (u64::from(P) + 2) + 1;
        let _w = Watchdog::new("malthusian bound", HANG);
        let lock = RawMalthusian::with_period(P);
        let done = Arc::new(AtomicU64::new(0));
        let queued = Arc::new(AtomicUsize::new(0));
        let worst = AtomicU64::new(0);
        let most_passive = AtomicU64::new(0);
        let held = lock.acquire();
        std::thread::scope(|s| {
            for _ in 0..n {
                let (lock, done, worst, most_passive) = (&lock, &done, &worst, &most_passive);
                let queued = queued.clone();
                s.spawn(move || {
                    let queued_at = Rc::new(Cell::new(None));
                    let (at, d) = (queued_at.clone(), done.clone());
                    hooks::on_queued(Some(Box::new(move || {
                        at.set(Some(d.fetch_add(0, Ordering::SeqCst)));
                        queued.fetch_add(1, Ordering::SeqCst);
                    })));
                    for _ in 0..rounds {
                        queued_at.set(None);
                        let t = lock.acquire();
                        let now = done.load(Ordering::Relaxed);
                        if let Some(at) = queued_at.get() {
                            worst.fetch_max(now - at, Ordering::Relaxed);
                        }
                        let r = lock.restriction();
                        assert!(r.active <= ACTIVE_MAX, "{r:?}");
                        assert!(((r.active + r.passive) as usize) < n, "{r:?}");
                        most_passive.fetch_max(r.passive.into(), Ordering::Relaxed);
                        done.fetch_add(1, Ordering::Relaxed);
                        // SAFETY: acquired above, on this thread.
                        unsafe { lock.release(t) };
                    }
                    hooks::on_queued(None);
                });
            }
            until(|| queued.load(Ordering::SeqCst) == n);
            // SAFETY: acquired above, on this thread.
            unsafe { lock.release(held) };
        });
        assert_eq!(done.load(Ordering::Relaxed), n as u64 * rounds);
        let (worst, most_passive) = (worst.into_inner(), most_passive.into_inner());
        assert_eq!(
            most_passive,
            n as u64 - 1,
            "the first release culls all but one"
        );
        assert!(
            worst <= bound,
            "a waiter saw {worst} acquisitions by others (bound {bound})"
        );
        assert!(!lock.is_held());
    }
}
