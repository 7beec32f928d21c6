//! The command line of `bench lhp`.

use crate::core::args::{parse_ns, parse_reps, parse_secs, ThreadList};
use crate::studies::shared::contention::args::Workload;
use clap::Args;

/// Parameters of `bench lhp`.
#[derive(Debug, Args)]
pub struct LhpArgs {
    /// Locks: comma-separated names or `all` (see `locklab locks`).
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Thread counts as multiples of the cores, comma-separated (one thread is always measured too).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_multiples, default_value = "1,2,4,8")]
    pub multiples: ThreadList,
    #[command(flatten)]
    pub work: Workload,
    /// Mean delay between acquisitions, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "0")]
    pub delay_ns: u64,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.5")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}

/// Largest multiple of the cores `bench lhp` takes (the thread count is
/// checked against `MAX_THREADS` once the cores are known).
pub const MAX_MULTIPLE: u32 = 64;

pub(crate) fn parse_multiples(s: &str) -> Result<ThreadList, String> {
    let mut v = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.parse::<u32>() {
            Ok(n) if (1..=MAX_MULTIPLE).contains(&n) => {
                if !v.contains(&n) {
                    v.push(n);
                }
            }
            _ => {
                return Err(format!(
                    "'{part}' is not a multiple of the cores: allowed 1 to {MAX_MULTIPLE}"
                ))
            }
        }
    }
    Ok(ThreadList(v))
}
