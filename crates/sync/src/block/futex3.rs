//! `futex3`: the classic three-state futex mutex.
//!
//! One 32-bit word is both the lock and the futex the waiters sleep on:
//! `0` free, `1` locked with nobody asleep, `2` locked and maybe someone
//! asleep. Locking is a compare-exchange 0 → 1; a thread that loses swaps in
//! `2` (announcing itself) and, unless the old value was `0` (then the lock
//! is its own), sleeps while the word still reads `2`. Unlocking swaps in
//! `0` and calls into the kernel only if it took a `2` out, so neither an
//! uncontended lock nor an uncontended unlock makes a system call. This is
//! the three-state mutex of U. Drepper, "Futexes Are Tricky" (2011): the
//! lock path of his third version, with the unlock done as one swap instead
//! of a decrement and a store (same states, one RMW); glibc's `lll_lock` and
//! Rust's `std` futex mutex are the same idea.
//!
//! No lost wake-up: a waiter sleeps only through `futex::wait(word, 2)`,
//! which the kernel lets sleep only while the word still holds `2`, with
//! the compare and the enqueue atomic against wakers. Every waiter stores
//! `2` before it sleeps, so the unlock that ends the holding it waits for
//! swaps out `2` and wakes someone; if the word has changed in between the
//! wait returns at once and the waiter swaps again. A woken waiter swaps in
//! `2` rather than `1` because it cannot know whether others still sleep:
//! the price is one needless wake-up at the end of a contended episode.
//!
//! Not fair: a newcomer's compare-exchange can take the lock between an
//! unlock and the woken waiter's swap (barging), which is what keeps the
//! lock fast under contention (no convoy behind a sleeping thread).
//!
//! Orderings: all accesses are read-modify-writes on one word, so their
//! atomicity alone orders the state changes; memory orderings are only for
//! the protected data.
//! - the compare-exchange and swap that take the lock (the ones that read
//!   `0`) are `Acquire`: the critical section sees the previous one's
//!   writes. The failed compare-exchange publishes nothing and is `Relaxed`;
//!   a swap that reads non-zero does not take the lock, but it is the same
//!   instruction, so it is `Acquire` too.
//! - the unlock swap is `Release`, publishing the critical section to the
//!   next thread whose `Acquire` RMW reads the `0` it wrote.
//! - the futex compare needs no ordering from us: the kernel reads the word
//!   under its hash-bucket lock, which orders it with the waker's syscall.

use crate::block::futex::{self, Wake};
use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{AtomicU32, Ordering};
use std::time::Instant;

const FREE: u32 = 0;
const LOCKED: u32 = 1;
/// Locked, and some thread may be asleep waiting for the lock.
const CONTENDED: u32 = 2;

/// Three-state futex mutex. See the module documentation.
#[derive(Debug)]
pub struct RawFutex3 {
    state: AtomicU32,
}

impl RawFutex3 {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { state: AtomicU32::new(FREE) }
        }
    }

    /// Takes the lock, sleeping in the kernel while others hold it.
    #[inline]
    pub fn acquire(&self) {
        if !self.try_acquire() {
            self.acquire_slow(None);
        }
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> bool {
        self.state
            .compare_exchange(FREE, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the lock, sleeping at most until `deadline`; returns whether it
    /// was taken.
    #[inline]
    pub fn acquire_until(&self, deadline: Instant) -> bool {
        self.try_acquire() || self.acquire_slow(Some(deadline))
    }

    #[cold]
    #[inline(never)]
    fn acquire_slow(&self, deadline: Option<Instant>) -> bool {
        loop {
            // Announce a (possible) sleeper before sleeping; if the lock was
            // free meanwhile, this very swap took it.
            if self.state.swap(CONTENDED, Ordering::Acquire) == FREE {
                return true;
            }
            if futex::wait(&self.state, CONTENDED, deadline) == Wake::TimedOut {
                // Leaving is safe: a wake-up is consumed only by a wait that
                // returns `Woken`, so none meant for another sleeper is lost
                // here, and the word stays `2`, so the holder's unlock still
                // wakes whoever sleeps (or nobody, once: harmless).
                return false;
            }
        }
    }

    /// Releases the lock, waking one sleeper if there may be one.
    ///
    /// # Safety
    /// The caller must hold the lock.
    #[inline]
    pub unsafe fn release(&self) {
        if self.state.swap(FREE, Ordering::Release) == CONTENDED {
            self.wake_one();
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_one(&self) {
        futex::wake_one(&self.state);
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.state.load(Ordering::Relaxed) != FREE
    }
}

impl Default for RawFutex3 {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawFutex3 {
    const INFO: LockInfo = LockInfo {
        name: "futex3",
        family: Family::Blocking,
        fair: false,
        blocking: true,
        numa_aware: false,
        source: "U. Drepper, Futexes Are Tricky (2011), mutex 2/3; glibc lll_lock",
        summary: "one word: 0 free, 1 locked, 2 locked with sleepers; futex wait on 2, unlock wakes only if it took a 2",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawFutex3;
    use lock_api::GuardSend;
    use std::time::{Duration, Instant};

    // SAFETY: the lock is taken only by an RMW that turned the word from 0
    // into non-zero, and only the holder writes 0 back, so at most one guard
    // exists at a time; taking is `Acquire`, releasing is `Release`.
    crate::guardless_raw_mutex!(RawFutex3);

    // SAFETY: as for `RawMutex`; a timed attempt that gives up returns `None`
    // and holds nothing.
    unsafe impl lock_api::RawMutexTimed for RawFutex3 {
        type Duration = Duration;
        type Instant = Instant;

        #[inline]
        fn try_lock_for(&self, timeout: Duration) -> Option<GuardSend> {
            let ok = match Instant::now().checked_add(timeout) {
                Some(deadline) => self.acquire_until(deadline),
                // A timeout past the end of time is no timeout.
                None => {
                    self.acquire();
                    true
                }
            };
            ok.then(GuardSend::new)
        }

        #[inline]
        fn try_lock_until(&self, deadline: Instant) -> Option<GuardSend> {
            self.acquire_until(deadline).then(GuardSend::new)
        }
    }

    /// A mutex protected by a three-state futex lock.
    pub type Futex3Mutex<T> = lock_api::Mutex<RawFutex3, T>;
}

#[cfg(not(loom))]
pub use raw::Futex3Mutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{self, Watchdog, HANG};
    use std::time::Duration;

    use crate::block::futex::wake_calls as wakes;

    /// Waits until another thread has announced itself as a sleeper.
    fn until_contended(l: &RawFutex3) {
        while l.state.load(Ordering::Relaxed) != CONTENDED {
            std::thread::yield_now();
        }
    }

    #[test]
    fn five_threads_count_exactly() {
        testing::hammer::<RawFutex3>(5, 20_000);
    }

    #[test]
    fn nested_locks_released_out_of_order() {
        testing::nested_non_lifo::<RawFutex3>(4);
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_when_free() {
        let l = RawFutex3::new();
        assert!(!l.is_held());
        assert!(l.try_acquire());
        assert!(l.is_held());
        assert!(!l.try_acquire(), "try_acquire on a held lock");
        assert!(
            !l.acquire_until(Instant::now()),
            "timed acquire past its deadline on a held lock"
        );
        // SAFETY: held by this test.
        unsafe { l.release() };
        assert!(!l.is_held());
        assert!(l.acquire_until(Instant::now()), "free lock, past deadline");
        // SAFETY: held by this test.
        unsafe { l.release() };
    }

    #[test]
    fn uncontended_unlock_makes_no_wake() {
        let l = RawFutex3::new();
        let before = wakes();
        for _ in 0..testing::iters(1_000) {
            l.acquire();
            // SAFETY: held by this test.
            unsafe { l.release() };
        }
        assert_eq!(wakes(), before, "futex wake with nobody waiting");
    }

    #[test]
    fn unlock_wakes_a_sleeper() {
        let _w = Watchdog::new("unlock_wakes_a_sleeper", HANG);
        let l = RawFutex3::new();
        l.acquire();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                l.acquire();
                // SAFETY: held by this thread.
                unsafe { l.release() };
            });
            until_contended(&l);
            let before = wakes();
            // SAFETY: held by this test.
            unsafe { l.release() };
            assert_eq!(wakes(), before + 1, "a sleeper was announced");
            h.join().unwrap();
        });
        assert!(!l.is_held());
    }

    #[test]
    fn timed_lock_times_out_while_held_then_succeeds() {
        let _w = Watchdog::new("timed_lock", HANG);
        let m = Futex3Mutex::new(0u32);
        let g = m.lock();
        std::thread::scope(|s| {
            s.spawn(|| {
                let d = Duration::from_millis(30);
                let t = Instant::now();
                assert!(m.try_lock_for(d).is_none(), "took a held lock");
                assert!(t.elapsed() >= d, "gave up early: {:?}", t.elapsed());
                assert!(m.try_lock_until(Instant::now()).is_none());
            })
            .join()
            .unwrap();
        });
        drop(g);
        *m.try_lock_for(Duration::from_millis(30))
            .expect("free lock") += 1;
        *m.try_lock_for(Duration::MAX).expect("no deadline") += 1;
        assert_eq!(*m.lock(), 2);
    }

    /// A timed waiter that gives up must not strand an untimed one: the
    /// word stays `2`, so the unlock still wakes the sleeper.
    #[test]
    fn a_timed_out_waiter_strands_nobody() {
        let _w = Watchdog::new("a_timed_out_waiter_strands_nobody", HANG);
        let m = Futex3Mutex::new(0u32);
        let g = m.lock();
        std::thread::scope(|s| {
            let sleeper = s.spawn(|| *m.lock() += 1);
            // SAFETY: only reads the word.
            until_contended(unsafe { m.raw() });
            let timed = s.spawn(|| m.try_lock_for(Duration::from_millis(20)).is_some());
            assert!(!timed.join().unwrap(), "took a held lock");
            drop(g);
            sleeper.join().unwrap();
        });
        assert_eq!(*m.lock(), 1);
    }
}
