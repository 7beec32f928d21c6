//! The command line of `locklab run`.

use crate::core::args::{parse_reps, parse_secs};
use clap::Args;
use std::ffi::OsString;

/// Parameters of `locklab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Mutexes to run the program under, comma-separated names of
    /// `locklab locks` or `all` (default: locklab's own, without the
    /// spin-yield and spin-park adapters). The C library's own locks
    /// (`pthread`) always run too: the baseline.
    #[arg(long)]
    pub locks: Option<String>,
    /// The reader-writer lock for the program's `pthread_rwlock_t`s
    /// (`locklab locks`; default pthread-rw, the C library's).
    #[arg(long, default_value = "pthread-rw")]
    pub rwlock: String,
    /// Repetitions per lock, interleaved.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
    /// A figure to compare instead of the wall time: a regular expression
    /// whose group 1 matches a number in the program's output, e.g.
    /// 'events per second: *([0-9.]+)', matched line by line as the output
    /// streams (the first matching line counts, stdout before stderr).
    /// Higher is better unless --lower-is-better.
    #[arg(long, value_name = "REGEX")]
    pub metric: Option<String>,
    /// With --metric: lower values are better (a latency, a time).
    #[arg(long, requires = "metric")]
    pub lower_is_better: bool,
    /// Seconds one run of the program may take; then its process group is
    /// ended (SIGTERM, then SIGKILL after 1 s) and the run counts as
    /// failed.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "600")]
    pub timeout: f64,
    /// Print the program's output as it runs (its last MiB per stream is
    /// kept either way).
    #[arg(long)]
    pub show_output: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}
