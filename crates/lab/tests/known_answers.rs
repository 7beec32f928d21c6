//! Known-answer tests of the lab's measurement harness: cases whose answer
//! is known on any machine, so that a harness that clamps, opens its window
//! late or divides over different intervals fails here, whatever the
//! machine's speed.
//!
//! Each asserts a relation (a wait at least about as long as the holder
//! sleeps; a rate that does not depend on the window's length; the shares
//! of a FIFO lock; CPU time no larger than the cores can give), never an
//! absolute timing. They run one at a time (the `SERIAL` lock): two
//! contention benchmarks sharing two cores would measure each other.

use locklab_lab::core::lablock::Raw;
use locklab_lab::core::results::{median, Rep};
use locklab_lab::studies::shared::contention::runner::{self as spin, SpinConfig};
use locklab_lab::studies::shared::contention::workload::DelayDist;
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

type Ticket = Raw<locklab::RawTicket>;

fn cfg(cs_ns: u64, secs: f64) -> SpinConfig {
    SpinConfig {
        cs_ns,
        cs_lines: 1,
        delay_ns: 0,
        delay_dist: DelayDist::Const,
        secs,
        pin: false,
        stall_every: 0,
        stall_ns: 0,
        topology: None,
    }
}

/// One repetition of the contention benchmark on a ticket lock.
fn run(c: &SpinConfig, threads: u32) -> Rep {
    spin::run_rep::<Ticket>(c, threads).expect("a repetition measures")
}

fn cores() -> u32 {
    locklab_lab::core::machine::cpus() as u32
}

/// A holder that sleeps 2 ms in every critical section makes the other
/// thread wait about that long for every acquisition: the waits' median
/// is of the order of the hold (a sleep only ever oversleeps, so at least
/// half of it; and a waiter of a two-thread FIFO lock waits for one hold,
/// not for ten), and the longest wait is at least one hold.
#[test]
fn a_holder_that_sleeps_makes_its_waiter_wait_that_long() {
    let _s = serial();
    let hold_ns = 2_000_000u64;
    let c = SpinConfig {
        stall_every: 1,
        stall_ns: hold_ns,
        ..cfg(0, 0.2)
    };
    let r = run(&c, 2);
    assert!(r.total_ops >= 10, "too few acquisitions to judge: {r:?}");
    let (p50, max) = (r.p50_ns as f64, r.max_ns as f64);
    let h = hold_ns as f64;
    assert!(
        p50 >= 0.5 * h && p50 <= 10.0 * h,
        "median wait {p50} ns for a {h} ns hold (p99 {}, max {max})",
        r.p99_ns
    );
    assert!(max >= 0.9 * h, "longest wait {max} ns for a {h} ns hold");
}

/// An oversubscribed FIFO spin lock (four threads a core): its rate is a
/// property of the lock and the scheduler, not of how long the lab looks.
/// Medians of three repetitions of a short and a four times longer window,
/// interleaved, agree within a factor of 2.5 (a harness that counts the
/// burst before the first preemption gives ratios of ten and more).
#[test]
fn an_oversubscribed_fifo_lock_has_a_rate_independent_of_the_window() {
    let _s = serial();
    let threads = 4 * cores();
    let (mut short, mut long) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        short.push(run(&cfg(100, 0.1), threads).throughput_ops_s);
        long.push(run(&cfg(100, 0.4), threads).throughput_ops_s);
    }
    let (s, l) = (median(&short), median(&long));
    eprintln!("{threads} threads: 0.1 s {short:?}, 0.4 s {long:?} ops/s");
    assert!(
        s > 0.0 && l > 0.0 && s / l < 2.5 && l / s < 2.5,
        "0.1 s windows: {short:?} ops/s; 0.4 s windows: {long:?} ops/s"
    );
}

/// A FIFO lock serves its waiters in turn. With as many threads as cores,
/// each holder sleeping 50 µs in its critical section (so that the
/// waiters' turns do not hang on the scheduler), every thread's share of
/// the window is the same. With four threads a core and no sleep, a turn
/// goes to a waiter that is often not running, so the lock makes only tens
/// of hand-overs a second; still every thread gets its turns, none many
/// more than another (a harness that counts from each thread's own start,
/// before the others run, gives one thread thousands and the rest one or
/// none).
#[test]
fn a_fifo_lock_in_steady_state_shares_evenly() {
    let _s = serial();
    let threads = cores().max(2);
    let c = SpinConfig {
        stall_every: 1,
        stall_ns: 50_000,
        ..cfg(100, 0.3)
    };
    let r = run(&c, threads);
    let min = *r.thread_ops.iter().min().unwrap() as f64;
    let max = *r.thread_ops.iter().max().unwrap() as f64;
    eprintln!("{threads} threads, 50 µs sleeps: {:?}", r.thread_ops);
    assert!(
        r.jain > 0.95 && min >= 0.8 * max,
        "{threads} threads: Jain {} over {:?}",
        r.jain,
        r.thread_ops
    );
    let threads = 4 * cores();
    let r = run(&cfg(100, 0.3), threads);
    eprintln!("{threads} threads: {:?}", r.thread_ops);
    let min = *r.thread_ops.iter().min().unwrap();
    let max = *r.thread_ops.iter().max().unwrap();
    assert!(
        min >= 1 && max <= 3 * min + 2,
        "{threads} threads: {:?} acquisitions",
        r.thread_ops
    );
}

/// CPU time and operations cover the same window: the threads cannot have
/// used more CPU in it than the cores give, and a thread that spins for
/// the whole window (one thread, nothing to wait for) used about all of it.
#[test]
fn cpu_time_is_measured_over_the_window() {
    let _s = serial();
    let threads = 4 * cores();
    let r = run(&cfg(100, 0.2), threads);
    let most = f64::from(cores()) * r.wall_s;
    assert!(
        r.cpu_s <= most * 1.05 + 0.002,
        "{threads} threads used {} CPU-s in a {} s window on {} cores",
        r.cpu_s,
        r.wall_s,
        cores()
    );
    let one = run(&cfg(100, 0.2), 1);
    assert!(
        one.cpu_s <= one.wall_s * 1.05 + 0.002 && one.cpu_s >= one.wall_s * 0.5,
        "one busy thread used {} CPU-s in a {} s window",
        one.cpu_s,
        one.wall_s
    );
}

/// However a mutex runs its critical sections, it runs one at a time: a
/// section that sleeps a known hold H starts at most once per H, so the
/// acquisitions counted in a window of W seconds (each counted where its
/// section began) are at most W/H + 1, whatever the threads, cores and
/// scheduler. The delegation lock (`combining`, whose combiner sleeps
/// through the other threads' sections one after another) is held to that
/// bound like a ticket lock; four threads whose sections overlapped would
/// make about four times as many. Its waits are of the hold's order too:
/// some request waited at least one hold for the sections before it.
#[test]
fn a_mutex_whose_sections_sleep_starts_at_most_one_per_hold() {
    let _s = serial();
    let hold_ns = 1_000_000u64;
    let c = SpinConfig {
        stall_every: 1,
        stall_ns: hold_ns,
        ..cfg(0, 0.2)
    };
    let h = hold_ns as f64 * 1e-9;
    let threads = 4;
    for (name, r) in [
        (
            "combining",
            spin::run_rep::<locklab_lab::core::lablock::Combining>(&c, threads),
        ),
        ("ticket", spin::run_rep::<Ticket>(&c, threads)),
    ] {
        let r = r.expect("a repetition measures");
        // The time-stamp counter's rate is calibrated against the system
        // clock the sleeps use: a margin of 2 % for the two to disagree.
        let most = r.wall_s / h * 1.02 + 1.0;
        eprintln!(
            "{name}: {} sections in {} s of 1 ms holds (at most {most:.0}), max wait {} ns",
            r.total_ops, r.wall_s, r.max_ns
        );
        assert!(
            r.total_ops >= 10,
            "{name}: too few acquisitions to judge: {r:?}"
        );
        assert!(
            r.total_ops as f64 <= most,
            "{name}: {} sections began in {} s of {hold_ns} ns holds: more than one at a time",
            r.total_ops,
            r.wall_s
        );
        assert!(
            r.max_ns as f64 >= 0.9 * hold_ns as f64,
            "{name}: the longest wait, {} ns, is under one hold of {hold_ns} ns",
            r.max_ns
        );
    }
}
