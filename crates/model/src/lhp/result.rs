//! What a simulation reports, per VM and for the host, over the measured
//! window (the warm-up excluded).

/// Response-time percentiles of a VM's cycles, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Percentiles {
    /// Cycles measured.
    pub count: u64,
    /// Median, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// Mean, ns.
    pub mean_ns: f64,
}

/// One VM's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct VmResult {
    /// The VM's name (`oltp#2`).
    pub name: String,
    /// Its workload's name.
    pub workload: String,
    /// Its vCPUs.
    pub vcpus: u32,
    /// Cycles of the workload completed (transactions, messages, requests,
    /// units of pi).
    pub work: u64,
    /// Guest critical sections completed.
    pub sections: u64,
    /// User-mode work done, ns.
    pub user_ns: f64,
    /// `work` per simulated second.
    pub throughput: f64,
    /// CPU time its vCPUs received, ns (switch and exit overheads included).
    pub cpu_ns: f64,
    /// Of `cpu_ns`, time spent spinning on a guest lock.
    pub spin_ns: f64,
    /// Of `cpu_ns`, host context-switch and VM-exit overheads.
    pub overhead_ns: f64,
    /// `cpu_ns` over the host's capacity (pCPUs × time), 0 to 1.
    pub utilization: f64,
    /// PLE exits its vCPUs took.
    pub ple_exits: u64,
    /// Times one of its vCPUs was switched in.
    pub switches: u64,
    /// Times one of its vCPUs halted (think time, pv wait).
    pub halts: u64,
    /// Times one of its vCPUs was preempted while holding a guest lock.
    pub holder_preemptions: u64,
    /// Response times of its cycles, from the end of the think time (or the
    /// end of the previous cycle) to the end of the cycle.
    pub response: Percentiles,
}

/// A whole simulation's measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct SimResult {
    /// Measured simulated time, ns.
    pub sim_ns: f64,
    /// The host's pCPUs.
    pub pcpus: u32,
    /// pCPU time with nothing to run, ns.
    pub idle_ns: f64,
    /// Events the simulator processed, warm-up included.
    pub events: u64,
    /// Per VM, in scenario order (a `VmSpec` with `count` n gives n VMs).
    pub vms: Vec<VmResult>,
    /// Host context switches.
    pub switches: u64,
    /// vCPU migrations between run queues (load balancing, co-scheduling).
    pub migrations: u64,
}

impl SimResult {
    /// Σ over VMs of the CPU time they received, ns.
    pub fn busy_ns(&self) -> f64 {
        self.vms.iter().map(|v| v.cpu_ns).sum()
    }

    /// Σ over VMs of the time spent spinning, ns.
    pub fn spin_ns(&self) -> f64 {
        self.vms.iter().map(|v| v.spin_ns).sum()
    }

    /// Σ over VMs of PLE exits.
    pub fn ple_exits(&self) -> u64 {
        self.vms.iter().map(|v| v.ple_exits).sum()
    }
}

/// One pCPU's stretch running one vCPU (recorded when tracing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpan {
    /// The vCPU's global index (VMs in order, their vCPUs in order).
    pub vcpu: u32,
    /// The pCPU.
    pub pcpu: u32,
    /// Start, ns.
    pub start: u64,
    /// End, ns.
    pub end: u64,
}

/// One guest lock held by one vCPU, from acquisition to release (recorded
/// when tracing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoldSpan {
    /// The VM.
    pub vm: u32,
    /// The lock, within the VM.
    pub lock: u32,
    /// The holder's global vCPU index.
    pub vcpu: u32,
    /// Acquired, ns.
    pub start: u64,
    /// Released, ns (the end of the simulation if still held).
    pub end: u64,
}

/// The full history of a traced simulation, from time 0: for checking the
/// simulator's invariants from outside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    /// Every stretch a vCPU ran on a pCPU.
    pub runs: Vec<RunSpan>,
    /// Every guest lock hold.
    pub holds: Vec<HoldSpan>,
    /// Each pCPU's idle time, ns.
    pub idle_ns: Vec<u64>,
    /// Each vCPU's CPU time as the scheduler accounted it, ns.
    pub cpu_ns: Vec<u64>,
    /// Simulated time at the end, ns.
    pub end: u64,
}
