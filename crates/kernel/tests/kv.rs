//! The key-value system on the emulated kernel: requests flow through the
//! card's interrupt, the driver and the servers; the checker passes after
//! honest runs and catches a damaged table, a lost interrupt and a kernel
//! without locks; each core's idle clock tells an idle core from a busy one.

use locklab_kernel::cc::{Bkl, Concurrency, Fine, NoLock};
use locklab_kernel::check::{check_kernel, check_programs};
use locklab_kernel::idle::IdleSpan;
use locklab_kernel::kv::{KeyDist, KvParams, KvSystem, OpCounts, Workload};
use locklab_kernel::user::Program;
use locklab_kernel::{Config, Kernel, RunResult, System};
use std::sync::Arc;
use std::time::Duration;

mod common;

fn params(cores: u32, workload: Workload) -> KvParams {
    KvParams {
        cores,
        records: 2_000,
        workload,
        keys: KeyDist::Zipfian,
        seed: 7,
    }
}

/// Runs `kv` until its clients completed `requests` (or 20 s), stops it;
/// returns the kernel, the run and the counts.
fn run_kv<C: Concurrency>(
    cc: C,
    kv: &KvSystem,
    requests: u64,
) -> (Arc<Kernel<C>>, RunResult, OpCounts) {
    let _one = common::one_kernel_at_a_time();
    let k = Arc::new(Kernel::boot(cc, &kv.sys, Config::default()).expect("boots"));
    let run = common::run_until(&k, &kv.sys, |_| kv.shared.totals().requests >= requests);
    let counts = kv.shared.totals();
    (k, run, counts)
}

fn assert_clean<C: Concurrency>(k: &Kernel<C>, run: &RunResult) {
    let v = check_kernel(k);
    assert!(v.is_empty(), "{}: kernel: {v}", k.variant());
    let v = check_programs(k, run);
    assert!(v.is_empty(), "{}: programs: {v}", k.variant());
    // Every wake-up of a halted core rang its doorbell: no halt ran to its
    // timeout with work waiting.
    assert_eq!(
        k.late_rings(),
        0,
        "{}: wake-ups without a ring",
        k.variant()
    );
}

#[test]
fn workload_c_reads_only_and_a_updates_about_half() {
    let kv = KvSystem::new(params(2, Workload::C));
    let (k, run, c) = run_kv(Bkl::<locklab::RawTicket>::new("ticket"), &kv, 2_000);
    assert_clean(&k, &run);
    assert!(c.requests >= 2_000, "{c:?}");
    assert_eq!(c.reads, c.requests, "{c:?}");
    assert_eq!(c.updates + c.scans + c.inserts + c.rmws, 0, "{c:?}");
    // Every request passed through the card's interrupt and the driver.
    let line = &kv.shared.irq;
    assert!(line.taken() > 0 && line.taken() <= line.raised());

    let kv = KvSystem::new(params(2, Workload::A));
    let (k, run, c) = run_kv(Fine::new(), &kv, 4_000);
    assert_clean(&k, &run);
    let n = c.ops() as f64;
    // Binomial(n, 1/2): within 5 standard deviations of n/2.
    let sd = (n * 0.25).sqrt();
    assert!(
        (c.updates as f64 - n / 2.0).abs() < 5.0 * sd,
        "{} updates of {n}: {c:?}",
        c.updates
    );
    assert_eq!(c.reads + c.updates, c.ops());
}

#[test]
fn scans_inserts_and_read_modify_writes_complete_and_check() {
    for (w, what) in [(Workload::E, "e"), (Workload::F, "f"), (Workload::B, "b")] {
        let kv = KvSystem::new(params(3, w));
        let (k, run, c) = run_kv(Bkl::<locklab::RawClh>::new("clh"), &kv, 1_000);
        assert_clean(&k, &run);
        match w {
            Workload::E => assert!(c.scans > 0 && c.scans > c.inserts, "{what}: {c:?}"),
            // A read-modify-write is two requests.
            Workload::F => assert!(
                c.rmws > 0 && c.requests >= c.reads + 2 * c.rmws,
                "{what}: {c:?}"
            ),
            _ => assert!(c.reads > c.updates, "{what}: {c:?}"),
        }
    }
}

#[test]
fn an_interrupt_line_belongs_to_one_kernel() {
    // A second boot of the same system would wire the card's line to a
    // core of a kernel that never hears it: refused, saying why.
    let kv = KvSystem::new(params(2, Workload::C));
    let first = Kernel::boot(Fine::new(), &kv.sys, Config::default());
    assert!(first.is_ok());
    let e = Kernel::boot(Fine::new(), &kv.sys, Config::default())
        .err()
        .expect("a second boot of the same line is refused");
    assert!(e.0.contains("already wired"), "{}", e.0);
}

#[test]
fn none_runs_on_one_core_and_is_refused_beyond() {
    let kv = KvSystem::new(params(1, Workload::C));
    let (k, run, c) = run_kv(NoLock, &kv, 1_000);
    assert_clean(&k, &run);
    assert!(c.requests >= 1_000);
    let e = Kernel::boot(
        NoLock,
        &KvSystem::new(params(2, Workload::C)).sys,
        Config::default(),
    )
    .err()
    .expect("the driver and a server on two cores share a notification");
    assert!(e.0.contains("disjoint"), "{e}");
}

#[test]
fn a_damaged_table_and_a_lost_interrupt_are_caught() {
    let kv = KvSystem::new(params(2, Workload::C));
    let (k, run, _) = run_kv(Bkl::<locklab::RawTicket>::new("ticket"), &kv, 500);
    assert_clean(&k, &run);
    kv.shared.tables[0].lock().unwrap().corrupt(3);
    let v = check_programs(&k, &run);
    assert!(v.0.iter().any(|s| s.contains("table")), "{v}");

    let kv = KvSystem::new(params(2, Workload::C));
    let (k, run, _) = run_kv(Bkl::<locklab::RawTicket>::new("ticket"), &kv, 500);
    assert_clean(&k, &run);
    // A line in a state its counts deny: an interrupt taken but never
    // acknowledged nor signalled (masked, every take acknowledged). If the
    // run stopped with the line masked (the driver between taking and
    // acknowledging), masking it again would deny nothing: then the lost
    // acknowledgement is the other way round (unmasked, one take not
    // acknowledged).
    use locklab_kernel::irq::{IDLE, MASKED};
    let line = &kv.shared.irq;
    line.force_state(if line.state() == MASKED { IDLE } else { MASKED });
    assert!(!check_kernel(&k).is_empty());
}

#[test]
fn a_kernel_without_locks_is_caught() {
    // The driver on core 0 signals servers whose cores make their own
    // kernel entries at the same time: ready queues and notifications race.
    let kv_params = params(3, Workload::C);
    for _ in 0..40 {
        let _one = common::one_kernel_at_a_time();
        let kv = KvSystem::new(kv_params);
        if !common::broken_run(&kv.sys, Duration::from_millis(150)).is_empty() {
            return;
        }
    }
    panic!("40 runs of an unlocked key-value kernel looked consistent");
}

#[test]
fn an_idle_core_idles_the_whole_window_and_a_busy_one_none_of_it() {
    // Core 0 runs a ping-pong pair (always a thread to run); core 1 has
    // no thread at all.
    let mut sys = System::pingpong(1, 0.0, 1);
    sys.cores = 2;
    let _one = common::one_kernel_at_a_time();
    let k = Arc::new(
        Kernel::boot(
            Bkl::<locklab::RawTicket>::new("ticket"),
            &sys,
            Config::default(),
        )
        .unwrap(),
    );
    let (spans, run) = k
        .run(
            sys.programs(),
            Arc::new(|_| {}),
            Duration::from_secs(10),
            |m| {
                std::thread::sleep(Duration::from_millis(30));
                let a = m.idle();
                std::thread::sleep(Duration::from_millis(150));
                let b = m.idle();
                a.iter()
                    .zip(&b)
                    .map(|(a, b)| IdleSpan::between(*a, *b))
                    .collect::<Vec<_>>()
            },
        )
        .unwrap();
    assert_clean(&k, &run);
    let (busy, idle) = (spans[0].utilisation(), spans[1].utilisation());
    assert!(busy > 0.9, "the ping-pong core: {:?}", spans[0]);
    assert!(idle < 0.05, "the empty core: {:?}", spans[1]);
    assert!(matches!(run.programs[0], Program::Server(_)));
}
