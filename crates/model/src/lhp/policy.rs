//! The host's answers to a spinning vCPU, by name.
//!
//! Seed 004 (Zhang, Zhang and Chen, 2014) compares its three transitory
//! co-scheduling policies (§2.1–2.3) with plain CFS and two simple yields
//! (§3); locklab adds two mechanisms of today's KVM as anchors: directed
//! yield on a PLE exit (`kvm_vcpu_on_spin`, Linux 3.x and later) and
//! paravirtual spin locks (a guest that halts instead of spinning long, and
//! is kicked by the releaser; Linux's pv qspinlock). What each does on a
//! PLE exit is in the engine's documentation; the text here is what users read.

use std::fmt;

/// A host scheduling policy for lock-holder preemption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Policy {
    /// Plain CFS: PLE is off and a spinner burns its slice.
    None,
    /// Yield to head: the spinner gives up the pCPU and queues at the head
    /// of its run queue (seed 004 §3, YTH).
    Yth,
    /// Yield to tail: the spinner queues behind every runnable task (YTT).
    Ytt,
    /// Instant transitory co-scheduling: run every sibling vCPU of the
    /// spinner's VM that is not running, at once (§2.1, ITCS).
    Itcs,
    /// Selective ITCS: only the siblings preempted in kernel mode, which
    /// might hold a lock (§2.2, SITCS).
    Sitcs,
    /// Deferred transitory co-scheduling: deschedule the spinner and queue
    /// it to run with, or just after, the first sibling that might hold the
    /// lock (§2.3, DTCS).
    Dtcs,
    /// KVM's directed yield: boost one runnable sibling preempted in kernel
    /// mode, round robin from the last one boosted, skipping spinners.
    KvmDy,
    /// Paravirtual spin locks: waiters halt after a spin threshold and the
    /// releaser kicks the next one; no PLE.
    Pv,
}

impl Policy {
    /// Every policy, in table order.
    pub const ALL: [Policy; 8] = [
        Policy::None,
        Policy::Yth,
        Policy::Ytt,
        Policy::Itcs,
        Policy::Sitcs,
        Policy::Dtcs,
        Policy::KvmDy,
        Policy::Pv,
    ];

    /// The policy's name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Yth => "yth",
            Policy::Ytt => "ytt",
            Policy::Itcs => "itcs",
            Policy::Sitcs => "sitcs",
            Policy::Dtcs => "dtcs",
            Policy::KvmDy => "kvm-dy",
            Policy::Pv => "pv",
        }
    }

    /// The policy named `s`.
    pub fn from_name(s: &str) -> Option<Policy> {
        Self::ALL.into_iter().find(|p| p.name() == s)
    }

    /// Every name, comma-separated, for messages.
    pub fn names() -> String {
        Self::ALL.map(Policy::name).join(", ")
    }

    /// Whether the policy acts on PLE exits (the others leave PLE off).
    pub fn uses_ple(self) -> bool {
        !matches!(self, Policy::None | Policy::Pv)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
