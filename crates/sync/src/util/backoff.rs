//! Busy-wait delays for locks that back off under contention: a per-thread
//! xorshift generator, bounded randomized exponential backoff, and a plain
//! "spin this many times" for proportional schemes.
//!
//! Randomized exponential backoff is the Ethernet idea applied to spin locks
//! (Anderson 1990, "The performance of spin lock alternatives for
//! shared-memory multiprocessors", IEEE TPDS 1(1); Mellor-Crummey & Scott
//! 1991, ACM TOCS 9(1)): after each failed attempt a waiter stays off the
//! lock's cache line for a random time whose upper bound doubles, so the
//! waiters that saw the same release spread out instead of colliding again.
//! Seed 001 (Bueso) describes it and its weakness: the best delay depends on
//! the critical section and the number of contenders, which a lock cannot
//! know, so the constants below are a compromise the lab can measure.
//!
//! Delays are counted in [`spin_loop`] calls, the unit a CPU-relax hint
//! costs. That cost differs a lot between machines (x86 `pause` is about 10
//! cycles before Skylake and about 140 after; aarch64's hint is a few
//! cycles), which is one more reason to keep the bounds modest.
//!
//! Under loom every delay is a single [`spin_loop`] (a yield to the model's
//! scheduler): how long a waiter stays away is a performance choice, not a
//! correctness one, and each extra yield would multiply the interleavings
//! loom explores. The randomness is left out there too, since loom needs
//! every execution to be replayable.

use super::sync::spin_loop;

/// Smallest backoff window, in [`spin_loop`] calls.
///
/// Four relax hints cost about 40 cycles with a 10-cycle `pause` and about
/// 560 with a 140-cycle one: at most a few cache-line transfers between
/// cores (roughly 100–300 cycles each), so the first delay costs about what
/// the collision it avoids costs and light contention is not slowed much.
pub const MIN_SPINS: u32 = 4;

/// Largest backoff window, in [`spin_loop`] calls (a power of two).
///
/// Reached after six consecutive failed attempts (4 → 256). A waiter that
/// backs off may miss the release by up to this much, so the cap bounds the
/// idle time a backoff lock can add to a hand-over: about 2 500 cycles with
/// a 10-cycle `pause`, about 36 000 (12 µs at 3 GHz) with a 140-cycle one.
/// Larger caps help only with many more contenders than a small machine
/// has, and make unfairness worse: the thread that last backed off longest
/// is the one least likely to win.
pub const MAX_SPINS: u32 = 256;

/// Calls [`spin_loop`] `n` times (once under loom; see the module docs).
#[inline]
pub fn spin_for(n: u32) {
    #[cfg(not(loom))]
    for _ in 0..n {
        spin_loop();
    }
    #[cfg(loom)]
    {
        let _ = n;
        spin_loop();
    }
}

/// Marsaglia's 32-bit xorshift generator (shifts 13, 17, 5; period
/// 2³² − 1 over non-zero states). Statistically weak, but three shifts and
/// three xors are all a backoff needs to decorrelate waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XorShift32(u32);

impl XorShift32 {
    /// A generator started from `seed` (zero, the one fixed point, is
    /// replaced by a non-zero constant).
    pub const fn new(seed: u32) -> Self {
        Self(if seed == 0 { 0x9E37_79B9 } else { seed })
    }

    /// The next pseudo-random value (never zero).
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// A generator that differs between threads and between calls on one
    /// thread.
    ///
    /// Each thread keeps a counter in a thread-local, started from the
    /// address of that thread-local (distinct among live threads) and
    /// advanced by an odd constant per call; the generator starts from the
    /// counter passed through a mixing function (the MurmurHash3 32-bit
    /// finalizer), so successive calls get unrelated starting points rather
    /// than overlapping runs of one sequence. No state is shared between
    /// threads.
    #[cfg(not(loom))]
    pub fn per_thread() -> Self {
        use core::cell::Cell;
        thread_local! {
            static COUNTER: Cell<u32> = const { Cell::new(0) };
        }
        let c = COUNTER
            .try_with(|c| {
                let mut v = c.get();
                if v == 0 {
                    // Fold the address's bits together; the mixer below
                    // does the spreading.
                    let addr = c as *const Cell<u32> as usize as u64;
                    v = (addr ^ (addr >> 32)) as u32;
                }
                v = v.wrapping_add(0x9E37_79B9);
                c.set(v);
                v
            })
            // During thread-local destruction: any start will do.
            .unwrap_or(0);
        Self::new(mix32(c))
    }

    /// Under loom: a fixed generator, so that executions replay exactly.
    #[cfg(loom)]
    pub fn per_thread() -> Self {
        Self::new(0)
    }
}

/// MurmurHash3's 32-bit finalizer: every input bit affects every output bit.
#[cfg(not(loom))]
const fn mix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^= h >> 16;
    h
}

/// Randomized exponential backoff: each [`wait`](Self::wait) spins a random
/// number of times in `1..=window`, then doubles the window, from
/// [`MIN_SPINS`] up to [`MAX_SPINS`].
#[derive(Debug, Clone)]
pub struct Backoff {
    rng: XorShift32,
    window: u32,
}

impl Backoff {
    /// A fresh backoff with the smallest window and this thread's generator.
    #[inline]
    pub fn new() -> Self {
        Self {
            rng: XorShift32::per_thread(),
            window: MIN_SPINS,
        }
    }

    /// The current upper bound of a wait, in [`spin_loop`] calls.
    #[cfg(all(test, not(loom)))]
    pub fn window(&self) -> u32 {
        self.window
    }

    /// The length of the next wait, advancing the generator and the window.
    #[inline]
    pub fn next_delay(&mut self) -> u32 {
        // The window is a power of two, so masking is an unbiased draw.
        let n = (self.rng.next_u32() & (self.window - 1)) + 1;
        self.window = (self.window * 2).min(MAX_SPINS);
        n
    }

    /// Stays away for the next delay.
    #[inline]
    pub fn wait(&mut self) {
        let n = self.next_delay();
        spin_for(n);
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

const _: () = assert!(MIN_SPINS.is_power_of_two() && MAX_SPINS.is_power_of_two());
const _: () = assert!(MIN_SPINS <= MAX_SPINS);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn xorshift_never_sticks_at_zero_and_moves() {
        let mut g = XorShift32::new(0);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let x = g.next_u32();
            assert_ne!(x, 0);
            seen.insert(x);
        }
        assert_eq!(seen.len(), 1000, "a short cycle");
    }

    #[test]
    fn delays_stay_within_a_doubling_window_that_caps() {
        let mut b = Backoff::new();
        let mut window = MIN_SPINS;
        for _ in 0..20 {
            assert_eq!(b.window(), window);
            let d = b.next_delay();
            assert!((1..=window).contains(&d), "{d} outside 1..={window}");
            window = (window * 2).min(MAX_SPINS);
        }
        assert_eq!(b.window(), MAX_SPINS);
    }

    #[test]
    fn delays_are_spread_over_the_window() {
        let mut b = Backoff::new();
        for _ in 0..10 {
            b.next_delay();
        }
        assert_eq!(b.window(), MAX_SPINS);
        let (mut lo, mut hi) = (false, false);
        for _ in 0..1000 {
            b.window = MAX_SPINS;
            let d = b.next_delay();
            lo |= d <= MAX_SPINS / 4;
            hi |= d > 3 * MAX_SPINS / 4;
        }
        assert!(lo && hi, "delays cluster instead of covering the window");
    }

    #[test]
    fn threads_get_different_sequences() {
        let here = XorShift32::per_thread();
        let there = std::thread::spawn(XorShift32::per_thread).join().unwrap();
        assert_ne!(here, there);
        assert_ne!(XorShift32::per_thread(), XorShift32::per_thread());
    }
}
