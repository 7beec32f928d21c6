//! The emulated kernel under every concurrency control: runs its set-ups,
//! then checks the kernel's invariants and what the programs saw.

use locklab_kernel::cc::{Bkl, Concurrency, Elide, ElideAdaptive, Fine, NoLock};
use locklab_kernel::check::{check_kernel, check_programs};
use locklab_kernel::stats::CoreStats;
use locklab_kernel::user::Program;
use locklab_kernel::{Config, Kernel, Monitor, RunResult, System};
use std::sync::Arc;
use std::time::Duration;

mod common;

/// Runs `sys` until every core made `per_core` system calls (or 20 s
/// passed), stops it and checks it; returns the run.
fn run_checked<C: Concurrency>(cc: C, sys: &System, per_core: u64) -> (Arc<Kernel<C>>, RunResult) {
    run_until(cc, sys, |m| {
        m.per_core().iter().all(|c| c.syscalls >= per_core)
    })
}

/// Runs `sys` until `done` says so (or 20 s passed), stops it and checks it.
fn run_until<C: Concurrency>(
    cc: C,
    sys: &System,
    done: impl Fn(&Monitor) -> bool,
) -> (Arc<Kernel<C>>, RunResult) {
    let _one = common::one_kernel_at_a_time();
    let cfg = Config {
        switch_ticks: 0,
        switch_inside: false,
        measure_hold: true,
    };
    let k = Arc::new(Kernel::boot(cc, sys, cfg).expect("boots"));
    let run = common::run_until(&k, sys, done);
    let v = check_kernel(&k);
    assert!(v.is_empty(), "{}: kernel invariants: {v}", k.variant());
    let v = check_programs(&k, &run);
    assert!(v.is_empty(), "{}: programs: {v}", k.variant());
    (k, run)
}

fn total(run: &RunResult) -> CoreStats {
    run.cores
        .iter()
        .copied()
        .fold(CoreStats::default(), CoreStats::plus)
}

fn clients_done(run: &RunResult) -> Vec<u64> {
    run.programs
        .iter()
        .filter_map(|p| match p {
            Program::Client(c) => Some(c.done),
            _ => None,
        })
        .collect()
}

fn bkl() -> Bkl<locklab::RawClh> {
    Bkl::new("clh")
}

/// Big locks whose waiters yield their CPU, for kernels with several
/// emulated cores: a test machine's CPUs are shared with other work, and a
/// FIFO spin lock whose next holder lost its CPU stalls everyone for a
/// scheduler tick (lock-waiter preemption), so plain spinning big locks
/// make multi-core tests take seconds instead of milliseconds.
fn bkl_yield() -> Bkl<locklab::SpinYield<locklab::RawClh>> {
    Bkl::new("spin-yield(clh)")
}

fn bkl_yield_ticket() -> Bkl<locklab::SpinYield<locklab::RawTicket>> {
    Bkl::new("spin-yield(ticket)")
}

#[test]
fn single_core_pingpong_runs_under_every_variant() {
    let sys = System::pingpong(1, 0.0, 1);
    for (name, done, st) in [
        ("none", {
            let (_, r) = run_checked(NoLock, &sys, 20_000);
            (clients_done(&r), total(&r))
        }),
        ("bkl", {
            let (_, r) = run_checked(bkl(), &sys, 20_000);
            (clients_done(&r), total(&r))
        }),
        ("fine", {
            let (_, r) = run_checked(Fine::new(), &sys, 20_000);
            (clients_done(&r), total(&r))
        }),
        ("elide", {
            let (_, r) = run_checked(Elide::<locklab::RawClh>::new("clh"), &sys, 20_000);
            (clients_done(&r), total(&r))
        }),
    ]
    .map(|(n, (d, s))| (n, d, s))
    {
        assert!(done[0] >= 5_000, "{name}: only {} round trips", done[0]);
        // One call and one reply_recv per round trip, each moving one
        // message, and each a direct switch to the other thread.
        assert!(
            st.transfers + 2 >= st.syscalls && st.syscalls >= 2 * done[0],
            "{name}: {st:?}"
        );
        assert!(st.switches + 2 >= st.syscalls, "{name}: {st:?}");
        assert_eq!(st.errors, 0, "{name}");
        assert!(st.holds > 0 && st.hold_ticks > 0, "{name}: {st:?}");
    }
}

#[test]
fn independent_pairs_on_several_cores_all_progress() {
    let sys = System::pingpong(2, 200.0, 2);
    for done in [
        clients_done(&run_checked(NoLock, &sys, 20_000).1),
        clients_done(&run_checked(bkl_yield(), &sys, 20_000).1),
        clients_done(&run_checked(bkl_yield_ticket(), &sys, 20_000).1),
        clients_done(&run_checked(Fine::new(), &sys, 20_000).1),
    ] {
        assert_eq!(done.len(), 2);
        assert!(done.iter().all(|&d| d > 0), "{done:?}");
    }
}

#[test]
fn a_shared_endpoint_stays_consistent_under_bkl_and_fine() {
    for (name, run) in [
        (
            "bkl",
            run_checked(bkl_yield(), &System::shared_endpoint(2, 100.0, 3), 20_000).1,
        ),
        (
            "fine",
            run_checked(Fine::new(), &System::shared_endpoint(2, 100.0, 3), 20_000).1,
        ),
        // More cores than CPUs: more interleavings of wake-ups.
        (
            "bkl3",
            run_checked(
                bkl_yield_ticket(),
                &System::shared_endpoint(3, 100.0, 3),
                2_000,
            )
            .1,
        ),
        (
            "fine3",
            run_checked(Fine::new(), &System::shared_endpoint(3, 100.0, 3), 2_000).1,
        ),
    ] {
        let st = total(&run);
        assert!(clients_done(&run).iter().sum::<u64>() > 500, "{name}");
        // Calls reach servers of other cores: some wake-ups cross cores and
        // cores go idle.
        assert!(st.idle_entries > 0, "{name}: {st:?}");
    }
}

#[test]
fn notifications_wake_threads_on_other_cores() {
    // Two cores, two handshake pairs crossing them. (With more emulated
    // cores than CPUs, a core thread that lost its CPU while holding a
    // fine-grained spin lock stalls the others for a scheduler slice, and a
    // short run can end before some pair's first handshake.)
    let sys = System::notify_ring(2);
    for run in [
        run_checked(bkl_yield(), &sys, 2_000).1,
        run_checked(Fine::new(), &sys, 2_000).1,
    ] {
        let rounds: Vec<u64> = run
            .programs
            .iter()
            .map(|p| match p {
                Program::Pinger(p) => p.rounds,
                _ => 0,
            })
            .collect();
        // Every pair got through handshakes. Pairs progress unevenly: a
        // thread whose partner always answers first never blocks, and the
        // others on its core wait for the emulated timer.
        assert!(rounds.iter().all(|&r| r > 0), "{rounds:?}");
        assert!(rounds.iter().sum::<u64>() > 500, "{rounds:?}");
    }
}

/// Whether the cores stopped making system calls (everyone exited): no
/// progress over 50 ms.
fn all_exited(m: &Monitor) -> bool {
    let before = m.total().syscalls;
    std::thread::sleep(Duration::from_millis(50));
    m.total().syscalls == before && before > 0
}

#[test]
fn deleting_the_shared_endpoint_wakes_everyone_with_an_error() {
    let sys = System::shared_endpoint_deleted(2, 2_000, 4);
    for (name, run) in [
        ("bkl", run_until(bkl_yield(), &sys, all_exited).1),
        ("fine", run_until(Fine::new(), &sys, all_exited).1),
    ] {
        for p in &run.programs {
            match p {
                Program::Reaper(r) => assert!(r.deleted, "{name}: the deletion failed"),
                Program::Client(c) => assert_eq!(c.errors, 1, "{name}: {c:?}"),
                Program::Server(s) => assert_eq!(s.errors, 1, "{name}: {s:?}"),
                _ => unreachable!("no other programs in this system"),
            }
        }
    }
}

#[test]
fn elision_counts_every_kernel_entry_as_a_transaction_or_a_fall_back() {
    let sys = System::pingpong(1, 0.0, 1);
    let (_, run) = run_checked(Elide::<locklab::RawTicket>::new("ticket"), &sys, 5_000);
    let st = total(&run);
    // Every system call and every idle scheduling entered the kernel once.
    assert_eq!(
        st.elided + st.fallbacks,
        st.syscalls + st.idle_entries + st.preemptions,
        "{st:?}"
    );
    if locklab_kernel::cc::rtm_available() {
        // One core, nothing to conflict with: kernel entries commit; each
        // fall-back came after the threshold's aborted attempts.
        assert!(st.elided > 0, "RTM, yet no transaction: {st:?}");
        assert!(
            st.aborts >= u64::from(locklab::elide::DEFAULT_THRESHOLD) * st.fallbacks,
            "{st:?}"
        );
    } else {
        // Every entry takes the lock, and nothing is attempted.
        assert_eq!(st.elided, 0, "no RTM, yet transactions: {st:?}");
        assert_eq!(st.aborts, 0, "no RTM, yet aborts: {st:?}");
    }
}

/// The aborts by cause add up to the aborts, and skipped entries are
/// fall-backs.
fn causes_add_up(st: &CoreStats) {
    assert_eq!(
        st.abort_lock_busy
            + st.abort_conflict
            + st.abort_capacity
            + st.abort_retry_clear
            + st.abort_other,
        st.aborts,
        "{st:?}"
    );
    assert!(st.skipped <= st.fallbacks, "{st:?}");
}

#[test]
fn adaptive_elision_counts_entries_causes_and_skips() {
    let sys = System::pingpong(1, 0.0, 1);
    let (k, run) = run_checked(Elide::<locklab::RawTicket>::new("ticket"), &sys, 5_000);
    assert_eq!(k.variant(), "elide(ticket)");
    let st = total(&run);
    causes_add_up(&st);
    assert_eq!(st.skipped, 0, "seed 002's policy never skips: {st:?}");

    let (k, run) = run_checked(
        ElideAdaptive::<locklab::RawTicket>::new("ticket"),
        &sys,
        5_000,
    );
    assert_eq!(k.variant(), "elide-adaptive(ticket)");
    let st = total(&run);
    assert_eq!(
        st.elided + st.fallbacks,
        st.syscalls + st.idle_entries + st.preemptions,
        "{st:?}"
    );
    causes_add_up(&st);
    if locklab_kernel::cc::rtm_available() {
        assert!(st.elided > 0, "RTM, yet no transaction: {st:?}");
        // A fall-back that was not skipped followed at least one abort.
        assert!(st.aborts >= st.fallbacks - st.skipped, "{st:?}");
    } else {
        assert_eq!((st.elided, st.aborts, st.skipped), (0, 0, 0), "{st:?}");
    }
}

/// `elide` and `elide-adaptive` as one compiled kernel, the policy chosen
/// when it is made: each is named and counts as its compiled-in twin.
#[test]
fn a_policy_chosen_at_run_time_is_the_policy_chosen() {
    use locklab_kernel::cc::{EitherPolicy, PolicyChoice};
    let sys = System::pingpong(1, 0.0, 1);
    for (choice, name) in [
        (PolicyChoice::Fixed, "elide(ticket)"),
        (PolicyChoice::Adaptive, "elide-adaptive(ticket)"),
    ] {
        let cc = Elide::<locklab::RawTicket, EitherPolicy>::chosen("ticket", choice);
        let (k, run) = run_checked(cc, &sys, 5_000);
        assert_eq!(k.variant(), name);
        let st = total(&run);
        causes_add_up(&st);
        assert_eq!(
            st.elided + st.fallbacks,
            st.syscalls + st.idle_entries + st.preemptions,
            "{st:?}"
        );
        if choice == PolicyChoice::Fixed {
            assert_eq!(st.skipped, 0, "seed 002's policy never skips: {st:?}");
        }
        if locklab_kernel::cc::rtm_available() {
            assert!(st.elided > 0, "RTM, yet no transaction: {st:?}");
        } else {
            assert_eq!((st.elided, st.aborts, st.skipped), (0, 0, 0), "{st:?}");
        }
    }
}

#[test]
fn none_refuses_objects_shared_between_cores() {
    let e = Kernel::boot(
        NoLock,
        &System::shared_endpoint(2, 0.0, 1),
        Config::default(),
    )
    .err()
    .expect("sharing must be refused");
    assert!(e.0.contains("disjoint"), "{e}");
    assert!(Kernel::boot(NoLock, &System::pingpong(2, 0.0, 1), Config::default()).is_ok());
}

#[test]
fn a_kernel_without_locks_is_caught() {
    // Cores racing on one endpoint corrupt its queue, lose wake-ups or
    // misdeliver replies, typically within a few runs (three cores on a
    // two-CPU machine: preemption inside the kernel widens the races); each
    // outcome must be reported, as violations or as cores that died or did
    // not stop.
    let sys = System::shared_endpoint(3, 0.0, 5);
    for _ in 0..60 {
        if !common::broken_run(&sys, Duration::from_millis(200)).is_empty() {
            return;
        }
    }
    panic!("60 runs of an unlocked shared kernel looked consistent");
}
