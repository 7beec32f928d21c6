//! The one-line adoption: a program written for `parking_lot` builds and
//! runs on locklab after changing its `use` line alone.
//!
//! `adopt/parking_lot.rs` is that program (a mutex and a reader-writer lock
//! in `static`s built by `const fn new`, a `Condvar` queue with timed
//! waits, `MutexGuard`, `MappedMutexGuard` and the `RwLock` guards named in
//! signatures). `adopt/locklab.rs` is the same file with `use parking_lot::`
//! changed to `use locklab::`; a test below checks that this is the only
//! difference. Both are compiled into this test and run.

#[path = "adopt/locklab.rs"]
mod with_locklab;
#[path = "adopt/parking_lot.rs"]
mod with_parking_lot;

fn check(outcome: impl FnOnce() -> (usize, u64, usize, u64, bool)) {
    let (done, sum, workers, first, timed_out) = outcome();
    // Two producers made 50 jobs each, with the ids 1 to 100.
    assert_eq!(done, 100, "every job done exactly once");
    assert_eq!(sum, 100 * 101 / 2, "each id once");
    assert_eq!(workers, 3, "the write lock's change is seen");
    assert!((1..=100).contains(&first));
    assert!(timed_out, "a wait nobody notifies times out");
}

#[test]
fn the_program_runs_on_parking_lot() {
    check(|| {
        let o = with_parking_lot::run();
        (o.done, o.sum, o.workers, o.first, o.timed_out)
    });
}

#[test]
fn the_same_program_runs_on_locklab() {
    check(|| {
        let o = with_locklab::run();
        (o.done, o.sum, o.workers, o.first, o.timed_out)
    });
}

#[test]
fn the_two_programs_differ_in_the_use_line_only() {
    let theirs = include_str!("adopt/parking_lot.rs");
    let ours = include_str!("adopt/locklab.rs");
    let (theirs, ours): (Vec<_>, Vec<_>) = (theirs.lines().collect(), ours.lines().collect());
    assert_eq!(theirs.len(), ours.len(), "the same number of lines");
    let differ: Vec<_> = theirs
        .iter()
        .zip(&ours)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i + 1, *a, *b))
        .collect();
    assert_eq!(
        differ,
        [(1, "use parking_lot::{", "use locklab::{")],
        "only the use line may differ"
    );
}
