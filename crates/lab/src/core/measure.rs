//! The measurement core: one window, opened and closed on one clock, over
//! which every study that times counts its operations, its CPU time and its
//! latency samples.
//!
//! A repetition runs like this:
//!
//! 1. Each worker thread calls [`Window::enter`] first thing: it registers
//!    its CPU-time clock and waits at a gate until every worker has
//!    registered. The gate opens for all at once.
//! 2. Each worker then counts itself as running and starts its loop on the
//!    repetition's own lock (or table, or kernel). The controller
//!    ([`Window::measure`]) waits until every worker is running, then lets
//!    them run for a settle period: the warm-up, on the same lock and
//!    threads, whose work is discarded. A thread that ran alone before the
//!    others were scheduled, the first scheduler tick of an oversubscribed
//!    run, cold caches: all of it falls here.
//! 3. The controller publishes the window's opening instant, a little in the
//!    future on the time-stamp counter, waits for it, and reads every
//!    worker's CPU clock. At the end of the measured time it does the same
//!    for the closing instant.
//! 4. Workers classify each operation by the time-stamp at which it
//!    completed ([`Recorder::op`], [`Recorder::batch`]): before the opening
//!    it is warm-up, in the window it is counted (and its latency
//!    recorded), at or after the closing the worker stops. A wait that
//!    began before the closing and ended after it is *censored*: counted
//!    apart, with the least it lasted (the closing minus its start), never
//!    dropped and never mistaken for a short one. Work after the closing is
//!    not counted.
//!
//! So operations, latencies and CPU time cover the same interval, and the
//! window's length is the difference of two time-stamps the workers compare
//! against. The CPU clocks are read by the controller just after each
//! instant; it may be preempted between the instant and its reads, so CPU
//! time is taken over the span between the two sets of reads and scaled to
//! the window's length (a small correction). A worker that stops may end
//! its thread before the controller's reads at the closing (the controller
//! preempted after the instant): a thread's clock cannot be read once it
//! has ended, so each worker leaves its last reading behind as it stops,
//! and the controller takes that one for a worker that has left. The same reads take each
//! worker's run-queue wait: the time its thread was ready to run but the
//! host gave the CPU to someone else (`/proc/self/task/TID/schedstat`). A
//! benchmark whose workers waited for the host is measuring the host; the
//! studies say so beside their figures.
//!
//! Latencies go into HDR histograms that cover 1 tick to [`MAX_TICKS`]
//! (more than 60 s at any time-stamp rate below 18 GHz) at three
//! significant figures; a value beyond that is an error of the repetition,
//! never a clamp.
//!
//! This module names no study: the benchmarks, the tortures and the
//! emulated kernel's runs all drive their threads through it.

use crate::core::clock::{ns_to_ticks, ticks, ticks_to_ns, ticks_to_s};
use crossbeam_utils::CachePadded;
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// Largest latency a histogram holds, in ticks: 2⁴⁰, over 60 s at any
/// time-stamp rate up to 18 GHz.
pub const MAX_TICKS: u64 = 1 << 40;

/// Significant figures of every latency histogram.
pub const SIGFIG: u8 = 3;

/// A value the window's instants hold until they are set.
const UNSET: u64 = u64::MAX;

/// How far ahead of the controller's clock an instant is published: far
/// enough that every worker has seen the new value before the instant
/// passes.
const LEAD_NS: u64 = 20_000;

/// An empty latency histogram of the lab's range and precision.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TICKS, SIGFIG).expect("1..2^40 at 3 figures is valid")
}

/// The settle period a repetition of `secs` measured seconds runs before
/// its window opens: a fifth of it, between 10 ms and 100 ms.
pub fn settle_for(secs: f64) -> Duration {
    Duration::from_secs_f64((secs / 5.0).clamp(0.01, 0.1))
}

/// The window of one repetition, shared by its controller and its workers.
pub struct Window {
    /// Opening and closing instants in ticks ([`UNSET`] until published);
    /// read by every worker on every operation, written twice.
    instants: CachePadded<[AtomicU64; 2]>,
    /// Workers expected.
    threads: usize,
    /// Workers registered, and workers past the gate.
    registered: AtomicUsize,
    running: AtomicUsize,
    /// The gate: opened once every worker registered.
    gate: Mutex<bool>,
    gate_cv: Condvar,
    /// Each worker's CPU-time clock and run-queue wait, by worker index.
    clocks: Mutex<Vec<Slot>>,
}

/// What the controller runs at the window's instants and while it is open.
#[derive(Default)]
pub struct Hooks<'a> {
    /// At the opening, before the CPU clocks are read.
    pub at_open: Option<&'a mut dyn FnMut()>,
    /// At the closing, likewise.
    pub at_close: Option<&'a mut dyn FnMut()>,
    /// About every millisecond while the window is open.
    pub during: Option<&'a mut dyn FnMut()>,
}

/// What the controller measured of a window.
#[derive(Debug, Clone)]
pub struct Span {
    /// Opening and closing instants, ticks.
    pub open: u64,
    /// See `open`.
    pub close: u64,
    /// `close - open` in seconds.
    pub wall_s: f64,
    /// CPU seconds each worker used in the window (by worker index),
    /// scaled from the span between the controller's two sets of reads to
    /// the window's length.
    pub cpu_s: Vec<f64>,
    /// Seconds each worker was ready to run but waiting for a CPU (the
    /// host's run queue), scaled likewise; all 0 where the kernel does not
    /// say.
    pub waited_s: Vec<f64>,
    /// Whether Ctrl-C cut the repetition short (it is then no measurement).
    pub interrupted: bool,
}

impl Span {
    /// CPU seconds of every worker together.
    pub fn cpu_total_s(&self) -> f64 {
        self.cpu_s.iter().sum()
    }

    /// Each worker's run-queue wait over the window, as a fraction of the
    /// window (0 for an empty window).
    pub fn waited_frac(&self) -> Vec<f64> {
        self.waited_s
            .iter()
            .map(|w| {
                if self.wall_s > 0.0 {
                    (w / self.wall_s).clamp(0.0, 1.0)
                } else {
                    0.0
                }
            })
            .collect()
    }
}

impl Window {
    /// A window for `threads` workers.
    pub fn new(threads: usize) -> Self {
        Window {
            instants: CachePadded::new([AtomicU64::new(UNSET), AtomicU64::new(UNSET)]),
            threads,
            registered: AtomicUsize::new(0),
            running: AtomicUsize::new(0),
            gate: Mutex::new(false),
            gate_cv: Condvar::new(),
            clocks: Mutex::new((0..threads).map(|_| Slot::default()).collect()),
        }
    }

    /// Worker side, first thing on worker `index`'s thread: registers its
    /// CPU clock, waits until every worker has registered, then counts
    /// itself as running. Returns the worker's recorder.
    pub fn enter(&self, index: usize) -> Recorder<'_> {
        self.enter_thread(index);
        Recorder::new(self, index)
    }

    /// [`enter`](Window::enter) for a thread whose loop counts in its own
    /// way (the emulated kernel's cores): registration and the gate only.
    pub fn enter_thread(&self, index: usize) {
        {
            let mut c = self.clocks.lock().unwrap_or_else(|e| e.into_inner());
            c[index] = Slot {
                clock: ThreadClock::this_thread(),
                left: None,
            };
        }
        let mut open = self.gate.lock().unwrap_or_else(|e| e.into_inner());
        if self.registered.fetch_add(1, Ordering::AcqRel) + 1 == self.threads {
            *open = true;
            self.gate_cv.notify_all();
        }
        while !*open {
            open = self.gate_cv.wait(open).unwrap_or_else(|e| e.into_inner());
        }
        drop(open);
        self.running.fetch_add(1, Ordering::AcqRel);
    }

    /// The opening instant, if published.
    pub fn open_at(&self) -> Option<u64> {
        let t = self.instants[0].load(Ordering::Acquire);
        (t != UNSET).then_some(t)
    }

    /// The closing instant, if published.
    pub fn close_at(&self) -> Option<u64> {
        let t = self.instants[1].load(Ordering::Acquire);
        (t != UNSET).then_some(t)
    }

    /// Controller side: waits up to `d` for every worker to run; `true`
    /// once they all do.
    pub fn wait_running_for(&self, d: Duration) -> bool {
        let end = Instant::now() + d;
        loop {
            if self.running.load(Ordering::Acquire) >= self.threads {
                return true;
            }
            if Instant::now() >= end {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// Controller side: waits until every worker runs (or Ctrl-C; `false`).
    pub fn wait_running(&self) -> bool {
        while self.running.load(Ordering::Acquire) < self.threads {
            if crate::core::interrupt::requested() {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        true
    }

    /// Publishes instant `which` ([0] opening, [1] closing) a little ahead,
    /// waits for it, runs `at` and reads every worker's CPU clock, then
    /// (with `waits`; a file read each, so after every CPU clock) its
    /// run-queue wait. Returns the instant, the ticks just after the reads,
    /// the CPU seconds and the waited seconds (empty without `waits`).
    fn mark(
        &self,
        which: usize,
        at: &mut Option<&mut dyn FnMut()>,
        waits: bool,
    ) -> (u64, u64, Vec<f64>, Vec<f64>) {
        let t = ticks() + ns_to_ticks(LEAD_NS);
        // Never move an instant back, never close before opening.
        let t = if which == 1 {
            t.max(self.open_at().unwrap_or(0))
        } else {
            t
        };
        self.instants[which].store(t, Ordering::Release);
        while ticks() < t {
            std::hint::spin_loop();
        }
        if let Some(at) = at.as_mut() {
            at();
        }
        // Held over the reads: a worker leaving now waits at its last
        // reading, so each thread is either still there or has left one.
        let clocks = self.clocks.lock().unwrap_or_else(|e| e.into_inner());
        let cpu: Vec<f64> = clocks.iter().map(Slot::cpu_seconds).collect();
        let waited: Vec<f64> = if waits {
            clocks.iter().map(Slot::waited_seconds).collect()
        } else {
            Vec::new()
        };
        (t, ticks(), cpu, waited)
    }

    /// Worker side, as worker `index` stops: leaves its thread's last CPU
    /// and run-queue readings for the controller's reads to come.
    fn leave(&self, index: usize) {
        let mut c = self.clocks.lock().unwrap_or_else(|e| e.into_inner());
        let Some(slot) = c.get_mut(index) else {
            return;
        };
        if let Some(clock) = slot.clock {
            slot.left = Some((
                clock.seconds().unwrap_or(0.0),
                clock.waited_seconds().unwrap_or(0.0),
            ));
        }
    }

    /// Controller side: waits until every worker runs, lets them settle
    /// for `settle`, opens the window, waits `secs`, closes it. The hooks
    /// run at the instants (to snapshot counters the workers keep
    /// themselves) and about every millisecond while the window is open
    /// (to sample a level). Ctrl-C closes the window at once and marks the
    /// span interrupted.
    pub fn measure(&self, settle: Duration, secs: f64, hooks: Hooks<'_>) -> Span {
        let Hooks {
            mut at_open,
            mut at_close,
            mut during,
        } = hooks;
        let mut interrupted = !self.wait_running();
        if !interrupted {
            interrupted = !sleep_interruptible(settle);
        }
        let (open, r0, cpu0, wait0) = self.mark(0, &mut at_open, true);
        if !interrupted {
            let end = Instant::now() + Duration::from_secs_f64(secs);
            loop {
                if crate::core::interrupt::requested() {
                    interrupted = true;
                    break;
                }
                let left = end.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                let step = if during.is_some() {
                    Duration::from_millis(1)
                } else {
                    Duration::from_millis(10)
                };
                std::thread::sleep(left.min(step));
                if let Some(d) = during.as_mut() {
                    d();
                }
            }
        }
        let (close, r1, cpu1, wait1) = self.mark(1, &mut at_close, true);
        let wall_s = ticks_to_s(close - open);
        let cpu_span_s = ticks_to_s(r1.saturating_sub(r0));
        let scale = if cpu_span_s > 0.0 {
            wall_s / cpu_span_s
        } else {
            1.0
        };
        let over = |b: &[f64], a: &[f64]| -> Vec<f64> {
            b.iter()
                .zip(a)
                .map(|(b, a)| (b - a).max(0.0) * scale)
                .collect()
        };
        let cpu_s = over(&cpu1, &cpu0);
        let waited_s = over(&wait1, &wait0);
        Span {
            open,
            close,
            wall_s,
            cpu_s,
            waited_s,
            interrupted: interrupted || crate::core::interrupt::requested(),
        }
    }

    /// Controller side, for a loop of its own (a watchdog):
    /// opens the window now.
    pub fn open_now(&self) -> (u64, Vec<f64>) {
        let (t, _, cpu, _) = self.mark(0, &mut None, false);
        (t, cpu)
    }

    /// Controller side: closes the window now (opening it first if it is
    /// not open, so that workers stop either way).
    pub fn close_now(&self) -> (u64, Vec<f64>) {
        if self.open_at().is_none() {
            self.mark(0, &mut None, false);
        }
        let (t, _, cpu, _) = self.mark(1, &mut None, false);
        (t, cpu)
    }
}

/// Sleeps `d`, waking early on Ctrl-C; `false` if interrupted.
pub fn sleep_interruptible(d: Duration) -> bool {
    let end = Instant::now() + d;
    loop {
        if crate::core::interrupt::requested() {
            return false;
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(10)));
    }
}

/// Where an instant falls against the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Before the opening (or the opening not yet published): warm-up.
    Warm,
    /// In the window.
    Open,
    /// At or after the closing: the worker stops.
    Closed,
}

/// One worker's counts and latency samples, classified by the window.
pub struct Recorder<'w> {
    /// The window, and the worker's place in it: leaves the worker's last
    /// clock readings when the recorder goes (finished, or dropped on an
    /// early return or a panic).
    leave: Leave<'w>,
    /// Operations completed in the window; fractions from batches that
    /// straddle an instant.
    ops: f64,
    hist: Histogram<u64>,
    censored: u64,
    censored_ticks: u64,
    out_of_range: Option<u64>,
}

impl<'w> Recorder<'w> {
    fn new(window: &'w Window, index: usize) -> Self {
        Recorder {
            leave: Leave { window, index },
            ops: 0.0,
            hist: latency_histogram(),
            censored: 0,
            censored_ticks: 0,
            out_of_range: None,
        }
    }

    /// Where time-stamp `t` falls.
    #[inline(always)]
    pub fn phase(&self, t: u64) -> Phase {
        // Closing first: once it is set the opening is too.
        let close = self.leave.window.instants[1].load(Ordering::Relaxed);
        if t >= close {
            return Phase::Closed;
        }
        if t >= self.leave.window.instants[0].load(Ordering::Relaxed) {
            Phase::Open
        } else {
            Phase::Warm
        }
    }

    /// One operation that began (its wait started) at `t0` and completed
    /// at `t1`: counted, and its latency `t1 - t0` recorded, if it
    /// completed in the window; censored if it began before the closing
    /// and completed after. Returns `false` once `t1` is past the closing:
    /// the worker should stop.
    #[inline(always)]
    pub fn op(&mut self, t0: u64, t1: u64) -> bool {
        match self.phase(t1) {
            Phase::Warm => true,
            Phase::Open => {
                self.ops += 1.0;
                self.record(t1.saturating_sub(t0));
                true
            }
            Phase::Closed => {
                self.censor(t0);
                false
            }
        }
    }

    /// A latency sample (`t0` to `t1`) that is not itself an operation
    /// count (a study that times one operation in many): recorded if it
    /// ended in the window, censored if it straddles the closing.
    #[inline]
    pub fn sample(&mut self, t0: u64, t1: u64) {
        match self.phase(t1) {
            Phase::Warm => {}
            Phase::Open => self.record(t1.saturating_sub(t0)),
            Phase::Closed => self.censor(t0),
        }
    }

    /// The share of an interval `t0..t1` of work that fell in the window
    /// (1 for an instant in it, 0 for one outside).
    #[inline]
    pub fn share(&self, t0: u64, t1: u64) -> f64 {
        let open = self.leave.window.instants[0].load(Ordering::Relaxed);
        let close = self.leave.window.instants[1].load(Ordering::Relaxed);
        if t1 <= t0 {
            return if t1 >= open && t1 < close { 1.0 } else { 0.0 };
        }
        let (a, b) = (t0.max(open), t1.min(close));
        if b > a {
            (b - a) as f64 / (t1 - t0) as f64
        } else {
            0.0
        }
    }

    /// `n` operations done evenly from `t0` to `t1` (a batch between two
    /// time-stamps): the share of them that fell in the window is counted.
    /// Returns `false` once `t1` is past the closing.
    #[inline]
    pub fn batch(&mut self, n: u64, t0: u64, t1: u64) -> bool {
        self.ops += n as f64 * self.share(t0, t1);
        self.phase(t1) != Phase::Closed
    }

    /// A wait that began at `t0` and was still open at the closing.
    #[inline]
    fn censor(&mut self, t0: u64) {
        let close = self.leave.window.instants[1].load(Ordering::Relaxed);
        if t0 < close {
            self.censored += 1;
            self.censored_ticks = self.censored_ticks.max(close - t0);
        }
    }

    #[inline]
    fn record(&mut self, v: u64) {
        if self.hist.record(v).is_err() {
            self.out_of_range = Some(self.out_of_range.unwrap_or(0).max(v));
        }
    }

    /// The worker's results.
    pub fn finish(self) -> Measured {
        Measured {
            ops: self.ops.round() as u64,
            hist: self.hist,
            censored: self.censored,
            censored_ticks: self.censored_ticks,
            out_of_range: self.out_of_range,
        }
    }
}

/// What one worker measured in the window.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Operations completed in the window.
    pub ops: u64,
    /// Latencies of the operations (or samples) completed in the window,
    /// ticks.
    pub hist: Histogram<u64>,
    /// Waits still open at the closing.
    pub censored: u64,
    /// The longest of them had lasted at least this long at the closing,
    /// ticks.
    pub censored_ticks: u64,
    /// The largest latency beyond [`MAX_TICKS`], if any was seen.
    pub out_of_range: Option<u64>,
}

/// Latency statistics of a repetition, ns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Latency {
    /// Median, 99th and 99.9th percentiles and the maximum of the waits
    /// that ended in the window (0 when there was none).
    pub p50_ns: u64,
    /// See `p50_ns`.
    pub p99_ns: u64,
    /// See `p50_ns`.
    pub p999_ns: u64,
    /// See `p50_ns`.
    pub max_ns: u64,
    /// Waits still open at the closing.
    pub censored: u64,
    /// The longest of them had lasted at least this long, ns.
    pub censored_ns: u64,
}

/// Merges the workers' latencies. `Err` names a value beyond the
/// histogram's range.
pub fn latency<'a>(workers: impl IntoIterator<Item = &'a Measured>) -> Result<Latency, String> {
    let mut hist = latency_histogram();
    let (mut censored, mut censored_ticks) = (0, 0);
    for m in workers {
        if let Some(v) = m.out_of_range {
            return Err(format!(
                "a latency of {} s is beyond the histogram's range ({} s)",
                ticks_to_s(v),
                ticks_to_s(MAX_TICKS)
            ));
        }
        hist.add(&m.hist)
            .map_err(|e| format!("merging latency histograms: {e:?}"))?;
        censored += m.censored;
        censored_ticks = censored_ticks.max(m.censored_ticks);
    }
    let q = |p: f64| {
        if hist.is_empty() {
            0
        } else {
            ticks_to_ns(hist.value_at_quantile(p))
        }
    };
    Ok(Latency {
        p50_ns: q(0.5),
        p99_ns: q(0.99),
        p999_ns: q(0.999),
        max_ns: if hist.is_empty() {
            0
        } else {
            ticks_to_ns(hist.max())
        },
        censored,
        censored_ns: ticks_to_ns(censored_ticks),
    })
}

/// Leaves worker `index`'s last clock readings in the window as it drops.
struct Leave<'w> {
    window: &'w Window,
    index: usize,
}

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.window.leave(self.index);
    }
}

/// One worker's place in the window's clocks: its thread's clock while it
/// runs, the last readings it left as it stopped.
#[derive(Debug, Default, Clone, Copy)]
struct Slot {
    clock: Option<ThreadClock>,
    /// CPU seconds and run-queue seconds at the worker's leaving.
    left: Option<(f64, f64)>,
}

impl Slot {
    /// CPU seconds: what the worker left if it has left, else its clock (0
    /// for a worker that never registered).
    fn cpu_seconds(&self) -> f64 {
        match (self.left, self.clock) {
            (Some((cpu, _)), _) => cpu,
            (None, Some(c)) => c.seconds().unwrap_or(0.0),
            (None, None) => 0.0,
        }
    }

    /// Run-queue seconds, likewise.
    fn waited_seconds(&self) -> f64 {
        match (self.left, self.clock) {
            (Some((_, waited)), _) => waited,
            (None, Some(c)) => c.waited_seconds().unwrap_or(0.0),
            (None, None) => 0.0,
        }
    }
}

/// A thread's CPU-time clock and its run-queue wait, readable from any
/// thread of the process while the thread runs.
#[derive(Debug, Clone, Copy)]
struct ThreadClock {
    #[cfg(target_os = "linux")]
    cpu: libc::clockid_t,
    #[cfg(target_os = "linux")]
    tid: libc::pid_t,
}

impl ThreadClock {
    /// The calling thread's clocks.
    fn this_thread() -> Option<Self> {
        #[cfg(target_os = "linux")]
        {
            let mut id: libc::clockid_t = 0;
            // SAFETY: `pthread_self` is always valid for the caller, and
            // `id` is a valid place for the result.
            let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
            // SAFETY: no arguments; returns the caller's thread id.
            let tid = unsafe { libc::gettid() };
            (rc == 0).then_some(ThreadClock { cpu: id, tid })
        }
        #[cfg(not(target_os = "linux"))]
        None
    }

    /// Seconds the thread has spent ready but waiting for a CPU: the second
    /// field of its `schedstat` (nanoseconds). `None` where the kernel does
    /// not say, or once the thread has exited.
    fn waited_seconds(&self) -> Option<f64> {
        #[cfg(target_os = "linux")]
        {
            let path = format!("/proc/self/task/{}/schedstat", self.tid);
            if let Ok(s) = std::fs::read_to_string(path) {
                return run_queue_ns(&s).map(|ns| ns as f64 * 1e-9);
            }
        }
        None
    }

    /// CPU seconds the thread has used; `None` once it has exited.
    fn seconds(&self) -> Option<f64> {
        #[cfg(target_os = "linux")]
        {
            let mut ts = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: `ts` is a valid place for the result; a clock of a
            // thread that has exited gives an error, not undefined behaviour.
            if unsafe { libc::clock_gettime(self.cpu, &mut ts) } == 0 {
                return Some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9);
            }
        }
        None
    }
}

/// The run-queue wait of a `schedstat` line ("on-CPU ns, waiting ns,
/// time slices").
fn run_queue_ns(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A window whose instants are set by hand, for the recorder's rules.
    fn window(open: u64, close: u64) -> Window {
        let w = Window::new(1);
        w.instants[0].store(open, Ordering::Relaxed);
        w.instants[1].store(close, Ordering::Relaxed);
        w
    }

    #[test]
    fn operations_count_by_when_they_complete() {
        let w = window(1_000, 2_000);
        let mut r = Recorder::new(&w, 0);
        assert!(r.op(10, 999)); // warm-up
        assert!(r.op(900, 1_000)); // completes at the opening: counted
        assert!(r.op(1_500, 1_999));
        assert!(!r.op(1_900, 2_000)); // at the closing: censored, stop
        let m = r.finish();
        assert_eq!(m.ops, 2);
        assert_eq!(m.hist.len(), 2);
        assert_eq!((m.censored, m.censored_ticks), (1, 100));
    }

    #[test]
    fn a_wait_that_spans_the_whole_window_is_censored_not_lost() {
        let w = window(1_000, 2_000);
        let mut r = Recorder::new(&w, 0);
        assert!(!r.op(500, 5_000));
        let m = r.finish();
        assert_eq!((m.ops, m.hist.len()), (0, 0));
        assert_eq!((m.censored, m.censored_ticks), (1, 1_500));
        // A wait that began after the closing is no wait of the window.
        let mut r = Recorder::new(&w, 0);
        assert!(!r.op(2_500, 3_000));
        assert_eq!(r.finish().censored, 0);
    }

    #[test]
    fn batches_count_the_share_inside_the_window() {
        let w = window(1_000, 2_000);
        let mut r = Recorder::new(&w, 0);
        assert!(r.batch(100, 0, 900));
        assert!(r.batch(100, 900, 1_100)); // half inside: 50
        assert!(r.batch(100, 1_100, 1_900)); // all: 100
        assert!(!r.batch(100, 1_900, 2_300)); // a quarter: 25
        assert_eq!(r.finish().ops, 175);
    }

    /// The synthetic sample set of the known-answer tests: 1 to 100 000
    /// ticks once each, plus ten waits of 30 s, through the recorder and
    /// the merge. Every quantile comes back within the histogram's three
    /// figures; nothing at or above 256 ticks is clamped (a two-figure,
    /// non-resizing histogram with `saturating_record` turned all of these
    /// into 2 ticks).
    #[test]
    fn known_samples_give_their_known_quantiles() {
        let w = window(0, UNSET - 1);
        let thirty_s = ns_to_ticks(30_000_000_000);
        let mut a = Recorder::new(&w, 0);
        let mut b = Recorder::new(&w, 0);
        for v in 1..=100_000u64 {
            let r = if v % 2 == 0 { &mut a } else { &mut b };
            assert!(r.op(1_000, 1_000 + v));
        }
        for _ in 0..10 {
            assert!(a.op(1, 1 + thirty_s));
        }
        let (a, b) = (a.finish(), b.finish());
        assert_eq!(a.ops + b.ops, 100_010);
        let l = latency([&a, &b]).unwrap();
        let close = |got: u64, want_ticks: u64| {
            let want = ticks_to_ns(want_ticks) as f64;
            (got as f64 - want).abs() <= want * 2e-3 + 1.0
        };
        // The 50 005th of 100 010 sorted values is 50 005 ticks.
        assert!(close(l.p50_ns, 50_005), "p50 {}", l.p50_ns);
        assert!(close(l.p99_ns, 99_010), "p99 {}", l.p99_ns);
        // The 99.9th percentile is the 99 910th value.
        assert!(close(l.p999_ns, 99_910), "p99.9 {}", l.p999_ns);
        assert!(close(l.max_ns, thirty_s), "max {}", l.max_ns);
        assert_eq!(l.censored, 0);
    }

    #[test]
    fn a_latency_beyond_the_range_is_an_error_not_a_clamp() {
        let w = window(0, UNSET - 1);
        let mut r = Recorder::new(&w, 0);
        assert!(r.op(0, MAX_TICKS * 2));
        let e = latency([&r.finish()]).unwrap_err();
        assert!(e.contains("beyond the histogram's range"), "{e}");
    }

    /// Worker `i`: enters the window and counts operations as fast as it
    /// can until the closing.
    fn busy_until_closed(w: &Window, i: usize) -> Measured {
        let mut r = w.enter(i);
        loop {
            let t = ticks();
            if !r.op(t, t) {
                break;
            }
        }
        r.finish()
    }

    #[test]
    fn the_window_opens_only_when_every_worker_runs_and_cpu_covers_it() {
        let w = Window::new(3);
        let span = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|i| {
                    let w = &w;
                    s.spawn(move || busy_until_closed(w, i))
                })
                .collect();
            let span = w.measure(Duration::from_millis(5), 0.05, Hooks::default());
            let ms: Vec<Measured> = hs.into_iter().map(|h| h.join().unwrap()).collect();
            assert!(ms.iter().all(|m| m.ops > 0));
            span
        });
        assert!(!span.interrupted);
        assert!(span.close > span.open);
        // The window lasts at least what was asked (a busy machine may
        // wake the controller late, never early).
        assert!(span.wall_s >= 0.05, "{}", span.wall_s);
        assert_eq!(span.cpu_s.len(), 3);
        // Three busy threads can use at most the window times the cores.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(span.cpu_total_s() <= span.wall_s * cores.min(3.0) * 1.1 + 0.002);
        assert!(span.cpu_total_s() > 0.0);
    }

    #[test]
    fn workers_that_end_before_the_controller_reads_the_closing_keep_their_cpu_time() {
        // The controller reads the closing clocks 30 ms after the instant
        // (as if preempted there); the busy workers see the closing, stop
        // and end their threads meanwhile. Their CPU time in the window is
        // still counted: about the window's length each, never 0.
        let w = Window::new(2);
        let mut late = || std::thread::sleep(Duration::from_millis(30));
        let span = std::thread::scope(|s| {
            for i in 0..2 {
                let w = &w;
                s.spawn(move || busy_until_closed(w, i));
            }
            w.measure(
                Duration::from_millis(5),
                0.05,
                Hooks {
                    at_close: Some(&mut late),
                    ..Hooks::default()
                },
            )
        });
        assert_eq!(span.cpu_s.len(), 2);
        // Each worker spun through the window on one of the host's CPUs,
        // so at least a tenth of it whatever else the host ran.
        for (i, cpu) in span.cpu_s.iter().enumerate() {
            assert!(*cpu >= span.wall_s * 0.1, "worker {i}: {span:?}");
        }
    }

    #[test]
    fn a_schedstat_line_gives_its_run_queue_wait() {
        assert_eq!(run_queue_ns("633025 48120 7\n"), Some(48_120));
        assert_eq!(run_queue_ns("633025"), None);
        assert_eq!(run_queue_ns(""), None);
    }

    #[test]
    fn a_worker_sharing_its_cpu_with_a_busy_thread_is_seen_waiting() {
        if !std::path::Path::new("/proc/self/schedstat").exists() {
            eprintln!("skipped: this kernel keeps no schedstat");
            return;
        }
        // The worker and a busy thread pinned to one CPU: the host runs
        // each about half the time, so the worker waits for its CPU about
        // half the window (at least a fifth, on any machine).
        let w = Window::new(1);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let span = std::thread::scope(|s| {
            let (w, stop) = (&w, &stop);
            s.spawn(move || {
                assert!(crate::core::machine::pin(0));
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
            s.spawn(move || {
                assert!(crate::core::machine::pin(0));
                let mut r = w.enter(0);
                loop {
                    let t = ticks();
                    if !r.op(t, t) {
                        break;
                    }
                }
            });
            let span = w.measure(Duration::from_millis(50), 0.3, Hooks::default());
            stop.store(true, Ordering::Relaxed);
            span
        });
        let waited = span.waited_frac();
        assert_eq!(waited.len(), 1);
        assert!(waited[0] > 0.2, "waited {:.3} of the window", waited[0]);
        assert!(waited[0] + span.cpu_s[0] / span.wall_s <= 1.1, "{span:?}");
    }
}
