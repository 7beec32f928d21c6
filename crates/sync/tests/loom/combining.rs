//! `combining` (flat combining) under loom. The mutex keeps its data and
//! every request's closure and outcome in loom-checked cells, so loom
//! reports any access to them that the protocol leaves unordered: two
//! combiners on the data at once, a combiner reading a job before its
//! publication, a requester reading its outcome before the `DONE` that
//! should publish it.
//!
//! Each request adds one and returns (its thread, its round, the count it
//! made): each caller must get its own (thread, round) back, and the counts
//! seen must be exactly 1..=n, so every request ran exactly once.
//!
//! The models are not `harness::ModelLock`s: a delegation lock has no
//! acquire/release to hand out, only `apply`. Three threads run with one
//! preemption: with two, `increments::<3>(3, 1, Some(2))` was still running
//! after 5 minutes (the spinning waiters of `extra.rs`'s first section);
//! with one it explores about 4 200 executions, and two rounds each about
//! 130 000 (17 s). Two threads take three preemptions easily.
//!
//! Teeth, checked by breaking `combining.rs` on purpose once each (and
//! then restoring it). With "Causality violation: Concurrent write
//! accesses to `UnsafeCell`": the `DONE` store made Relaxed (all eight
//! models failed); the publishing CAS made Relaxed, the lock word's
//! release made Relaxed, and `DONE` stored before the request ran (each
//! failed all six models there were then). `try_against_apply` and
//! `nested_two` caught the first two only once their requests yielded
//! inside (loom's search had not otherwise reached a request published
//! during another thread's tenure). With "Model exceeded maximum number
//! of branches" (a request never served): a scan that skips slot 0, in
//! the four of those six models that use slot 0.

use crate::harness;
use locklab::CombiningMutex;
use loom::sync::Arc;

/// `threads` threads each apply `rounds` increments on a mutex with
/// `SLOTS` slots, under `preemptions` preemptions at most (default: the
/// harness's bound).
fn increments<const SLOTS: usize>(threads: usize, rounds: usize, preemptions: Option<usize>) {
    let mut b = harness::builder();
    if preemptions.is_some() {
        b.preemption_bound = preemptions;
    }
    b.check(move || {
        let m = Arc::new(CombiningMutex::<usize, SLOTS>::with_slots(0));
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let m = m.clone();
                loom::thread::spawn(move || {
                    let mut counts = Vec::new();
                    for r in 0..rounds {
                        let (who, round, count) = m.apply(move |v| {
                            *v += 1;
                            (t, r, *v)
                        });
                        assert_eq!((who, round), (t, r), "another request's result");
                        counts.push(count);
                    }
                    counts
                })
            })
            .collect();
        let mut seen: Vec<usize> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        seen.sort_unstable();
        assert_eq!(seen, (1..=threads * rounds).collect::<Vec<_>>());
        assert!(!m.is_locked(), "left locked");
        assert_eq!(m.try_apply(|v| *v), Some(threads * rounds), "lost update");
    });
}

#[test]
fn combining_two_threads_twice() {
    increments::<2>(2, 2, None);
}

/// Two threads have at most one waiter, so a deeper bound stays cheap.
#[test]
fn combining_two_threads_three_preemptions() {
    increments::<2>(2, 2, Some(3));
}

#[test]
fn combining_three_threads() {
    increments::<3>(3, 1, Some(1));
}

#[test]
fn combining_three_threads_twice() {
    increments::<3>(3, 2, Some(1));
}

/// One slot for two threads: a thread may find it taken and have to get
/// its request served by taking the lock word itself.
#[test]
fn combining_more_threads_than_slots() {
    increments::<1>(2, 2, Some(3));
}

/// Three threads, one slot: at most one request published at a time.
#[test]
fn combining_three_threads_one_slot() {
    increments::<1>(3, 1, Some(1));
}

/// `try_apply` against an `apply`: the count is exact whether or not the
/// attempt got in, and the attempt serves what was published meanwhile.
#[test]
fn combining_try_against_apply() {
    harness::builder().check(|| {
        let m = Arc::new(CombiningMutex::<usize, 2>::with_slots(0));
        let m2 = m.clone();
        let h = loom::thread::spawn(move || {
            m2.apply(|v| {
                *v += 1;
                *v
            })
        });
        let mine = m.try_apply(|v| {
            *v += 10;
            // Let the other thread find the lock word held and publish
            // (loom's search does not reverse that order by itself).
            loom::thread::yield_now();
            *v
        });
        let theirs = h.join().unwrap();
        match (mine, theirs) {
            // Ours first (and theirs maybe served by our tenure), or theirs.
            (Some(10), 11) | (Some(11), 1) => assert_eq!(m.try_apply(|v| *v), Some(11)),
            (None, 1) => assert_eq!(m.try_apply(|v| *v), Some(1)),
            other => panic!("impossible outcome {other:?}"),
        }
    });
}

/// A request on A that applies on B (so B's request may be published
/// from A's combiner, on another thread than its caller's), against a
/// plain request on B.
#[test]
fn combining_nested_two() {
    harness::builder().check(|| {
        let a = Arc::new(CombiningMutex::<usize, 1>::with_slots(0));
        let b = Arc::new(CombiningMutex::<usize, 1>::with_slots(0));
        let (a1, b1) = (a.clone(), b.clone());
        let h = loom::thread::spawn(move || {
            a1.apply(|x| {
                *x += 1;
                loom::thread::yield_now();
                b1.apply(|y| {
                    *y += 1;
                    *y
                })
            })
        });
        let mine = b.apply(|y| {
            *y += 1;
            loom::thread::yield_now();
            *y
        });
        let theirs = h.join().unwrap();
        let mut both = [mine, theirs];
        both.sort_unstable();
        assert_eq!(both, [1, 2]);
        assert_eq!(a.try_apply(|x| *x), Some(1));
        assert_eq!(b.try_apply(|y| *y), Some(2));
    });
}
