//! `ticket-backoff`: the ticket lock with proportional backoff.
//!
//! In a plain [`ticket`](super::ticket) lock every waiter re-reads `owner`
//! continuously, so each release is followed by one cache miss per waiter.
//! But a ticket waiter knows exactly how far it is from the head: a waiter
//! holding ticket `t` that sees `owner == o` has `d = t - o` hand-overs to
//! wait for. Mellor-Crummey & Scott (ACM TOCS 9(1), 1991, §2.2) therefore
//! have it pause in proportion to `d` before looking again, which cuts the
//! reads per release from the number of waiters to about one. Seed 001
//! (Bueso) points to the same idea proposed for Linux's ticket spinlocks
//! (Corbet, "Improving ticket spinlocks", LWN 2013).
//!
//! Here a waiter `d` places back waits `(d - 1) ×` [`BACKOFF_UNIT`]
//! `spin_loop()`s between reads, i.e. it assumes each hand-over ahead of it
//! takes at least one unit, and polls closely (one `spin_loop()` between
//! reads, as in `ticket`) across the last one. Waking late matters more than
//! waking early in a FIFO lock: nobody else may take the lock meanwhile, so
//! a late head idles the lock for everyone behind it, while an early wake
//! costs one extra read. Hence the short unit and the unbacked last step.
//!
//! The counters, the guard (the holder's [`Ticket`]), `try_acquire`, the
//! plain-store release and all memory orderings are those of
//! [`RawTicket`], which this lock wraps: only the wait
//! differs. Waiting reads `owner` with `Acquire`, so the read that finally
//! shows our ticket synchronizes with the `Release` store of the previous
//! holder; the reads in between only size the next pause.

use super::ticket::{RawTicket, Ticket};
use crate::info::{Described, Family, LockInfo};
use crate::util::backoff::spin_for;

/// The assumed least time of one hand-over, in `spin_loop()` calls.
///
/// A hand-over is at least one cache-line transfer of `owner` to the next
/// waiter (roughly 100–300 cycles between cores of one socket) plus the
/// shortest critical section; eight relax hints are about 80 cycles with the
/// 10-cycle `pause` of older x86 and aarch64's short hint, so the unit stays
/// below the hand-over time there. With Skylake's 140-cycle `pause` it is
/// about 1 100 cycles, which can exceed short critical sections; the last
/// hand-over is not backed off, which bounds the harm (see the module docs).
/// Both the unit and critical-section lengths are what the lab measures.
pub const BACKOFF_UNIT: u32 = 8;

/// Ticket spin lock with proportional backoff. See the module documentation.
#[derive(Debug)]
pub struct RawTicketBackoff {
    ticket: RawTicket,
}

impl RawTicketBackoff {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { ticket: RawTicket::new() }
        }
    }

    #[cfg(all(test, not(loom)))]
    pub(crate) const fn starting_at(n: u32) -> Self {
        Self {
            ticket: RawTicket::starting_at(n),
        }
    }

    /// Draws a ticket and waits, in proportion to its distance from the
    /// head, until it is served.
    #[inline]
    pub fn acquire(&self) -> Ticket {
        let t = self.ticket.draw();
        loop {
            let d = t.wrapping_sub(self.ticket.serving());
            if d == 0 {
                return Ticket::new(t);
            }
            spin_for(pause_for(d));
        }
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<Ticket> {
        self.ticket.try_acquire()
    }

    /// Releases the lock: serves the next ticket.
    ///
    /// # Safety
    /// The caller must hold the lock with `ticket`.
    #[inline]
    pub unsafe fn release(&self, ticket: Ticket) {
        // SAFETY: forwarded from the caller.
        unsafe { self.ticket.release(ticket) }
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.ticket.is_held()
    }
}

/// Spins to wait before the next read when `d > 0` hand-overs are ahead.
#[inline]
fn pause_for(d: u32) -> u32 {
    (d - 1).saturating_mul(BACKOFF_UNIT).max(1)
}

impl Default for RawTicketBackoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawTicketBackoff {
    const INFO: LockInfo = LockInfo {
        name: "ticket-backoff",
        family: Family::Ticket,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "ticket lock with proportional backoff: Mellor-Crummey & Scott, ACM TOCS 9(1) 1991; Bueso (seed 001)",
        summary: "ticket lock whose waiters pause in proportion to their distance from the head",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawTicketBackoff;

    // SAFETY: the lock is a `RawTicket` (see its proof) with a different
    // wait: entry still requires reading `owner == ticket` with `Acquire`,
    // and release is the same `Release` store.
    crate::spin::ticket::ticket_raw_mutex!(RawTicketBackoff);

    /// A mutex protected by a ticket spin lock with proportional backoff.
    pub type TicketBackoffMutex<T> = lock_api::Mutex<RawTicketBackoff, T>;
}

#[cfg(not(loom))]
pub use raw::TicketBackoffMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{fifo_order, hammer_yielding, iters};

    #[test]
    fn pause_grows_with_distance_and_the_head_polls() {
        assert_eq!(pause_for(1), 1);
        assert_eq!(pause_for(2), BACKOFF_UNIT);
        assert_eq!(pause_for(5), 4 * BACKOFF_UNIT);
        assert_eq!(pause_for(u32::MAX), u32::MAX, "saturates");
    }

    #[test]
    fn tickets_wrap_around_u32_max() {
        let l = RawTicketBackoff::starting_at(u32::MAX - 3);
        let mut expected = u32::MAX - 3;
        for _ in 0..8 {
            assert!(!l.is_held());
            let t = l.acquire();
            assert_eq!(t.number(), expected);
            assert!(l.is_held());
            assert_eq!(l.try_acquire(), None, "try_acquire on a held lock");
            // SAFETY: held by this test with `t`.
            unsafe { l.release(t) };
            expected = expected.wrapping_add(1);
        }
        assert_eq!(expected, 4, "crossed the wrap");
    }

    #[test]
    fn served_in_the_order_drawn() {
        fifo_order(
            &RawTicketBackoff::new(),
            |l: &RawTicketBackoff| l.ticket.drawn() as usize,
            RawTicketBackoff::acquire,
            |l, t| {
                // SAFETY: the helper releases what it acquired.
                unsafe { l.release(t) }
            },
        );
    }

    #[test]
    fn four_threads_count_exactly() {
        hammer_yielding(RawTicketBackoff::new(), 4, 20_000);
    }

    #[test]
    fn four_threads_count_exactly_across_the_wrap() {
        hammer_yielding(
            RawTicketBackoff::starting_at(u32::MAX - iters(1_000) as u32),
            4,
            5_000,
        );
    }
}
