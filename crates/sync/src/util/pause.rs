//! What one CPU-relax hint costs on this machine, so that spin budgets can
//! be set in time rather than in loop counts.
//!
//! x86's `pause` took about 10 cycles before Skylake and about 140 after
//! (Intel's optimization manual, "Pause latency in Skylake"); AMD's Zen
//! parts differ again, and aarch64's `yield`/`isb` hint is a few cycles. A
//! spin loop of "N pauses" therefore lasts ten times longer on one machine
//! than on another. A lock that wants to spin for, say, 5 µs measures the
//! hint once and converts: `iterations = budget / cost`, after which the
//! spin loop itself reads no clock.
//!
//! The measurement times batches of hints with `Instant` and keeps the
//! fastest batch (interruptions only ever add time). It runs once per
//! process, on first use or when [`calibrate`] is called at start-up; about
//! 0.1–0.5 ms in all.
//!
//! Under loom there is no time: the cost is a constant and budgets are
//! meant to come out as a handful of iterations.

#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, Ordering};

/// Picoseconds per hint; 0 until measured.
#[cfg(not(loom))]
static PS_PER_PAUSE: AtomicU32 = AtomicU32::new(0);

/// Hints per timed batch.
#[cfg(not(loom))]
const BATCH: u32 = 1024;
/// Batches timed; the fastest counts.
#[cfg(not(loom))]
const BATCHES: u32 = 5;

/// Measures the hint now (again, if it was measured before) and returns
/// its cost in nanoseconds.
#[cfg(not(loom))]
pub fn calibrate() -> f64 {
    let mut best = u128::MAX;
    for _ in 0..BATCHES {
        let t = std::time::Instant::now();
        for _ in 0..BATCH {
            core::hint::spin_loop();
        }
        best = best.min(t.elapsed().as_nanos());
    }
    // Bounds: below 0.1 ns a hint is no hint (or the clock failed us);
    // above 1 µs something else was measured. Either way, stay sane.
    let ps = (best * 1000 / u128::from(BATCH)).clamp(100, 1_000_000) as u32;
    PS_PER_PAUSE.store(ps, Ordering::Relaxed);
    f64::from(ps) / 1000.0
}

/// The cost of one [`spin_loop`](super::sync::spin_loop) hint, in
/// nanoseconds, measured on first use.
#[cfg(not(loom))]
#[inline]
pub fn ns_per_pause() -> f64 {
    match PS_PER_PAUSE.load(Ordering::Relaxed) {
        0 => calibrate(),
        ps => f64::from(ps) / 1000.0,
    }
}

/// How many hints fill `ns` nanoseconds (at least one).
#[cfg(not(loom))]
#[inline]
pub fn pauses_for(ns: u64) -> u64 {
    ((ns as f64 / ns_per_pause()) as u64).max(1)
}

/// Under loom: one hint per microsecond, so that budgets of a few hundred
/// nanoseconds come out as one or two iterations.
#[cfg(loom)]
pub fn ns_per_pause() -> f64 {
    1000.0
}

/// Under loom: see [`ns_per_pause`].
#[cfg(loom)]
pub fn pauses_for(ns: u64) -> u64 {
    (ns / 1000).clamp(1, 2)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_hint_costs_something_finite_and_budgets_scale_with_it() {
        let ns = calibrate();
        assert!((0.1..=1000.0).contains(&ns), "{ns} ns per pause");
        assert_eq!(ns_per_pause(), ns);
        let small = pauses_for(1_000);
        let large = pauses_for(100_000);
        assert!(small >= 1);
        // Rounding aside, a hundred times the time is a hundred times the hints.
        assert!(large >= small * 90, "{small} vs {large}");
    }
}
