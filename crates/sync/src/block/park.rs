//! `spin-yield(…)` and `spin-park(…)`: spin a little, then give the CPU away.
//!
//! Adapters over any locklab spin lock. A waiter first polls the inner lock
//! for a short, bounded time ([`SPIN_BUDGET`]); after that,
//!
//! - [`SpinYield`] calls `yield_now()` between attempts: a user-space
//!   analogue of the "yield-to-tail" (YTT) baseline of seed 004 (Zhang,
//!   Zhang & Chen, Tsinghua, 2014, §3). YTT itself is a host run-queue
//!   policy: on a pause-loop exit the host stops the spinning vCPU and
//!   requeues it at the tail of its run queue, so that a preempted
//!   lock-holding vCPU can run; here a thread yields its own CPU.
//!   The waiter stays runnable, so nobody has to wake it, and it costs
//!   nothing at release; but with many waiters it still burns a context
//!   switch per attempt, and it cannot help when the holder is not on this
//!   CPU's run queue.
//! - [`SpinPark`] sleeps in the kernel on a futex until a release wakes it:
//!   a user-space analogue of the idea behind seed 004's deferred
//!   transitory co-scheduling (DTCS, §2.3), which is a host run-queue
//!   policy: on a pause-loop exit the host stops the spinning vCPU and
//!   places it in the run queue so that it runs with, or a little after,
//!   the first sibling vCPU that may hold the lock. Here the waiter sleeps
//!   until a release wakes it. Release pays a fence and a load, and a
//!   system call only when someone sleeps.
//!
//! # Why a time budget
//!
//! The spin phase is bounded in time, not in iterations: what a waiter
//! weighs is the time spinning wastes against what sleeping costs (a futex
//! wait and wake plus two context switches, a few microseconds to tens of
//! microseconds), and the time per iteration varies a hundredfold between an
//! idle line and a contended one. Spinning for about the cost of a sleep is
//! the classic competitive choice (Karlin, Li, Manasse & Owicki, "Empirical
//! Studies of Competitive Spinning", SOSP 1991): never worse than twice the
//! better of the two. Reading the clock is cheap (vDSO, ~20 ns) but not free,
//! so it is read once every [`CLOCK_EVERY`] attempts. Under loom there is no
//! clock: the budget is one attempt, so the model reaches the sleep path.
//!
//! # No lost wake-up in `SpinPark`
//!
//! Beside the inner lock sit two words: `sleepers`, how many waiters are
//! registered, and `epoch`, the futex word, bumped by a release that wakes.
//! A waiter: reads `e = epoch`; increments `sleepers`; `fence(SeqCst)`;
//! tries the inner lock once more; if that fails, `futex::wait(epoch, e)`;
//! then decrements `sleepers` and starts over. A release: releases the
//! inner lock; `fence(SeqCst)`; reads `sleepers`; only if non-zero, bumps
//! `epoch` and wakes one sleeper.
//!
//! The two fences make a Dekker pair (store, fence, load on both sides).
//! For a waiter W and a release R, either W's fence comes first in the
//! single order of `SeqCst` fences, and then R's load sees W's registration
//! (W has not deregistered: it is still waiting), or R's fence comes first,
//! and then W's re-check sees R's release of the inner lock. In the second
//! case the re-check succeeds, or it fails because the lock was taken again
//! after R: then the new holder's release R′ writes the inner lock after
//! the value W read, so R′'s fence cannot precede W's, and R′ is in the
//! first case. So every waiter that goes to sleep has a release after it
//! that sees it registered. That release bumps `epoch` after its load of
//! `sleepers`, which read (with `Acquire`) W's `Release` increment or a
//! later RMW of it, so W's read of `e`, before its increment, happens before
//! the bump and returned an older value: W's `futex::wait(epoch, e)` either
//! finds the word changed and returns at once, or sleeps before the bump and
//! the wake that follows it. The wake wakes one sleeper, perhaps not W; the
//! one it wakes takes the lock (and its release wakes the next) or fails
//! its re-check because someone else holds it, whose release comes later,
//! and the argument repeats. Waiters that have not registered need no wake:
//! they are still polling.
//!
//! Why a separate `epoch`: the kernel must see the word change between the
//! re-check and the sleep, or a release that woke nobody (W not yet in the
//! kernel) would let W sleep through it. `sleepers` itself cannot be that
//! word: registrations change it, which would make every sleeper's wait
//! fail while others come and go.
//!
//! One more case: for [`RawClh`] a failed `try_acquire` swaps its node
//! into the queue and only then, seeing its predecessor held, marks it
//! abandoned; in between, the node looks held, so a registered waiter's
//! re-check can fail on a lock nobody holds. Whoever made such a node must
//! then do the release-side check itself: its abandoning store, fence and
//! load of `sleepers` form the same Dekker pair with the waiter's
//! registration, fence and failed read of that node.
//! [`SpinCore::TRY_CAN_STALL`] flags such locks, and `SpinPark` follows
//! *every* failed attempt on them (polling, re-check, one-shot
//! `try_acquire`) with that check, counting out the caller's own
//! registration. Checking after one-shot attempts only is not enough: loom
//! found two waiters whose re-checks each failed on the other's node, both
//! asleep on a free lock. The cost: under a long hold, registered waiters
//! of `spin-park(clh)` may wake each other once per spin budget. And loom
//! cannot check `spin-park(clh)` to the end: polling CLH by `try_acquire`
//! alone is obstruction-free, so two pollers can abandon behind each other
//! for ever under an adversarial schedule ("exceeded maximum number of
//! branches"); the unit tests cover it.
//!
//! # Fairness
//!
//! Neither adapter is fair, whatever the inner lock: waiters only ever use
//! the inner lock's `try_acquire`, which succeeds only on a free lock, so a
//! FIFO lock (`ticket`, `mcs`, `clh`, `k42`, `qspin`) serves whoever polls at
//! the right moment, and a newcomer can overtake a sleeper. Keeping the
//! queue across a sleep would need a per-lock way to sleep on one's own
//! place in it (for the ticket lock, a futex on the `owner` counter that
//! wakes every waiter); the adapters trade that for working with every
//! lock. Taking a queue place and then sleeping would be worse: a FIFO lock
//! hands over to the next in line even when it sleeps, so every hand-over
//! would wait for a wake-up (the convoy that barging avoids).
//!
//! Orderings, beyond the Dekker pair above: the protected data is ordered
//! by the inner lock alone. `epoch`'s read and bump are `Relaxed`: the
//! happens-before they need comes from the `Release` increment and the
//! `Acquire` load of `sleepers`, and the futex layer orders its compare with
//! the wake. Deregistering is `Relaxed`: a release that misses it makes one
//! needless wake, never a missing one.

use crate::block::futex;
use crate::info::{Described, Family, LockInfo};
use crate::spin::{
    ClhToken, McsToken, RawBackoff, RawClh, RawK42, RawMcs, RawQspin, RawTas, RawTicket,
    RawTicketBackoff, RawTtas, Ticket,
};
use crate::util::sync::{fence, spin_loop, yield_now, AtomicU32, Ordering};

/// How long a waiter polls before it yields or sleeps: about what a futex
/// sleep and wake-up cost (see the module documentation).
#[cfg(not(loom))]
pub const SPIN_BUDGET: std::time::Duration = std::time::Duration::from_micros(20);

/// How many attempts pass between two readings of the clock.
#[cfg(not(loom))]
pub const CLOCK_EVERY: u32 = 16;

/// The algorithm-level interface the adapters need from a spin lock.
pub trait SpinCore: Described + Send + Sync {
    /// What a holder needs to release (`()` for locks that need nothing).
    type Token;
    /// `spin-park(<name>)`, as a `&'static str`.
    const PARK_NAME: &'static str;
    /// `spin-yield(<name>)`, as a `&'static str`.
    const YIELD_NAME: &'static str;
    /// Whether a failed `try_acquire` can make a concurrent `try_acquire`
    /// fail on a free lock (see the module documentation).
    const TRY_CAN_STALL: bool = false;
    /// An unlocked lock.
    fn new() -> Self;
    /// Takes the lock if it is free right now.
    fn try_acquire(&self) -> Option<Self::Token>;
    /// Releases the lock.
    ///
    /// # Safety
    /// The caller must hold the lock with `token`, on the thread that took
    /// it if the token is not `Send`.
    unsafe fn release(&self, token: Self::Token);
    /// Whether the lock looks held (a hint: may be stale or conservative).
    fn is_held(&self) -> bool;
}

macro_rules! spin_core {
    ($ty:ty, $name:literal, bool $(, $stall:literal)?) => {
        impl SpinCore for $ty {
            type Token = ();
            const PARK_NAME: &'static str = concat!("spin-park(", $name, ")");
            const YIELD_NAME: &'static str = concat!("spin-yield(", $name, ")");
            $(const TRY_CAN_STALL: bool = $stall;)?
            fn new() -> Self {
                <$ty>::new()
            }
            #[inline]
            fn try_acquire(&self) -> Option<()> {
                <$ty>::try_acquire(self).then_some(())
            }
            #[inline]
            unsafe fn release(&self, _: ()) {
                // SAFETY: forwarded from the caller.
                unsafe { <$ty>::release(self) }
            }
            #[inline]
            fn is_held(&self) -> bool {
                <$ty>::is_held(self)
            }
        }
    };
    ($ty:ty, $name:literal, $token:ty $(, $stall:literal)?) => {
        impl SpinCore for $ty {
            type Token = $token;
            const PARK_NAME: &'static str = concat!("spin-park(", $name, ")");
            const YIELD_NAME: &'static str = concat!("spin-yield(", $name, ")");
            $(const TRY_CAN_STALL: bool = $stall;)?
            fn new() -> Self {
                <$ty>::new()
            }
            #[inline]
            fn try_acquire(&self) -> Option<$token> {
                <$ty>::try_acquire(self)
            }
            #[inline]
            unsafe fn release(&self, token: $token) {
                // SAFETY: forwarded from the caller.
                unsafe { <$ty>::release(self, token) }
            }
            #[inline]
            fn is_held(&self) -> bool {
                <$ty>::is_held(self)
            }
        }
    };
}

spin_core!(RawTas, "tas", bool);
spin_core!(RawTtas, "ttas", bool);
spin_core!(RawBackoff, "backoff", bool);
spin_core!(RawK42, "k42", bool);
spin_core!(RawQspin, "qspin", bool);
spin_core!(RawTicket, "ticket", Ticket);
spin_core!(RawTicketBackoff, "ticket-backoff", Ticket);
spin_core!(RawMcs, "mcs", McsToken);
spin_core!(RawClh, "clh", ClhToken, true);

/// The spin phase's allowance: [`SPIN_BUDGET`] of time (one attempt under
/// loom).
struct Budget {
    #[cfg(not(loom))]
    start: std::time::Instant,
    #[cfg(not(loom))]
    attempts: u32,
}

impl Budget {
    #[inline]
    fn start() -> Self {
        Self {
            #[cfg(not(loom))]
            start: std::time::Instant::now(),
            #[cfg(not(loom))]
            attempts: 0,
        }
    }

    /// Counts one more attempt; whether the budget is used up.
    #[inline]
    fn spent(&mut self) -> bool {
        #[cfg(loom)]
        return true;
        #[cfg(not(loom))]
        {
            self.attempts = self.attempts.wrapping_add(1);
            self.attempts % CLOCK_EVERY == 0 && self.start.elapsed() >= SPIN_BUDGET
        }
    }
}

/// Polls `inner` (reading before writing, so waiters do not fight over the
/// line while it is held) until it is taken or the budget is spent.
#[inline]
fn poll<L: SpinCore>(
    inner: &L,
    mut attempt: impl FnMut() -> Option<L::Token>,
    mut budget: impl FnMut() -> bool,
) -> Option<L::Token> {
    loop {
        if !inner.is_held() {
            if let Some(t) = attempt() {
                return Some(t);
            }
        }
        if budget() {
            return None;
        }
        spin_loop();
    }
}

/// Spin, then yield between attempts. See the module documentation.
#[derive(Debug)]
pub struct SpinYield<L> {
    inner: L,
}

impl<L: SpinCore> SpinYield<L> {
    /// An unlocked lock (not `const`: for statics use the `lock_api`
    /// layer's `INIT`).
    pub fn new() -> Self {
        Self { inner: L::new() }
    }

    /// Takes the lock: spins for [`SPIN_BUDGET`], then yields between
    /// attempts.
    #[inline]
    pub fn acquire(&self) -> L::Token {
        match self.inner.try_acquire() {
            Some(t) => t,
            None => self.acquire_slow(),
        }
    }

    #[cold]
    #[inline(never)]
    fn acquire_slow(&self) -> L::Token {
        let mut budget = Budget::start();
        let attempt = || self.inner.try_acquire();
        if let Some(t) = poll(&self.inner, attempt, || budget.spent()) {
            return t;
        }
        poll(&self.inner, attempt, || {
            yield_now();
            false
        })
        .expect("an unbounded poll returns only with the lock")
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<L::Token> {
        self.inner.try_acquire()
    }

    /// Releases the lock.
    ///
    /// # Safety
    /// The caller must hold the lock with `token` (on the thread that took
    /// it, if the token is not `Send`).
    #[inline]
    pub unsafe fn release(&self, token: L::Token) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.release(token) }
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.inner.is_held()
    }
}

impl<L: SpinCore> Default for SpinYield<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: SpinCore> Described for SpinYield<L> {
    // A yielding waiter never sleeps on a wait queue: it stays runnable and
    // polls each time the scheduler runs it, so to the lab it is a spin lock
    // (family `spin`, not blocking), one that is polite to a preempted
    // holder. Whatever the inner lock's family, the adapter polls with
    // `try_acquire`, so FIFO order is gone too.
    const INFO: LockInfo = LockInfo {
        name: L::YIELD_NAME,
        family: Family::Spin,
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "user-space analogue of the yield-to-tail host policy (YTT) of Zhang, Zhang & Chen, Efficient transitory co-scheduling for MP VMs (seed 004); Karlin et al., SOSP 1991",
        summary: "poll the inner lock for ~20 us, then sched_yield between attempts; unfair",
    };
}

/// Spin, then sleep on a futex until a release. See the module
/// documentation.
#[derive(Debug)]
pub struct SpinPark<L> {
    inner: L,
    /// Waiters registered to sleep (or about to).
    sleepers: AtomicU32,
    /// The futex word: bumped by every release that wakes.
    epoch: AtomicU32,
}

impl<L: SpinCore> SpinPark<L> {
    /// An unlocked lock (not `const`: for statics use the `lock_api`
    /// layer's `INIT`).
    pub fn new() -> Self {
        Self {
            inner: L::new(),
            sleepers: AtomicU32::new(0),
            epoch: AtomicU32::new(0),
        }
    }

    /// Takes the lock: spins for [`SPIN_BUDGET`], then sleeps until a
    /// release wakes it, and again.
    #[inline]
    pub fn acquire(&self) -> L::Token {
        match self.inner.try_acquire() {
            Some(t) => t,
            None => self.acquire_slow(),
        }
    }

    #[cold]
    #[inline(never)]
    fn acquire_slow(&self) -> L::Token {
        loop {
            let mut budget = Budget::start();
            if let Some(t) = poll(&self.inner, || self.attempt(0), || budget.spent()) {
                return t;
            }
            if let Some(t) = self.sleep() {
                return t;
            }
        }
    }

    /// Registers as a sleeper, tries once more, and sleeps until woken
    /// unless that try took the lock.
    fn sleep(&self) -> Option<L::Token> {
        let epoch = self.epoch.load(Ordering::Relaxed);
        self.sleepers.fetch_add(1, Ordering::Release);
        fence(Ordering::SeqCst);
        let got = self.attempt(1);
        if got.is_none() {
            // Any return will do: the caller polls again either way.
            futex::wait(&self.epoch, epoch, None);
        }
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
        got
    }

    /// Takes the lock if it is free right now.
    #[inline]
    pub fn try_acquire(&self) -> Option<L::Token> {
        self.attempt(0)
    }

    /// One attempt on the inner lock, by a thread that is `me` (0 or 1) of
    /// the registered sleepers. Where a failed attempt can make others
    /// fail on a free lock, it is followed by the release-side check for
    /// sleepers other than us (see the module documentation).
    #[inline]
    fn attempt(&self, me: u32) -> Option<L::Token> {
        let got = self.inner.try_acquire();
        if L::TRY_CAN_STALL && got.is_none() {
            self.wake_if_sleepers(me);
        }
        got
    }

    /// Releases the lock, and wakes one sleeper if any is registered.
    ///
    /// # Safety
    /// The caller must hold the lock with `token` (on the thread that took
    /// it, if the token is not `Send`).
    #[inline]
    pub unsafe fn release(&self, token: L::Token) {
        // SAFETY: forwarded from the caller.
        unsafe { self.inner.release(token) };
        self.wake_if_sleepers(0);
    }

    /// The release side of the Dekker pair: after a store that may let a
    /// registered waiter in, wake one if there is one besides the `me` (0
    /// or 1) that is the caller.
    #[inline]
    fn wake_if_sleepers(&self, me: u32) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::Acquire) > me {
            self.wake_one();
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_one(&self) {
        self.epoch.fetch_add(1, Ordering::Relaxed);
        futex::wake_one(&self.epoch);
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.inner.is_held()
    }
}

impl<L: SpinCore> Default for SpinPark<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: SpinCore> Described for SpinPark<L> {
    const INFO: LockInfo = LockInfo {
        name: L::PARK_NAME,
        family: Family::Blocking,
        fair: false,
        blocking: true,
        numa_aware: false,
        source: "spin-then-block: Ousterhout, Scheduling Techniques for Concurrent Systems (ICDCS 1982); Karlin et al., SOSP 1991; a user-space analogue of the deferred co-scheduling host policy (DTCS) of seed 004",
        summary: "poll the inner lock for ~20 us, then sleep on a futex; release wakes only if someone sleeps; unfair",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{SpinCore, SpinPark, SpinYield};
    use crate::util::sync::AtomicU32;

    // SAFETY: exclusion is the inner lock's: every guard is a token of a
    // successful inner `try_acquire`, and `unlock` releases it through the
    // inner lock. The guard is the inner token, so it is `!Send` whenever
    // the inner lock needs release on the same thread.
    unsafe impl<L: SpinCore + lock_api::RawMutex> lock_api::RawMutex for SpinYield<L> {
        const INIT: Self = Self {
            inner: <L as lock_api::RawMutex>::INIT,
        };
        type Guard = L::Token;

        #[inline]
        fn lock(&self) -> L::Token {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<L::Token> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: L::Token) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    // SAFETY: as for `SpinYield`: the inner lock excludes; the futex words
    // only decide who sleeps.
    unsafe impl<L: SpinCore + lock_api::RawMutex> lock_api::RawMutex for SpinPark<L> {
        const INIT: Self = Self {
            inner: <L as lock_api::RawMutex>::INIT,
            sleepers: AtomicU32::new(0),
            epoch: AtomicU32::new(0),
        };
        type Guard = L::Token;

        #[inline]
        fn lock(&self) -> L::Token {
            self.acquire()
        }

        #[inline]
        fn try_lock(&self) -> Option<L::Token> {
            self.try_acquire()
        }

        #[inline]
        unsafe fn unlock(&self, guard: L::Token) {
            // SAFETY: the caller passes the guard of a held lock.
            unsafe { self.release(guard) }
        }

        #[inline]
        fn is_locked(&self) -> bool {
            self.is_held()
        }
    }

    /// A mutex protected by spin lock `L` that yields after spinning.
    pub type SpinYieldMutex<L, T> = lock_api::Mutex<SpinYield<L>, T>;
    /// A mutex protected by spin lock `L` that sleeps after spinning.
    ///
    /// ```
    /// let m = locklab::SpinParkMutex::<locklab::RawTicket, u32>::new(0);
    /// *m.lock() += 1;
    /// assert_eq!(*m.lock(), 1);
    /// ```
    ///
    /// Its guard is `!Send` when the inner lock's token is (an MCS node
    /// must be given back by the thread that took it):
    ///
    /// ```compile_fail
    /// let m = locklab::SpinParkMutex::<locklab::RawMcs, u32>::new(0);
    /// std::thread::scope(|s| {
    ///     let g = m.lock();
    ///     s.spawn(move || drop(g));
    /// });
    /// ```
    pub type SpinParkMutex<L, T> = lock_api::Mutex<SpinPark<L>, T>;
}

#[cfg(not(loom))]
pub use raw::{SpinParkMutex, SpinYieldMutex};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{self, Watchdog, HANG};
    use lock_api::RawMutex;

    use crate::block::futex::wake_calls as wakes;

    /// Runs `$check::<L>()` for every spin lock `L`.
    macro_rules! for_each_lock {
        ($check:ident) => {
            $check::<RawTas>();
            $check::<RawTtas>();
            $check::<RawBackoff>();
            $check::<RawK42>();
            $check::<RawQspin>();
            $check::<RawTicket>();
            $check::<RawTicketBackoff>();
            $check::<RawMcs>();
            $check::<RawClh>();
        };
    }

    fn names_follow_the_inner_lock<L: SpinCore>() {
        assert_eq!(
            SpinPark::<L>::INFO.name,
            format!("spin-park({})", L::INFO.name)
        );
        assert_eq!(
            SpinYield::<L>::INFO.name,
            format!("spin-yield({})", L::INFO.name)
        );
    }

    #[test]
    fn names() {
        for_each_lock!(names_follow_the_inner_lock);
    }

    /// More threads than the machine's two cores, so waiters outlast the
    /// spin budget and sleep (or yield).
    fn count<L: SpinCore + RawMutex + Sync>() {
        testing::hammer::<SpinPark<L>>(5, 3_000);
        testing::hammer::<SpinYield<L>>(5, 3_000);
    }

    #[test]
    fn five_threads_count_exactly() {
        for_each_lock!(count);
    }

    fn nested<L: SpinCore + RawMutex + Sync>() {
        testing::nested_non_lifo::<SpinPark<L>>(3);
        testing::nested_non_lifo::<SpinYield<L>>(3);
    }

    #[test]
    fn nested_locks_released_out_of_order() {
        for_each_lock!(nested);
    }

    fn try_lock<L: SpinCore + RawMutex + Sync>() {
        let p = <SpinPark<L> as RawMutex>::INIT;
        let g = p.try_lock().expect("free lock");
        assert!(p.is_locked());
        assert!(p.try_lock().is_none(), "try_lock on a held lock");
        // SAFETY: held with `g`.
        unsafe { p.unlock(g) };
        assert!(!p.is_locked());

        let y = <SpinYield<L> as RawMutex>::INIT;
        let g = y.try_lock().expect("free lock");
        assert!(y.try_lock().is_none(), "try_lock on a held lock");
        // SAFETY: held with `g`.
        unsafe { y.unlock(g) };
        assert!(y
            .try_lock()
            // SAFETY: `g` is the guard the try_lock just returned.
            .map(|g| unsafe { y.unlock(g) })
            .is_some());
    }

    #[test]
    fn try_lock_fails_while_held_and_succeeds_when_free() {
        for_each_lock!(try_lock);
    }

    fn no_wake_uncontended<L: SpinCore + RawMutex + Sync>() {
        let p = <SpinPark<L> as RawMutex>::INIT;
        let before = wakes();
        for _ in 0..testing::iters(1_000) {
            let g = p.lock();
            // SAFETY: held with `g`.
            unsafe { p.unlock(g) };
        }
        assert_eq!(
            wakes(),
            before,
            "{}: futex wake with nobody asleep",
            L::PARK_NAME
        );
    }

    #[test]
    fn uncontended_release_makes_no_wake() {
        for_each_lock!(no_wake_uncontended);
    }

    /// A waiter that outlasts its budget registers and sleeps; the release
    /// wakes it (counted), and the release after that wakes nobody.
    fn sleeper_is_woken<L: SpinCore + RawMutex + Sync>() {
        let _w = Watchdog::new("sleeper_is_woken", HANG);
        let p = <SpinPark<L> as RawMutex>::INIT;
        let g = p.lock();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                let g = p.lock();
                // SAFETY: held with `g`, on this thread.
                unsafe { p.unlock(g) };
            });
            while p.sleepers.load(Ordering::Relaxed) == 0 {
                std::thread::yield_now();
            }
            let before = wakes();
            // SAFETY: held with `g`.
            unsafe { p.unlock(g) };
            assert_eq!(wakes(), before + 1, "{}: sleeper not woken", L::PARK_NAME);
            h.join().unwrap();
        });
        assert_eq!(p.sleepers.load(Ordering::Relaxed), 0, "left registered");
        let before = wakes();
        let g = p.lock();
        // SAFETY: held with `g`.
        unsafe { p.unlock(g) };
        assert_eq!(wakes(), before);
    }

    #[test]
    fn a_sleeper_is_woken_by_the_release() {
        for_each_lock!(sleeper_is_woken);
    }

    #[test]
    fn guards_are_send_when_the_inner_token_is() {
        // The `!Send` side (MCS) is the `compile_fail` example on
        // `SpinParkMutex`.
        fn assert_send<T: Send>() {}
        assert_send::<<SpinPark<RawTicket> as RawMutex>::Guard>();
        assert_send::<<SpinYield<RawClh> as RawMutex>::Guard>();
    }
}
