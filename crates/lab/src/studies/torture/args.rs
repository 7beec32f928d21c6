//! The command line of `torture` (locks, and with `--rcu` RCU flavours).

use crate::core::args::{parse_pct, parse_secs, parse_thread_count, MAX_SECS};
use clap::Args;

/// Parameters of `torture`.
#[derive(Debug, Args)]
pub struct TortureArgs {
    /// Torture RCU instead of locks, in the manner of Linux's rcutorture
    /// (`--locks` then names RCU flavours: rcu, rcu-qsbr, rcu-fenced).
    #[arg(long)]
    pub rcu: bool,
    /// Locks (or with --rcu, RCU flavours): comma-separated names or `all` (the default).
    #[arg(long, default_value = "all")]
    pub locks: String,
    /// Threads (default: 4 × cores); with --rcu, reader threads (default: 2 × cores).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_thread_count)]
    pub threads: Option<u32>,
    /// Seconds per lock or flavour (default: 1, with --rcu 5).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs)]
    pub secs: Option<f64>,
    /// Seconds without progress before a run counts as hung (1 to 3600).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_watchdog, default_value = "10")]
    pub watchdog: f64,
    /// Reader-writer locks: percentage of operations that read, 0 to 100 (default 80; not with --rcu).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_pct)]
    pub read_pct: Option<u32>,
}

/// Shortest torture watchdog, seconds. When threads outnumber cores, a
/// runnable thread waits up to a scheduler period for its CPU, and the
/// period grows with the threads on the CPU (CFS: at least 0.75 ms each,
/// scaled by the CPUs; some 0.1 to 0.2 s with the most threads a torture
/// starts on two cores). A watchdog within a few periods would call a
/// healthy lock hung.
pub const MIN_WATCHDOG_S: f64 = 1.0;

pub(crate) fn parse_watchdog(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (MIN_WATCHDOG_S..=MAX_SECS).contains(&x) => Ok(x),
        Ok(_) => Err(format!(
            "'{}' seconds is out of range for the watchdog: allowed {MIN_WATCHDOG_S} to {MAX_SECS} \
             (a shorter one would take threads waiting for a CPU for a hang)",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a number of seconds: allowed {MIN_WATCHDOG_S} to {MAX_SECS}",
            s.trim()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watchdog_has_a_floor_named_in_the_message() {
        assert_eq!(parse_watchdog("1").unwrap(), 1.0);
        assert_eq!(parse_watchdog("10").unwrap(), 10.0);
        for bad in ["0.001", "0.5", "0", "-3", "nan", "inf", "3601"] {
            let e = parse_watchdog(bad).unwrap_err();
            assert!(e.contains(&format!("'{bad}'")), "{e}");
            assert!(
                e.contains("allowed 1 to 3600") || e.contains("allowed 1 to"),
                "{e}"
            );
        }
    }
}
