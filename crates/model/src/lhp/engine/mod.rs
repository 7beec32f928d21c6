//! The discrete-event engine: host scheduler, guest vCPUs, guest locks, PLE
//! and the policies.
//!
//! **Time.** Integer nanoseconds of simulated time. Events sit in a binary
//! heap ordered by (time, sequence number), so simultaneous events run in
//! the order they were scheduled and a seed gives one history. Each vCPU has
//! at most one live guest event; a generation number on the vCPU makes the
//! older ones stale (they are dropped when popped) instead of searching the
//! heap.
//!
//! **Host.** Per pCPU a CFS-like run queue (Linux 2.6.38's `sched_fair.c`,
//! the kernel seed 004 modified, described in its documentation
//! `sched-design-CFS.txt`): the running task's virtual runtime grows by
//! `Δt · 1024 / weight`; queued tasks sit in a tree ordered by virtual
//! runtime; a tick preempts the running task when it has had its slice
//! (`max(latency, n · min_granularity) · weight / load`), or, after the
//! minimum granularity, when the leftmost task is a slice behind it. A
//! waking task is placed at `max(vruntime, min_vruntime − latency/2)` on
//! its previous pCPU if idle, else on an idle one, else on its previous
//! one, and preempts when the running task is more than the wake-up
//! granularity ahead. An idle pCPU pulls the leftmost queued task of the
//! busiest queue; every balance interval a queue at least two tasks busier
//! than another gives one away. A migrated task keeps its lag: its
//! virtual runtime moves by the difference of the two queues' minima.
//! "Next" and "skip" hints let a yield pick a given task next or avoid one,
//! as CFS's buddies do.
//!
//! Every vCPU starts a random fraction of a scheduling period behind in
//! virtual runtime: VMs do not boot in step, and run queues that turned in
//! lockstep would gang-schedule the VMs by accident and hide the problem
//! this simulator is about.
//!
//! **Guest.** A vCPU progresses only while its guest runs: a stint on a
//! pCPU first pays the host's switch cost (and any VM-exit cost), then its
//! phase's remaining length counts down. Phases: user, kernel work, spin
//! (waiting for a guest lock), cross-call (waiting for every sibling to
//! acknowledge a TLB shootdown, which a sibling does when it next runs),
//! hold (in a critical section), think (halted between requests) and idle
//! (a vCPU with no thread, halted for good). Ticket locks pass to the
//! oldest waiter, running or not; test-and-set locks go to a waiter that is
//! running when they are released (chosen at random), or, when none is, to
//! whoever polls first.
//!
//! **PLE.** A running spinner's guest event is its PLE exit, one window
//! after it started spinning in this stint (only when the policy uses PLE
//! and the spin loop's PAUSEs are at most `gap` cycles apart). The exit costs
//! `exit_ns` of the vCPU's time and hands the decision to the policy; see
//! [`Sim::ple_action`].
//!
//! One thread runs a simulation; nothing is shared, so there are no memory
//! orderings to argue. Determinism rests on three things: the seeded
//! generator, the (time, sequence) order of events, and iteration over
//! vectors and ordered trees only (never over hash maps).

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

    /// Charges the running vCPU's guest progress and overhead up to now.
    fn settle(&mut self, i: u32) {
        let now = self.now;
        let v = &mut self.v[i as usize];
        let ovh_end = now.min(v.seg_start);
        v.stats.overhead += ovh_end.saturating_sub(v.ovh_from);
        v.ovh_from = v.ovh_from.max(ovh_end);
        if now > v.seg_start {
            let p = now - v.seg_start;
            match v.phase {
                Phase::User => {
                    v.stats.user += p;
                    v.remaining -= p.min(v.remaining);
                }
                Phase::Kernel => {
                    v.stats.kernel += p;
                    v.remaining -= p.min(v.remaining);
                }
                Phase::Hold => {
                    v.stats.hold += p;
                    v.remaining -= p.min(v.remaining);
                }
                Phase::Spin => {
                    v.stats.spin += p;
                    v.spin_accum += p;
                }
                Phase::Ipi => v.stats.spin += p,
                Phase::Think | Phase::Idle => unreachable!("a halted vCPU does not run"),
            }
            v.seg_start = now;
            v.ovh_from = now;
        }
    }

    /// Adds `d` ns of overhead before the running vCPU's guest continues.
    fn add_overhead(&mut self, i: u32, d: u64) {
        self.settle(i);
        let now = self.now;
        let v = &mut self.v[i as usize];
        v.seg_start = v.seg_start.max(now) + d;
    }

    fn update_curr(&mut self, cpu: u32) {
        let Some(c) = self.rq[cpu as usize].curr else {
            return;
        };
        let now = self.now;
        let v = &mut self.v[c as usize];
        let d = now - v.exec_update;
        v.exec_update = now;
        v.sum_exec += d;
        v.stats.cpu += d;
        v.vruntime += d * NICE_0 / v.weight;
        self.update_min_vr(cpu);
    }

    fn update_min_vr(&mut self, cpu: u32) {
        let rq = &self.rq[cpu as usize];
        let curr = rq.curr.map(|c| self.v[c as usize].vruntime);
        let left = rq.tree.first().map(|e| e.0);
        let m = match (curr, left) {
            (Some(a), Some(b)) => a.min(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return,
        };
        let rq = &mut self.rq[cpu as usize];
        rq.min_vr = rq.min_vr.max(m);
    }

    // ----- run queues -----------------------------------------------------

    fn enqueue(&mut self, i: u32, cpu: u32) {
        self.tree_seq += 1;
        let v = &mut self.v[i as usize];
        v.seq = self.tree_seq;
        v.cpu = cpu;
        v.state = TState::Queued;
        let rq = &mut self.rq[cpu as usize];
        rq.tree.insert((v.vruntime, v.seq, i));
        rq.load += v.weight;
        rq.nr += 1;
    }

    fn dequeue(&mut self, i: u32) {
        let v = &self.v[i as usize];
        let rq = &mut self.rq[v.cpu as usize];
        let removed = rq.tree.remove(&(v.vruntime, v.seq, i));
        debug_assert!(removed, "dequeue of a vCPU not queued");
        rq.load -= v.weight;
        rq.nr -= 1;
    }

    /// Moves a queued vCPU to another run queue, keeping its lag.
    fn migrate(&mut self, i: u32, to: u32) {
        let from = self.v[i as usize].cpu;
        if from == to {
            return;
        }
        self.dequeue(i);
        let (fm, tm) = (self.rq[from as usize].min_vr, self.rq[to as usize].min_vr);
        let v = &mut self.v[i as usize];
        v.vruntime = (v.vruntime + tm).saturating_sub(fm).max(1);
        self.migrations += 1;
        self.enqueue(i, to);
    }

    fn slice(&self, cpu: u32, i: u32) -> u64 {
        let rq = &self.rq[cpu as usize];
        let period = self.latency.max(u64::from(rq.nr) * self.min_gran);
        period * self.v[i as usize].weight / rq.load.max(1)
    }

    /// Takes the running vCPU off `cpu` (back to its queue unless it
    /// blocks) and picks the next.
    fn resched(&mut self, cpu: u32) {
        self.update_curr(cpu);
        if let Some(c) = self.rq[cpu as usize].curr.take() {
            self.stop(c, cpu);
            self.rq[cpu as usize].load -= self.v[c as usize].weight;
            self.rq[cpu as usize].nr -= 1;
            self.enqueue(c, cpu);
        }
        self.schedule(cpu);
    }

    /// Ends a vCPU's stint on `cpu` (its state is set by the caller).
    fn stop(&mut self, i: u32, cpu: u32) {
        self.settle(i);
        let now = self.now;
        let recent = 2 * (self.ple_window_ns(i) + self.exit);
        let v = &mut self.v[i as usize];
        v.gen = v.gen.wrapping_add(1);
        v.exiting = false;
        v.ple_yielded = v.last_ple.is_some_and(|t| now - t <= recent);
        if v.phase == Phase::Hold {
            v.stats.holder_preemptions += 1;
        }
        let start = v.run_start;
        if let Some(t) = &mut self.trace {
            if now > start {
                t.runs.push(RunSpan {
                    vcpu: i,
                    pcpu: cpu,
                    start,
                    end: now,
                });
            }
        }
        self.rq[cpu as usize].last = Some(i);
    }

    /// Picks the next vCPU for an idle `cpu` (whose `curr` is `None`).
    fn schedule(&mut self, cpu: u32) {
        debug_assert!(self.rq[cpu as usize].curr.is_none());
        let mut pick = self.pick(cpu);
        if pick.is_none() {
            pick = self.pull(cpu);
        }
        let now = self.now;
        match pick {
            None => {
                let rq = &mut self.rq[cpu as usize];
                if rq.idle_since.is_none() {
                    rq.idle_since = Some(now);
                }
            }
            Some(i) => self.set_curr(cpu, i),
        }
    }

    fn pick(&mut self, cpu: u32) -> Option<u32> {
        let rq = &mut self.rq[cpu as usize];
        let force = rq.force.take();
        let next = rq.next.take();
        let skip = rq.skip.take();
        let queued_here =
            |n: u32| self.v[n as usize].state == TState::Queued && self.v[n as usize].cpu == cpu;
        if let Some(n) = force.filter(|&n| queued_here(n)) {
            return Some(n);
        }
        if let Some(n) = next.filter(|&n| queued_here(n)) {
            let left = rq.tree.first().map_or(u64::MAX, |e| e.0);
            let gran = self.wakeup_gran * NICE_0 / self.v[n as usize].weight;
            if self.v[n as usize].vruntime <= left.saturating_add(gran) {
                return Some(n);
            }
        }
        let mut it = rq.tree.iter();
        let first = it.next()?.2;
        if Some(first) == skip {
            if let Some(second) = it.next() {
                return Some(second.2);
            }
        }
        Some(first)
    }

    fn set_curr(&mut self, cpu: u32, i: u32) {
        self.dequeue(i);
        let now = self.now;
        {
            let rq = &mut self.rq[cpu as usize];
            if let Some(since) = rq.idle_since.take() {
                rq.idle += now - since;
            }
            rq.curr = Some(i);
            rq.load += self.v[i as usize].weight;
            rq.nr += 1;
        }
        let switched = self.rq[cpu as usize].last != Some(i);
        let base = self.ple_base;
        let mode = self.ple_mode;
        let v = &mut self.v[i as usize];
        v.state = TState::Running;
        v.ple_yielded = false;
        v.cpu = cpu;
        v.exec_update = now;
        v.prev_sum_exec = v.sum_exec;
        v.run_start = now;
        let mut ovh = std::mem::take(&mut v.pending_ovh);
        if switched {
            ovh += self.switch;
            v.stats.switches += 1;
            self.switches += 1;
            if let PleMode::Kvm { shrink, .. } = mode {
                v.ple_window = if shrink == 0 {
                    base
                } else {
                    (v.ple_window / u64::from(shrink)).max(base)
                };
            }
        }
        v.ovh_from = now;
        v.seg_start = now + ovh;
        self.update_min_vr(cpu);
        self.start_guest(i);
        if !self.v[i as usize].ipi_from.is_empty() {
            self.acknowledge(i);
        }
        // DTCS: vCPUs waiting to run with this one go now.
        if !self.deferred[i as usize].is_empty() {
            for w in std::mem::take(&mut self.deferred[i as usize]) {
                if self.v[w as usize].deferred_on == Some(i) {
                    self.undefer(w, true);
                }
            }
        }
    }

    /// An idle `cpu` takes the leftmost queued vCPU of the busiest queue.
    fn pull(&mut self, cpu: u32) -> Option<u32> {
        let busiest = (0..self.pcpus)
            .filter(|&c| c != cpu && !self.rq[c as usize].tree.is_empty())
            .max_by_key(|&c| (self.rq[c as usize].nr, Reverse(c)))?;
        let i = self.rq[busiest as usize].tree.first()?.2;
        self.migrate(i, cpu);
        Some(i)
    }

    fn periodic_balance(&mut self) {
        for cpu in 0..self.pcpus {
            let Some(busiest) = (0..self.pcpus)
                .filter(|&c| !self.rq[c as usize].tree.is_empty())
                .max_by_key(|&c| (self.rq[c as usize].nr, Reverse(c)))
            else {
                return;
            };
            if self.rq[busiest as usize].nr >= self.rq[cpu as usize].nr + 2 {
                let i = self.rq[busiest as usize].tree.first().expect("non-empty").2;
                self.migrate(i, cpu);
                if self.rq[cpu as usize].curr.is_none() {
                    self.schedule(cpu);
                }
            }
        }
    }

    fn tick_cpu(&mut self, cpu: u32) {
        self.update_curr(cpu);
        let Some(c) = self.rq[cpu as usize].curr else {
            return;
        };
        let rq = &self.rq[cpu as usize];
        let Some(&(left_vr, _, _)) = rq.tree.first() else {
            return;
        };
        let ideal = self.slice(cpu, c);
        let v = &self.v[c as usize];
        let ran = v.sum_exec - v.prev_sum_exec;
        if ran > ideal || (ran >= self.min_gran && v.vruntime > left_vr + ideal) {
            self.resched(cpu);
        }
    }

    /// A blocked vCPU becomes runnable: on its previous pCPU if idle, else
    /// on an idle one, else on its previous one.
    fn wake(&mut self, i: u32) {
        let prev = self.v[i as usize].cpu;
        let cpu = if self.rq[prev as usize].curr.is_none() {
            prev
        } else {
            (1..self.pcpus)
                .map(|k| (prev + k) % self.pcpus)
                .find(|&c| self.rq[c as usize].curr.is_none())
                .unwrap_or(prev)
        };
        self.enqueue_woken(i, cpu);
        match self.rq[cpu as usize].curr {
            None => self.schedule(cpu),
            Some(c) => {
                let gran = self.wakeup_gran * NICE_0 / self.v[i as usize].weight;
                if self.v[c as usize].vruntime > self.v[i as usize].vruntime + gran {
                    self.resched(cpu);
                }
            }
        }
    }

    /// Queues blocked `i` on `cpu` with CFS's sleeper placement.
    fn enqueue_woken(&mut self, i: u32, cpu: u32) {
        let prev = self.v[i as usize].cpu;
        if cpu != prev {
            let (fm, tm) = (self.rq[prev as usize].min_vr, self.rq[cpu as usize].min_vr);
            let v = &mut self.v[i as usize];
            v.vruntime = (v.vruntime + tm).saturating_sub(fm).max(1);
            self.migrations += 1;
        }
        self.update_curr(cpu);
        let floor = self.rq[cpu as usize]
            .min_vr
            .saturating_sub(self.latency / 2);
        let v = &mut self.v[i as usize];
        v.vruntime = v.vruntime.max(floor);
        self.enqueue(i, cpu);
    }

    /// The running vCPU `i` halts: its pCPU picks another.
    fn block(&mut self, i: u32) {
        let cpu = self.v[i as usize].cpu;
        debug_assert_eq!(self.rq[cpu as usize].curr, Some(i));
        self.update_curr(cpu);
        self.stop(i, cpu);
        let rq = &mut self.rq[cpu as usize];
        rq.curr = None;
        rq.load -= self.v[i as usize].weight;
        rq.nr -= 1;
        self.v[i as usize].state = TState::Blocked;
        self.schedule(cpu);
    }

    /// Runs queued vCPU `i` on `cpu` now, preempting whatever runs there.
    fn run_now(&mut self, i: u32, cpu: u32) {
        self.migrate(i, cpu);
        self.rq[cpu as usize].force = Some(i);
        if self.rq[cpu as usize].curr.is_some() {
            self.resched(cpu);
        } else {
            self.schedule(cpu);
        }
    }

    // ----- guest ----------------------------------------------------------

    fn ple_window_ns(&self, i: u32) -> u64 {
        ((self.v[i as usize].ple_window as f64 / self.ghz).round() as u64).max(1)
    }

    /// Arms the running vCPU's next guest event for its phase.
    fn start_guest(&mut self, i: u32) {
        let now = self.now;
        let v = &mut self.v[i as usize];
        v.gen = v.gen.wrapping_add(1);
        let g = v.gen;
        let from = v.seg_start.max(now);
        match v.phase {
            Phase::User | Phase::Kernel | Phase::Hold => {
                let t = from + v.remaining;
                self.at(t, Ev::Guest(i, g));
            }
            Phase::Spin => {
                if self.can_take(i) {
                    self.settle(i);
                    self.acquire(i, true);
                    return self.start_guest(i);
                }
                if self.ple_on {
                    let t = from + self.ple_window_ns(i);
                    self.at(t, Ev::Guest(i, g));
                } else if self.policy == Policy::Pv {
                    let left = self.pv_spin.saturating_sub(self.v[i as usize].spin_accum);
                    self.at(from + left, Ev::Guest(i, g));
                }
            }
            Phase::Ipi => {
                if self.ple_on {
                    let t = from + self.ple_window_ns(i);
                    self.at(t, Ev::Guest(i, g));
                }
            }
            Phase::Think | Phase::Idle => unreachable!("a halted vCPU does not run"),
        }
    }

    fn can_take(&self, i: u32) -> bool {
        let v = &self.v[i as usize];
        let lock = &self.vms[v.vm as usize].locks[v.lock as usize];
        match self.vms[v.vm as usize].lock_kind {
            LockKind::Ticket => lock.owner == Some(i) && !lock.held,
            LockKind::Tas => lock.owner.is_none(),
        }
    }

    /// `i` starts its critical section (its lock is free to it).
    fn acquire(&mut self, i: u32, after_spin: bool) {
        let now = self.now;
        let (vm, l) = (
            self.v[i as usize].vm as usize,
            self.v[i as usize].lock as usize,
        );
        let hold = self.rng.sample(self.vms[vm].hold);
        let lock = &mut self.vms[vm].locks[l];
        lock.owner = Some(i);
        lock.held = true;
        lock.hold_start = now;
        lock.waiters.retain(|&w| w != i);
        let v = &mut self.v[i as usize];
        v.phase = Phase::Hold;
        v.remaining = hold + if after_spin { self.handoff } else { 0 };
        v.spin_accum = 0;
        v.exiting = false;
    }

    /// The running vCPU's phase (or spin window) ended.
    fn guest_event(&mut self, i: u32) {
        self.settle(i);
        let vm = self.v[i as usize].vm as usize;
        match self.v[i as usize].phase {
            Phase::User => {
                if self.vms[vm].sections == 0 {
                    self.cycle_done(i);
                } else if self.vms[vm].ipi > 0.0 && self.rng.unit() < self.vms[vm].ipi {
                    self.cross_call(i);
                } else {
                    self.v[i as usize].sections_left = self.vms[vm].sections;
                    self.begin_kernel(i);
                }
            }
            Phase::Kernel => self.request(i),
            Phase::Hold => {
                self.release(i);
                let v = &mut self.v[i as usize];
                v.sections_left -= 1;
                if v.sections_left > 0 {
                    self.begin_kernel(i);
                } else {
                    self.cycle_done(i);
                }
            }
            Phase::Spin if self.policy == Policy::Pv => self.pv_halt(i),
            Phase::Spin | Phase::Ipi if self.v[i as usize].exiting => {
                self.v[i as usize].exiting = false;
                self.ple_action(i);
            }
            Phase::Spin | Phase::Ipi => self.ple_exit(i),
            Phase::Think | Phase::Idle => unreachable!("a halted vCPU does not run"),
        }
    }

    /// `i` sends a synchronous cross-call (a TLB shootdown) to every
    /// sibling that runs its workload and is not halted (a halted vCPU is
    /// in lazy TLB mode and is skipped, as Linux skips it), and spins until
    /// each has acknowledged, which a sibling does as soon as it runs. Under
    /// `pv` the guest skips preempted siblings too (KVM's paravirtual TLB
    /// flush leaves the flush to their next entry), so it never waits.
    fn cross_call(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let (first, n) = (self.vms[vm].first, self.vms[vm].vcpus);
        let mut wait = 0;
        for t in first..first + n {
            if t != i && self.v[t as usize].state == TState::Queued && self.policy != Policy::Pv {
                self.v[t as usize].ipi_from.push(i);
                wait += 1;
            }
        }
        if wait == 0 {
            return self.after_cross_call(i);
        }
        let v = &mut self.v[i as usize];
        v.ipi_wait = wait;
        v.phase = Phase::Ipi;
        self.start_guest(i);
    }

    /// The cross-call of `i` is acknowledged by all: its kernel phase
    /// goes on.
    fn after_cross_call(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let k = self.rng.sample(self.vms[vm].kernel);
        let v = &mut self.v[i as usize];
        v.sections_left = self.vms[vm].sections;
        v.phase = Phase::Kernel;
        v.remaining = k;
        v.exiting = false;
        if v.state == TState::Running {
            self.start_guest(i);
        }
    }

    /// Switched-in `t` acknowledges the cross-calls waiting for it.
    fn acknowledge(&mut self, t: u32) {
        for s in std::mem::take(&mut self.v[t as usize].ipi_from) {
            let v = &mut self.v[s as usize];
            v.ipi_wait -= 1;
            if v.ipi_wait == 0 {
                if v.state == TState::Running {
                    self.settle(s);
                }
                self.after_cross_call(s);
            }
        }
    }

    fn begin_kernel(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let k = self.rng.sample(self.vms[vm].kernel);
        let v = &mut self.v[i as usize];
        v.phase = Phase::Kernel;
        v.remaining = k;
        self.start_guest(i);
    }

    fn cycle_done(&mut self, i: u32) {
        let now = self.now;
        let vm = self.v[i as usize].vm as usize;
        let rt = now - self.v[i as usize].cycle_start;
        self.vms[vm].response.record(rt);
        self.v[i as usize].stats.work += 1;
        match self.vms[vm].think {
            Some(d) => {
                let t = self.rng.sample(d);
                self.v[i as usize].phase = Phase::Think;
                self.v[i as usize].stats.halts += 1;
                self.block(i);
                let g = self.v[i as usize].gen;
                self.at(now + t, Ev::Wake(i, g));
            }
            None => {
                let u = self.rng.sample(self.vms[vm].user);
                let v = &mut self.v[i as usize];
                v.cycle_start = now;
                v.phase = Phase::User;
                v.remaining = u;
                self.start_guest(i);
            }
        }
    }

    fn think_over(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let u = self.rng.sample(self.vms[vm].user);
        let v = &mut self.v[i as usize];
        v.cycle_start = self.now;
        v.phase = Phase::User;
        v.remaining = u;
        v.pending_ovh += self.exit;
        self.wake(i);
    }

    /// `i` asks for one of its VM's locks.
    fn request(&mut self, i: u32) {
        let vm = self.v[i as usize].vm as usize;
        let l = self.rng.below(self.vms[vm].locks.len() as u32);
        self.v[i as usize].lock = l;
        let kind = self.vms[vm].lock_kind;
        let lock = &mut self.vms[vm].locks[l as usize];
        if lock.owner.is_none() {
            self.acquire(i, false);
        } else {
            match kind {
                LockKind::Ticket => lock.queue.push_back(i),
                LockKind::Tas => lock.waiters.push(i),
            }
            let v = &mut self.v[i as usize];
            v.phase = Phase::Spin;
            v.spin_accum = 0;
        }
        self.start_guest(i);
    }

    fn release(&mut self, i: u32) {
        let now = self.now;
        let vm = self.v[i as usize].vm as usize;
        let l = self.v[i as usize].lock as usize;
        self.v[i as usize].stats.sections += 1;
        let kind = self.vms[vm].lock_kind;
        let lock = &mut self.vms[vm].locks[l];
        debug_assert_eq!(lock.owner, Some(i));
        if let Some(t) = &mut self.trace {
            t.holds.push(HoldSpan {
                vm: vm as u32,
                lock: l as u32,
                vcpu: i,
                start: lock.hold_start,
                end: now,
            });
        }
        lock.held = false;
        let next = match kind {
            LockKind::Ticket if self.policy == Policy::Pv => {
                // pv queued locks let a running waiter take the lock when
                // the queue's head is not running (Linux's pv qspinlock
                // steals, against lock-waiter preemption).
                let v = &self.v;
                let head_runs = lock
                    .queue
                    .front()
                    .is_some_and(|&w| v[w as usize].state == TState::Running);
                let pos = if head_runs {
                    Some(0)
                } else {
                    lock.queue
                        .iter()
                        .position(|&w| v[w as usize].state == TState::Running)
                        .or(if lock.queue.is_empty() { None } else { Some(0) })
                };
                lock.owner = pos.and_then(|k| lock.queue.remove(k));
                lock.owner
            }
            LockKind::Ticket => {
                lock.owner = lock.queue.pop_front();
                lock.owner
            }
            LockKind::Tas => {
                lock.owner = None;
                let v = &self.v;
                let runs = |w: &u32| v[*w as usize].state == TState::Running;
                let running = lock.waiters.iter().filter(|w| runs(w)).count();
                if running == 0 {
                    // Nobody polls now: under pv a halted waiter is kicked
                    // to try again.
                    let halted = lock
                        .waiters
                        .iter()
                        .copied()
                        .find(|&w| v[w as usize].pv_halted);
                    if let Some(w) = halted {
                        self.kick(i, w);
                    }
                    None
                } else {
                    let k = self.rng.below(running as u32) as usize;
                    lock.waiters.iter().copied().filter(|w| runs(w)).nth(k)
                }
            }
        };
        if let Some(w) = next {
            if self.v[w as usize].state == TState::Running {
                self.settle(w);
                self.acquire(w, true);
                self.start_guest(w);
            } else if self.v[w as usize].pv_halted {
                self.kick(i, w);
            }
        }
    }

    /// pv: the releaser `by` wakes the halted waiter `w` with a hypercall.
    fn kick(&mut self, by: u32, w: u32) {
        self.add_overhead(by, self.exit);
        let v = &mut self.v[w as usize];
        v.pv_halted = false;
        v.spin_accum = 0;
        v.pending_ovh += self.exit;
        self.wake(w);
    }

    /// pv: a waiter spun for the threshold and halts until kicked.
    fn pv_halt(&mut self, i: u32) {
        self.v[i as usize].pv_halted = true;
        self.v[i as usize].stats.halts += 1;
        self.block(i);
    }

    // ----- policies -------------------------------------------------------

    /// A PLE exit of the running spinner `i`: the exit costs `exit_ns` of
    /// its time (the window grows under KVM's adaptive PLE), and when that
    /// is paid [`Sim::ple_action`] applies the policy.
    fn ple_exit(&mut self, i: u32) {
        self.v[i as usize].stats.ple_exits += 1;
        self.v[i as usize].last_ple = Some(self.now);
        if let PleMode::Kvm {
            grow, max_cycles, ..
        } = self.ple_mode
        {
            let v = &mut self.v[i as usize];
            v.ple_window = (v.ple_window.saturating_mul(u64::from(grow))).min(max_cycles);
        }
        self.add_overhead(i, self.exit);
        let v = &mut self.v[i as usize];
        v.exiting = true;
        v.gen = v.gen.wrapping_add(1);
        let (t, g) = (v.seg_start, v.gen);
        self.at(t, Ev::Guest(i, g));
    }

    /// The policy's answer once the PLE exit of `i` has been paid for.
    ///
    /// - `yth`: the spinner is requeued at its virtual runtime, at or near
    ///   the head, and the pCPU picks again ([`Sim::yield_to_head`]); `ytt`:
    ///   it is requeued behind the rightmost task (2.6.38's compat yield).
    /// - `itcs`/`sitcs`: queued siblings (`sitcs`: those preempted in kernel
    ///   mode) run now on their own pCPUs ([`Sim::coschedule`]); the spinner
    ///   spins on.
    /// - `dtcs`: the spinner is descheduled until the first queued sibling
    ///   preempted in kernel mode (round robin from the spinner) is switched
    ///   in, and then runs at once beside it (at most one scheduling
    ///   latency later in any case); with no such sibling it spins on.
    /// - `kvm-dy`: the first queued sibling preempted in kernel mode that is
    ///   not a known spinner ([`Sim::directed_yield_target`]), round robin
    ///   from the last one boosted, is made the next task of its pCPU, which
    ///   reschedules, and the spinner yields its pCPU (CFS `yield_to`: next
    ///   and skip buddies); with no such sibling the spinner spins on, as
    ///   `kvm_vcpu_on_spin` does.
    fn ple_action(&mut self, i: u32) {
        let cpu = self.v[i as usize].cpu;
        match self.policy {
            Policy::None | Policy::Pv => unreachable!("PLE is off under {}", self.policy),
            Policy::Yth => self.yield_to_head(cpu),
            Policy::Ytt => {
                self.update_curr(cpu);
                if let Some(&(vr, _, _)) = self.rq[cpu as usize].tree.last() {
                    let v = &mut self.v[i as usize];
                    v.vruntime = v.vruntime.max(vr + 1);
                    self.resched(cpu);
                } else {
                    self.start_guest(i);
                }
            }
            Policy::Itcs | Policy::Sitcs => {
                self.coschedule(i, self.policy == Policy::Sitcs);
                if self.v[i as usize].state == TState::Running && self.v[i as usize].spinning() {
                    self.start_guest(i);
                }
            }
            Policy::Dtcs => {
                match self.sibling(i, i, |v| v.state == TState::Queued && v.in_kernel()) {
                    Some(h) => {
                        self.v[i as usize].deferred_on = Some(h);
                        self.deferred[h as usize].push(i);
                        self.block(i);
                        let g = self.v[i as usize].gen;
                        let t = self.now + self.latency;
                        self.at(t, Ev::Undefer(i, g));
                    }
                    None => self.start_guest(i),
                }
            }
            Policy::KvmDy => {
                let vm = self.v[i as usize].vm as usize;
                let from = self.vms[vm].first + self.vms[vm].last_boosted;
                let target = self.directed_yield_target(i, from);
                if let Some(t) = target {
                    self.vms[vm].last_boosted = t - self.vms[vm].first;
                    let tcpu = self.v[t as usize].cpu;
                    if tcpu == cpu {
                        self.rq[cpu as usize].next = Some(t);
                        self.resched(cpu);
                        return;
                    }
                    self.rq[tcpu as usize].next = Some(t);
                    self.resched(tcpu);
                    self.rq[cpu as usize].skip = Some(i);
                    self.resched(cpu);
                } else {
                    // Nobody to yield to: back to the guest.
                    self.start_guest(i);
                }
            }
        }
    }

    /// KVM's candidate for a directed yield from `i`: the first sibling
    /// after `from` that is queued, was preempted in kernel mode, and is not
    /// a known spinner (a known spinner passes every other time it is
    /// looked at, as KVM's `dy_eligible` toggles).
    fn directed_yield_target(&mut self, i: u32, from: u32) -> Option<u32> {
        for s in self.ring(i, from) {
            let v = &mut self.v[s as usize];
            if v.state != TState::Queued || !v.in_kernel() {
                continue;
            }
            if v.ple_yielded {
                v.dy_eligible = !v.dy_eligible;
                if !v.dy_eligible {
                    continue;
                }
            }
            return Some(s);
        }
        None
    }

    /// The siblings of `i` in round-robin order starting after `from`
    /// (a vCPU of the same VM), `i` itself left out.
    fn ring(&self, i: u32, from: u32) -> impl Iterator<Item = u32> {
        let vm = &self.vms[self.v[i as usize].vm as usize];
        let (first, n) = (vm.first, vm.vcpus);
        let start = from - first;
        (1..=n)
            .map(move |k| first + (start + k) % n)
            .filter(move |&s| s != i)
    }

    /// The first sibling of `i` after `from` (round robin within the VM)
    /// for which `ok` holds.
    fn sibling(&self, i: u32, from: u32, ok: impl Fn(&Vcpu) -> bool) -> Option<u32> {
        self.ring(i, from).find(|&s| ok(&self.v[s as usize]))
    }

    /// YTH: the spinner goes back into its run queue where its virtual
    /// runtime puts it, at or near the head, and the pCPU picks again: a
    /// task that is owed more CPU runs, otherwise the spinner goes on. This
    /// is `sched_yield` in Linux 2.6.38's CFS without the compat flag, the
    /// kernel seed 004 built on.
    fn yield_to_head(&mut self, cpu: u32) {
        self.resched(cpu);
    }

    /// ITCS/SITCS: runs the spinner's queued siblings (those preempted in
    /// kernel mode with `kernel_only`) now, each on the pCPU whose queue it
    /// waits in, unless a sibling already runs there (two vCPUs of a VM
    /// cannot share a pCPU). The spinner keeps its pCPU and spins on, and
    /// nothing is stopped later: when the co-scheduled vCPUs give way is
    /// left to CFS, whose virtual runtimes then even out what they took
    /// (seed 004 §2.1). A sibling further ahead in virtual runtime than
    /// CFS lets a next buddy be stays queued.
    fn coschedule(&mut self, i: u32, kernel_only: bool) {
        let vm = self.v[i as usize].vm;
        let first = self.vms[vm as usize].first;
        let n = self.vms[vm as usize].vcpus;
        for s in first..first + n {
            let sv = &self.v[s as usize];
            if s == i || sv.state != TState::Queued || (kernel_only && !sv.in_kernel()) {
                continue;
            }
            let cpu = sv.cpu;
            let rq = &self.rq[cpu as usize];
            if let Some(r) = rq.curr {
                let rv = &self.v[r as usize];
                if rv.vm == vm {
                    continue;
                }
                // CFS's rule for a next buddy: not more than the wake-up
                // granularity ahead of the task it displaces, so a VM that
                // keeps exiting cannot take the host over.
                if sv.vruntime > rv.vruntime.saturating_add(self.wakeup_gran) {
                    continue;
                }
            }
            self.run_now(s, cpu);
        }
    }

    /// DTCS: deferred `i` becomes runnable. With `together` (the sibling
    /// it waited for was just switched in) it runs at once on a pCPU not
    /// running a sibling, its own if possible; otherwise it wakes normally.
    fn undefer(&mut self, i: u32, together: bool) {
        self.v[i as usize].deferred_on = None;
        if together {
            let vm = self.v[i as usize].vm;
            let home = self.v[i as usize].cpu;
            let free = |c: u32| {
                self.rq[c as usize]
                    .curr
                    .is_none_or(|r| self.v[r as usize].vm != vm)
            };
            let cpu = if free(home) {
                Some(home)
            } else {
                (0..self.pcpus).find(|&c| free(c))
            };
            if let Some(cpu) = cpu {
                self.enqueue_woken(i, cpu);
                self.rq[cpu as usize].force = Some(i);
                if self.rq[cpu as usize].curr.is_some() {
                    self.resched(cpu);
                } else {
                    self.schedule(cpu);
                }
                return;
            }
        }
        self.wake(i);
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
