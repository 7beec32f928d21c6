//! The command line of `bench uncontended`.

use crate::core::args::{parse_reps, parse_secs};
use clap::Args;

/// Parameters of `bench uncontended`.
#[derive(Debug, Args)]
pub struct UncontendedArgs {
    /// Locks: comma-separated names or `all`.
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Target seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.2")]
    pub secs: f64,
    /// Repetitions per lock.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
}
