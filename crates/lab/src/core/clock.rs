//! Cheap timestamps and calibrated busy work.
//!
//! Acquire latencies and the work inside and outside critical sections are
//! timed with the CPU's time-stamp counter where there is one (x86_64 with an
//! invariant TSC, ~20 cycles a read), converted to nanoseconds with a rate
//! calibrated once against the monotonic clock. Elsewhere they fall back to
//! `Instant`.

use std::sync::OnceLock;
use std::time::Duration;

/// A raw timestamp in ticks (TSC cycles, or ns since an epoch on fallback):
/// the library's spin clock, so that the lab and the locks read one clock.
pub use locklab::sys::ticks;

/// Busy-waits for a number of ticks (see [`ns_to_ticks`]).
pub use locklab::sys::spin_ticks;

/// Ticks per nanosecond, measured once (≈ 20 ms) on first use: more
/// precisely than the library's quick calibration, since the lab reports
/// latencies in nanoseconds.
pub fn ticks_per_ns() -> f64 {
    static RATE: OnceLock<f64> = OnceLock::new();
    *RATE.get_or_init(|| {
        // Best of three short windows: a preemption only ever inflates the
        // wall-clock side, so the highest rate seen is the least disturbed.
        (0..3)
            .map(|_| locklab::sys::tick_rate(Duration::from_millis(7)))
            .fold(0.0, f64::max)
    })
}

/// Converts a tick count to nanoseconds.
#[inline]
pub fn ticks_to_ns(t: u64) -> u64 {
    (t as f64 / ticks_per_ns()) as u64
}

/// Converts a tick count to seconds.
#[inline]
pub fn ticks_to_s(t: u64) -> f64 {
    t as f64 / ticks_per_ns() * 1e-9
}

/// Converts nanoseconds to ticks.
#[inline]
pub fn ns_to_ticks(ns: u64) -> u64 {
    (ns as f64 * ticks_per_ns()) as u64
}

/// This thread's CPU time (user + system), in seconds.
pub fn thread_cpu_s() -> f64 {
    #[cfg(target_os = "linux")]
    return rusage_cpu_s(libc::RUSAGE_THREAD);
    #[allow(unreachable_code)]
    0.0
}

/// The whole process's CPU time (user + system, every thread), in seconds.
pub fn process_cpu_s() -> f64 {
    #[cfg(target_os = "linux")]
    return rusage_cpu_s(libc::RUSAGE_SELF);
    #[allow(unreachable_code)]
    0.0
}

#[cfg(target_os = "linux")]
fn rusage_cpu_s(who: libc::c_int) -> f64 {
    // SAFETY: `ru` is a plain C struct the call fills; RUSAGE_THREAD and
    // RUSAGE_SELF are valid on Linux for the calling thread and process.
    unsafe {
        let mut ru: libc::rusage = core::mem::zeroed();
        if libc::getrusage(who, &mut ru) == 0 {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            return tv(ru.ru_utime) + tv(ru.ru_stime);
        }
    }
    0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_conversion_round_trips_and_spin_waits_at_least_as_long_as_asked() {
        let r = ticks_per_ns();
        assert!(r.is_finite() && r > 0.0);
        let t = ns_to_ticks(1_000_000);
        let back = ticks_to_ns(t);
        assert!((back as i64 - 1_000_000).abs() <= 2, "{back}");
        // A lower bound only: the spin may be preempted and take longer.
        let w = std::time::Instant::now();
        spin_ticks(ns_to_ticks(2_000_000));
        assert!(w.elapsed() >= Duration::from_micros(1_500));
    }

    #[test]
    fn thread_cpu_time_grows_when_the_thread_works() {
        let a = thread_cpu_s();
        spin_ticks(ns_to_ticks(30_000_000));
        let b = thread_cpu_s();
        assert!(b > a, "{a} -> {b}");
    }
}
