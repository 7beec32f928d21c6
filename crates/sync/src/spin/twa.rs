//! `twa`: the ticket lock augmented with a waiting array.
//!
//! Source: D. Dice and A. Kogan, "TWA – Ticket Locks Augmented with a
//! Waiting Array", Euro-Par 2019.
//!
//! A ticket lock (`ticket`, the next number to draw; `grant`, the number
//! served) whose waiters mostly do not spin on `grant`. In a plain ticket
//! lock every waiter re-reads `grant` after every release, so each
//! hand-over invalidates as many caches as there are waiters. In TWA only
//! the waiter next in line (one position from the head) spins on `grant`;
//! the ones further back are *long-term* waiters and spin on a slot of one
//! process-wide waiting array, shared by all TWA locks and indexed by a
//! hash of the lock's address and the waiter's ticket. Each release
//! changes one slot, so it wakes (about) one long-term waiter, which then
//! moves up to spin on `grant`.
//!
//! ```text
//!   lock (8 bytes):  ticket: u32 (next to draw) | grant: u32 (now served)
//!   process-wide:    WAITING[4096]: u64 counters
//!
//!   ticket t with d = t - grant:
//!     d == 0   holds the lock
//!     d == 1   short-term: spins on `grant` until it reads t
//!     d >= 2   long-term: spins on WAITING[hash(lock, t)] until it changes,
//!              then re-reads `grant`
//! ```
//!
//! Release, holding ticket `t`: store `grant = t + 1`, then increment the
//! slot of ticket `t + 2`: the ticket that has just come within one
//! position of the head (distance 2 before the release, 1 after) and must
//! now move from the array to `grant`. Tickets further back are still
//! long-term, and each is woken in turn by the release that brings it to
//! distance 1: ticket `u` by the release of `u - 2`. The increment is
//! unconditional: skipping it when nobody waits that far back would need
//! the releaser to read `ticket` after its store to `grant`, a store-load
//! pair that needs a full fence on every release.
//!
//! No missed wake-ups: a long-term waiter reads its slot (`Acquire`)
//! *before* it re-reads `grant`, and the releaser increments the slot
//! (`Release`) *after* its store to `grant`. If the waiter's slot read saw
//! the increment that is meant for it (or any later one), it synchronises
//! with that release and its `grant` read sees the new value: distance 1,
//! it moves on. Otherwise the value it read precedes that increment, so
//! the slot will change after it and the waiter, spinning until it does,
//! wakes. Hash collisions (another lock's ticket, or another ticket of
//! this lock, on the same slot) only add increments: a waiter woken by one
//! re-reads `grant`, finds itself still far back, and goes back to waiting
//! on the slot with the value it just read, which the argument above
//! covers again. Nothing ever relies on a slot *not* changing, so
//! collisions cause spurious wake-ups, never missed ones. The counters are
//! 64 bits so that they never wrap back to the value a waiter holds.
//!
//! The hash: the lock's address is spread over the array by Fibonacci
//! hashing (multiply by 2⁶⁴/φ, keep the top 12 bits), and ticket `t` sits
//! `17 × t` slots further (mod 4096): 17 is odd, so one lock's 4096
//! consecutive tickets use every slot once, and 17 slots (136 bytes) is
//! more than a 128-byte pair of cache lines, so neighbouring long-term
//! waiters of one lock spin on different lines. The array is 32 KiB,
//! unpadded: adjacent slots share a line, which only costs unrelated locks
//! an occasional extra miss. Under loom the array has 4 slots and the hash
//! ignores the address (heap addresses are not deterministic across loom's
//! executions): every lock's ticket `t` collides with every other lock's
//! `t` and with its own `t + 4`. Not 2: then the slot of `t + 2` would also
//! be that of `t + 4`, and a release that bumped the wrong one of the two
//! would still wake the waiter one release late, hiding the mistake.
//!
//! Orderings:
//! - drawing (`ticket.fetch_add`) is `Relaxed`, as in `ticket`.
//! - `grant` is stored with `Release` and read with `Acquire` wherever the
//!   read may admit us (the first look and the short-term spin): the pair
//!   carries the critical section over. The long-term re-reads of `grant`
//!   are `Relaxed`: they are ordered by the `Acquire` slot read before
//!   them, as above.
//! - the slot increment is a `Release` read-modify-write and the slot reads
//!   are `Acquire`. Every write to a slot is a read-modify-write, so a read
//!   of a later increment (another release's, a colliding one) is still in
//!   the release sequence of the one we need.
//! - `try_acquire` reads `grant` with `Acquire` and claims ticket `grant`
//!   with a `Relaxed` compare-and-swap on `ticket`, as in `ticket`.

use crate::info::{Described, Family, LockInfo};
use crate::spin::ticket::Ticket;
use crate::util::sync::{spin_loop, AtomicU32, AtomicU64, Ordering};

/// Slots in the waiting array (a power of two): 4096, as in the paper.
#[cfg(not(loom))]
const WAIT_SLOTS: usize = 4096;
/// Under loom: four, so that tickets and locks collide (see the module
/// documentation).
#[cfg(loom)]
const WAIT_SLOTS: usize = 4;
const _: () = assert!(WAIT_SLOTS.is_power_of_two());

/// Distance in slots between consecutive tickets of one lock (see the
/// module documentation).
#[cfg(not(loom))]
const STRIDE: usize = 17;

/// A waiter further than this from the head waits on the array.
const LONG_TERM: u32 = 1;

/// The process-wide waiting array, aligned so that the hash's picture of
/// cache lines holds.
#[cfg(not(loom))]
#[repr(align(128))]
struct WaitingArray([AtomicU64; WAIT_SLOTS]);

#[cfg(not(loom))]
static WAITING: WaitingArray = WaitingArray([const { AtomicU64::new(0) }; WAIT_SLOTS]);

#[cfg(loom)]
loom::lazy_static! {
    static ref WAITING: Vec<AtomicU64> = (0..WAIT_SLOTS).map(|_| AtomicU64::new(0)).collect();
}

/// The waiting-array index of `ticket` of the lock at `lock`.
#[cfg(not(loom))]
#[inline]
fn slot_index(lock: usize, ticket: u32) -> usize {
    const BITS: u32 = WAIT_SLOTS.trailing_zeros();
    let base = ((lock as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - BITS)) as usize;
    base.wrapping_add((ticket as usize).wrapping_mul(STRIDE)) & (WAIT_SLOTS - 1)
}

/// Under loom the address is left out (see the module documentation).
#[cfg(loom)]
#[inline]
fn slot_index(_lock: usize, ticket: u32) -> usize {
    ticket as usize & (WAIT_SLOTS - 1)
}

#[inline]
fn slot(index: usize) -> &'static AtomicU64 {
    #[cfg(not(loom))]
    return &WAITING.0[index];
    #[cfg(loom)]
    return &WAITING[index];
}

/// Test-only counters of the long-term path, to see it taken.
#[cfg(all(test, not(loom)))]
mod probe {
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Times a long-term waiter started (or went back to) waiting on its
    /// slot, after reading the slot and finding itself still far back.
    pub(super) static SLEEPS: AtomicUsize = AtomicUsize::new(0);

    pub(super) fn sleep() {
        SLEEPS.fetch_add(1, Ordering::SeqCst);
    }
}

/// Ticket lock with a waiting array. See the module documentation.
#[derive(Debug)]
pub struct RawTwa {
    /// The next ticket to hand out.
    ticket: AtomicU32,
    /// The ticket now allowed in; written only by its holder, on release.
    grant: AtomicU32,
}

impl RawTwa {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            // Under loom the array is made now, before any thread runs, so
            // that its lazy initialisation orders nothing in the model.
            #[cfg(loom)]
            let _ = &*WAITING;
            Self { ticket: AtomicU32::new(0), grant: AtomicU32::new(0) }
        }
    }

    /// The waiting-array slot of `ticket` of this lock.
    #[inline]
    fn slot_of(&self, ticket: u32) -> &'static AtomicU64 {
        slot(slot_index(core::ptr::from_ref(self).addr(), ticket))
    }

    /// Draws a ticket and waits until it is served.
    #[inline]
    pub fn acquire(&self) -> Ticket {
        let t = self.ticket.fetch_add(1, Ordering::Relaxed);
        let g = self.grant.load(Ordering::Acquire);
        if g != t {
            self.wait(t, g);
        }
        Ticket::new(t)
    }

    /// The contended part of `acquire`: `t` was not served at `g`.
    #[cold]
    #[inline(never)]
    fn wait(&self, t: u32, g: u32) {
        if t.wrapping_sub(g) > LONG_TERM {
            self.wait_long_term(t);
        }
        while self.grant.load(Ordering::Acquire) != t {
            spin_loop();
        }
    }

    /// Waits on the array until ticket `t` is at most [`LONG_TERM`] from
    /// the head.
    fn wait_long_term(&self, t: u32) {
        let slot = self.slot_of(t);
        // The slot before `grant`: see the module documentation.
        let mut seen = slot.load(Ordering::Acquire);
        while t.wrapping_sub(self.grant.load(Ordering::Relaxed)) > LONG_TERM {
            #[cfg(all(test, not(loom)))]
            probe::sleep();
            loop {
                spin_loop();
                let now = slot.load(Ordering::Acquire);
                if now != seen {
                    seen = now;
                    break;
                }
            }
        }
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<Ticket> {
        let g = self.grant.load(Ordering::Acquire);
        self.ticket
            .compare_exchange(g, g.wrapping_add(1), Ordering::Relaxed, Ordering::Relaxed)
            .ok()
            .map(|_| Ticket::new(g))
    }

    /// Releases the lock: serves the next ticket and wakes the one behind
    /// it from the array.
    ///
    /// # Safety
    /// The caller must hold the lock with `ticket`.
    #[inline]
    pub unsafe fn release(&self, ticket: Ticket) {
        let next = ticket.number().wrapping_add(1);
        // Found before the store: once `grant` moves, the lock may be freed
        // by its next holder, and only its address is needed.
        let wake = self.slot_of(next.wrapping_add(LONG_TERM));
        self.grant.store(next, Ordering::Release);
        wake.fetch_add(1, Ordering::Release);
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        // `grant` first: `ticket` only moves away from it, so a lock held
        // all along is never reported free.
        let grant = self.grant.load(Ordering::Relaxed);
        self.ticket.load(Ordering::Relaxed) != grant
    }

    /// How many tickets were drawn so far (wrapping), for tests that watch
    /// waiters arrive.
    #[cfg(all(test, not(loom)))]
    fn drawn(&self) -> u32 {
        self.ticket.load(Ordering::Relaxed)
    }
}

impl Default for RawTwa {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawTwa {
    const INFO: LockInfo = LockInfo {
        name: "twa",
        family: Family::Ticket,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "Dice & Kogan, TWA – Ticket Locks Augmented with a Waiting Array, Euro-Par 2019",
        summary: "ticket lock whose waiters beyond the next spin on a slot of one process-wide waiting array, hashed from lock and ticket; each release bumps one slot",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawTwa;

    // SAFETY: tickets are unique (drawn by `fetch_add`, or claimed by a
    // compare-exchange that advances `ticket`), and a ticket holder enters
    // only once `grant` equals its ticket (the waiting array only decides
    // where a waiter waits, never admits it); `grant` moves on only when
    // that holder releases. Entering reads `grant` with `Acquire`, releasing
    // stores it with `Release`.
    crate::spin::ticket::ticket_raw_mutex!(RawTwa);

    /// A mutex protected by a TWA lock.
    pub type TwaMutex<T> = lock_api::Mutex<RawTwa, T>;
}

#[cfg(not(loom))]
pub use raw::TwaMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{
        churn_threads, fifo_order, hammer_fifo, hammer_yielding, iters, nested_non_lifo, threads,
        try_lock_while_held, until, Watchdog, HANG,
    };
    use core::cell::UnsafeCell;
    use std::sync::atomic::Ordering::SeqCst;

    /// The tests of this module run one at a time, so that no other test's
    /// releases bump the slots (and the probe) that one watches. No other
    /// module uses the array.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn read(lock: &RawTwa, ticket: u32) -> u64 {
        lock.slot_of(ticket).load(Ordering::Relaxed)
    }

    #[test]
    fn eight_bytes_and_a_free_lock_is_two_equal_counters() {
        let _s = serial();
        assert_eq!(core::mem::size_of::<RawTwa>(), 8);
        let l = RawTwa::new();
        assert!(!l.is_held());
        let t = l.try_acquire().expect("free lock");
        assert!(l.is_held());
        assert!(l.try_acquire().is_none());
        // SAFETY: held with `t`.
        unsafe { l.release(t) };
        assert!(!l.is_held());
    }

    #[test]
    fn consecutive_tickets_of_a_lock_use_distinct_slots_on_distinct_lines() {
        let l = RawTwa::new();
        let addr = core::ptr::from_ref(&l).addr();
        let mut seen = vec![false; WAIT_SLOTS];
        for t in 0..WAIT_SLOTS as u32 {
            let i = slot_index(addr, t);
            assert!(!seen[i], "ticket {t} reuses slot {i}");
            seen[i] = true;
            let j = slot_index(addr, t + 1);
            assert_ne!(
                i * 8 / 128,
                j * 8 / 128,
                "tickets {t} and next share a line"
            );
        }
        // The stride carries on across the ticket counter's wrap.
        assert_eq!(
            (slot_index(addr, u32::MAX) + STRIDE) % WAIT_SLOTS,
            slot_index(addr, 0)
        );
    }

    /// The known answer for the wake-up rule: the release by ticket `t`
    /// bumps the slot of ticket `t + 2` once, and not the slot of `t + 1`
    /// (the new next-in-line, already on `grant`) nor of `t + 3`.
    #[test]
    fn release_bumps_exactly_the_slot_of_the_ticket_now_next_in_line() {
        let _s = serial();
        let l = RawTwa::new();
        for t in 0..40u32 {
            let before: Vec<u64> = (t..t + 4).map(|u| read(&l, u)).collect();
            let held = l.acquire();
            assert_eq!(held.number(), t);
            // SAFETY: held with `held`.
            unsafe { l.release(held) };
            let after: Vec<u64> = (t..t + 4).map(|u| read(&l, u)).collect();
            let bumped: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
            assert_eq!(bumped, [0, 0, 1, 0], "release of ticket {t}");
        }
    }

    #[test]
    fn served_in_the_order_drawn_and_the_far_waiters_wait_on_the_array() {
        let _s = serial();
        let before = probe::SLEEPS.load(SeqCst);
        fifo_order(
            &RawTwa::new(),
            |l: &RawTwa| l.drawn() as usize,
            RawTwa::acquire,
            |l, t| {
                // SAFETY: the helper releases what it acquired.
                unsafe { l.release(t) }
            },
        );
        // The second and third waiters drew tickets 2 and 3 while 0 held:
        // both were long-term.
        assert!(probe::SLEEPS.load(SeqCst) >= before + 2);
    }

    /// A lock and the counter it protects.
    struct Counted {
        lock: RawTwa,
        count: UnsafeCell<u64>,
    }

    // SAFETY: `count` is only touched with `lock` held.
    unsafe impl Sync for Counted {}

    /// Two fresh locks whose tickets collide in the array: B's counters are
    /// moved on by the `k` that puts B's ticket `t + k` on A's ticket `t`'s
    /// slot, for every `t` (17 is invertible mod the array size, so some
    /// `k` does this for any two addresses).
    fn colliding() -> (Box<Counted>, Box<Counted>, u32) {
        let counted = || {
            Box::new(Counted {
                lock: RawTwa::new(),
                count: UnsafeCell::new(0),
            })
        };
        let (a, b) = (counted(), counted());
        let base = |c: &Counted| slot_index(core::ptr::from_ref(&c.lock).addr(), 0);
        // 17 × 241 = 4097 ≡ 1 (mod 4096).
        const INVERSE: usize = 241;
        const { assert!(STRIDE * INVERSE % WAIT_SLOTS == 1) };
        let k = ((base(&a) + WAIT_SLOTS - base(&b)) * INVERSE % WAIT_SLOTS) as u32;
        b.lock.ticket.store(k, Ordering::Relaxed);
        b.lock.grant.store(k, Ordering::Relaxed);
        for t in [0, 1, 2, 1000, u32::MAX - k] {
            assert!(core::ptr::eq(
                a.lock.slot_of(t),
                b.lock.slot_of(t.wrapping_add(k))
            ));
        }
        (a, b, k)
    }

    /// A long-term waiter on lock A is woken by a release of lock B whose
    /// ticket shares its slot: it must re-check, go back to waiting, and
    /// still be woken by A's own release.
    #[test]
    fn a_colliding_release_wakes_a_waiter_spuriously_and_it_waits_again() {
        let _s = serial();
        let _w = Watchdog::new("twa spurious wake-up", HANG);
        let (a, b, k) = colliding();
        let (a, b) = (&*a, &*b);
        let sleeps = || probe::SLEEPS.load(SeqCst);
        let held = a.lock.acquire(); // ticket 0 of A
        std::thread::scope(|s| {
            // Ticket 1: short-term, on A's grant.
            s.spawn(|| {
                let t = a.lock.acquire();
                // SAFETY: A is held.
                unsafe { *a.count.get() += 1 };
                // SAFETY: acquired above.
                unsafe { a.lock.release(t) };
            });
            until(|| a.lock.drawn() == 2);
            let start = sleeps();
            // Ticket 2: long-term, on the slot of (A, 2) = the slot of (B, k + 2).
            s.spawn(|| {
                let t = a.lock.acquire();
                // SAFETY: A is held.
                unsafe { *a.count.get() += 10 };
                // SAFETY: acquired above.
                unsafe { a.lock.release(t) };
            });
            until(|| sleeps() == start + 1);
            // B's ticket k released: bumps the slot of (B, k + 2), the same.
            let tb = b.lock.acquire();
            assert_eq!(tb.number(), k);
            // SAFETY: held with `tb`.
            unsafe { b.lock.release(tb) };
            // The waiter woke, found itself still two from A's head, and
            // went back to the slot.
            until(|| sleeps() == start + 2);
            // SAFETY: A is held by this thread.
            assert_eq!(unsafe { *a.count.get() }, 0);
            // SAFETY: held with `held`.
            unsafe { a.lock.release(held) };
        });
        // SAFETY: the threads are joined.
        assert_eq!(unsafe { *a.count.get() }, 11);
        assert!(!a.lock.is_held() && !b.lock.is_held());
    }

    /// Threads on two locks whose tickets collide in the array (and, both
    /// starting together, move on at about the same pace, so that waiters of
    /// both spin on the same slots): exact counts on both, and every thread
    /// finishes.
    #[test]
    fn two_colliding_locks_count_exactly() {
        let _s = serial();
        let _w = Watchdog::new("twa colliding locks", HANG);
        let (a, b, _) = colliding();
        let (a, b) = (&*a, &*b);
        let per_lock = threads(3);
        let iters = iters(5_000);
        std::thread::scope(|s| {
            for c in [a, b] {
                for _ in 0..per_lock {
                    s.spawn(move || {
                        for i in 0..iters {
                            let t = c.lock.acquire();
                            // SAFETY: the lock is held.
                            unsafe { *c.count.get() += 1 };
                            // SAFETY: acquired above.
                            unsafe { c.lock.release(t) };
                            if i % 4 == 0 {
                                std::thread::yield_now();
                            }
                        }
                    });
                }
            }
        });
        for c in [a, b] {
            // SAFETY: the threads are joined.
            assert_eq!(unsafe { *c.count.get() }, per_lock as u64 * iters);
            assert!(!c.lock.is_held());
        }
    }

    #[test]
    fn six_threads_count_exactly() {
        let _s = serial();
        hammer_fifo::<RawTwa>(6, 500);
    }

    #[test]
    fn four_threads_count_exactly_yielding() {
        let _s = serial();
        hammer_yielding(RawTwa::new(), 4, 20_000);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        let _s = serial();
        nested_non_lifo::<RawTwa>(6);
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_after() {
        let _s = serial();
        try_lock_while_held::<RawTwa>();
    }

    #[test]
    fn threads_exit_while_others_keep_locking() {
        let _s = serial();
        churn_threads::<RawTwa>();
    }

    #[test]
    fn metadata() {
        assert_eq!(RawTwa::INFO.name, "twa");
        assert_eq!(RawTwa::INFO.family, Family::Ticket);
        assert_eq!(
            (
                RawTwa::INFO.fair,
                RawTwa::INFO.blocking,
                RawTwa::INFO.numa_aware
            ),
            (true, false, false)
        );
    }
}
