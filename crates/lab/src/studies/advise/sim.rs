//! The VM case of `advise`: the stated workload as a guest's lock under
//! the lock-holder-preemption simulator of `locklab_model::lhp` (what
//! `sim lhp` runs), on a host with twice as many vCPUs as pCPUs, for the
//! three ways a waiter can behave there: spin in FIFO order, spin
//! test-and-set, or sleep (paravirtual locks). Simulated, never measured:
//! every line it prints says so.

use locklab_model::lhp::{
    simulate, Dist, Host, LockKind, Policy, Scenario, SimResult, VmSpec, Workload,
};
use serde::{Deserialize, Serialize};

/// Simulated seconds measured per scenario.
const SIM_SECS: f64 = 0.2;
/// Simulated seconds of warm-up.
const WARMUP_SECS: f64 = 0.05;
/// VMs sharing the host (each with as many vCPUs as the host has pCPUs).
pub const VMS: u32 = 2;

/// One kind of waiter, simulated.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SimCase {
    /// `fifo-spin`, `tas-spin` or `sleep`.
    pub waiter: String,
    /// The registry's locks that wait this way.
    pub like: String,
    /// Critical sections completed per simulated second, all VMs.
    pub sections_per_s: f64,
    /// Share of the vCPUs' CPU time spent spinning on the lock.
    pub spin_share: f64,
    /// Times a lock holder was preempted.
    pub holder_preemptions: u64,
}

/// What the simulator said about the workload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SimEvidence {
    /// Host pCPUs.
    pub pcpus: u32,
    /// vCPUs per VM.
    pub vcpus: u32,
    /// VMs.
    pub vms: u32,
    /// Simulated seconds per case.
    pub secs: f64,
    /// One per waiter kind.
    pub cases: Vec<SimCase>,
}

impl SimEvidence {
    /// The case of `waiter`.
    pub fn case(&self, waiter: &str) -> Option<&SimCase> {
        self.cases.iter().find(|c| c.waiter == waiter)
    }

    /// The waiter kind that completed the most sections.
    pub fn best(&self) -> Option<&SimCase> {
        self.cases
            .iter()
            .max_by(|a, b| a.sections_per_s.total_cmp(&b.sections_per_s))
    }

    /// The setting, in words.
    pub fn setting(&self) -> String {
        format!(
            "{} VMs × {} vCPUs on {} pCPUs ({}× overcommitted), {} simulated s each",
            self.vms,
            self.vcpus,
            self.pcpus,
            self.vms,
            crate::core::stats::sig3(self.secs)
        )
    }
}

/// The waiter kinds: name, the guest lock, the host policy, the registry's
/// locks that wait that way.
const CASES: [(&str, LockKind, Policy, &str); 3] = [
    (
        "fifo-spin",
        LockKind::Ticket,
        Policy::None,
        "ticket, ticket-backoff, mcs, clh, k42, qspin",
    ),
    (
        "tas-spin",
        LockKind::Tas,
        Policy::None,
        "tas, ttas, backoff",
    ),
    (
        "sleep",
        LockKind::Ticket,
        Policy::Pv,
        "mutex, futex3, spin-park(…), pthread, std, parking_lot",
    ),
];

fn dist(ns: u64) -> Dist {
    if ns == 0 {
        Dist::Const(0.0)
    } else {
        Dist::Exp(ns as f64)
    }
}

/// The scenario of one case: `threads` vCPUs per VM (at least 2).
fn scenario(threads: u32, cs_ns: u64, delay_ns: u64, lock: LockKind, policy: Policy) -> Scenario {
    let vcpus = threads.clamp(2, 64);
    let workload = Workload {
        name: "advise".into(),
        user: dist(delay_ns),
        kernel: Dist::Const(0.0),
        hold: if cs_ns == 0 {
            Dist::Const(1.0)
        } else {
            Dist::Exp(cs_ns as f64)
        },
        sections: 1,
        locks: 1,
        lock,
        ipi: 0.0,
        threads: None,
        think: None,
    };
    let mut s = Scenario::new(vec![VmSpec::new(workload, VMS, vcpus)], policy);
    s.host = Host::new(vcpus);
    s.duration_ns = SIM_SECS * 1e9;
    s.warmup_ns = WARMUP_SECS * 1e9;
    s
}

fn case_of(waiter: &str, like: &str, r: &SimResult) -> SimCase {
    let sections: u64 = r.vms.iter().map(|v| v.sections).sum();
    let cpu: f64 = r.vms.iter().map(|v| v.cpu_ns).sum();
    let spin: f64 = r.vms.iter().map(|v| v.spin_ns).sum();
    SimCase {
        waiter: waiter.into(),
        like: like.into(),
        sections_per_s: sections as f64 / (r.sim_ns * 1e-9),
        spin_share: if cpu > 0.0 { spin / cpu } else { 0.0 },
        holder_preemptions: r.vms.iter().map(|v| v.holder_preemptions).sum(),
    }
}

/// Simulates the three waiter kinds (in parallel) for the workload.
pub fn run(threads: u32, cs_ns: u64, delay_ns: u64) -> Result<SimEvidence, String> {
    let scenarios: Vec<Scenario> = CASES
        .iter()
        .map(|&(_, lock, policy, _)| scenario(threads, cs_ns, delay_ns, lock, policy))
        .collect();
    for s in &scenarios {
        s.validate()
            .map_err(|e| format!("{}: {}", e.field, e.message))?;
    }
    let results: Vec<Result<SimResult, String>> = std::thread::scope(|sc| {
        let hs: Vec<_> = scenarios
            .iter()
            .map(|s| {
                sc.spawn(move || simulate(s).map_err(|e| format!("{}: {}", e.field, e.message)))
            })
            .collect();
        hs.into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the simulator panicked".into()))
            })
            .collect()
    });
    let mut cases = Vec::new();
    for ((waiter, _, _, like), r) in CASES.iter().zip(results) {
        cases.push(case_of(waiter, like, &r?));
    }
    let vcpus = scenarios[0].host.pcpus;
    Ok(SimEvidence {
        pcpus: vcpus,
        vcpus,
        vms: VMS,
        secs: SIM_SECS,
        cases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_waiter_kind_completes_sections() {
        let e = run(2, 200, 1000).unwrap();
        assert_eq!(e.cases.len(), 3);
        assert!(e.cases.iter().all(|c| c.sections_per_s > 0.0), "{e:?}");
        assert!(e.best().is_some());
        assert!(e.case("sleep").is_some());
    }
}
