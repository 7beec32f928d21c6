//! The command line of `locklab advise`: a stated workload (or a stored
//! `profile` run to take it from), the candidates, and how long to measure.

use crate::core::args::{
    parse_ns, parse_pct, parse_reps, parse_run, parse_secs, parse_thread_count, RunRef,
};
use clap::Args;

/// Most cores `--cores-model` predicts for.
pub const MAX_MODEL_CORES: u32 = 4096;

/// Parameters of `locklab advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// Threads that take the lock (default: this machine's cores; more than
    /// the cores is the oversubscribed case).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_thread_count)]
    pub threads: Option<u32>,
    /// Work inside the critical section, ns (default 100).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns)]
    pub cs_ns: Option<u64>,
    /// Mean delay between one thread's acquisitions, ns (default 1000).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns)]
    pub delay_ns: Option<u64>,
    /// Percentage of acquisitions that only read (0 to 100); above 0 advise
    /// also measures the read-mostly mechanisms (one exclusive lock, a
    /// reader-writer lock, brlock, seqlock, RCU) over one hash table at
    /// that read fraction.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_pct, default_value = "0")]
    pub read_pct: u32,
    /// The program runs in a VM: also simulate lock-holder preemption
    /// (the `sim lhp` simulator) for FIFO spinning, test-and-set spinning
    /// and paravirtual (sleeping) waiters.
    #[arg(long)]
    pub vm: bool,
    /// Also predict, with the queueing model, throughput at this many cores
    /// (beyond this machine's).
    #[arg(long, visible_alias = "cores", value_name = "N", allow_negative_numbers = true, value_parser = parse_model_cores)]
    pub cores_model: Option<u32>,
    /// With --cores-model N: also simulate the candidate spin locks (those
    /// `sim spin` knows) on N cores over this many sockets, one thread a
    /// core (seed 002's costs).
    #[arg(long, value_name = "M", requires = "cores_model", allow_negative_numbers = true, value_parser = parse_sockets)]
    pub sockets: Option<u32>,
    /// Take threads, critical section and delay from a stored `locklab
    /// profile` run (id or `last`): its most waited-on lock's pattern.
    #[arg(long, value_name = "RUN", allow_negative_numbers = true, value_parser = parse_run)]
    pub profile: Option<RunRef>,
    /// Candidate locks: comma-separated names, or `all` (default: a short
    /// list of one lock per design; see `locklab locks`).
    #[arg(long)]
    pub locks: Option<String>,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.2")]
    pub secs: f64,
    /// Repetitions per lock (interleaved across the locks).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "5")]
    pub reps: u32,
}

fn parse_model_cores(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if (1..=u64::from(MAX_MODEL_CORES)).contains(&n) => Ok(n as u32),
        _ => Err(format!(
            "'{s}' cores for the model: allowed 1 to {MAX_MODEL_CORES}"
        )),
    }
}

fn parse_sockets(s: &str) -> Result<u32, String> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=16).contains(&n) => Ok(n),
        _ => Err(format!("'{}' sockets: allowed 1 to 16", s.trim())),
    }
}
