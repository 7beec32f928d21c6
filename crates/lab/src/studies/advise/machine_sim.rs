//! `advise --cores-model N --sockets M`: the candidates that the spin-lock
//! simulator knows (`locklab_model::locksim`, what `sim spin` runs) on the
//! machine the user names, N cores over M sockets, one thread a core, the
//! stated critical section and exponential delay, seed 002's costs.
//! Simulated, never measured: the evidence line says so.

use locklab_model::lhp::config::Dist;
use locklab_model::locksim::{simulate, Algorithm, Config, Costs, Placement, Topology};
use serde::{Deserialize, Serialize};

/// Simulated ms per lock.
const SIM_MS: f64 = 2.0;

/// One lock on the named machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MachineLock {
    /// The lock.
    pub lock: String,
    /// Acquisitions per simulated second.
    pub throughput: f64,
    /// Share of hand-overs that crossed sockets.
    pub across: f64,
}

/// The simulation of the named machine, kept with the run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct MachineSim {
    /// Cores (and threads, one a core).
    pub cores: u32,
    /// Sockets.
    pub sockets: u32,
    /// Each simulated lock, fastest first.
    pub locks: Vec<MachineLock>,
}

/// The simulated algorithm of a lock of the registry, if there is one.
fn algorithm(name: &str) -> Option<Algorithm> {
    Algorithm::ALL.into_iter().find(|a| a.name() == name)
}

/// Simulates `candidates` (those the simulator knows; none: MCS, qspin,
/// CNA and C-BO-MCS) on `cores` cores over `sockets` sockets.
pub fn run(
    candidates: &[&str],
    cores: u32,
    sockets: u32,
    cs_ns: u64,
    delay_ns: u64,
) -> Result<MachineSim, String> {
    if sockets == 0 || sockets > cores {
        return Err(format!(
            "{sockets} sockets for {cores} cores: allowed 1 to {cores}"
        ));
    }
    let mut algs: Vec<Algorithm> = candidates.iter().filter_map(|n| algorithm(n)).collect();
    if algs.is_empty() {
        algs = vec![
            Algorithm::Mcs,
            Algorithm::Qspin,
            Algorithm::Cna,
            Algorithm::CboMcs,
        ];
    }
    let topology = Topology {
        sockets,
        cores_per_socket: cores.div_ceil(sockets),
    };
    let mut locks = Vec::new();
    for alg in algs {
        let o = simulate(&Config {
            algorithm: alg,
            topology,
            placement: Placement::Fill,
            costs: Costs::seed002(),
            threads: cores,
            cs: Dist::Const(cs_ns as f64),
            cs_lines: 1,
            delay: Dist::Exp(delay_ns as f64),
            lock_socket: 0,
            warmup_ns: SIM_MS * 1e5,
            window_ns: SIM_MS * 1e6,
            seed: 1,
        })
        .map_err(|e| e.to_string())?;
        let hand = (o.within_socket + o.across_sockets).max(1) as f64;
        locks.push(MachineLock {
            lock: alg.name().to_string(),
            throughput: o.throughput,
            across: o.across_sockets as f64 / hand,
        });
    }
    locks.sort_by(|a, b| b.throughput.total_cmp(&a.throughput));
    Ok(MachineSim {
        cores,
        sockets,
        locks,
    })
}
