//! The lock-holder-preemption simulator checked from outside: invariants
//! over random scenarios (from its trace), determinism, an analytic
//! cross-check against the machine-repairman model, and the ticket-lock
//! collapse under oversubscription.

use locklab_model::lhp::{
    experiment, simulate, simulate_traced, Dist, Experiment, Host, LockKind, Params, Ple, PleMode,
    Policy, Scenario, Setup, VmSpec, Workload,
};
use locklab_model::queueing::Repairman;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn workload(kind: u8, lock: LockKind, scale: f64) -> Workload {
    let name = ["hackbench", "oltp", "pi", "latency"][kind as usize % 4];
    let mut w = Workload::preset(name).unwrap();
    w.lock = lock;
    let s = |d: Dist| match d {
        Dist::Exp(m) => Dist::Exp(m * scale),
        Dist::Const(m) => Dist::Const(m * scale),
    };
    w.user = s(w.user);
    w.kernel = s(w.kernel);
    w.hold = s(w.hold);
    w.think = w.think.map(s);
    w
}

prop_compose! {
    fn scenario()(
        pcpus in 1u32..5,
        vms in proptest::collection::vec((0u8..4, 1u32..7, any::<bool>(), 0.2f64..3.0, 1u32..3), 1..4),
        policy in 0usize..Policy::ALL.len(),
        kvm_ple in any::<bool>(),
        seed in any::<u64>(),
        ms in 2u32..8,
    ) -> Scenario {
        let specs = vms
            .into_iter()
            .map(|(kind, vcpus, tas, scale, weight)| {
                let lock = if tas { LockKind::Tas } else { LockKind::Ticket };
                let mut v = VmSpec::new(workload(kind, lock, scale), 1, vcpus);
                v.weight = 512 * weight;
                v
            })
            .collect();
        let mut s = Scenario::new(specs, Policy::ALL[policy]);
        s.host = Host::new(pcpus);
        // Short host periods so a few simulated ms see many preemptions.
        s.host.sched_latency_ns = 300_000.0;
        s.host.min_granularity_ns = 50_000.0;
        s.host.wakeup_granularity_ns = 50_000.0;
        s.host.tick_ns = 20_000.0;
        s.host.balance_ns = 100_000.0;
        s.host.pv_spin_ns = 5_000.0;
        if kvm_ple {
            s.ple = Ple::kvm();
        }
        s.duration_ns = f64::from(ms) * 1e6;
        s.warmup_ns = 0.0;
        s.seed = seed;
        s
    }
}

/// Spans sorted by start must not overlap.
fn assert_disjoint(what: &str, mut spans: Vec<(u64, u64)>) -> Result<(), TestCaseError> {
    spans.sort_unstable();
    for w in spans.windows(2) {
        prop_assert!(w[1].0 >= w[0].1, "{what}: {:?} overlaps {:?}", w[0], w[1]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_in_random_scenarios(s in scenario()) {
        let (r, t) = simulate_traced(&s).unwrap();
        // A vCPU never runs on two pCPUs at once; a pCPU runs one vCPU at a time.
        let mut by_vcpu: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        let mut by_pcpu: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
        for x in &t.runs {
            prop_assert!(x.start < x.end && x.end <= t.end);
            by_vcpu.entry(x.vcpu).or_default().push((x.start, x.end));
            by_pcpu.entry(x.pcpu).or_default().push((x.start, x.end));
        }
        for (v, spans) in by_vcpu {
            assert_disjoint(&format!("vCPU {v}"), spans)?;
        }
        for (p, spans) in by_pcpu {
            assert_disjoint(&format!("pCPU {p}"), spans)?;
        }
        // At most one holder per guest lock at any time.
        let mut by_lock: BTreeMap<(u32, u32), Vec<(u64, u64)>> = BTreeMap::new();
        for h in &t.holds {
            by_lock.entry((h.vm, h.lock)).or_default().push((h.start, h.end));
        }
        for (l, spans) in by_lock {
            assert_disjoint(&format!("lock {l:?}"), spans)?;
        }
        // CPU time handed out = P × time − idle, and equals the traced runs.
        let cpu: u64 = t.cpu_ns.iter().sum();
        let idle: u64 = t.idle_ns.iter().sum();
        prop_assert_eq!(cpu + idle, u64::from(s.host.pcpus) * t.end);
        let ran: u64 = t.runs.iter().map(|x| x.end - x.start).sum();
        prop_assert_eq!(ran, cpu);
        // The result's own accounting agrees (no warm-up here).
        prop_assert!((r.busy_ns() + r.idle_ns - f64::from(s.host.pcpus) * r.sim_ns).abs() < 1.0);
        for vm in &r.vms {
            prop_assert!(vm.spin_ns + vm.overhead_ns <= vm.cpu_ns + 1e-9);
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_result(s in scenario()) {
        let a = simulate(&s).unwrap();
        let b = simulate(&s).unwrap();
        // Debug text compares NaN percentiles (no responses) as equal.
        prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}

/// One VM with no other load and V ≤ P never sees preemption; with
/// exponential phases and one FIFO lock it is the machine-repairman model.
#[test]
fn one_unpreempted_vm_matches_the_repairman_model() {
    for (vcpus, service, delay) in [
        (2u32, 1_000.0, 3_000.0),
        (4, 1_000.0, 3_000.0),
        (6, 500.0, 4_000.0),
    ] {
        let w = Workload {
            name: "repairman".into(),
            user: Dist::Exp(delay),
            kernel: Dist::Const(0.0),
            hold: Dist::Exp(service),
            sections: 1,
            locks: 1,
            lock: LockKind::Ticket,
            ipi: 0.0,
            threads: None,
            think: None,
        };
        let mut s = Scenario::new(vec![VmSpec::new(w, 1, vcpus)], Policy::None);
        s.host = Host::new(8);
        s.host.switch_ns = 0.0;
        s.host.handoff_ns = 0.0;
        s.duration_ns = 0.5e9;
        s.warmup_ns = 1e7;
        let r = simulate(&s).unwrap();
        let measured = r.vms[0].sections as f64 / (r.sim_ns / 1e9);
        let model = Repairman::new(service, delay)
            .unwrap()
            .solve(vcpus)
            .unwrap()
            .throughput
            * 1e9;
        let err = measured / model - 1.0;
        // docs/lhp.md quotes these (`-- --nocapture` shows them).
        println!(
            "repairman V = {vcpus}, S = {service} ns, Z = {delay} ns: simulated {measured:.0}/s, model {model:.0}/s ({:+.2} %)",
            err * 100.0
        );
        assert!(
            err.abs() < 0.02,
            "V = {vcpus}, S = {service}, Z = {delay}: simulated {measured:.0}/s, model {model:.0}/s ({:+.2} %)",
            err * 100.0
        );
        assert_eq!(
            r.vms[0].holder_preemptions, 0,
            "no preemption without other load"
        );
    }
}

fn collapse_run(vcpus: u32, lock: LockKind) -> (f64, f64) {
    let mut w = Workload::preset("oltp").unwrap();
    w.lock = lock;
    let mut s = Scenario::new(vec![VmSpec::new(w, 1, vcpus)], Policy::None);
    s.host = Host::new(2);
    s.duration_ns = 0.4e9;
    s.warmup_ns = 0.05e9;
    let r = simulate(&s).unwrap();
    let (x, spin) = (r.vms[0].throughput, r.vms[0].spin_ns / r.vms[0].cpu_ns);
    println!(
        "collapse: {vcpus} vCPUs on 2 pCPUs, {} locks: {x:.0} cycles/s, spinning {:.0} %",
        lock.name(),
        spin * 100.0
    );
    (x, spin)
}

/// More vCPUs than pCPUs, ticket locks, plain CFS: lock-holder and
/// lock-waiter preemption make the VM spin most of its time, and its
/// throughput falls far below that of as many vCPUs as pCPUs (the same
/// work with the same CPUs).
#[test]
fn ticket_locks_collapse_with_more_vcpus_than_pcpus() {
    let (fit, fit_spin) = collapse_run(2, LockKind::Ticket);
    let (over, over_spin) = collapse_run(6, LockKind::Ticket);
    assert!(
        over < 0.5 * fit,
        "2 vCPUs: {fit:.0}/s, 6 vCPUs: {over:.0}/s"
    );
    assert!(
        fit_spin < 0.2 && over_spin > 0.5,
        "spin share {fit_spin:.2} → {over_spin:.2}"
    );
    // Test-and-set has no waiter preemption: a running waiter takes the lock.
    let (tas, _) = collapse_run(6, LockKind::Tas);
    assert!(tas > over, "6 vCPUs: ticket {over:.0}/s, tas {tas:.0}/s");
}

#[test]
fn bad_scenarios_name_their_field() {
    let vm = || VmSpec::new(Workload::preset("oltp").unwrap(), 1, 2);
    let field = |f: &dyn Fn(&mut Scenario)| {
        let mut s = Scenario::new(vec![vm()], Policy::None);
        f(&mut s);
        simulate(&s).unwrap_err().field
    };
    assert_eq!(field(&|s| s.host.pcpus = 0), "host.pcpus");
    assert_eq!(field(&|s| s.vms[0].vcpus = 0), "vm[0].vcpus");
    assert_eq!(
        field(&|s| s.vms[0].workload.hold = Dist::Exp(-5.0)),
        "vm[0].workload.hold"
    );
    assert_eq!(field(&|s| s.vms.clear()), "vm");
    assert_eq!(field(&|s| s.duration_ns = f64::NAN), "duration");
    assert_eq!(
        field(&|s| s.vms[0].workload.threads = Some(3)),
        "vm[0].workload.threads"
    );
    assert_eq!(
        field(&|s| s.ple.mode = PleMode::Kvm {
            grow: 0,
            shrink: 0,
            max_cycles: 1 << 20
        }),
        "ple.grow"
    );
}

/// An experiment's table has a row per policy, `none` first with speed-up 1,
/// and the fields its experiment promises.
#[test]
fn experiments_tabulate_every_policy() {
    let p = Params {
        host: Host::new(2),
        vcpus: 2,
        duration_ns: 1e8,
        warmup_ns: 0.0,
        max_vms: 2,
        ..Params::default()
    };
    for e in Experiment::ALL {
        let t = experiment::run(&Setup::experiment(e, &p), |_| {}).unwrap();
        let cases = if e == Experiment::Scalability { 2 } else { 1 };
        assert_eq!(t.rows.len(), cases * Policy::ALL.len(), "{}", e.name());
        assert_eq!(t.rows[0].policy, Policy::None);
        assert!((t.rows[0].metrics.speedup - 1.0).abs() < 1e-12);
        assert!(t
            .rows
            .iter()
            .all(|r| r.metrics.throughput_norm.is_finite() && r.metrics.throughput_norm > 0.0));
        let latency = e == Experiment::Latency;
        assert!(t
            .rows
            .iter()
            .all(|r| r.metrics.response_p50_us.is_some() == latency));
        if e == Experiment::Fairness {
            assert!(t.rows.iter().all(|r| r.metrics.lock_speedup.is_some()));
        }
    }
}
