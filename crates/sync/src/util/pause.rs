//! Spin timing: what one CPU-relax hint costs on this machine, a cheap
//! clock, and busy waits measured in time rather than in loop counts.
//!
//! x86's `pause` took about 10 cycles before Skylake and about 140 after
//! (Intel's optimization manual, "Pause latency in Skylake"); AMD's Zen
//! parts differ again, and aarch64's `yield`/`isb` hint is a few cycles. A
//! spin loop of "N pauses" therefore lasts ten times longer on one machine
//! than on another. So the budgets of locklab's sleeping locks are times,
//! and their waits read a clock:
//!
//! - [`ticks`] is the time-stamp counter on x86_64 (`rdtsc`, about 20
//!   cycles, no system call; invariant on every x86_64 part of the last
//!   decade) and nanoseconds of `Instant` elsewhere, and under Miri,
//!   which cannot execute `rdtsc` (its clock is `Instant`, virtual time).
//! - [`calibrate`] times batches of hints against `Instant` and keeps the
//!   fastest batch (interruptions only ever add time): the cost of a hint.
//!   Then it measures the counter's rate against `Instant` over 0.2 ms.
//!   It runs once per process, on first use; about 0.3–0.7 ms.
//! - [`relax_ns`] waits a given time: a group of hints sized by their
//!   measured cost (about [`CHECK_NS`] of them), then a look at the clock,
//!   until the time is up.
//!
//! Why a clock and not a count of hints computed once: besides portability,
//! the lab measured the difference. On its 2-core KVM guest (AMD EPYC), a
//! mutex whose waiting spinner slept between its looks at the lock word in
//! plain runs of `pause` hints (up to 150 back to back) settled, in some
//! runs and not others, into a state where the lock's owner ran at half its
//! speed; with the same waits timed by the counter, a look at the clock
//! after every hint or two, it never did (docs/results.md, "Sleeping locks"). The
//! mechanism is not known. The obvious suspect is the hypervisor's
//! pause-loop exiting, which seed 004 describes: `PLE_GAP` is the time
//! between two consecutive `pause`s (128 in that paper) and `PLE_WIN` the
//! most `pause`s a spin loop executes in normal running (2048 there); a
//! spinner that executes more is taken for a lock-holder-preemption victim
//! and the hardware signals it. (Intel VT-x counts both in TSC cycles and
//! exits to the hypervisor.) But the clocked wait also issues its hints
//! less than 128 cycles apart, so the suspicion is unproven. Reading the clock costs a few nanoseconds per hint
//! group, which a spinner can afford.
//!
//! Under loom there is no time. Each [`relax_ns`] is one yield to the
//! model's scheduler that counts as [`LOOM_RELAX_NS`], so that budgets of
//! tens of microseconds come out as one or two iterations, and a
//! [`Deadline`] passes on its second look.

#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, Ordering};

/// Roughly how long a group of hints between two looks at the clock lasts,
/// ns: long enough that reading the clock is a small part of the wait,
/// short enough that a wait ends within a cache-line transfer or two of
/// its time.
#[cfg(not(loom))]
pub const CHECK_NS: f64 = 40.0;

/// Under loom: what one [`relax_ns`] counts as, whatever it was asked for.
#[cfg(loom)]
pub const LOOM_RELAX_NS: u64 = 20_000;

/// Picoseconds per hint; 0 until measured.
#[cfg(not(loom))]
static PS_PER_PAUSE: AtomicU32 = AtomicU32::new(0);
/// Clock ticks per microsecond; 0 until measured.
#[cfg(not(loom))]
static TICKS_PER_US: AtomicU32 = AtomicU32::new(0);

/// Hints per timed batch.
#[cfg(not(loom))]
const BATCH: u32 = 1024;
/// Batches timed; the fastest counts.
#[cfg(not(loom))]
const BATCHES: u32 = 5;
/// How long [`calibrate`] measures the counter's rate.
#[cfg(not(loom))]
const RATE_WINDOW: std::time::Duration = std::time::Duration::from_micros(200);

/// Whether [`ticks`] reads the time-stamp counter (x86_64, not under
/// Miri) rather than `Instant`.
const TSC: bool = cfg!(all(target_arch = "x86_64", not(miri)));

/// A raw timestamp: time-stamp counter ticks on x86_64, nanoseconds since
/// the first call elsewhere (and under Miri). Only differences mean
/// anything; see [`ticks_per_ns`] for their unit.
#[inline(always)]
pub fn ticks() -> u64 {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        // SAFETY: RDTSC has no preconditions on x86_64 and reads no memory.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        EPOCH
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
    }
}

/// Busy-waits until `n` [`ticks`] have passed (zero returns at once): the
/// calibrated busy work of benchmarks and emulated hardware costs.
#[inline(always)]
pub fn spin_ticks(n: u64) {
    if n == 0 {
        return;
    }
    let start = ticks();
    while ticks().wrapping_sub(start) < n {
        core::hint::spin_loop();
    }
}

/// How many [`ticks`] pass per nanosecond of `Instant`, measured over
/// `window` (busy, not asleep, so that frequency changes show): the clock's
/// rate for callers that want it more precisely than [`ticks_per_ns`]'s.
pub fn tick_rate(window: std::time::Duration) -> f64 {
    if !TSC {
        return 1.0;
    }
    let (w0, t0) = stamp();
    while w0.elapsed() < window {}
    let (w1, t1) = stamp();
    t1.wrapping_sub(t0) as f64 / (w1 - w0).as_nanos().max(1) as f64
}

/// One moment on both clocks: an `Instant` and the [`ticks`] that belong
/// to it. Reading `Instant` takes tens of nanoseconds (more in a guest
/// whose clock source traps), and a preemption between the two reads puts
/// them microseconds apart; so `Instant` is read between two reads of the
/// counter, the counter's value is their midpoint, and of a few tries the
/// narrowest bracket counts.
fn stamp() -> (std::time::Instant, u64) {
    let mut best: Option<(u64, std::time::Instant, u64)> = None;
    for _ in 0..4 {
        let a = ticks();
        let w = std::time::Instant::now();
        let b = ticks();
        let width = b.wrapping_sub(a);
        if best.is_none_or(|(bw, _, _)| width < bw) {
            best = Some((width, w, a.wrapping_add(width / 2)));
        }
    }
    let (_, w, t) = best.expect("four tries");
    (w, t)
}

/// Measures the hint and the clock now (again, if they were measured
/// before) and returns the hint's cost in nanoseconds.
#[cfg(not(loom))]
pub fn calibrate() -> f64 {
    let mut best = u128::MAX;
    for _ in 0..BATCHES {
        let w = std::time::Instant::now();
        for _ in 0..BATCH {
            core::hint::spin_loop();
        }
        best = best.min(w.elapsed().as_nanos());
    }
    // Bounds: below 0.1 ns a hint is no hint (or the clock failed us);
    // above 1 µs something else was measured. Either way, stay sane.
    let ps = (best * 1000 / u128::from(BATCH)).clamp(100, 1_000_000) as u32;
    // The counter's rate over a window of its own, long enough that the
    // error of its two ends (a few ns each, see `stamp`) is far below a
    // per cent: a rate taken from one batch of hints, a few µs, was once
    // 10 % off on CI's guest, and every timed wait with it. Ticks per µs,
    // within 1 and 100 000 (1 GHz per tick would be 1000; the fallback
    // clock is exactly 1000).
    let per_us = if TSC {
        (tick_rate(RATE_WINDOW) * 1000.0)
            .round()
            .clamp(1.0, 100_000.0) as u32
    } else {
        1000
    };
    TICKS_PER_US.store(per_us, Ordering::Relaxed);
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

/// [`ticks`] per nanosecond, measured with the hint on first use.
#[cfg(not(loom))]
#[inline]
pub fn ticks_per_ns() -> f64 {
    if TICKS_PER_US.load(Ordering::Relaxed) == 0 {
        calibrate();
    }
    f64::from(TICKS_PER_US.load(Ordering::Relaxed)) / 1000.0
}

/// Hints per look at the clock in [`relax_ns`]: about [`CHECK_NS`] of them.
#[cfg(not(loom))]
#[inline]
fn hints_per_check() -> u32 {
    (CHECK_NS / ns_per_pause()).clamp(1.0, 64.0) as u32
}

/// Busy-waits about `ns` nanoseconds (at least one hint) and returns how
/// long it waited, ns. See the module documentation.
#[cfg(not(loom))]
#[inline]
pub fn relax_ns(ns: u64) -> u64 {
    let rate = ticks_per_ns();
    let start = ticks();
    let end = (ns as f64 * rate) as u64;
    let group = hints_per_check();
    loop {
        for _ in 0..group {
            core::hint::spin_loop();
        }
        let waited = ticks().wrapping_sub(start);
        if waited >= end {
            return (waited as f64 / rate) as u64;
        }
    }
}

/// Under loom: one yield to the model, counted as [`LOOM_RELAX_NS`].
#[cfg(loom)]
pub fn relax_ns(_ns: u64) -> u64 {
    loom::hint::spin_loop();
    LOOM_RELAX_NS
}

/// A point in time that a spin loop polls for cheaply.
#[derive(Debug)]
pub struct Deadline {
    #[cfg(not(loom))]
    end: u64,
    #[cfg(loom)]
    looks: u32,
}

impl Deadline {
    /// `ns` nanoseconds from now.
    #[inline]
    pub fn after(ns: u64) -> Self {
        #[cfg(not(loom))]
        return Self {
            end: ticks().wrapping_add((ns as f64 * ticks_per_ns()) as u64),
        };
        #[cfg(loom)]
        {
            let _ = ns;
            Self { looks: 0 }
        }
    }

    /// Whether it has passed. Under loom: from the second look on.
    #[inline]
    pub fn passed(&mut self) -> bool {
        #[cfg(not(loom))]
        return ticks().wrapping_sub(self.end) as i64 >= 0;
        #[cfg(loom)]
        {
            self.looks += 1;
            self.looks >= 2
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn the_hint_and_the_clock_measure_as_something_finite() {
        let ns = calibrate();
        assert!((0.1..=1000.0).contains(&ns), "{ns} ns per pause");
        assert_eq!(ns_per_pause(), ns);
        let rate = ticks_per_ns();
        assert!((0.001..=100.0).contains(&rate), "{rate} ticks per ns");
        // The quick rate agrees with a 25 times longer measurement within
        // 3 % (its ends are bracketed, so even a preemption at one of them
        // costs it little).
        let precise = tick_rate(Duration::from_millis(5));
        assert!(
            (rate / precise - 1.0).abs() < 0.03,
            "quick {rate} vs precise {precise} ticks per ns"
        );
    }

    #[test]
    fn relax_waits_at_least_what_it_is_asked_and_says_so() {
        for ns in [0, 100, 5_000, 200_000] {
            let t = Instant::now();
            let said = relax_ns(ns);
            let took = t.elapsed().as_nanos() as u64;
            // By its own clock, never shorter than asked...
            assert!(said + 1 >= ns, "asked {ns} ns, relax said {said}");
            // ...and its clock agrees with `Instant` (within the quick
            // calibration's error and the clocks' rounding).
            let (said, took) = (said as f64, took as f64);
            assert!(took * 1.1 + 100.0 >= said, "said {said} ns, took {took}");
            assert!(
                took * 1.1 + 100.0 >= ns as f64,
                "asked {ns} ns, took {took}"
            );
        }
    }

    #[test]
    fn a_deadline_passes_when_its_time_is_up_and_not_before() {
        let mut far = Deadline::after(10_000_000_000);
        assert!(!far.passed());
        let mut near = Deadline::after(20_000);
        let t = Instant::now();
        while !near.passed() {
            core::hint::spin_loop();
        }
        assert!(t.elapsed() >= Duration::from_micros(18));
    }
}
