//! The loop that runs a study's points: the repetitions of every contender
//! interleaved (so drift on a shared machine hits all contenders alike),
//! each repetition measured by [`crate::core::measure`] (its own warm-up on its
//! own lock and threads, then one window), progress with an ETA, and each
//! finished point handed to a sink (the results store) at once, so an
//! interrupted sweep keeps what it finished.

use crate::core::error::{LabError, Result};
use crate::core::measure::{Measured, Span};
use crate::core::progress::Progress;
use crate::core::results::{Point, Rep};
use serde_json::Value;

/// One repetition of one contender: `Err` says why it is not a measurement
/// (a latency beyond the histograms, a broken invariant).
pub type RepRun<'a> = Box<dyn Fn() -> std::result::Result<Rep, String> + 'a>;

/// One point per contender, measured side by side: every contender's
/// repetitions, interleaved.
pub struct Group<'a> {
    /// The study's name, stored with each point.
    pub bench: &'a str,
    /// Threads (or cores) of every point.
    pub threads: u32,
    /// The parameters every point of the group shares.
    pub params: Value,
    /// Repetitions per point.
    pub reps: u32,
    /// Each contender's name (the point's `lock`) and one repetition of it.
    pub contenders: Vec<(String, RepRun<'a>)>,
}

impl Group<'_> {
    /// Runs the group: `step` names a contender's repetition (from 1) for
    /// the progress line, `failed` makes its error a failed check. Returns
    /// `Ok(false)` if interrupted, before any of the group's points is
    /// stored.
    pub fn run(
        self,
        progress: &Progress,
        step: impl Fn(&str, u32) -> String,
        failed: impl Fn(&str, String) -> LabError,
        sink: &mut dyn FnMut(Point) -> Result<()>,
    ) -> Result<bool> {
        let mut per: Vec<Vec<Rep>> = vec![Vec::new(); self.contenders.len()];
        for rep in 0..self.reps {
            for ((name, run), reps) in self.contenders.iter().zip(&mut per) {
                if crate::core::interrupt::requested() {
                    return Ok(false);
                }
                progress.step(step(name, rep + 1));
                let r = run();
                // A repetition cut short by Ctrl-C is not a measurement.
                if crate::core::interrupt::requested() {
                    return Ok(false);
                }
                reps.push(r.map_err(|e| failed(name, e))?);
                progress.done_one();
            }
        }
        for ((name, _), reps) in self.contenders.into_iter().zip(per) {
            sink(Point {
                bench: self.bench.into(),
                lock: name,
                threads: self.threads,
                params: self.params.clone(),
                reps: stamp(reps),
            })?;
        }
        Ok(true)
    }
}

/// One repetition from its window and what its workers measured in it:
/// operations per worker, CPU seconds and latencies over the same window.
/// `Err` names a latency beyond the histograms' range.
pub fn rep_of(span: &Span, measured: &[Measured]) -> std::result::Result<Rep, String> {
    let lat = crate::core::measure::latency(measured)?;
    let thread_ops: Vec<u64> = measured.iter().map(|m| m.ops).collect();
    Ok(Rep {
        p50_ns: lat.p50_ns,
        p99_ns: lat.p99_ns,
        p999_ns: lat.p999_ns,
        max_ns: lat.max_ns,
        censored: lat.censored,
        censored_ns: lat.censored_ns,
        ..Rep::counted(span.wall_s, span.cpu_total_s(), thread_ops)
    })
}

/// Numbers the repetitions in order, from 0.
fn stamp(mut reps: Vec<Rep>) -> Vec<Rep> {
    for (i, r) in reps.iter_mut().enumerate() {
        r.rep = i as u32;
    }
    reps
}

/// One repetition of a one-thread cost: nanoseconds per call of an
/// operation, on a worker thread measured through [`crate::core::measure`].
/// `make` builds the worker's state on the worker (so that what must be
/// per-thread, such as an RCU reader's registration, is); `batch(state,
/// n)` runs the operation `n` times. During the settle period the worker
/// warms up and sizes its batches to about a twentieth of the window; in
/// the window it runs batch after batch. The cost is the fastest batch
/// that ran wholly inside the window (on a shared machine interruptions
/// only ever add time, so the fastest batch is the least disturbed
/// estimate), or the window's mean where no batch fitted; throughput and
/// CPU time cover the window itself.
pub fn batched_cost<S>(
    secs: f64,
    make: impl FnOnce() -> S + Send,
    mut batch: impl FnMut(&mut S, u64) + Send,
) -> std::result::Result<Rep, String> {
    use crate::core::clock::{ticks, ticks_to_s};
    use crate::core::measure::{settle_for, Hooks, Window};
    let window = Window::new(1);
    let target = secs / 20.0;
    let (span, (measured, best)) = std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("batched".into())
            .spawn_scoped(s, || {
                let mut state = make();
                let mut rec = window.enter(0);
                let mut n = 1_000u64;
                loop {
                    let t0 = ticks();
                    batch(&mut state, n);
                    let t1 = ticks();
                    // Sizing normally ends in the settle period; a batch
                    // that ran into the window counts there all the same.
                    rec.batch(n, t0, t1);
                    if ticks_to_s(t1 - t0) >= target || n >= 1 << 34 {
                        break;
                    }
                    n *= 2;
                }
                let mut best = f64::INFINITY;
                loop {
                    let t0 = ticks();
                    batch(&mut state, n);
                    let t1 = ticks();
                    if rec.share(t0, t1) >= 1.0 {
                        best = best.min(ticks_to_s(t1 - t0) * 1e9 / n as f64);
                    }
                    if !rec.batch(n, t0, t1) {
                        break;
                    }
                }
                (rec.finish(), best)
            })
            .expect("spawning the batched worker");
        let span = window.measure(settle_for(secs), secs, Hooks::default());
        (span, worker.join().expect("the batched worker panicked"))
    });
    let rep = rep_of(&span, std::slice::from_ref(&measured))?;
    // A window too short for one whole batch (a tiny --secs on a busy
    // machine) still has its mean cost over the window.
    Ok(Rep {
        ns_per_op: if best.is_finite() {
            best
        } else {
            rep.ns_per_op
        },
        ..rep
    })
}
