//! The adaptive policy (glibc's x86 elision) against scripted hardware:
//! which aborts are retried, which end the attempts, how many acquisitions
//! then skip elision, and that skipping changes nothing about exclusion.

use super::*;

/// Distinct numbers, so a test sees which tunable was applied.
const TUNED: Tunables = Tunables {
    skip_lock_busy: 2,
    skip_lock_internal_abort: 5,
    skip_trylock_internal_abort: 4,
};

type AdaptiveTest = Elided<Probe<RawTicket>, Scripted, Adaptive>;

fn adaptive(
    script: impl IntoIterator<Item = Result<(), Abort>>,
    then: Result<(), Abort>,
    tunables: Tunables,
) -> AdaptiveTest {
    Elided::with_policy(
        Probe::INIT,
        Scripted::new(script, then),
        Adaptive::with_tunables(tunables),
    )
}

/// Locks and releases `l` once on this thread; the outcome.
fn lock_once<P: Policy>(l: &Elided<Probe<RawTicket>, Scripted, P>) -> Outcome {
    let (g, o) = l.lock_with_outcome();
    assert_eq!(g.is_transaction(), o.path == Path::Transaction);
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
    o
}

#[test]
fn the_defaults_are_glibcs() {
    assert_eq!(Tunables::default(), Tunables::GLIBC);
    assert_eq!(
        Tunables::GLIBC,
        Tunables {
            skip_lock_busy: 3,
            skip_lock_internal_abort: 3,
            skip_trylock_internal_abort: 3,
        }
    );
    assert_eq!(DEFAULT_THRESHOLD, 3, "glibc.elision.tries");
    let l = AdaptiveElided::<RawClh>::new();
    assert_eq!(l.policy().tunables(), Tunables::GLIBC);
    assert_eq!(l.policy().skips_left(), 0);
    assert_eq!(l.threshold(), DEFAULT_THRESHOLD);
    assert_eq!(<AdaptiveElided<RawClh>>::INFO.name, "elide-adaptive(clh)");
    assert_eq!(<Elided<RawClh>>::INFO.name, "elide(clh)");
    let park = <AdaptiveElided<SpinPark<RawTicketBackoff>>>::INFO;
    assert_eq!(park.name, "elide-adaptive(spin-park(ticket-backoff))");
    assert!(park.blocking && !park.fair);
}

#[test]
fn a_busy_lock_skips_elision_for_skip_lock_busy_acquisitions() {
    // The first attempt finds the lock busy; every later one would start.
    let l = adaptive([Err(Abort::LOCK_BUSY)], Ok(()), TUNED);
    assert_eq!(
        lock_once(&l),
        outcome(Path::Fallback, &[Abort::LOCK_BUSY]),
        "a busy lock ends the attempts at once"
    );
    assert_eq!(l.policy().skips_left(), TUNED.skip_lock_busy);
    for left in (0..TUNED.skip_lock_busy).rev() {
        assert_eq!(lock_once(&l), outcome(Path::Skipped, &[]));
        assert_eq!(l.policy().skips_left(), left);
    }
    assert_eq!(l.htm.begins(), 1, "no attempt while skipping");
    assert_eq!(l.fallback().locks(), 1 + TUNED.skip_lock_busy as usize);
    assert_eq!(
        lock_once(&l),
        outcome(Path::Transaction, &[]),
        "then elides"
    );
    assert_eq!(l.htm.begins(), 2);
}

#[test]
fn an_abort_with_the_retry_bit_clear_skips_for_skip_lock_internal_abort() {
    for abort in [CAPACITY, NO_REASON, Abort::xabort(NESTED), Abort::xabort(1)] {
        assert!(!abort.retry && !abort.is_lock_busy());
        let l = adaptive([Err(abort)], Ok(()), TUNED);
        assert_eq!(lock_once(&l), outcome(Path::Fallback, &[abort]), "{abort}");
        assert_eq!(l.policy().skips_left(), TUNED.skip_lock_internal_abort);
        for _ in 0..TUNED.skip_lock_internal_abort {
            assert_eq!(lock_once(&l).path, Path::Skipped);
        }
        assert_eq!(lock_once(&l).path, Path::Transaction, "{abort}");
    }
}

#[test]
fn aborts_with_the_retry_bit_set_are_retried_at_once_up_to_the_threshold() {
    // Two retryable aborts, then a transaction: no skip, and no wait for
    // the lock between attempts (the only read of the lock is the one
    // inside the transaction that started).
    let l = adaptive([Err(CONFLICT), Err(RETRY)], Ok(()), TUNED);
    assert_eq!(
        lock_once(&l),
        outcome(Path::Transaction, &[CONFLICT, RETRY])
    );
    assert_eq!(
        l.fallback().peeks(),
        1,
        "waited for the lock between attempts"
    );
    assert_eq!(l.policy().skips_left(), 0);
    // Retryable aborts only: the threshold's attempts, then the lock, and
    // the count is left alone (as glibc's x86 code leaves it).
    for threshold in 1..=4 {
        let l = adaptive([], Err(CONFLICT), TUNED).with_threshold(threshold);
        let aborts = vec![CONFLICT; threshold as usize];
        assert_eq!(lock_once(&l), outcome(Path::Fallback, &aborts));
        assert_eq!(l.fallback().peeks(), 0);
        assert_eq!(l.policy().skips_left(), 0);
        assert_eq!(lock_once(&l).aborts, threshold, "still attempting");
    }
    // A retryable abort, then one that is not: the second ends it.
    let l = adaptive([Err(CONFLICT), Err(CAPACITY)], Ok(()), TUNED);
    assert_eq!(
        lock_once(&l),
        outcome(Path::Fallback, &[CONFLICT, CAPACITY])
    );
    assert_eq!(l.policy().skips_left(), TUNED.skip_lock_internal_abort);
}

#[test]
fn a_transaction_that_finds_the_lock_held_gives_up_without_waiting() {
    // Seed 002's policy waits for the lock and begins again (see
    // `a_transaction_that_finds_the_fallback_held_aborts_with_lock_busy`);
    // glibc's takes the lock at once and skips the next acquisitions.
    let _w = Watchdog::new("elide-adaptive lock busy", HANG);
    let l = adaptive([], Ok(()), TUNED);
    let (g, o) = lock_against_a_holder(&l);
    assert_eq!(
        l.htm.log(),
        [
            Event::Note("held"),
            Event::Begin(Ok(())),
            Event::AbortLockBusy,
            Event::Note("released"),
        ]
    );
    assert!(!g.is_transaction());
    assert_eq!(o, outcome(Path::Fallback, &[Abort::LOCK_BUSY]));
    assert_eq!(l.policy().skips_left(), TUNED.skip_lock_busy);
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };
    assert_eq!(l.fallback().locks(), 2, "the other thread's and this one");
}

#[test]
fn try_lock_skips_after_an_abort_it_cannot_retry() {
    // A retryable abort leaves the count alone.
    let l = adaptive([Err(CONFLICT)], Ok(()), TUNED);
    let (g, o) = l.try_lock_with_outcome().expect("free");
    assert_eq!(o, outcome(Path::Fallback, &[CONFLICT]));
    assert_eq!(l.policy().skips_left(), 0);
    // SAFETY: held, on this thread.
    unsafe { l.release(g) };

    // Capacity, and a busy lock, both set skip_trylock_internal_abort.
    for abort in [CAPACITY, Abort::LOCK_BUSY] {
        let l = adaptive([Err(abort)], Ok(()), TUNED);
        let (g, o) = l.try_lock_with_outcome().expect("free");
        assert_eq!(o, outcome(Path::Fallback, &[abort]));
        assert_eq!(l.policy().skips_left(), TUNED.skip_trylock_internal_abort);
        // Skipping: the fall-back is tried once, and it is held.
        assert!(l.try_lock_with_outcome().is_none(), "held by this thread");
        assert_eq!(l.htm.begins(), 1, "no attempt while skipping");
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        let (g, o) = l.try_lock_with_outcome().expect("free");
        assert_eq!(o, outcome(Path::Skipped, &[]));
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        assert_eq!(
            l.policy().skips_left(),
            TUNED.skip_trylock_internal_abort - 2
        );
        assert_eq!(l.htm.begins(), 1);
        assert_eq!(l.fallback().locks(), 2);
    }
}

#[test]
fn skipping_still_refuses_to_nest_inside_a_transaction() {
    let outer = elided([], Ok(()), 3);
    let inner = adaptive([Err(CAPACITY)], Ok(()), TUNED);
    assert_eq!(lock_once(&inner).path, Path::Fallback);
    let left = inner.policy().skips_left();
    assert!(left > 0);
    let (g, _) = outer.lock_with_outcome();
    assert!(g.is_transaction());
    for try_lock in [false, true] {
        // Inside a real transaction this aborts it; the scripted abort
        // returns, and `Elided` panics rather than go on.
        INSIDE.set(true);
        let again = catch_unwind(AssertUnwindSafe(|| {
            if try_lock {
                inner.try_lock_with_outcome().map(|(g, _)| g)
            } else {
                Some(inner.lock_with_outcome().0)
            }
        }));
        assert!(again.is_err());
    }
    assert_eq!(inner.fallback().locks(), 1, "the skip took no lock");
    assert_eq!(inner.policy().skips_left(), left, "and counted no skip");
    INSIDE.set(false);
    let _ = g;
}

#[test]
fn threads_exclude_each_other_while_the_skip_count_races() {
    // Hardware on which every `begin` aborts with the retry bit clear
    // (`Scripted::INIT`): every acquisition either aborts once and sets the
    // count, or skips and counts it down, from four threads at once, with
    // lost updates; the fall-back alone keeps them apart.
    hammer::<Elided<RawTicket, Scripted, Adaptive>>(4, 2_000);
    hammer::<Elided<RawTtas, Scripted, Adaptive>>(4, 2_000);
    // And through real RTM where the CPU has it, else its fall-back.
    hammer::<AdaptiveElided<RawClh>>(4, 2_000);
}
