//! The command line of `bench spin`.

use crate::core::args::{parse_ns, parse_reps, parse_secs, parse_threads, ThreadList};
use crate::studies::shared::contention::args::Workload;
use clap::Args;

/// Parameters of `bench spin`.
#[derive(Debug, Args)]
pub struct SpinArgs {
    /// Locks: comma-separated names or `all` (see `locklab locks`).
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Thread counts, comma-separated (oversubscription allowed, up to 256).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_threads, default_value = "1,2,4,8")]
    pub threads: ThreadList,
    #[command(flatten)]
    pub work: Workload,
    /// Mean delay between acquisitions, ns.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns, default_value = "200")]
    pub delay_ns: u64,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "1")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}
