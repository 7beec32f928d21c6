//! The contention workload's options, which `bench spin`, `bench lhp`
//! and the suite share (their delay and duration defaults differ, so
//! those stay with each command).

use super::workload::DelayDist;
use crate::core::args::parse_ns;
use clap::Args;

/// The workload options `bench spin` and `bench lhp` share (their delay
/// and duration defaults differ, so those stay with each command).
#[derive(Debug, Args)]
pub struct Workload {
    /// Busy work inside the critical section, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "100")]
    pub cs_ns: u64,
    /// Shared cache lines written inside the critical section.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_lines, default_value = "1")]
    pub cs_lines: usize,
    /// Distribution of the delay (default exp; only with a delay: --delay-ns more than 0).
    #[arg(long, value_parser = crate::core::args::trimmed_enum::<DelayDist>())]
    pub delay_dist: Option<DelayDist>,
    /// Pin thread i to CPU i mod cores.
    #[arg(long)]
    pub pin: bool,
    /// Every N acquisitions, each thread blocks inside its critical section
    /// for --stall-ns (a holder off its CPU); 0 = never.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_stall_every, default_value = "0")]
    pub stall_every: u64,
    /// How long a stalled holder blocks, ns (with --stall-every; default 50000).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns)]
    pub stall_ns: Option<u64>,
}

pub(crate) fn parse_stall_every(s: &str) -> Result<u64, String> {
    let s = s.trim();
    match s.parse::<u64>() {
        Ok(n) if n <= 1_000_000_000 => Ok(n),
        _ => Err(format!(
            "'{s}' acquisitions between stalls: allowed 0 (never) to 1000000000"
        )),
    }
}

pub(crate) fn parse_lines(s: &str) -> Result<usize, String> {
    let s = s.trim();
    match s.parse::<usize>() {
        Ok(n) if n <= 1024 => Ok(n),
        _ => Err(format!("'{s}' cache lines: allowed 0 to 1024")),
    }
}
