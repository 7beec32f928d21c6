//! A discrete-event simulator of vCPU scheduling and lock-holder
//! preemption, and seed 004's experiments on it.
//!
//! Seed 004 (Zhang, Zhang and Chen, *Efficient transitory co-scheduling for
//! MP virtual machines*, Tsinghua 2014) measures, on a Linux 2.6.38 host
//! whose CFS it modified (the paper names no hypervisor), what happens when a multiprocessor VM's vCPU is preempted by the host while
//! it holds a guest spin lock: its siblings spin for the rest of the host's
//! time slice. No VM host is at hand here, so locklab simulates one:
//!
//! - a **host** of P pCPUs, each with a CFS-like run queue: virtual
//!   runtime scaled by weight, a slice of `latency × weight / load` (at
//!   least the minimum granularity), tick preemption, wake-up placement
//!   and preemption, idle pulling and periodic load balancing;
//! - **guests**: VMs of V vCPUs, each vCPU running a workload of user
//!   phases and kernel phases with spin-lock critical sections on the VM's
//!   guest locks (ticket or test-and-set), halting when idle;
//! - **pause-loop exiting**: a kernel-mode spinner exits to the host after
//!   a window of cycles, and the host's [`Policy`] decides what follows.
//!
//! [`simulate`] runs one [`Scenario`] and returns per-VM measurements;
//! [`experiment`] builds seed 004's four experiments from simulations.
//! Everything is single-threaded and deterministic: the same scenario
//! (seed included) gives the same result on every run and machine. Time is
//! simulated, never read from a clock.
//!
//! ```
//! use locklab_model::lhp::{simulate, Policy, Scenario, VmSpec, Workload};
//!
//! let oltp = Workload::preset("oltp").unwrap();
//! let mut s = Scenario::new(vec![VmSpec::new(oltp, 2, 8)], Policy::Itcs);
//! s.duration_ns = 2e7; // 20 ms
//! s.warmup_ns = 0.0;
//! let r = simulate(&s).unwrap();
//! assert_eq!(r.vms.len(), 2);
//! assert!(r.vms[0].work > 0);
//! ```

pub mod config;
mod engine;
pub mod experiment;
mod hist;
pub mod policy;
pub mod result;
pub(crate) mod rng;

pub use config::{ConfigError, Dist, Host, LockKind, Ple, PleMode, Scenario, VmSpec, Workload};
pub use experiment::{Experiment, Params, Row, RowMetrics, Setup, Table, VmRow};
pub use policy::Policy;
pub use result::{HoldSpan, Percentiles, RunSpan, SimResult, Trace, VmResult};

/// Simulates `scenario`; an invalid one is refused with the field at fault.
pub fn simulate(scenario: &Scenario) -> Result<SimResult, ConfigError> {
    scenario.validate()?;
    Ok(engine::Sim::new(scenario, false).run().0)
}

/// As [`simulate`], also recording every run and lock-hold span from time
/// 0, for checking the simulator's invariants from outside.
pub fn simulate_traced(scenario: &Scenario) -> Result<(SimResult, Trace), ConfigError> {
    scenario.validate()?;
    let (r, t) = engine::Sim::new(scenario, true).run();
    Ok((r, t.expect("tracing was asked for")))
}
