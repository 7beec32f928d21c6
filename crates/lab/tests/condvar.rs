//! `bench condvar` held to known answers, and its command line.
//!
//! The runner's figures must give answers known on any machine: producers
//! that sleep a known time between items bound the rate (never more than
//! they can put, at least a fraction of it); the rate does not depend on
//! the window's length; what consumers took in the window is what
//! producers put in it, give or take what the queue and the threads hold
//! at its edges; and every item arrives exactly once, so that a queue that
//! duplicates, drops or sleeps through a wake-up fails its repetition
//! (queues broken on purpose below). Relations only, never an absolute
//! timing; the measuring tests run one at a time (`SERIAL`).

mod common;

use common::{assert_bad_input, assert_rejected, locklab, stderr, stdout, tmp};
use locklab_lab::core::results::{median, Rep};
use locklab_lab::studies::condvar::queues::{
    BoundedQueue, LocklabQueue, ParkingLotQueue, Signal, StdQueue,
};
use locklab_lab::studies::condvar::runner::{run_rep, CondvarConfig, CondvarMetrics, Pair};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn cfg(capacity: usize, signal: Signal, producer_sleep_ns: u64, secs: f64) -> CondvarConfig {
    CondvarConfig {
        capacity,
        signal,
        producer_sleep_ns,
        secs,
    }
}

fn pair(producers: u32, consumers: u32) -> Pair {
    Pair {
        producers,
        consumers,
    }
}

/// One repetition of every implementation.
fn each_impl(c: &CondvarConfig, p: Pair) -> Vec<(&'static str, Rep)> {
    let run = |name, f: fn(&CondvarConfig, Pair) -> Result<Rep, String>| {
        (name, f(c, p).unwrap_or_else(|e| panic!("{name} {p}: {e}")))
    };
    vec![
        run("locklab", run_rep::<LocklabQueue>),
        run("std", run_rep::<StdQueue>),
        run("parking_lot", run_rep::<ParkingLotQueue>),
    ]
}

/// What was taken in the window against what was put in it: an item
/// taken in the window was put in it, or was queued when it opened (at
/// most the capacity), or was in a push that returned only after it
/// closed (one per producer); an item put in the window was taken in it,
/// or was still queued at its close, or in a pop that returned after it
/// closed (one per consumer), or was taken before it opened by a consumer
/// faster than its producer's return (one per producer).
fn assert_conserved(name: &str, r: &Rep, capacity: usize, p: Pair) {
    let m: CondvarMetrics = r.metrics_of().expect("the study's metrics");
    let put: u64 = m.produced.iter().sum();
    let slack = capacity as u64 + u64::from(p.producers + p.consumers);
    assert!(
        r.total_ops <= put + slack && put <= r.total_ops + slack,
        "{name} {p}: {} taken and {put} put in the window, more than {slack} apart",
        r.total_ops
    );
    assert_eq!(m.put, m.taken, "{name} {p}: {m:?}");
}

/// Producers that sleep 2 ms after each item can put at most one item per
/// sleep each (a sleep never ends early), plus one at each edge of the
/// window: the rate is at most P/2 ms + P/window. And since consumers are
/// waiting for every item, they take at least a quarter of that (a busy
/// machine oversleeps, not by four times).
#[test]
fn producers_that_sleep_bound_the_rate() {
    let _s = serial();
    let (d, w) = (2_000_000u64, 0.3);
    for p in [pair(1, 1), pair(2, 1)] {
        let c = cfg(16, Signal::Under, d, w);
        for (name, r) in each_impl(&c, p) {
            let most = f64::from(p.producers) * (1e9 / d as f64 + 1.0 / r.wall_s);
            let least = 0.25 * f64::from(p.producers) * 1e9 / d as f64;
            eprintln!(
                "{name} {p}: {:.1} items/s (at most {most:.1})",
                r.throughput_ops_s
            );
            assert!(
                r.throughput_ops_s <= most && r.throughput_ops_s >= least,
                "{name} {p}: {} items/s with producers sleeping {d} ns (allowed {least:.1} to {most:.1})",
                r.throughput_ops_s
            );
            assert_conserved(name, &r, c.capacity, p);
            // Consumers wait for nearly every item: the waits count.
            let m: CondvarMetrics = r.metrics_of().unwrap();
            assert!(m.consumer_waits > 0, "{name} {p}: {m:?}");
        }
    }
}

/// A rate is a property of the queue, not of how long the lab looks:
/// medians of three 0.2 s and three 1 s windows, interleaved, agree within
/// a factor of 2.5 (a harness that counted the settle period, or the
/// items moved after the window, would not scale with it).
#[test]
fn the_rate_does_not_depend_on_the_window() {
    let _s = serial();
    let p = pair(2, 2);
    let (mut short, mut long) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for (secs, into) in [(0.2, &mut short), (1.0, &mut long)] {
            let r = run_rep::<LocklabQueue>(&cfg(16, Signal::Under, 0, secs), p).unwrap();
            assert_conserved("locklab", &r, 16, p);
            into.push(r.throughput_ops_s);
        }
    }
    let (s, l) = (median(&short), median(&long));
    eprintln!("0.2 s windows {short:?}, 1 s windows {long:?} items/s");
    assert!(
        s > 0.0 && l > 0.0 && s / l < 2.5 && l / s < 2.5,
        "0.2 s windows: {short:?}; 1 s windows: {long:?} items/s"
    );
}

/// Every implementation, both placements of the notify, a queue of two
/// items that keeps producers and consumers waiting: every item arrives
/// exactly once (the repetition would fail otherwise), and the window's
/// counts agree.
#[test]
fn every_item_arrives_exactly_once() {
    let _s = serial();
    let p = pair(3, 2);
    for signal in [Signal::Under, Signal::After] {
        let c = cfg(2, signal, 0, 0.1);
        for (name, r) in each_impl(&c, p) {
            assert!(r.total_ops > 0, "{name}: nothing moved");
            assert_eq!(r.thread_ops.len(), 2, "one count per consumer");
            assert_conserved(name, &r, c.capacity, p);
        }
    }
}

/// A parking_lot queue that, every `EVERY`th pop, breaks a rule.
struct Broken<const DUPLICATE: bool> {
    inner: ParkingLotQueue,
    pops: AtomicU64,
    last: AtomicU64,
}

const EVERY: u64 = 1000;

impl<const DUPLICATE: bool> BoundedQueue for Broken<DUPLICATE> {
    fn with_capacity(capacity: usize) -> Self {
        Broken {
            inner: ParkingLotQueue::with_capacity(capacity),
            pops: AtomicU64::new(0),
            last: AtomicU64::new(0),
        }
    }

    fn push(&self, item: u64, signal: Signal) -> Option<u32> {
        self.inner.push(item, signal)
    }

    fn pop(&self, signal: Signal) -> Option<(u64, u32)> {
        let k = self.pops.fetch_add(1, Ordering::Relaxed);
        if k % EVERY == EVERY - 1 {
            if DUPLICATE {
                // The previous item again, the queue untouched.
                return Some((self.last.load(Ordering::Relaxed), 0));
            }
            // One item taken and dropped.
            self.inner.pop(signal)?;
        }
        let (item, waits) = self.inner.pop(signal)?;
        self.last.store(item, Ordering::Relaxed);
        Some((item, waits))
    }

    fn stop(&self) {
        self.inner.stop()
    }

    fn drain(&self) -> Vec<u64> {
        self.inner.drain()
    }
}

/// A bounded queue whose push never notifies: the consumers sleep through
/// every item after the first wait, until the queue stops.
struct Silent {
    state: parking_lot::Mutex<(VecDeque<u64>, bool)>,
    not_empty: parking_lot::Condvar,
    not_full: parking_lot::Condvar,
    capacity: usize,
}

impl BoundedQueue for Silent {
    fn with_capacity(capacity: usize) -> Self {
        Silent {
            state: parking_lot::Mutex::new((VecDeque::new(), false)),
            not_empty: parking_lot::Condvar::new(),
            not_full: parking_lot::Condvar::new(),
            capacity,
        }
    }

    fn push(&self, item: u64, _signal: Signal) -> Option<u32> {
        let mut g = self.state.lock();
        while g.0.len() >= self.capacity && !g.1 {
            self.not_full.wait(&mut g);
        }
        if g.1 {
            return None;
        }
        g.0.push_back(item);
        Some(0) // and no notify: the planted lost wake-up
    }

    fn pop(&self, _signal: Signal) -> Option<(u64, u32)> {
        let mut g = self.state.lock();
        while g.0.is_empty() && !g.1 {
            self.not_empty.wait(&mut g);
        }
        if g.1 {
            return None;
        }
        let item = g.0.pop_front()?;
        drop(g);
        self.not_full.notify_one();
        Some((item, 0))
    }

    fn stop(&self) {
        self.state.lock().1 = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
    }

    fn drain(&self) -> Vec<u64> {
        self.state.lock().0.drain(..).collect()
    }
}

#[test]
fn a_queue_that_duplicates_or_drops_items_fails_its_repetition() {
    let _s = serial();
    let c = cfg(4, Signal::After, 0, 0.1);
    let e = run_rep::<Broken<true>>(&c, pair(2, 2)).expect_err("a duplicating queue passed");
    assert!(e.contains("reordered or duplicated"), "{e}");
    let e = run_rep::<Broken<false>>(&c, pair(2, 2)).expect_err("a dropping queue passed");
    assert!(e.contains("exactly once") && e.contains("lost"), "{e}");
}

/// The lost wake-up leaves every thread asleep: the repetition fails in
/// bounded time (the stall limit, 2 s, after the window) instead of
/// hanging, and says why.
#[test]
fn a_queue_that_loses_wake_ups_fails_instead_of_hanging() {
    let _s = serial();
    let t = Instant::now();
    let e = run_rep::<Silent>(&cfg(4, Signal::After, 0, 0.1), pair(1, 1))
        .expect_err("a queue that never wakes its consumers passed");
    assert!(e.contains("lost wake-up"), "{e}");
    assert!(t.elapsed().as_secs_f64() < 30.0, "{:?}", t.elapsed());
}

#[test]
fn bad_input_is_one_line_and_touches_no_database() {
    let (_d, db) = tmp();
    for (args, needle) in [
        (
            &["--pairs", "0x1"][..],
            "'0x1' is not a pairing: allowed PxC",
        ),
        (&["--pairs", "4"][..], "'4' is not a pairing"),
        (&["--pairs", "1x129"][..], "each 1 to 128"),
        (&["--pairs", "1x1,,2x2"][..], "empty pairing"),
        (
            &["--capacity", "0"][..],
            "'0' is not a queue capacity: allowed 1 to",
        ),
        (&["--capacity", "-3"][..], "'-3' is not a queue capacity"),
        (
            &["--impls", "locklab,pthread"][..],
            "unknown implementation 'pthread'; allowed all, locklab, std, parking_lot",
        ),
        (
            &["--signal", "sometimes"][..],
            "'sometimes' is not where to signal: allowed under, after",
        ),
        (
            &["--producer-sleep-ns", "-5"][..],
            "'-5' is a negative duration",
        ),
        (&["--secs", "0"][..], "'0' seconds is out of range"),
        (&["--reps", "0"][..], "'0' repetitions"),
    ] {
        let mut a = vec!["bench", "condvar"];
        a.extend_from_slice(args);
        assert_rejected(&db, &a, needle);
    }
    // An existing database is left as it was.
    let o = locklab(
        &db,
        &[
            "bench", "condvar", "--impls", "std", "--pairs", "1x1", "--secs", "0.02", "--reps",
            "1", "-q",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let before = std::fs::read(&db).unwrap();
    assert_bad_input(
        &locklab(&db, &["bench", "condvar", "--pairs", "2x0"]),
        "'2x0'",
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        before,
        "a rejected command changed the database"
    );
}

#[test]
fn a_run_is_stored_shown_listed_and_exported() {
    let _s = serial();
    let (_d, db) = tmp();
    let o = locklab(
        &db,
        &[
            "bench",
            "condvar",
            "--pairs",
            "1x2,2x1",
            "--signal",
            "under,after",
            "--secs",
            "0.05",
            "--reps",
            "2",
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3 * 2 * 2, "impls × pairings × placements");
    for p in points {
        for key in [
            "pairing",
            "items_s",
            "cpu_ns_per_item",
            "waits_per_item",
            "ratio_to_best_peer",
        ] {
            assert!(!p[key].is_null(), "{key} missing in {p}");
        }
        assert_eq!(p["reps"], 2);
        assert!(
            p["repetitions"][0]["condvar"]["put"].as_u64().unwrap() > 0,
            "{p}"
        );
    }
    let peer = points[0]["ratio_to_best_peer"]["peer"].as_str().unwrap();
    assert!(["std", "parking_lot"].contains(&peer), "{peer}");
    assert_eq!(v["run"]["complete"], true);

    let text = stdout(&locklab(&db, &["show", "last"]));
    for needle in [
        "items taken per second",
        "notify under the mutex",
        "notify after unlocking",
        "1x2",
        "VERDICT",
        "vs the best peer",
    ] {
        assert!(text.contains(needle), "{needle:?} missing in\n{text}");
    }
    let runs = stdout(&locklab(&db, &["runs"]));
    assert!(runs.contains("bench condvar"), "{runs}");
    let csv = locklab(&db, &["show", "last", "--format", "csv"]);
    assert_eq!(csv.status.code(), Some(0), "{}", stderr(&csv));
    let csv = stdout(&csv);
    assert!(
        csv.contains("param.producers") && csv.contains("parking_lot"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), 1 + 12, "{csv}");
    let again = stdout(&locklab(&db, &["show", "last", "--json"]));
    let again: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(
        again["points"], v["points"],
        "show must print what bench stored"
    );
}
