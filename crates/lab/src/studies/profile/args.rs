//! The command line of `locklab profile`.

use crate::core::args::parse_secs;
use clap::Args;
use std::ffi::OsString;

/// `--top`: at least one row.
fn parse_top(s: &str) -> Result<usize, String> {
    let s = s.trim();
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a count of lock objects: allowed a whole number from 1"
        )),
    }
}

/// Parameters of `locklab profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The mutex the program runs under while it is counted: pthread (the
    /// C library's own, the default) or one of locklab's (`locklab locks`).
    #[arg(long, default_value = "pthread")]
    pub lock: String,
    /// The reader-writer lock for its `pthread_rwlock_t`s (default
    /// pthread-rw, the C library's).
    #[arg(long, default_value = "pthread-rw")]
    pub rwlock: String,
    /// Lock objects listed per process, most waited-on first (all are
    /// stored).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_top, default_value = "10")]
    pub top: usize,
    /// Seconds the program may run; then its process group is ended
    /// (SIGTERM, then SIGKILL after 1 s; a killed program writes no
    /// profile).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "600")]
    pub timeout: f64,
    /// Do not print the program's output (it is printed as it runs
    /// otherwise).
    #[arg(long)]
    pub hide_output: bool,
    /// The program and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}
