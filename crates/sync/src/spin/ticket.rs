//! `ticket`: the ticket lock.
//!
//! Like a bakery counter: an arriving thread draws the next number with one
//! `fetch_add` on `next` and waits until `owner` (the number being served)
//! shows it; releasing serves the following number. Waiters are served in
//! the order they drew, so no one starves, and no waiter ever writes while
//! it waits. It is the sequencer/eventcount pair of Reed & Kanodia (CACM
//! 1979) as a spin lock, analysed by Mellor-Crummey & Scott (ACM TOCS 9(1),
//! 1991) and used for Linux's spinlocks from 2.6.25 until qspinlock; seed 001
//! (Bueso) describes ticket locks as the widely used answer to starvation,
//! at the price of a greater sensitivity to preemption. Its other cost, in
//! Mellor-Crummey & Scott's analysis: every release invalidates every
//! waiter's copy of `owner`, so hand-over time grows with the number of
//! waiters.
//!
//! The guard carries the holder's ticket, and only the holder ever writes
//! `owner`, so release is a plain `Release` store of `ticket + 1` rather
//! than a read-modify-write: no locked instruction on x86, no LL/SC retry on
//! Arm, and it cannot be slowed by arrivals hammering `next`.
//!
//! Layout: `next` and `owner` are two separate `AtomicU32`s side by side (8
//! bytes, one cache line). They must be separate atomics for that plain store:
//! Rust has no sound mixed-size atomics, so a store to one half of an
//! `AtomicU64` is not expressible, and releasing through a 64-bit
//! `fetch_add` on the packed word would carry out of the `owner` half into
//! `next` when `owner` wraps. Keeping them in one line keeps the lock small
//! (seed 001 stresses that lock size matters; Linux fits its spinlock in 32
//! bits) and makes an uncontended acquire+release touch one line only. The
//! counters wrap: all comparisons are equality or `wrapping_sub`, correct as
//! long as fewer than 2³² threads hold tickets at once.
//!
//! Orderings:
//! - drawing (`next.fetch_add`) is `Relaxed`: the ticket number itself
//!   publishes nothing; uniqueness comes from the RMW's atomicity.
//! - waiting reads `owner` with `Acquire`: the read that sees our number
//!   synchronizes with the `Release` store that wrote it, so our critical
//!   section sees the previous one's writes.
//! - releasing stores `owner` with `Release`, publishing the critical section
//!   to the next ticket holder.
//! - `try_acquire` reads `owner` with `Acquire` (that is the synchronizing
//!   read, as in waiting) and then claims ticket `owner` only if it is still
//!   the next one to be drawn: a `compare_exchange` on `next` from `o` to
//!   `o + 1`, which can succeed only while `next == owner`, i.e. while the
//!   lock is free. The exchange carries no data and is `Relaxed`.

use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{spin_loop, AtomicU32, Ordering};

/// Ticket spin lock. See the module documentation.
#[derive(Debug)]
pub struct RawTicket {
    /// The next ticket to hand out.
    next: AtomicU32,
    /// The ticket now allowed in; written only by its holder, on release.
    owner: AtomicU32,
}

/// The ticket a holder drew: its guard, needed to release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ticket(u32);

impl Ticket {
    pub(crate) const fn new(number: u32) -> Self {
        Self(number)
    }

    /// The ticket's number.
    pub const fn number(self) -> u32 {
        self.0
    }
}

impl RawTicket {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { next: AtomicU32::new(0), owner: AtomicU32::new(0) }
        }
    }

    /// An unlocked lock whose counters start at `n`, so tests can cross the
    /// wrap-around quickly.
    #[cfg(all(test, not(loom)))]
    pub(crate) const fn starting_at(n: u32) -> Self {
        Self {
            next: AtomicU32::new(n),
            owner: AtomicU32::new(n),
        }
    }

    /// How many tickets were drawn so far (wrapping), for tests that watch
    /// waiters arrive.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn drawn(&self) -> u32 {
        self.next.load(Ordering::Relaxed)
    }

    /// Draws a ticket and spins until it is served.
    #[inline]
    pub fn acquire(&self) -> Ticket {
        let t = self.draw();
        while self.serving() != t {
            spin_loop();
        }
        Ticket(t)
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<Ticket> {
        let o = self.owner.load(Ordering::Acquire);
        self.next
            .compare_exchange(o, o.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed)
            .ok()
            .map(|_| Ticket(o))
    }

    /// Releases the lock: serves the next ticket.
    ///
    /// # Safety
    /// The caller must hold the lock with `ticket`.
    #[inline]
    pub unsafe fn release(&self, ticket: Ticket) {
        self.owner
            .store(ticket.0.wrapping_add(1), Ordering::Release);
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        // `owner` first: `next` only moves away from it, so a lock held all
        // along is never reported free.
        let owner = self.owner.load(Ordering::Relaxed);
        self.next.load(Ordering::Relaxed) != owner
    }

    /// Takes a number. The caller must wait until [`serving`](Self::serving)
    /// shows it, then holds the lock with `Ticket::new(number)`.
    #[inline]
    pub(crate) fn draw(&self) -> u32 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// The number now served; an `Acquire` read, so seeing one's own number
    /// also sees the previous critical section.
    #[inline]
    pub(crate) fn serving(&self) -> u32 {
        self.owner.load(Ordering::Acquire)
    }
}

impl Default for RawTicket {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawTicket {
    const INFO: LockInfo = LockInfo {
        name: "ticket",
        family: Family::Ticket,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "ticket lock: Reed & Kanodia, CACM 1979; Mellor-Crummey & Scott, ACM TOCS 9(1) 1991; Linux ticket spinlocks; Bueso (seed 001)",
        summary: "fetch-and-add a ticket, spin until the owner counter shows it; FIFO",
    };
}

/// Implements `lock_api::RawMutex` and `RawMutexFair` with the [`Ticket`]
/// as the guard for a ticket lock whose inherent `acquire -> Ticket`,
/// `try_acquire -> Option<Ticket>`, `unsafe release(Ticket)` and `is_held`
/// are the algorithm: [`RawTicket`] and `RawTicketBackoff`, which differ
/// only in how they wait. A fair unlock is the plain release, since every
/// release already hands the lock to the longest waiter. Write the lock's
/// own SAFETY argument above each use.
#[cfg(not(loom))]
macro_rules! ticket_raw_mutex {
    ($ty:ty) => {
        // SAFETY: the invoker states above the macro why the algorithm
        // excludes; this layer only forwards to it.
        unsafe impl lock_api::RawMutex for $ty {
            const INIT: Self = Self::new();
            type Guard = $crate::spin::ticket::Ticket;

            #[inline]
            fn lock(&self) -> $crate::spin::ticket::Ticket {
                self.acquire()
            }

            #[inline]
            fn try_lock(&self) -> Option<$crate::spin::ticket::Ticket> {
                self.try_acquire()
            }

            #[inline]
            unsafe fn unlock(&self, guard: $crate::spin::ticket::Ticket) {
                // SAFETY: the caller passes the guard of a held lock.
                unsafe { self.release(guard) }
            }

            #[inline]
            fn is_locked(&self) -> bool {
                self.is_held()
            }
        }

        // SAFETY: as for `RawMutex`; every release already hands the lock
        // to the longest waiter, which is what a fair unlock must do.
        unsafe impl lock_api::RawMutexFair for $ty {
            #[inline]
            unsafe fn unlock_fair(&self, guard: $crate::spin::ticket::Ticket) {
                // SAFETY: the caller passes the guard of a held lock.
                unsafe { self.release(guard) }
            }
        }
    };
}
#[cfg(not(loom))]
pub(crate) use ticket_raw_mutex;

#[cfg(not(loom))]
mod raw {
    use super::RawTicket;

    // SAFETY: tickets are unique (drawn by `fetch_add`, or claimed by a
    // compare-exchange that advances `next`), and a ticket holder enters only
    // once `owner` equals its ticket; `owner` moves on only when that holder
    // releases. So at most one guard exists at a time. Entering reads `owner`
    // with `Acquire`, releasing stores it with `Release`.
    super::ticket_raw_mutex!(RawTicket);

    /// A mutex protected by a ticket spin lock.
    pub type TicketMutex<T> = lock_api::Mutex<RawTicket, T>;
}

#[cfg(not(loom))]
pub use raw::TicketMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{fifo_order, hammer_yielding, iters};

    #[test]
    fn tickets_wrap_around_u32_max() {
        let l = RawTicket::starting_at(u32::MAX - 4);
        let mut expected = u32::MAX - 4;
        for _ in 0..10 {
            assert!(!l.is_held());
            let t = l.acquire();
            assert_eq!(t.number(), expected);
            assert!(l.is_held());
            assert_eq!(l.try_acquire(), None, "try_acquire on a held lock");
            // SAFETY: held by this test with `t`.
            unsafe { l.release(t) };
            assert!(!l.is_held());

            let t = l.try_acquire().expect("free lock");
            assert_eq!(t.number(), expected.wrapping_add(1));
            assert!(l.is_held());
            assert_eq!(l.try_acquire(), None);
            // SAFETY: held by this test with `t`.
            unsafe { l.release(t) };
            expected = expected.wrapping_add(2);
        }
        assert_eq!(expected, 15, "crossed the wrap");
    }

    #[test]
    fn served_in_the_order_drawn() {
        fifo_order(
            &RawTicket::new(),
            |l: &RawTicket| l.drawn() as usize,
            RawTicket::acquire,
            |l, t| {
                // SAFETY: the helper releases what it acquired.
                unsafe { l.release(t) }
            },
        );
    }

    #[test]
    fn four_threads_count_exactly() {
        hammer_yielding(RawTicket::new(), 4, 20_000);
    }

    #[test]
    fn four_threads_count_exactly_across_the_wrap() {
        hammer_yielding(
            RawTicket::starting_at(u32::MAX - iters(1_000) as u32),
            4,
            5_000,
        );
    }
}
