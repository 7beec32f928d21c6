//! The simulated machine: sockets × cores, where each thread runs, and
//! what a cache-line access costs by where the line is.

use super::SimError;

/// Sockets × cores per socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    /// Sockets (each with its own memory).
    pub sockets: u32,
    /// Cores of each socket.
    pub cores_per_socket: u32,
}

impl Topology {
    /// All cores.
    pub fn cores(self) -> u32 {
        self.sockets * self.cores_per_socket
    }
}

/// Which cores the threads take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Fill one socket before the next (seed 001's "FF").
    Fill,
    /// One thread a socket in turn (seed 001's "RR").
    RoundRobin,
}

impl Placement {
    /// The socket of thread `t` of `threads` on `topo`.
    pub(super) fn socket_of(self, topo: Topology, t: u32) -> u32 {
        match self {
            Placement::Fill => t / topo.cores_per_socket,
            Placement::RoundRobin => t % topo.sockets,
        }
    }
}

/// What an access costs, in cycles of a clock of `ghz`, by where the line
/// is found. A read-modify-write pays `atomic` on top of the line's cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Costs {
    /// The line is in this core's cache in the state the access needs.
    pub hit: f64,
    /// The line is modified in another core's cache of the same socket.
    pub same_socket: f64,
    /// The line is modified in a core's cache of another socket.
    pub other_socket: f64,
    /// The line is only in memory, of this core's socket.
    pub memory_local: f64,
    /// The line is only in memory, of another socket.
    pub memory_remote: f64,
    /// What a read-modify-write adds to its line's cost.
    pub atomic: f64,
    /// The clock, cycles per ns.
    pub ghz: f64,
    /// Whether a transfer of a line whose memory is on another socket than
    /// the requester's costs at least `other_socket` (the request goes
    /// through the line's home socket, as in a home-snooping or directory
    /// protocol). Off: a line's home matters only when it comes from
    /// memory.
    pub home_snoop: bool,
}

impl Costs {
    /// Seed 002's Table 1 (Elphinstone et al., x86: two Xeon E5-2683 v3,
    /// 14 cores each, 2.0 GHz base clock), in cycles: L1 4 (the hit),
    /// another core's L1 115 within the socket and 218 across, memory 185
    /// local and 265 remote. The seed gives no cost of an atomic
    /// instruction apart from its line's: `atomic` is 0.
    pub fn seed002() -> Costs {
        Costs {
            hit: 4.0,
            same_socket: 115.0,
            other_socket: 218.0,
            memory_local: 185.0,
            memory_remote: 265.0,
            atomic: 0.0,
            ghz: 2.0,
            home_snoop: false,
        }
    }

    /// Every cost one cycle of a 1 GHz clock: a machine on which the lock's
    /// own accesses are next to free, for the tests against the queueing
    /// model.
    pub fn negligible() -> Costs {
        Costs {
            hit: 1.0,
            same_socket: 1.0,
            other_socket: 1.0,
            memory_local: 1.0,
            memory_remote: 1.0,
            atomic: 0.0,
            ghz: 1.0,
            home_snoop: false,
        }
    }

    /// Refuses costs that are not finite and positive (zero for `atomic`
    /// allowed): a zero-cost access would let a spinner loop forever at
    /// one instant.
    pub fn check(&self) -> Result<(), SimError> {
        let all = [
            ("hit", self.hit),
            ("same_socket", self.same_socket),
            ("other_socket", self.other_socket),
            ("memory_local", self.memory_local),
            ("memory_remote", self.memory_remote),
            ("ghz", self.ghz),
        ];
        for (name, v) in all {
            if !(v.is_finite() && v > 0.0) {
                return Err(SimError(format!(
                    "cost {name} = {v}: allowed a finite number above 0"
                )));
            }
        }
        if !(self.atomic.is_finite() && self.atomic >= 0.0) {
            return Err(SimError(format!(
                "cost atomic = {}: allowed a finite number, 0 or more",
                self.atomic
            )));
        }
        Ok(())
    }

    /// `cycles` in ns.
    pub(super) fn ns(&self, cycles: f64) -> f64 {
        cycles / self.ghz
    }
}
