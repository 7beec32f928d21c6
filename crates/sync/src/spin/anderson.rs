//! `anderson`: Anderson's array-based queue lock.
//!
//! Source: T. E. Anderson, "The Performance of Spin Lock Alternatives for
//! Shared-Memory Multiprocessors", IEEE TPDS 1(1), 1990.
//!
//! A ticket lock whose "now serving" is spread over an array of
//! cache-padded slots, one line per waiter: an arriving thread draws a
//! ticket with one `fetch_add` and spins on slot `ticket mod SLOTS` only;
//! the releaser writes the next ticket's slot. Each hand-over therefore
//! invalidates the line of the one waiter it admits, not (as in a ticket
//! lock) the lines of all of them, and no waiter ever writes while it waits.
//! Unlike MCS and CLH it needs no queue nodes or per-thread state at all:
//! its price is the array, in every lock.
//!
//! ```text
//!   next:   [ticket to draw ]                   its own 128-byte line
//!   slots:  [ 8 ][ 1 ][ 2 ][ 3 ][ 4 ][ 5 ][ 6 ][ 7 ]   one line each
//!             ^ ticket t waits on slot t mod 8 until it holds t
//! ```
//!
//! Anderson's slots hold a flag, "has lock" or "must wait", which the
//! admitted waiter resets for the slot's next user. That is correct only
//! while at most `SLOTS` threads hold tickets (the paper has one slot per
//! processor): with more, tickets `t` and `t + SLOTS` wait on the same flag
//! and both enter when it is set for `t`. Here threads are not processors
//! (hundreds of them under the interposer), so each slot holds instead the
//! *ticket number* last admitted through it, and ticket `t` waits until
//! its slot holds exactly `t`. Ticket `t + SLOTS`, on the same slot, waits
//! for `t + SLOTS`, which only the release by `t + SLOTS - 1` writes: a
//! slot's earlier grant can never admit a later ticket, whatever the number
//! of waiters, and no reset write is needed. (Rather than waiting on a
//! serving counter until within range, far waiters share a slot's line:
//! with `W` waiters spinning at once, `⌈W / SLOTS⌉` share each line, so a
//! release invalidates that many, between Anderson's one and a ticket
//! lock's `W`.) Initially every slot holds 0: ticket 0 is admitted through
//! slot 0, and no other slot's tickets (`≡ i mod SLOTS`, `i ≠ 0`) is 0.
//! Tickets wrap at 2³²; `SLOTS` divides 2³², so `t mod SLOTS` agrees
//! across the wrap, and the scheme holds while fewer than
//! 2³² − `SLOTS` threads wait at once.
//!
//! Size: [`RawAnderson`] has 8 slots, so with 128-byte lines (x86_64 and
//! aarch64, the line pairs `CachePadded` assumes) a lock is 9 lines, 1152
//! bytes, against 8 for `ticket` and `twa` and one pointer for `mcs`. The
//! lock is embedded in every mutex and `lock_api`'s initialiser is a
//! `const`, so the count cannot follow the machine's CPUs at run time.
//! Only running waiters spin, so at most one fewer than the CPUs spin at
//! once: 8 slots give each its own line on machines of up to 9 CPUs (the
//! 2-core machines of the lab's results and CI, most desktops) and keep a
//! lock near a kilobyte; on a bigger machine the lines are shared as
//! above. `RawAnderson<SLOTS>` chooses another power of two.
//!
//! Orderings (as in `ticket`):
//! - drawing (`next.fetch_add`) is `Relaxed`: the number publishes nothing,
//!   and a newcomer that reads its slot stale sees an older ticket number,
//!   never its own. (With Anderson's reset flags it would matter: a
//!   newcomer that has not synchronised with the slot's last user can read
//!   the flag from before that user's reset; loom finds this with two
//!   threads on two slots.)
//! - the waiter's spin reads its slot with `Acquire`; the release stores the
//!   next ticket's slot with `Release`: the pair carries the critical
//!   section to the next holder.
//! - `try_acquire` reads `next`, then that ticket's slot with `Acquire`
//!   (the synchronising read, as in waiting), and claims the ticket with a
//!   `Relaxed` compare-and-swap on `next` only if the slot already admits
//!   it: the lock is free and nobody has drawn that ticket.

use crate::info::{Described, Family, LockInfo};
use crate::spin::ticket::Ticket;
use crate::util::sync::{spin_loop, AtomicU32, Ordering};
use crate::util::CachePadded;

/// Anderson's array lock with `SLOTS` waiting slots (a power of two; 8 by
/// default). See the module documentation.
#[derive(Debug)]
pub struct RawAnderson<const SLOTS: usize = 8> {
    /// The next ticket to hand out.
    next: CachePadded<AtomicU32>,
    /// Slot `i` holds the last ticket admitted through it (`≡ i mod SLOTS`).
    slots: [CachePadded<AtomicU32>; SLOTS],
}

/// `N` slots holding 0.
#[cfg(not(loom))]
const fn zeroed<const N: usize>() -> [CachePadded<AtomicU32>; N] {
    [const { CachePadded::new(AtomicU32::new(0)) }; N]
}

#[cfg(loom)]
fn zeroed<const N: usize>() -> [CachePadded<AtomicU32>; N] {
    core::array::from_fn(|_| CachePadded::new(AtomicU32::new(0)))
}

impl RawAnderson {
    crate::loom_const_fn! {
        /// An unlocked lock with the default 8 slots.
        pub fn new() -> Self {
            Self::with_slots()
        }
    }
}

impl<const SLOTS: usize> RawAnderson<SLOTS> {
    crate::loom_const_fn! {
        /// An unlocked lock with `SLOTS` slots.
        pub fn with_slots() -> Self {
            const {
                assert!(
                    SLOTS.is_power_of_two() && SLOTS <= 1 << 16,
                    "SLOTS must be a power of two, at most 65536"
                )
            };
            Self { next: CachePadded::new(AtomicU32::new(0)), slots: zeroed::<SLOTS>() }
        }
    }

    /// The slot ticket `t` waits on.
    #[inline]
    fn slot(&self, t: u32) -> &AtomicU32 {
        &self.slots[t as usize % SLOTS]
    }

    /// Draws a ticket and spins on its slot until it is admitted.
    #[inline]
    pub fn acquire(&self) -> Ticket {
        let t = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = self.slot(t);
        while slot.load(Ordering::Acquire) != t {
            spin_loop();
        }
        Ticket::new(t)
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<Ticket> {
        let n = self.next.load(Ordering::Relaxed);
        if self.slot(n).load(Ordering::Acquire) != n {
            return None;
        }
        self.next
            .compare_exchange(n, n.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed)
            .ok()
            .map(|_| Ticket::new(n))
    }

    /// Releases the lock: admits the next ticket through its slot.
    ///
    /// # Safety
    /// The caller must hold the lock with `ticket`.
    #[inline]
    pub unsafe fn release(&self, ticket: Ticket) {
        let next = ticket.number().wrapping_add(1);
        self.slot(next).store(next, Ordering::Release);
    }

    /// Whether some thread holds the lock (a momentary snapshot): the next
    /// ticket to draw would not be admitted at once.
    #[inline]
    pub fn is_held(&self) -> bool {
        let n = self.next.load(Ordering::Relaxed);
        self.slot(n).load(Ordering::Relaxed) != n
    }

    /// An unlocked lock whose tickets start at `n`, in the state it would
    /// have after tickets up to `n - 1` were served: so tests can cross the
    /// wrap-around quickly.
    #[cfg(all(test, not(loom)))]
    fn starting_at(n: u32) -> Self {
        let l = Self::with_slots();
        l.next.store(n, Ordering::Relaxed);
        for k in 0..SLOTS as u32 {
            // Ticket n + k's slot last admitted n + k - SLOTS (n itself for k = 0).
            let last = if k == 0 {
                n
            } else {
                n.wrapping_add(k).wrapping_sub(SLOTS as u32)
            };
            l.slot(n.wrapping_add(k)).store(last, Ordering::Relaxed);
        }
        l
    }
}

impl Default for RawAnderson {
    fn default() -> Self {
        Self::new()
    }
}

impl<const SLOTS: usize> Described for RawAnderson<SLOTS> {
    const INFO: LockInfo = LockInfo {
        name: "anderson",
        family: Family::Queue,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "Anderson, The Performance of Spin Lock Alternatives for Shared-Memory Multiprocessors, IEEE TPDS 1(1), 1990",
        summary: "fetch-and-increment a ticket, spin on its own cache-padded slot of an array in the lock until the releaser writes the ticket there",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawAnderson;
    use crate::spin::ticket::Ticket;

    // SAFETY: tickets are unique (drawn by `fetch_add`, or claimed by a
    // compare-exchange that advances `next`); ticket `t` enters only once
    // its slot holds `t`, which only the release by ticket `t - 1` writes
    // (or the initial 0, for ticket 0), so the holders follow one another
    // in ticket order, one at a time. Entering reads the slot with
    // `Acquire`, releasing writes it with `Release`.
    unsafe impl<const SLOTS: usize> lock_api::RawMutex for RawAnderson<SLOTS> {
        const INIT: Self = Self::with_slots();
        type Guard = Ticket;

        #[inline]
        fn lock(&self) -> Ticket {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<Ticket> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: Ticket) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    // SAFETY: as for `RawMutex`; every release already admits the longest
    // waiter, which is what a fair unlock must do.
    unsafe impl<const SLOTS: usize> lock_api::RawMutexFair for RawAnderson<SLOTS> {
        #[inline]
        unsafe fn unlock_fair(&self, guard: Ticket) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }
    }

    /// A mutex protected by Anderson's array lock (8 slots).
    pub type AndersonMutex<T> = lock_api::Mutex<RawAnderson, T>;
}

#[cfg(not(loom))]
pub use raw::AndersonMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{
        churn_threads, fifo_order, hammer_fifo, hammer_yielding, iters, nested_non_lifo,
        try_lock_while_held,
    };

    #[test]
    fn nine_padded_lines_for_eight_slots() {
        let line = core::mem::size_of::<CachePadded<AtomicU32>>();
        assert_eq!(core::mem::size_of::<RawAnderson>(), 9 * line);
        assert_eq!(core::mem::size_of::<RawAnderson<2>>(), 3 * line);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(core::mem::size_of::<RawAnderson>(), 1152);
    }

    #[test]
    fn uncontended_acquire_release_and_try() {
        let l = RawAnderson::new();
        for round in 0..20u32 {
            assert!(!l.is_held());
            let t = l.acquire();
            assert_eq!(t.number(), 2 * round);
            assert!(l.is_held());
            assert!(l.try_acquire().is_none(), "try_acquire on a held lock");
            // SAFETY: held with `t`.
            unsafe { l.release(t) };
            let t = l.try_acquire().expect("free lock");
            assert!(l.is_held());
            // SAFETY: held with `t`.
            unsafe { l.release(t) };
        }
    }

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawAnderson>(6, 500);
    }

    /// The known answer for the bounded array: more contending threads
    /// than slots, so tickets `t` and `t + SLOTS` wait on one slot at once.
    #[test]
    fn more_threads_than_slots_count_exactly() {
        // Two slots: three threads (all Miri runs) already outnumber them.
        // Yielding after each release, as every run here: six spinning
        // threads on two slots and two cores, without the yield, once ran
        // past the two-minute watchdog in CI beside another spinning test
        // (each hand-over waited for a preempted waiter's next time slice).
        // The twelve threads below did so again with it, until the waiters
        // of the unit tests also yielded as they spin (`util::sync::spin_loop`).
        hammer_yielding(RawAnderson::<2>::with_slots(), 5, 10_000);
        hammer_yielding(RawAnderson::<2>::with_slots(), 6, 500);
        // The default eight, with twelve threads (natively).
        hammer_yielding(RawAnderson::new(), 12, 2_000);
    }

    #[test]
    fn counts_exactly_across_the_wrap() {
        let start = u32::MAX - iters(1_000) as u32;
        hammer_yielding(RawAnderson::<2>::starting_at(start), 4, 5_000);
        hammer_yielding(RawAnderson::<8>::starting_at(start), 4, 5_000);
    }

    #[test]
    fn served_in_the_order_drawn() {
        fifo_order(
            &RawAnderson::new(),
            |l: &RawAnderson| l.next.load(Ordering::Relaxed) as usize,
            RawAnderson::acquire,
            |l, t| {
                // SAFETY: the helper releases what it acquired.
                unsafe { l.release(t) }
            },
        );
    }

    /// Four tickets on two slots: the second waiter (ticket 2) waits on the
    /// slot that admitted the holder (ticket 0) and still holds 0; it must
    /// wait for its own number, after ticket 1.
    #[test]
    fn served_in_the_order_drawn_when_waiters_share_slots() {
        fifo_order(
            &RawAnderson::<2>::with_slots(),
            |l: &RawAnderson<2>| l.next.load(Ordering::Relaxed) as usize,
            RawAnderson::acquire,
            |l, t| {
                // SAFETY: the helper releases what it acquired.
                unsafe { l.release(t) }
            },
        );
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        nested_non_lifo::<RawAnderson>(6);
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        try_lock_while_held::<RawAnderson>();
    }

    #[test]
    fn threads_exit_while_others_keep_locking() {
        churn_threads::<RawAnderson>();
        churn_threads::<RawAnderson<2>>();
    }

    #[test]
    fn metadata() {
        let info = RawAnderson::<8>::INFO;
        assert_eq!(info.name, "anderson");
        assert_eq!(info.family, Family::Queue);
        assert_eq!(
            (info.fair, info.blocking, info.numa_aware),
            (true, false, false)
        );
        assert_eq!(RawAnderson::<2>::INFO, info);
    }
}
