//! Unit tests of the RCU domains' semantics. Each test that is about
//! waiting makes the thing waited for record that it happened, so a grace
//! period that does not wait fails the test instead of slowing it; a
//! watchdog turns a hang into a failure.

use super::*;
use crate::util::testing::{iters, limit, Watchdog, HANG};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;
use std::time::Duration;

/// Both read-side barriers: membarrier where the kernel has it, and fenced.
/// Under Miri, which has no membarrier, the default domain is fenced too,
/// so one domain covers both.
fn domains<F: Flavor>() -> Vec<Domain<F>> {
    if cfg!(miri) {
        return vec![Domain::new()];
    }
    vec![Domain::new(), Domain::builder().fenced(true).build()]
}

/// The environment variable that makes this process's RCU act as on a
/// kernel without `membarrier` (see `membarrier.rs`).
const NO_MEMBARRIER: &str = "LOCKLAB_RCU_NO_MEMBARRIER";

/// Where `membarrier` is missing (here: switched off, in the child process
/// of [`every_rcu_test_passes_without_membarrier`]; and always under Miri),
/// a default domain is fenced: the fallback that needs no system call.
#[test]
fn without_membarrier_a_default_domain_is_fenced() {
    if !cfg!(miri) && std::env::var_os(NO_MEMBARRIER).is_none() {
        return; // natively, the child process checks this
    }
    assert!(!membarrier::expedited_available());
    assert!(Rcu::new().is_fenced());
    assert!(Qsbr::new().is_fenced());
}

/// The fallback is a real runtime path, not only a loom and Miri one: rerun
/// every RCU unit test in a child process (this binary) in which the
/// kernel's `membarrier` counts as missing, so that every default domain
/// takes the fenced path. Not under Miri, which cannot start processes
/// (and where every domain is fenced anyway).
#[test]
#[cfg_attr(
    miri,
    ignore = "starts a child process, which Miri cannot; under Miri every domain takes the fenced path anyway"
)]
fn every_rcu_test_passes_without_membarrier() {
    if std::env::var_os(NO_MEMBARRIER).is_some() {
        return; // this is the child
    }
    let text =
        crate::util::testing::run_in_child(&["rcu::", "--test-threads=2"], &[(NO_MEMBARRIER, "1")]);
    assert!(
        text.contains("without_membarrier_a_default_domain_is_fenced ... ok"),
        "{text}"
    );
}

/// On a reader thread of each domain, `body` enters its sections, meets
/// the main thread at `entered`, and sets `left` before it ends the last
/// one; the main thread's `synchronize` must not return before `left`.
fn synchronize_waits_for(name: &'static str, body: fn(&mut RcuReader, &Barrier, &AtomicBool)) {
    let _w = Watchdog::new(name, HANG);
    for rcu in domains::<General>() {
        let left = Arc::new(AtomicBool::new(false));
        let entered = Arc::new(Barrier::new(2));
        let h = {
            let (rcu, left, entered) = (rcu.clone(), left.clone(), entered.clone());
            thread::spawn(move || body(&mut rcu.register(), &entered, &left))
        };
        entered.wait();
        rcu.synchronize();
        assert!(
            left.load(SeqCst),
            "{name}: grace period ended while a guard was alive"
        );
        h.join().unwrap();
    }
}

#[test]
fn synchronize_waits_for_a_reader_inside_its_section() {
    synchronize_waits_for(
        "synchronize_waits_for_a_reader_inside_its_section",
        |r, entered, left| {
            let g = r.read();
            let inner = r.read(); // nesting: the inner drop must not end the section
            entered.wait();
            drop(inner);
            thread::sleep(Duration::from_millis(50));
            left.store(true, SeqCst);
            drop(g);
        },
    );
}

#[test]
fn synchronize_waits_for_an_exclusive_section_and_one_nested_in_it() {
    synchronize_waits_for(
        "synchronize_waits_for_an_exclusive_section_and_one_nested_in_it",
        |r, entered, left| {
            let g = r.read_outer();
            let inner = g.reader().read(); // its drop must not end the section
            assert!(g.reader().in_read_section());
            entered.wait();
            drop(inner);
            thread::sleep(Duration::from_millis(50));
            left.store(true, SeqCst);
            drop(g);
        },
    );
}

#[test]
fn an_exclusive_section_ends_with_its_guard() {
    for rcu in domains::<General>() {
        let mut r = rcu.register();
        for _ in 0..3 {
            let g = r.read_outer();
            assert!(g.reader().in_read_section());
            drop(g);
            assert!(!r.in_read_section());
            // A shared-handle section after it starts outermost and ends.
            drop(r.read());
            assert!(!r.in_read_section());
        }
        // Not inside a section: synchronize may wait (it would panic).
        rcu.synchronize();
    }
}

#[test]
#[cfg(debug_assertions)]
#[should_panic(expected = "a guard of another domain")]
fn get_unchecked_with_another_domains_guard_is_caught_in_debug_builds() {
    let (a, b) = (Rcu::new(), Rcu::new());
    let map = RcuHashMap::with_buckets(&a, 4);
    map.insert(1u32, 1u32);
    let r = b.register();
    let g = r.read();
    // SAFETY: not met on purpose; the debug check panics before any access.
    let _ = unsafe { map.get_unchecked(&1, &g) };
}

#[test]
fn guards_dropped_out_of_order_keep_the_section_until_the_last() {
    synchronize_waits_for(
        "guards_dropped_out_of_order_keep_the_section_until_the_last",
        |r, entered, left| {
            let outer = r.read();
            let inner = r.read();
            drop(outer); // the outer guard first: `inner` still protects
            entered.wait();
            assert!(r.in_read_section());
            thread::sleep(Duration::from_millis(50));
            left.store(true, SeqCst);
            drop(inner);
            assert!(!r.in_read_section());
        },
    );
}

#[test]
fn an_idle_registered_reader_does_not_delay_grace_periods() {
    let _w = Watchdog::new(
        "an_idle_registered_reader_does_not_delay_grace_periods",
        HANG,
    );
    for rcu in domains::<General>() {
        let r = rcu.register();
        drop(r.read());
        // Would hang if an idle reader held grace periods.
        for _ in 0..10 {
            rcu.synchronize();
        }
        assert!(rcu.grace_periods() >= 10);
    }
}

#[test]
fn qsbr_waits_for_an_online_thread_until_it_reports() {
    let _w = Watchdog::new("qsbr_waits_for_an_online_thread_until_it_reports", HANG);
    for q in domains::<QuiescentState>() {
        let reported = Arc::new(AtomicBool::new(false));
        let online = Arc::new(Barrier::new(2));
        let h = {
            let (q, reported, online) = (q.clone(), reported.clone(), online.clone());
            thread::spawn(move || {
                let mut r = q.register();
                online.wait();
                thread::sleep(Duration::from_millis(50));
                reported.store(true, SeqCst);
                r.quiescent_state();
                // Stay online until the grace period is over; going offline
                // afterwards must not matter.
                thread::sleep(Duration::from_millis(20));
            })
        };
        online.wait();
        q.synchronize();
        assert!(
            reported.load(SeqCst),
            "QSBR grace period ended before the quiescent state"
        );
        h.join().unwrap();
    }
}

#[test]
fn qsbr_offline_threads_and_synchronizing_readers_do_not_deadlock() {
    let _w = Watchdog::new(
        "qsbr_offline_threads_and_synchronizing_readers_do_not_deadlock",
        HANG,
    );
    for q in domains::<QuiescentState>() {
        let mut r = q.register();
        // The reader's own synchronize and barrier go offline meanwhile.
        r.synchronize();
        q.call(|| ());
        r.barrier();
        {
            let _off = r.offline();
            q.synchronize();
            q.barrier();
        }
        let _ = r.read();
        r.quiescent_state();
    }
}

#[test]
#[should_panic(expected = "would wait for itself")]
fn synchronize_inside_a_read_section_panics() {
    let rcu = Rcu::new();
    let r = rcu.register();
    let _g = r.read();
    rcu.synchronize();
}

#[test]
#[should_panic(expected = "would wait for itself")]
fn domain_synchronize_on_an_online_qsbr_reader_panics() {
    let q = Qsbr::new();
    let r = q.register();
    let _g = r.read();
    q.synchronize();
}

#[test]
#[should_panic(expected = "would wait for itself")]
fn barrier_inside_a_read_section_panics() {
    let rcu = Rcu::new();
    let r = rcu.register();
    let _g = r.read();
    rcu.call(|| ());
    rcu.barrier();
}

#[test]
fn qsbr_readers_that_update_are_throttled_at_their_quiescent_states() {
    let _w = Watchdog::new(
        "qsbr_readers_that_update_are_throttled_at_their_quiescent_states",
        HANG,
    );
    let q = Qsbr::builder().max_pending(64).build();
    let mut r = q.register();
    let mut peak = 0;
    // Many more updates than the limit, under Miri too.
    for i in 0..iters(5000).max(4 * 64) {
        q.defer_drop(Box::new(i));
        r.quiescent_state();
        peak = peak.max(q.stats().pending_callbacks);
    }
    // Between two quiescent states one update may go over the limit.
    assert!(peak <= 65, "pending reached {peak} with a limit of 64");
    r.barrier();
    assert_eq!(q.stats().pending_callbacks, 0);
}

#[test]
#[should_panic(expected = "already registered")]
fn registering_twice_on_one_thread_panics() {
    let rcu = Rcu::new();
    let _a = rcu.register();
    let _b = rcu.register();
}

#[test]
fn a_cookie_taken_inside_a_section_stays_pending_until_it_ends() {
    let _w = Watchdog::new(
        "a_cookie_taken_inside_a_section_stays_pending_until_it_ends",
        HANG,
    );
    for rcu in domains::<General>() {
        let r = rcu.register();
        let g = r.read();
        let cookie = rcu.start_poll();
        // The reclaimer runs the requested grace period, which must wait
        // for this section.
        thread::sleep(Duration::from_millis(30));
        assert!(!rcu.poll(cookie), "cookie completed inside the section");
        drop(g);
        while !rcu.poll(cookie) {
            thread::sleep(Duration::from_millis(1));
        }
        let before = rcu.get_state();
        rcu.synchronize();
        assert!(
            rcu.poll(before),
            "a cookie from before synchronize() is not complete after it"
        );
    }
}

#[test]
fn callbacks_run_after_the_grace_period_and_barrier_waits_for_them() {
    let _w = Watchdog::new(
        "callbacks_run_after_the_grace_period_and_barrier_waits_for_them",
        HANG,
    );
    for rcu in domains::<General>() {
        let ran = Arc::new(AtomicUsize::new(0));
        let left = Arc::new(AtomicBool::new(false));
        let entered = Arc::new(Barrier::new(2));
        let h = {
            let (rcu, left, entered) = (rcu.clone(), left.clone(), entered.clone());
            thread::spawn(move || {
                let r = rcu.register();
                let g = r.read();
                entered.wait();
                thread::sleep(Duration::from_millis(30));
                left.store(true, SeqCst);
                drop(g);
            })
        };
        entered.wait();
        for _ in 0..100 {
            let (ran, left) = (ran.clone(), left.clone());
            rcu.call(move || {
                assert!(
                    left.load(SeqCst),
                    "callback ran inside a pre-existing section"
                );
                ran.fetch_add(1, SeqCst);
            });
        }
        rcu.defer_drop(Box::new([0u8; 100]));
        rcu.barrier();
        assert_eq!(ran.load(SeqCst), 100);
        assert_eq!(rcu.backlog_bytes(), 0);
        assert_eq!(rcu.stats().completed_callbacks, 101);
        h.join().unwrap();
    }
}

#[test]
fn backpressure_bounds_the_queue() {
    let _w = Watchdog::new("backpressure_bounds_the_queue", HANG);
    let rcu = Rcu::builder().max_pending(64).build();
    let mut peak = 0;
    // Many more updates than the limit, under Miri too.
    for i in 0..iters(5000).max(4 * 64) {
        rcu.defer_drop(Box::new(i));
        peak = peak.max(rcu.stats().pending_callbacks);
    }
    assert!(peak <= 64, "pending reached {peak} with a limit of 64");
    rcu.barrier();
    assert_eq!(rcu.stats().pending_callbacks, 0);
}

#[test]
fn callbacks_that_requeue_themselves_keep_completing() {
    let _w = Watchdog::new("callbacks_that_requeue_themselves_keep_completing", HANG);
    const RUNS: usize = 200;
    fn repost(rcu: Rcu, runs: Arc<AtomicUsize>) {
        if runs.fetch_add(1, SeqCst) + 1 < RUNS {
            let r2 = rcu.clone();
            rcu.call(move || repost(r2, runs));
        }
    }
    let rcu = Rcu::builder().max_pending(8).build();
    let runs = Arc::new(AtomicUsize::new(0));
    for _ in 0..4 {
        let (r, n) = (rcu.clone(), runs.clone());
        rcu.call(move || repost(r, n));
    }
    // Each barrier waits for the callbacks queued so far, which queue the
    // next ones: the chains must keep completing.
    while runs.load(SeqCst) < RUNS {
        rcu.barrier();
    }
    rcu.barrier();
    assert!(rcu.stats().pending_callbacks == 0);
}

#[test]
fn a_barrier_during_a_running_batch_leaves_the_reclaimer_running() {
    // A barrier (or backpressure) that asks for a batch while the
    // reclaimer is already running one finds the queue empty when the
    // batch ends: the reclaimer must go back to sleep, not exit, or every
    // later callback waits forever.
    let _w = Watchdog::new(
        "a_barrier_during_a_running_batch_leaves_the_reclaimer_running",
        HANG,
    );
    for rcu in domains::<General>() {
        let running = Arc::new(Barrier::new(2));
        let release = Arc::new(Barrier::new(2));
        {
            let (running, release) = (running.clone(), release.clone());
            rcu.call(move || {
                running.wait();
                release.wait();
            });
        }
        running.wait(); // the batch is taken and runs; the queue is empty
        let b = {
            let rcu = rcu.clone();
            thread::spawn(move || rcu.barrier())
        };
        while !rcu.shared.cbs.urgent() {
            thread::yield_now();
        }
        release.wait();
        b.join().unwrap();
        let ran = Arc::new(AtomicBool::new(false));
        let r2 = ran.clone();
        rcu.call(move || r2.store(true, SeqCst));
        rcu.barrier();
        assert!(ran.load(SeqCst));
    }
}

#[test]
fn a_panicking_callback_does_not_stop_reclamation() {
    let _w = Watchdog::new("a_panicking_callback_does_not_stop_reclamation", HANG);
    let rcu = Rcu::new();
    rcu.call(|| panic!("deliberate"));
    let ran = Arc::new(AtomicBool::new(false));
    let r2 = ran.clone();
    rcu.call(move || r2.store(true, SeqCst));
    rcu.barrier();
    assert!(ran.load(SeqCst));
}

#[test]
fn dropping_the_domain_still_runs_queued_callbacks() {
    let ran = Arc::new(AtomicBool::new(false));
    {
        let rcu = Rcu::new();
        let r2 = ran.clone();
        rcu.call(move || r2.store(true, SeqCst));
    }
    let give_up = std::time::Instant::now() + limit(Duration::from_secs(5));
    while std::time::Instant::now() < give_up {
        if ran.load(SeqCst) {
            return;
        }
        thread::sleep(Duration::from_millis(1));
    }
    panic!("callback never ran after the domain was dropped");
}

#[test]
fn a_stalled_reader_is_reported_once_per_grace_period() {
    let _w = Watchdog::new("a_stalled_reader_is_reported_once_per_grace_period", HANG);
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let rcu = Rcu::builder()
        .stall_timeout(Some(Duration::from_millis(20)))
        .on_stall(move |s| sink.lock().unwrap().push(s.clone()))
        .build();
    let entered = Arc::new(Barrier::new(2));
    let h = {
        let (rcu, entered) = (rcu.clone(), entered.clone());
        thread::Builder::new()
            .name("slow-reader".into())
            .spawn(move || {
                let r = rcu.register();
                let _g = r.read();
                entered.wait();
                thread::sleep(Duration::from_millis(200));
            })
            .unwrap()
    };
    entered.wait();
    rcu.synchronize();
    h.join().unwrap();
    let reports = reports.lock().unwrap();
    assert_eq!(reports.len(), 1, "{reports:?}");
    assert_eq!(reports[0].reader, "slow-reader");
    assert!(reports[0].waited >= Duration::from_millis(20));
}

#[test]
fn concurrent_synchronize_calls_share_grace_periods() {
    let _w = Watchdog::new("concurrent_synchronize_calls_share_grace_periods", HANG);
    let rcu = Rcu::new();
    let r = rcu.register();
    let g = r.read();
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let rcu = rcu.clone();
            thread::spawn(move || rcu.synchronize())
        })
        .collect();
    // All four queue behind this section; when it ends, at most two grace
    // periods (one in progress, one for the rest) serve them all.
    thread::sleep(Duration::from_millis(30));
    let before = rcu.grace_periods();
    drop(g);
    for h in hs {
        h.join().unwrap();
    }
    assert!(
        rcu.grace_periods() - before <= 2,
        "{} grace periods",
        rcu.grace_periods() - before
    );
}
