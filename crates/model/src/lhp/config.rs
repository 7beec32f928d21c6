//! What a simulation is given: the host, its pause-loop exiting, the VMs and
//! their guest workloads, the policy, the length and the seed.
//!
//! Every time is in nanoseconds of simulated time, except the PLE settings,
//! which hardware counts in CPU cycles (converted with [`Host::cpu_ghz`]).
//! [`Scenario::validate`] checks everything once, and its errors name the
//! field (`host.pcpus`, `vm[2].workload.hold`) so a configuration file's
//! mistake can be found.
//!
//! Defaults follow seed 004's set-up (Zhang, Zhang and Chen, *Efficient
//! transitory co-scheduling for MP virtual machines*, 2014, §3): two
//! quad-core Xeon E5606 (8 pCPUs), Linux 2.6.38 host and unmodified
//! Linux 2.6.38 guests, 8 vCPUs per VM, PLE_WIN 2048 and PLE_GAP 128 (§2.4).
//! The seed gives no clock rate; locklab takes the E5606's rated 2.13 GHz.
//! The seed defines PLE_WIN as the most PAUSE instructions a spin loop
//! executes in normal running and PLE_GAP as the time between two
//! consecutive PAUSEs (§1.2); locklab reads both as cycles, as Intel VT-x
//! counts its PLE_Gap and PLE_Window. The scheduler's defaults
//! are 2.6.38's CFS tunables scaled by 1 + log2(pCPUs) as that kernel does
//! (6 ms latency, 0.75 ms minimum granularity, 1 ms wake-up granularity on
//! one CPU).

use super::policy::Policy;
use std::fmt;

/// A length drawn for each phase: fixed, or exponential with a mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Dist {
    /// Always this many ns.
    Const(f64),
    /// Exponentially distributed with this mean, ns.
    Exp(f64),
}

impl Dist {
    /// The mean, ns.
    pub fn mean(self) -> f64 {
        match self {
            Dist::Const(x) | Dist::Exp(x) => x,
        }
    }

    /// Parses `const:NS`, `exp:NS` or a bare number (fixed).
    pub fn parse(s: &str) -> Result<Dist, String> {
        let s = s.trim();
        let (kind, num) = match s.split_once(':') {
            Some((k, n)) => (k.trim(), n.trim()),
            None => ("const", s),
        };
        let x: f64 = num.parse().map_err(|_| {
            format!("`{s}` is not a length: give ns as `exp:MEAN`, `const:NS` or a number")
        })?;
        match kind {
            "const" => Ok(Dist::Const(x)),
            "exp" => Ok(Dist::Exp(x)),
            _ => Err(format!(
                "`{kind}` is not a distribution: `exp` (exponential) or `const` (fixed)"
            )),
        }
    }
}

impl fmt::Display for Dist {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dist::Const(x) => write!(f, "const:{x}"),
            Dist::Exp(x) => write!(f, "exp:{x}"),
        }
    }
}

/// A guest spin lock's algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LockKind {
    /// FIFO: the lock passes to the oldest waiter even when that waiter is
    /// preempted, so a preempted *waiter* stops everyone behind it. x86
    /// Linux used ticket spin locks from 2.6.25 to 4.1, so the seed's
    /// 2.6.38 guests had them; the seed itself does not name the lock.
    Ticket,
    /// Test-and-set: whoever runs and polls first after a release takes it.
    Tas,
}

impl LockKind {
    /// Every kind, for help texts.
    pub const ALL: [LockKind; 2] = [LockKind::Ticket, LockKind::Tas];

    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            LockKind::Ticket => "ticket",
            LockKind::Tas => "tas",
        }
    }

    /// The kind named `s`.
    pub fn from_name(s: &str) -> Option<LockKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// What each vCPU of a VM runs, over and over: a user-mode phase, then a
/// kernel-mode phase of `sections` spin-lock critical sections, each
/// preceded by kernel work outside any lock; then, for request workloads, an
/// idle think time with the vCPU halted. One such cycle is one unit of work
/// (a transaction, a message, a request).
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Preset name, or the name a configuration gave it.
    pub name: String,
    /// User-mode work per cycle (no kernel lock can be held).
    pub user: Dist,
    /// Kernel work before each critical section, outside any lock.
    pub kernel: Dist,
    /// Length of each critical section.
    pub hold: Dist,
    /// Critical sections per cycle (0: a CPU-bound workload with no locks).
    pub sections: u32,
    /// Guest locks the sections pick among, uniformly.
    pub locks: u32,
    /// The guest locks' algorithm.
    pub lock: LockKind,
    /// Chance per cycle (0 to 1) that the kernel phase starts with a
    /// synchronous cross-call to every sibling (a TLB shootdown): the
    /// sender spins until each has run. Needs `sections` ≥ 1.
    pub ipi: f64,
    /// vCPUs that run the workload (the others stay halted, as an idle
    /// guest CPU does); `None` for all of them.
    pub threads: Option<u32>,
    /// Halted time between cycles (`None`: the next cycle starts at once).
    /// Response times are measured from the end of the think time.
    pub think: Option<Dist>,
}

/// The ready-made workloads, by name.
pub const PRESETS: [&str; 4] = ["hackbench", "oltp", "pi", "latency"];

impl Workload {
    /// A ready-made workload: `hackbench` (many short kernel critical
    /// sections: message passing), `oltp` (a database: user work and
    /// frequent short kernel sections), `pi` (CPU-bound, no locks),
    /// `latency` (one thread issuing requests with think times, measured
    /// for response time).
    pub fn preset(name: &str) -> Option<Workload> {
        let w = |user: Dist, kernel: Dist, hold: Dist, sections: u32, locks: u32| Workload {
            name: name.to_string(),
            user,
            kernel,
            hold,
            sections,
            locks,
            lock: LockKind::Ticket,
            ipi: 0.0,
            threads: None,
            think: None,
        };
        Some(match name {
            // Hackbench spends most of its time in the kernel, sending
            // and receiving on sockets: short user phases, several locked
            // sections each.
            "hackbench" => Workload {
                ipi: 0.01,
                ..w(
                    Dist::Exp(2_000.0),
                    Dist::Exp(1_000.0),
                    Dist::Exp(300.0),
                    4,
                    8,
                )
            },
            // SysBench OLTP: query processing in user mode, then a few
            // system calls with short locked sections, and now and then a
            // TLB shootdown (memory freed by one thread of the database).
            "oltp" => Workload {
                ipi: 0.02,
                ..w(
                    Dist::Exp(20_000.0),
                    Dist::Exp(2_000.0),
                    Dist::Exp(300.0),
                    2,
                    4,
                )
            },
            // Computing pi: a fixed amount of user work per unit, no kernel.
            "pi" => w(
                Dist::Const(100_000.0),
                Dist::Const(0.0),
                Dist::Const(0.0),
                0,
                0,
            ),
            // One request thread (seed 004 §3.3's single-threaded SysBench).
            "latency" => Workload {
                threads: Some(1),
                think: Some(Dist::Exp(100_000.0)),
                ..w(
                    Dist::Exp(20_000.0),
                    Dist::Exp(2_000.0),
                    Dist::Exp(300.0),
                    2,
                    4,
                )
            },
            _ => return None,
        })
    }
}

/// How pause-loop exiting decides a vCPU is spinning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PleMode {
    /// A fixed window (seed 004's PLE_WIN 2048, which the seed counts in
    /// PAUSEs; here cycles).
    Fixed,
    /// KVM's adaptive window: each PLE exit multiplies the vCPU's window by
    /// `grow` (up to `max_cycles`); each time the vCPU is scheduled in, the
    /// window is divided by `shrink`, or reset to the base when `shrink` is
    /// 0 (KVM's defaults: base 4096, grow 2, shrink 0).
    Kvm {
        /// Factor per exit (≥ 1).
        grow: u32,
        /// Divisor per schedule-in; 0 resets to the base window.
        shrink: u32,
        /// Largest window, cycles.
        max_cycles: u64,
    },
}

/// Pause-loop exiting: a vCPU that executes PAUSE with at most `gap_cycles`
/// between two of them, for `window_cycles`, exits to the host. The host's
/// policy then decides what happens. Intel VT-x applies it to guest kernel
/// mode (CPL 0) only, so a user-mode spinner never exits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ple {
    /// PLE_GAP, cycles.
    pub gap_cycles: u64,
    /// PLE_WINDOW, cycles (KVM mode: the base window).
    pub window_cycles: u64,
    /// Fixed or KVM-adaptive window.
    pub mode: PleMode,
}

impl Ple {
    /// Seed 004's values: gap 128, window 2048, fixed (read as cycles).
    pub fn seed004() -> Ple {
        Ple {
            gap_cycles: 128,
            window_cycles: 2048,
            mode: PleMode::Fixed,
        }
    }

    /// Today's KVM defaults: gap 128, window 4096, grow ×2, shrink to the base.
    pub fn kvm() -> Ple {
        Ple {
            gap_cycles: 128,
            window_cycles: 4096,
            mode: PleMode::Kvm {
                grow: 2,
                shrink: 0,
                max_cycles: 1 << 30,
            },
        }
    }
}

/// The physical machine and its CFS-like scheduler.
#[derive(Debug, Clone, PartialEq)]
pub struct Host {
    /// Physical CPUs.
    pub pcpus: u32,
    /// Clock rate, GHz (converts PLE cycles to ns).
    pub cpu_ghz: f64,
    /// CFS target latency: the period in which every runnable task of a
    /// run queue runs once, ns.
    pub sched_latency_ns: f64,
    /// CFS minimum granularity: the shortest slice, ns.
    pub min_granularity_ns: f64,
    /// CFS wake-up granularity: how far ahead a woken task must be to
    /// preempt the running one, ns.
    pub wakeup_granularity_ns: f64,
    /// Scheduler tick, ns.
    pub tick_ns: f64,
    /// Periodic load balancing interval, ns.
    pub balance_ns: f64,
    /// Cost of a host context switch between tasks, ns (charged to the
    /// incoming task's CPU time, before its guest runs).
    pub switch_ns: f64,
    /// Cost of a VM exit and re-entry for a PLE exit, a halt or a kick, ns.
    pub exit_ns: f64,
    /// Extra time a lock hand-off takes (the lock's cache line moving), ns.
    pub handoff_ns: f64,
    /// Cycles between two PAUSEs of a guest spin loop (PLE only sees loops
    /// whose gap is at most `Ple::gap_cycles`).
    pub spin_loop_cycles: u64,
    /// Paravirtual spin locks (`pv`): how long a waiter spins before it
    /// halts, ns.
    pub pv_spin_ns: f64,
}

impl Host {
    /// A host of `pcpus` CPUs with 2.6.38's CFS tunables scaled by
    /// 1 + log2(pcpus) and the clock of seed 004's Xeon E5606 (2.13 GHz,
    /// Intel's rating; the seed gives no clock).
    pub fn new(pcpus: u32) -> Host {
        let factor = 1.0 + f64::from(pcpus.max(1)).log2().floor();
        Host {
            pcpus,
            cpu_ghz: 2.13,
            sched_latency_ns: 6_000_000.0 * factor,
            min_granularity_ns: 750_000.0 * factor,
            wakeup_granularity_ns: 1_000_000.0 * factor,
            tick_ns: 1_000_000.0,
            balance_ns: 4_000_000.0,
            switch_ns: 2_000.0,
            exit_ns: 1_000.0,
            handoff_ns: 50.0,
            spin_loop_cycles: 40,
            pv_spin_ns: 50_000.0,
        }
    }
}

/// One kind of VM in a scenario, repeated `count` times.
#[derive(Debug, Clone, PartialEq)]
pub struct VmSpec {
    /// Name used in results (numbered when `count` > 1).
    pub name: String,
    /// VMs of this kind.
    pub count: u32,
    /// vCPUs per VM.
    pub vcpus: u32,
    /// CFS weight of each vCPU (1024 is nice 0).
    pub weight: u32,
    /// What its vCPUs run.
    pub workload: Workload,
}

impl VmSpec {
    /// `count` VMs of `vcpus` vCPUs each running `workload`, at nice 0,
    /// named after the workload.
    pub fn new(workload: Workload, count: u32, vcpus: u32) -> VmSpec {
        VmSpec {
            name: workload.name.clone(),
            count,
            vcpus,
            weight: 1024,
            workload,
        }
    }
}

/// Everything one simulation runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The host.
    pub host: Host,
    /// Pause-loop exiting.
    pub ple: Ple,
    /// The VMs.
    pub vms: Vec<VmSpec>,
    /// The host's policy for spinning vCPUs.
    pub policy: Policy,
    /// Simulated time measured, ns (after the warm-up).
    pub duration_ns: f64,
    /// Simulated time run before measuring, ns.
    pub warmup_ns: f64,
    /// Seed of the simulation's random numbers.
    pub seed: u64,
}

/// Most simulated pCPUs.
pub const MAX_PCPUS: u32 = 1024;
/// Most vCPUs in one simulation, over all VMs.
pub const MAX_VCPUS: u64 = 65_536;
/// Longest simulated time (measured plus warm-up), ns: one hour.
pub const MAX_SIM_NS: f64 = 3.6e12;
/// Longest phase mean, ns: one second.
pub const MAX_PHASE_NS: f64 = 1e9;

/// A scenario that cannot be simulated: the field and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// Path of the bad field, like `host.pcpus` or `vm[1].workload.hold`.
    pub field: String,
    /// What is wrong and what is allowed.
    pub message: String,
}

impl ConfigError {
    /// An error about `field`.
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

fn check_len(field: &str, x: f64, max: f64) -> Result<(), ConfigError> {
    if x.is_finite() && (0.0..=max).contains(&x) {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!("{x} ns is not allowed: a length must be a finite number from 0 to {max}"),
        ))
    }
}

fn check_dist(field: &str, d: Dist) -> Result<(), ConfigError> {
    check_len(field, d.mean(), MAX_PHASE_NS)
}

fn check_positive(field: &str, x: f64, max: f64) -> Result<(), ConfigError> {
    if x.is_finite() && x > 0.0 && x <= max {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            format!(
                "{x} is not allowed: it must be a finite number greater than 0 and at most {max}"
            ),
        ))
    }
}

impl Workload {
    /// Checks the workload; `at` prefixes field names.
    pub fn validate(&self, at: &str, vcpus: u32) -> Result<(), ConfigError> {
        check_dist(&format!("{at}.user"), self.user)?;
        check_dist(&format!("{at}.kernel"), self.kernel)?;
        check_dist(&format!("{at}.hold"), self.hold)?;
        if let Some(t) = self.think {
            check_dist(&format!("{at}.think"), t)?;
        }
        if !(0.0..=1.0).contains(&self.ipi) {
            return Err(ConfigError::new(
                format!("{at}.ipi"),
                format!("{} is not a chance: a number from 0 to 1", self.ipi),
            ));
        }
        if self.ipi > 0.0 && self.sections == 0 {
            return Err(ConfigError::new(
                format!("{at}.ipi"),
                "cross-calls happen in the kernel phase: give the workload at least 1 section",
            ));
        }
        if self.sections > 1000 {
            return Err(ConfigError::new(
                format!("{at}.sections"),
                format!(
                    "{} sections per cycle is too many: allowed 0 to 1000",
                    self.sections
                ),
            ));
        }
        if self.sections > 0 && self.locks == 0 {
            return Err(ConfigError::new(
                format!("{at}.locks"),
                "a workload with critical sections needs at least 1 lock",
            ));
        }
        if self.locks > 1_000_000 {
            return Err(ConfigError::new(
                format!("{at}.locks"),
                format!("{} locks is too many: allowed up to 1000000", self.locks),
            ));
        }
        if let Some(t) = self.threads {
            if t == 0 || t > vcpus {
                return Err(ConfigError::new(
                    format!("{at}.threads"),
                    format!("{t} threads is not allowed: from 1 to the VM's {vcpus} vCPUs"),
                ));
            }
        }
        if self.user.mean() + self.sections as f64 * (self.kernel.mean() + self.hold.mean()) <= 0.0
        {
            return Err(ConfigError::new(
                format!("{at}.user"),
                "a cycle of the workload would take no time: give user, kernel or hold a length",
            ));
        }
        Ok(())
    }
}

impl Scenario {
    /// A scenario on seed 004's default host (8 pCPUs) and PLE, under
    /// `policy`, measuring one simulated second after 0.2 s of warm-up.
    pub fn new(vms: Vec<VmSpec>, policy: Policy) -> Scenario {
        Scenario {
            host: Host::new(8),
            ple: Ple::seed004(),
            vms,
            policy,
            duration_ns: 1e9,
            warmup_ns: 2e8,
            seed: 1,
        }
    }

    /// Total vCPUs over all VMs.
    pub fn total_vcpus(&self) -> u64 {
        self.vms
            .iter()
            .map(|v| u64::from(v.count) * u64::from(v.vcpus))
            .sum()
    }

    /// Checks every field; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let h = &self.host;
        if h.pcpus == 0 || h.pcpus > MAX_PCPUS {
            return Err(ConfigError::new(
                "host.pcpus",
                format!("{} pCPUs is not allowed: from 1 to {MAX_PCPUS}", h.pcpus),
            ));
        }
        check_positive("host.cpu_ghz", h.cpu_ghz, 100.0)?;
        check_positive("host.sched_latency_ns", h.sched_latency_ns, MAX_PHASE_NS)?;
        check_positive(
            "host.min_granularity_ns",
            h.min_granularity_ns,
            MAX_PHASE_NS,
        )?;
        check_len(
            "host.wakeup_granularity_ns",
            h.wakeup_granularity_ns,
            MAX_PHASE_NS,
        )?;
        check_positive("host.tick_ns", h.tick_ns, MAX_PHASE_NS)?;
        // Ticks shorter than 10 µs would only burn events.
        if h.tick_ns < 10_000.0 {
            return Err(ConfigError::new(
                "host.tick_ns",
                format!("{} ns is too short a tick: at least 10000", h.tick_ns),
            ));
        }
        check_positive("host.balance_ns", h.balance_ns, MAX_PHASE_NS)?;
        if h.balance_ns < 10_000.0 {
            return Err(ConfigError::new(
                "host.balance_ns",
                format!(
                    "{} ns is too short a balancing interval: at least 10000",
                    h.balance_ns
                ),
            ));
        }
        check_len("host.switch_ns", h.switch_ns, MAX_PHASE_NS)?;
        check_len("host.exit_ns", h.exit_ns, MAX_PHASE_NS)?;
        check_len("host.handoff_ns", h.handoff_ns, MAX_PHASE_NS)?;
        check_positive("host.pv_spin_ns", h.pv_spin_ns, MAX_PHASE_NS)?;
        if h.spin_loop_cycles == 0 {
            return Err(ConfigError::new(
                "host.spin_loop_cycles",
                "0 cycles is not allowed: a spin loop takes at least 1 cycle between PAUSEs",
            ));
        }
        if self.ple.window_cycles == 0 {
            return Err(ConfigError::new(
                "ple.window",
                "a window of 0 cycles is not allowed: at least 1",
            ));
        }
        if self.ple.window_cycles > 1 << 40 {
            return Err(ConfigError::new(
                "ple.window",
                format!(
                    "{} cycles is too long a window: at most 2^40",
                    self.ple.window_cycles
                ),
            ));
        }
        if let PleMode::Kvm {
            grow, max_cycles, ..
        } = self.ple.mode
        {
            if grow == 0 {
                return Err(ConfigError::new(
                    "ple.grow",
                    "a growth factor of 0 is not allowed: at least 1",
                ));
            }
            if max_cycles < self.ple.window_cycles || max_cycles > 1 << 40 {
                return Err(ConfigError::new(
                    "ple.max",
                    format!(
                        "{max_cycles} cycles is not allowed: from the window ({}) to 2^40",
                        self.ple.window_cycles
                    ),
                ));
            }
        }
        if self.vms.is_empty() {
            return Err(ConfigError::new("vm", "a scenario needs at least one VM"));
        }
        for (i, vm) in self.vms.iter().enumerate() {
            let at = format!("vm[{i}]");
            if vm.count == 0 {
                return Err(ConfigError::new(
                    format!("{at}.count"),
                    "0 VMs is not allowed: at least 1",
                ));
            }
            if vm.vcpus == 0 {
                return Err(ConfigError::new(
                    format!("{at}.vcpus"),
                    "a VM with no vCPUs is not allowed: at least 1",
                ));
            }
            if vm.weight == 0 || vm.weight > 1 << 20 {
                return Err(ConfigError::new(
                    format!("{at}.weight"),
                    format!(
                        "{} is not allowed: a CFS weight from 1 to 2^20 (1024 is nice 0)",
                        vm.weight
                    ),
                ));
            }
            vm.workload.validate(&format!("{at}.workload"), vm.vcpus)?;
        }
        if self.total_vcpus() > MAX_VCPUS {
            return Err(ConfigError::new(
                "vm",
                format!(
                    "{} vCPUs in all is too many: at most {MAX_VCPUS}",
                    self.total_vcpus()
                ),
            ));
        }
        check_positive("duration", self.duration_ns, MAX_SIM_NS)?;
        check_len("warmup", self.warmup_ns, MAX_SIM_NS)?;
        if self.duration_ns + self.warmup_ns > MAX_SIM_NS {
            return Err(ConfigError::new(
                "duration",
                "duration plus warm-up is longer than one simulated hour",
            ));
        }
        Ok(())
    }
}
