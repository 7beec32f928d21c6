//! The discrete-event engine: host scheduler, guest vCPUs, guest locks, PLE
//! and the policies, simulating a host like seed 004's (Zhang, Zhang and
//! Chen, 2014): Linux 2.6.38's CFS (the paper names no hypervisor).
//!
//! This module holds the state (vCPUs, run queues, guest locks, VMs, the
//! event heap), the event loop and the results. The behaviour is in three
//! parts, each an `impl Sim` block of its own file:
//!
//! - [`host`]: the CFS-like host scheduler (virtual runtime, slices, ticks,
//!   wake-up placement and preemption, idle pulling, load balancing);
//! - [`guest`]: the guest side (phases, progress and overhead, ticket and
//!   test-and-set spin locks, cross-calls, pv halting and kicking);
//! - [`ple`]: pause-loop exiting and the host's policies.
//!
//! **Time.** Integer nanoseconds of simulated time. Events sit in a binary
//! heap ordered by (time, sequence number), so simultaneous events run in
//! the order they were scheduled and a seed gives one history. Each vCPU has
//! at most one live guest event; a generation number on the vCPU makes the
//! older ones stale (they are dropped when popped) instead of searching the
//! heap.
//!
//! Every vCPU starts a random fraction of a scheduling period behind in
//! virtual runtime: VMs do not boot in step, and run queues that turned in
//! lockstep would gang-schedule the VMs by accident and hide the problem
//! this simulator is about.
//!
//! One thread runs a simulation; nothing is shared, so there are no memory
//! orderings to argue. Determinism rests on three things: the seeded
//! generator, the (time, sequence) order of events, and iteration over
//! vectors and ordered trees only (never over hash maps).

mod guest;
mod host;
mod ple;

use super::config::{Dist, LockKind, PleMode, Scenario};
use super::hist::Hist;
use super::policy::Policy;
use super::result::{HoldSpan, RunSpan, SimResult, Trace, VmResult};
use super::rng::Rng;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};

type Time = u64;

/// vruntime starts here so that `min_vruntime − latency/2` never underflows.
const VR_ORIGIN: u64 = 1 << 52;
const NICE_0: u64 = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    User,
    Kernel,
    Spin,
    /// Waiting, spinning in kernel mode, for every sibling a synchronous
    /// cross-call went to to acknowledge it.
    Ipi,
    Hold,
    Think,
    Idle,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TState {
    Running,
    Queued,
    Blocked,
}

/// Counters that the measured window takes differences of.
#[derive(Debug, Clone, Copy, Default)]
struct Stats {
    cpu: u64,
    user: u64,
    kernel: u64,
    hold: u64,
    spin: u64,
    overhead: u64,
    work: u64,
    sections: u64,
    ple_exits: u64,
    switches: u64,
    halts: u64,
    holder_preemptions: u64,
}

#[derive(Debug, Clone)]
struct Vcpu {
    vm: u32,
    idx: u32,
    weight: u64,
    // Host side.
    state: TState,
    cpu: u32,
    vruntime: u64,
    /// Insertion order among equal vruntimes (the tree key's second half).
    seq: u64,
    sum_exec: u64,
    prev_sum_exec: u64,
    exec_update: Time,
    run_start: Time,
    /// VM-exit cost to pay at the next schedule-in (a halted vCPU's wake-up).
    pending_ovh: u64,
    // Guest side.
    phase: Phase,
    remaining: u64,
    sections_left: u32,
    lock: u32,
    cycle_start: Time,
    /// Progress counts from here; [ovh_from, seg_start) is overhead.
    seg_start: Time,
    ovh_from: Time,
    /// Spinning done in this acquisition attempt (pv's threshold).
    spin_accum: u64,
    pv_halted: bool,
    /// In a PLE exit: the policy acts when the exit's cost has been paid.
    exiting: bool,
    gen: u32,
    ple_window: u64,
    /// Descheduled shortly after a PLE exit and not run since: a vCPU the
    /// host knows to be spinning. Directed yield and co-scheduling skip it
    /// (running it would release nothing), as KVM's directed yield skips
    /// vCPUs in a spin loop.
    ple_yielded: bool,
    /// When its last PLE exit happened.
    last_ple: Option<Time>,
    /// KVM's `dy_eligible`: a known spinner is a directed-yield candidate
    /// every other time it is considered.
    dy_eligible: bool,
    /// Acknowledgements its cross-call still waits for.
    ipi_wait: u32,
    /// Siblings waiting for this vCPU to acknowledge their cross-call.
    ipi_from: Vec<u32>,
    /// DTCS: the sibling this vCPU waits to run with.
    deferred_on: Option<u32>,
    stats: Stats,
}

impl Vcpu {
    fn in_kernel(&self) -> bool {
        matches!(
            self.phase,
            Phase::Kernel | Phase::Spin | Phase::Ipi | Phase::Hold
        )
    }

    /// Spinning: on a lock, or for cross-call acknowledgements.
    fn spinning(&self) -> bool {
        matches!(self.phase, Phase::Spin | Phase::Ipi)
    }
}

#[derive(Debug, Clone, Default)]
struct Rq {
    curr: Option<u32>,
    tree: BTreeSet<(u64, u64, u32)>,
    load: u64,
    min_vr: u64,
    idle_since: Option<Time>,
    idle: u64,
    /// Next buddy: picked next if that is not too unfair (CFS's rule: at
    /// most the wake-up granularity ahead of the leftmost).
    next: Option<u32>,
    /// Picked next whatever its virtual runtime (co-scheduling).
    force: Option<u32>,
    skip: Option<u32>,
    last: Option<u32>,
    /// Tasks on the queue, the running one included.
    nr: u32,
}

#[derive(Debug, Clone, Default)]
struct GLock {
    /// Holder, or (ticket) the waiter the lock was handed to.
    owner: Option<u32>,
    /// Whether `owner` has started its critical section.
    held: bool,
    hold_start: Time,
    /// Ticket: waiters behind the owner, oldest first.
    queue: VecDeque<u32>,
    /// Test-and-set: waiters, in arrival order.
    waiters: Vec<u32>,
}

#[derive(Debug, Clone)]
struct Vm {
    name: String,
    workload: String,
    first: u32,
    vcpus: u32,
    user: Dist,
    kernel: Dist,
    hold: Dist,
    sections: u32,
    ipi: f64,
    think: Option<Dist>,
    lock_kind: LockKind,
    locks: Vec<GLock>,
    last_boosted: u32,
    response: Hist,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// The vCPU's phase ends, or its spin reaches the PLE window or pv's
    /// threshold.
    Guest(u32, u32),
    /// A halted vCPU's think time ends.
    Wake(u32, u32),
    /// DTCS: a deferred vCPU waits no longer.
    Undefer(u32, u32),
    Tick(u32),
    Balance,
    WarmupEnd,
}

pub(crate) struct Sim {
    policy: Policy,
    pcpus: u32,
    latency: u64,
    min_gran: u64,
    wakeup_gran: u64,
    tick: u64,
    balance: u64,
    switch: u64,
    exit: u64,
    handoff: u64,
    pv_spin: u64,
    ghz: f64,
    ple_on: bool,
    ple_base: u64,
    ple_mode: PleMode,
    warmup: Time,
    end: Time,
    now: Time,
    heap: BinaryHeap<Reverse<(Time, u64, Ev)>>,
    seq: u64,
    tree_seq: u64,
    v: Vec<Vcpu>,
    rq: Vec<Rq>,
    vms: Vec<Vm>,
    /// DTCS: per vCPU, the vCPUs deferred until it runs.
    deferred: Vec<Vec<u32>>,
    rng: Rng,
    events: u64,
    switches: u64,
    migrations: u64,
    snap: Option<Snapshot>,
    trace: Option<Trace>,
}

#[derive(Debug, Clone)]
struct Snapshot {
    stats: Vec<Stats>,
    idle: Vec<u64>,
    switches: u64,
    migrations: u64,
}

fn ns(x: f64) -> u64 {
    x.round() as u64
}

impl Sim {
    pub(crate) fn new(s: &Scenario, trace: bool) -> Sim {
        let h = &s.host;
        let mut vms = Vec::new();
        let mut v = Vec::new();
        for spec in &s.vms {
            for k in 0..spec.count {
                let w = &spec.workload;
                let vm = vms.len() as u32;
                vms.push(Vm {
                    name: if spec.count > 1 {
                        format!("{}#{}", spec.name, k + 1)
                    } else {
                        spec.name.clone()
                    },
                    workload: w.name.clone(),
                    first: v.len() as u32,
                    vcpus: spec.vcpus,
                    user: w.user,
                    kernel: w.kernel,
                    hold: w.hold,
                    sections: w.sections,
                    ipi: w.ipi,
                    think: w.think,
                    lock_kind: w.lock,
                    locks: vec![GLock::default(); w.locks as usize],
                    last_boosted: 0,
                    response: Hist::new(),
                });
                let threads = w.threads.unwrap_or(spec.vcpus);
                for idx in 0..spec.vcpus {
                    v.push(Vcpu {
                        vm,
                        idx,
                        weight: u64::from(spec.weight),
                        state: TState::Queued,
                        cpu: 0,
                        vruntime: VR_ORIGIN,
                        seq: 0,
                        sum_exec: 0,
                        prev_sum_exec: 0,
                        exec_update: 0,
                        run_start: 0,
                        pending_ovh: 0,
                        phase: if idx < threads {
                            Phase::User
                        } else {
                            Phase::Idle
                        },
                        remaining: 0,
                        sections_left: 0,
                        lock: 0,
                        cycle_start: 0,
                        seg_start: 0,
                        ovh_from: 0,
                        spin_accum: 0,
                        pv_halted: false,
                        exiting: false,
                        gen: 0,
                        ple_window: s.ple.window_cycles,
                        ple_yielded: false,
                        last_ple: None,
                        dy_eligible: false,
                        ipi_wait: 0,
                        ipi_from: Vec::new(),
                        deferred_on: None,
                        stats: Stats::default(),
                    });
                }
            }
        }
        let warmup = ns(s.warmup_ns);
        let n = v.len();
        let mut sim = Sim {
            policy: s.policy,
            pcpus: h.pcpus,
            latency: ns(h.sched_latency_ns).max(1),
            min_gran: ns(h.min_granularity_ns).max(1),
            wakeup_gran: ns(h.wakeup_granularity_ns),
            tick: ns(h.tick_ns).max(1),
            balance: ns(h.balance_ns).max(1),
            switch: ns(h.switch_ns),
            exit: ns(h.exit_ns),
            handoff: ns(h.handoff_ns),
            pv_spin: ns(h.pv_spin_ns).max(1),
            ghz: h.cpu_ghz,
            ple_on: s.policy.uses_ple() && h.spin_loop_cycles <= s.ple.gap_cycles,
            ple_base: s.ple.window_cycles,
            ple_mode: s.ple.mode,
            warmup,
            end: warmup + ns(s.duration_ns),
            now: 0,
            heap: BinaryHeap::new(),
            seq: 0,
            tree_seq: 0,
            v,
            rq: vec![
                Rq {
                    min_vr: VR_ORIGIN,
                    ..Rq::default()
                };
                h.pcpus as usize
            ],
            vms,
            deferred: vec![Vec::new(); n],
            rng: Rng::new(s.seed),
            events: 0,
            switches: 0,
            migrations: 0,
            snap: None,
            trace: trace.then(|| Trace {
                idle_ns: Vec::new(),
                cpu_ns: Vec::new(),
                ..Trace::default()
            }),
        };
        sim.boot();
        sim
    }

    // ----- events ---------------------------------------------------------

    fn at(&mut self, t: Time, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((t, self.seq, ev)));
    }

    fn boot(&mut self) {
        // VM by VM, vCPU i of a VM on pCPU i mod P: every VM spread out.
        for i in 0..self.v.len() {
            let cpu = self.v[i].idx % self.pcpus;
            self.v[i].cpu = cpu;
            if self.v[i].phase == Phase::Idle {
                self.v[i].state = TState::Blocked;
                continue;
            }
            let vm = self.v[i].vm as usize;
            self.v[i].remaining = self.rng.sample(self.vms[vm].user);
            // VMs do not start in step: each vCPU starts up to one
            // scheduling period behind, so that the run queues do not turn
            // in lockstep (which would gang-schedule the VMs by accident).
            self.v[i].vruntime = VR_ORIGIN + self.rng.next_u64() % self.latency;
            self.enqueue(i as u32, cpu);
        }
        for cpu in 0..self.pcpus {
            self.rq[cpu as usize].idle_since = Some(0);
            self.schedule(cpu);
            // Stagger the ticks over the first tick period.
            let off = self.tick * u64::from(cpu) / u64::from(self.pcpus);
            self.at(off + self.tick, Ev::Tick(cpu));
        }
        self.at(self.balance, Ev::Balance);
        if self.warmup > 0 {
            self.at(self.warmup, Ev::WarmupEnd);
        }
    }

    pub(crate) fn run(mut self) -> (SimResult, Option<Trace>) {
        if self.warmup == 0 {
            self.snapshot();
        }
        while let Some(Reverse((t, _, ev))) = self.heap.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            // Traced simulations (the tests') also check the run queues
            // after every event.
            if cfg!(debug_assertions) && self.trace.is_some() {
                self.check(ev);
            }
            match ev {
                Ev::Guest(v, g) => {
                    if self.v[v as usize].gen == g && self.v[v as usize].state == TState::Running {
                        self.guest_event(v);
                    }
                }
                Ev::Wake(v, g) => {
                    if self.v[v as usize].gen == g && self.v[v as usize].state == TState::Blocked {
                        self.think_over(v);
                    }
                }
                Ev::Undefer(v, g) => {
                    if self.v[v as usize].gen == g && self.v[v as usize].deferred_on.is_some() {
                        self.undefer(v, false);
                    }
                }
                Ev::Tick(cpu) => {
                    self.tick_cpu(cpu);
                    // Interrupts and host housekeeping make a real tick's
                    // work start a little late now and then; ±10 % here.
                    // Without it every run queue of a symmetric set-up
                    // turns with a fixed phase forever, and one seed
                    // samples a single alignment of the VMs' slices.
                    let jitter = self.tick / 5;
                    let next = t + self.tick - jitter / 2 + self.rng.next_u64() % (jitter + 1);
                    self.at(next, Ev::Tick(cpu));
                }
                Ev::Balance => {
                    self.periodic_balance();
                    let next = t + self.balance;
                    self.at(next, Ev::Balance);
                }
                Ev::WarmupEnd => {
                    self.settle_all();
                    self.snapshot();
                    for vm in &mut self.vms {
                        vm.response = Hist::new();
                    }
                }
            }
        }
        self.now = self.end;
        self.settle_all();
        self.finish()
    }

    /// Every vCPU is where its state says, and each run queue's count and
    /// load match its contents.
    fn check(&self, ev: Ev) {
        for (i, v) in self.v.iter().enumerate() {
            let i = i as u32;
            let rq = &self.rq[v.cpu as usize];
            match v.state {
                TState::Running => assert_eq!(
                    rq.curr,
                    Some(i),
                    "{ev:?} t={} v{i} running but not curr",
                    self.now
                ),
                TState::Queued => assert!(
                    rq.tree.contains(&(v.vruntime, v.seq, i)),
                    "{ev:?} t={} v{i} queued but not in tree",
                    self.now
                ),
                TState::Blocked => assert!(rq.curr != Some(i), "blocked but curr"),
            }
        }
        for (c, rq) in self.rq.iter().enumerate() {
            let n = rq.tree.len() + usize::from(rq.curr.is_some());
            let load: u64 = rq
                .tree
                .iter()
                .map(|e| self.v[e.2 as usize].weight)
                .sum::<u64>()
                + rq.curr.map_or(0, |x| self.v[x as usize].weight);
            assert_eq!(
                (rq.nr as usize, rq.load),
                (n, load),
                "{ev:?} t={} cpu{c} nr/load",
                self.now
            );
        }
    }

    // ----- accounting -----------------------------------------------------

    /// Brings every running vCPU's and idle pCPU's accounting up to `now`.
    fn settle_all(&mut self) {
        for cpu in 0..self.pcpus as usize {
            if let Some(c) = self.rq[cpu].curr {
                self.update_curr(cpu as u32);
                self.settle(c);
            } else if let Some(since) = self.rq[cpu].idle_since {
                self.rq[cpu].idle += self.now - since;
                self.rq[cpu].idle_since = Some(self.now);
            }
        }
    }

    fn snapshot(&mut self) {
        self.snap = Some(Snapshot {
            stats: self.v.iter().map(|v| v.stats).collect(),
            idle: self.rq.iter().map(|r| r.idle).collect(),
            switches: self.switches,
            migrations: self.migrations,
        });
    }

    // ----- results --------------------------------------------------------

    fn finish(mut self) -> (SimResult, Option<Trace>) {
        let snap = self.snap.take().unwrap_or_else(|| Snapshot {
            stats: vec![Stats::default(); self.v.len()],
            idle: vec![0; self.rq.len()],
            switches: 0,
            migrations: 0,
        });
        let sim_ns = (self.end - self.warmup) as f64;
        let capacity = sim_ns * f64::from(self.pcpus);
        let mut vms = Vec::new();
        for v in &self.v {
            let s = v.stats;
            debug_assert_eq!(
                s.cpu,
                s.user + s.kernel + s.hold + s.spin + s.overhead,
                "every ns a vCPU ran is progress, spinning or overhead"
            );
        }
        for vm in &self.vms {
            let mut s = Stats::default();
            for i in vm.first..vm.first + vm.vcpus {
                let (a, b) = (self.v[i as usize].stats, snap.stats[i as usize]);
                s.cpu += a.cpu - b.cpu;
                s.user += a.user - b.user;
                s.spin += a.spin - b.spin;
                s.overhead += a.overhead - b.overhead;
                s.work += a.work - b.work;
                s.sections += a.sections - b.sections;
                s.ple_exits += a.ple_exits - b.ple_exits;
                s.switches += a.switches - b.switches;
                s.halts += a.halts - b.halts;
                s.holder_preemptions += a.holder_preemptions - b.holder_preemptions;
            }
            vms.push(VmResult {
                name: vm.name.clone(),
                workload: vm.workload.clone(),
                vcpus: vm.vcpus,
                work: s.work,
                sections: s.sections,
                user_ns: s.user as f64,
                throughput: s.work as f64 / (sim_ns / 1e9),
                cpu_ns: s.cpu as f64,
                spin_ns: s.spin as f64,
                overhead_ns: s.overhead as f64,
                utilization: s.cpu as f64 / capacity,
                ple_exits: s.ple_exits,
                switches: s.switches,
                halts: s.halts,
                holder_preemptions: s.holder_preemptions,
                response: vm.response.percentiles(),
            });
        }
        let idle: u64 = self
            .rq
            .iter()
            .zip(&snap.idle)
            .map(|(r, s)| r.idle - s)
            .sum();
        let result = SimResult {
            sim_ns,
            pcpus: self.pcpus,
            idle_ns: idle as f64,
            events: self.events,
            vms,
            switches: self.switches - snap.switches,
            migrations: self.migrations - snap.migrations,
        };
        let trace = self.trace.take().map(|mut t| {
            let end = self.end;
            for cpu in 0..self.pcpus {
                if let Some(c) = self.rq[cpu as usize].curr {
                    let start = self.v[c as usize].run_start;
                    if end > start {
                        t.runs.push(RunSpan {
                            vcpu: c,
                            pcpu: cpu,
                            start,
                            end,
                        });
                    }
                }
            }
            for (k, vm) in self.vms.iter().enumerate() {
                for (l, lock) in vm.locks.iter().enumerate() {
                    if let (Some(o), true) = (lock.owner, lock.held) {
                        t.holds.push(HoldSpan {
                            vm: k as u32,
                            lock: l as u32,
                            vcpu: o,
                            start: lock.hold_start,
                            end,
                        });
                    }
                }
            }
            t.idle_ns = self.rq.iter().map(|r| r.idle).collect();
            t.cpu_ns = self.v.iter().map(|v| v.stats.cpu).collect();
            t.end = end;
            t
        });
        (result, trace)
    }
}

/// A blank simulator for the parts' unit tests to build a state on by hand.
#[cfg(test)]
mod fixture {
    use super::{Phase, Rq, Sim, Stats, TState, VR_ORIGIN};
    use crate::lhp::config::{Dist, Host, LockKind, Scenario, VmSpec, Workload};
    use crate::lhp::policy::Policy;

    /// Virtual runtime 0 of the tests (every run queue's minimum at first).
    pub(super) const O: u64 = VR_ORIGIN;

    /// A scenario of one VM per `(vcpus, weight)` on `pcpus` pCPUs whose
    /// guest locks (one per VM) are `lock`s, on a host of round numbers:
    /// latency 6 ms, minimum granularity 0.75 ms, wake-up granularity
    /// 1 ms, switch 2 µs, exit 1 µs, hand-off 50 ns, 2 GHz (a 2048-cycle
    /// PLE window is 1024 ns).
    pub(super) fn scenario(
        pcpus: u32,
        vms: &[(u32, u32)],
        policy: Policy,
        lock: LockKind,
    ) -> Scenario {
        let mut w = Workload::preset("oltp").expect("a preset");
        w.user = Dist::Const(10_000.0);
        w.kernel = Dist::Const(5_000.0);
        w.hold = Dist::Const(1_000.0);
        w.sections = 1;
        w.locks = 1;
        w.lock = lock;
        let specs = vms
            .iter()
            .map(|&(vcpus, weight)| {
                let mut s = VmSpec::new(w.clone(), 1, vcpus);
                s.weight = weight;
                s
            })
            .collect();
        let mut s = Scenario::new(specs, policy);
        s.host = Host {
            cpu_ghz: 2.0,
            sched_latency_ns: 6e6,
            min_granularity_ns: 750_000.0,
            wakeup_granularity_ns: 1e6,
            ..Host::new(pcpus)
        };
        s
    }

    /// As [`scenario`], made into a simulator with every vCPU blocked in
    /// user mode at virtual runtime [`O`] on pCPU 0, every run queue empty
    /// and no event pending, at time 0.
    pub(super) fn blank(pcpus: u32, vms: &[(u32, u32)], policy: Policy, lock: LockKind) -> Sim {
        blank_from(&scenario(pcpus, vms, policy, lock))
    }

    /// [`blank`] for a scenario of the test's own.
    pub(super) fn blank_from(s: &Scenario) -> Sim {
        let mut sim = Sim::new(s, false);
        sim.heap.clear();
        sim.now = 0;
        for rq in &mut sim.rq {
            *rq = Rq {
                min_vr: O,
                ..Rq::default()
            };
        }
        for v in &mut sim.v {
            v.state = TState::Blocked;
            v.cpu = 0;
            v.vruntime = O;
            v.phase = Phase::User;
            v.remaining = 10_000;
            v.sum_exec = 0;
            v.prev_sum_exec = 0;
            v.stats = Stats::default();
        }
        sim
    }

    impl Sim {
        /// Queues blocked `i` on `cpu` at virtual runtime `vr`.
        pub(super) fn put(&mut self, i: u32, cpu: u32, vr: u64) {
            self.v[i as usize].vruntime = vr;
            self.enqueue(i, cpu);
        }

        /// Runs blocked `i` on idle `cpu` at virtual runtime `vr`.
        pub(super) fn run_on(&mut self, i: u32, cpu: u32, vr: u64) {
            assert_eq!(self.rq[cpu as usize].curr, None, "cpu{cpu} is busy");
            self.put(i, cpu, vr);
            self.rq[cpu as usize].force = Some(i);
            self.schedule(cpu);
            assert_eq!(self.rq[cpu as usize].curr, Some(i));
        }

        /// The vCPUs queued on `cpu`, leftmost first.
        pub(super) fn queued(&self, cpu: u32) -> Vec<u32> {
            self.rq[cpu as usize].tree.iter().map(|e| e.2).collect()
        }

        /// When the live guest event of `i` is due, if it has one.
        pub(super) fn guest_due(&self, i: u32) -> Option<u64> {
            let g = self.v[i as usize].gen;
            self.heap
                .iter()
                .filter(|e| e.0 .2 == super::Ev::Guest(i, g))
                .map(|e| e.0 .0)
                .max()
        }
    }
}
