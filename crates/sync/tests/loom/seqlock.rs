//! `seqlock` under loom: a reader never keeps a torn copy. The data is a
//! two-word value `[x, x]` in loom atomics (so loom explores which write
//! each word's `Relaxed` load reads, including stale ones); a copy whose
//! words differ was torn and must have been thrown away.
//!
//! The reader's retry loop terminates under loom: each retry means the
//! count moved on, and there are finitely many writes. The models use both
//! `read` (the real retry loop) and a few `try_read` attempts.
//!
//! Teeth, checked by breaking `seqlock.rs` on purpose once each (and then
//! restoring it); each of the first four failed with "torn copy" (copies
//! such as `[0, 1]` and `[1, 2]`) in `seqlock_writer_vs_reader`,
//! `seqlock_try_read_vs_writer` and `seqcount_protects_callers_data`:
//! - `fence(Acquire)` dropped from `SeqCount::read_retry` (the second count
//!   load reads the stale even count while a word load read the next
//!   write's value);
//! - `fence(Release)` dropped from `SeqCount::write_begin` (the odd count
//!   is not ordered before the data stores);
//! - the final increment in `write_end` made `Relaxed` (a word load reads
//!   a value from before the write whose count the reader saw);
//! - the first count load (`try_read_begin`) made `Relaxed` (the same);
//! - `write` and `store` not taking the writer lock: "lost update" in
//!   `seqlock_two_writers_one_reader`.

use crate::harness;
use locklab::{SeqCount, SeqLock};
use loom::sync::atomic::{AtomicU64, Ordering::Relaxed};
use loom::sync::Arc;

fn check_pair(v: [u64; 2], last: &mut u64) {
    assert_eq!(v[0], v[1], "torn copy: {v:?}");
    assert!(v[0] >= *last, "went back from {last} to {}", v[0]);
    *last = v[0];
}

/// A writer stores `[1, 1]` then `[2, 2]`; the reader reads twice.
#[test]
fn seqlock_writer_vs_reader() {
    harness::builder().check(|| {
        let l = Arc::new(SeqLock::new([0u64; 2]));
        let w = l.clone();
        let writer = loom::thread::spawn(move || {
            w.store([1; 2]);
            w.write(|v| {
                assert_eq!(*v, [1; 2], "the writer's own copy");
                *v = [2; 2];
            });
        });
        let mut last = 0;
        for _ in 0..2 {
            check_pair(l.read(), &mut last);
        }
        writer.join().unwrap();
        assert_eq!(l.read(), [2; 2]);
    });
}

/// As above with bounded non-blocking attempts: `try_read` never returns a
/// torn copy, and a reader after the writer finished gets the last value.
#[test]
fn seqlock_try_read_vs_writer() {
    harness::builder().check(|| {
        let l = Arc::new(SeqLock::new([0u64; 2]));
        let w = l.clone();
        let writer = loom::thread::spawn(move || {
            w.store([1; 2]);
            w.store([2; 2]);
        });
        let mut last = 0;
        for _ in 0..3 {
            if let Some(v) = l.try_read() {
                check_pair(v, &mut last);
            }
        }
        writer.join().unwrap();
        assert_eq!(l.try_read(), Some([2; 2]));
    });
}

/// Two writers add one to both words through `write`: the writer lock must
/// serialize them (no lost update) while a reader checks the pair.
#[test]
fn seqlock_two_writers_one_reader() {
    harness::builder().check(|| {
        let l = Arc::new(SeqLock::new([0u64; 2]));
        let writers: Vec<_> = (0..2)
            .map(|_| {
                let l = l.clone();
                loom::thread::spawn(move || l.write(|v| *v = [v[0] + 1, v[1] + 1]))
            })
            .collect();
        let mut last = 0;
        check_pair(l.read(), &mut last);
        for h in writers {
            h.join().unwrap();
        }
        assert_eq!(l.read(), [2; 2], "lost update");
    });
}

/// The raw counter protecting the caller's own two atomics.
#[test]
fn seqcount_protects_callers_data() {
    harness::builder().check(|| {
        let s = Arc::new((SeqCount::new(), AtomicU64::new(0), AtomicU64::new(0)));
        let w = s.clone();
        let writer = loom::thread::spawn(move || {
            for i in 1..=2 {
                w.0.write_begin();
                w.1.store(i, Relaxed);
                w.2.store(i, Relaxed);
                w.0.write_end();
            }
        });
        let mut last = 0;
        for _ in 0..2 {
            let v = loop {
                let start = s.0.read_begin();
                let v = [s.1.load(Relaxed), s.2.load(Relaxed)];
                if !s.0.read_retry(start) {
                    break v;
                }
            };
            check_pair(v, &mut last);
        }
        writer.join().unwrap();
    });
}
