//! The command line of `model predict` and `model fit`.

use crate::core::args::{parse_core_list, parse_ns, parse_run, CoreList, RunRef};
use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Most cores `model` predicts for or fits (the models go further, but a
/// list up to this solves in well under a second).
pub const MODEL_MAX_CORES: u32 = 10_000;

/// `model` and its kinds.
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// What to do with the model.
    #[command(subcommand)]
    pub kind: ModelKind,
}

/// The model commands.
#[derive(Debug, Subcommand)]
pub enum ModelKind {
    /// Throughput, queue length and utilisation of N cores on one lock, with the knee and the cores that reach 95 % of the peak.
    Predict(PredictArgs),
    /// Fit the machine-repairman model's service time S and delay Z to measured (cores, throughput) points.
    Fit(FitArgs),
}

/// Which queueing model `model predict` solves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelName {
    /// The machine-repairman model of a big lock (seed 002): service time S whatever the queue, exponentially distributed.
    Repairman,
    /// The same with every acquisition holding the lock exactly S (M/D/1//N, solved exactly; up to 10000 cores).
    RepairmanConst,
    /// The ticket-lock collapse model (Boyd-Wickizer et al. 2012): service time S + C·k with k cores at the lock.
    Ticket,
}

/// Parameters of `model predict`.
#[derive(Debug, Args)]
pub struct PredictArgs {
    /// Service time S: how long one acquisition holds the lock (any time unit, e.g. cycles; more than 0).
    #[arg(long, value_name = "S", allow_negative_numbers = true, value_parser = parse_service)]
    pub service: f64,
    /// Mean delay Z a core spends outside the lock between acquisitions (same unit; 0 or more).
    #[arg(long, value_name = "Z", allow_negative_numbers = true, value_parser = parse_delay)]
    pub delay: f64,
    /// Core counts: a list and ranges, e.g. 1,2,4,8 or 1-28 or 1-4,8,16 (each 1 to 10000).
    #[arg(long, value_name = "LIST", allow_negative_numbers = true, value_parser = parse_cores)]
    pub cores: CoreList,
    /// The model.
    #[arg(long, value_parser = crate::core::args::trimmed_enum::<ModelName>(), default_value = "repairman")]
    pub model: ModelName,
    /// With --model ticket: the hand-off cost C each core at the lock adds to S (same unit; 0 or more).
    #[arg(long, value_name = "C", allow_negative_numbers = true, value_parser = parse_handoff)]
    pub handoff: Option<f64>,
}

/// Parameters of `model fit`. The measured points come from exactly one
/// source (the `source` group): a CSV file or a stored `bench ipc` run.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("source").required(true).args(["csv", "run"])))]
pub struct FitArgs {
    /// A stored `bench ipc` run (id or `last`): its multi ping-pong curve of
    /// one variant at one delay, throughput in IPCs per ns, so S and Z come
    /// out in ns (and in TSC cycles).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_run)]
    pub run: Option<RunRef>,
    /// With --run: the kernel variant (default: the run's first bkl(...)).
    #[arg(long)]
    pub variant: Option<String>,
    /// With --run: the server delay of the curve, ns (needed when the run
    /// measured several).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_ns)]
    pub delay_ns: Option<u64>,
    /// CSV file of measured points, one `cores,throughput` per line (a header line and `#` comments are allowed); throughput in acquisitions per time unit.
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
    /// Fit only the points of the K smallest core counts (seed 002 fitted the first 14 of 28: one socket).
    #[arg(long, value_name = "K", allow_negative_numbers = true, value_parser = parse_first)]
    pub first: Option<usize>,
    /// Fix the delay Z at this value (in the unit the throughput is per) and fit S alone.
    #[arg(long, value_name = "Z", allow_negative_numbers = true, value_parser = parse_delay)]
    pub delay: Option<f64>,
}

/// A positive, finite time in the caller's unit.
pub(crate) fn parse_positive_time(s: &str, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        Ok(_) => Err(format!(
            "{what} '{}' is out of range: allowed a finite number greater than 0",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a {what}: allowed a finite number greater than 0",
            s.trim()
        )),
    }
}

/// A finite time of 0 or more in the caller's unit.
pub(crate) fn parse_time_or_zero(s: &str, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        Ok(_) => Err(format!(
            "{what} '{}' is out of range: allowed a finite number of 0 or more",
            s.trim()
        )),
        Err(_) => Err(format!(
            "'{}' is not a {what}: allowed a finite number of 0 or more",
            s.trim()
        )),
    }
}

pub(crate) fn parse_service(s: &str) -> Result<f64, String> {
    parse_positive_time(s, "service time")
}

pub(crate) fn parse_delay(s: &str) -> Result<f64, String> {
    parse_time_or_zero(s, "delay")
}

pub(crate) fn parse_handoff(s: &str) -> Result<f64, String> {
    parse_time_or_zero(s, "hand-off cost")
}

pub(crate) fn parse_first(s: &str) -> Result<usize, String> {
    match s.trim().parse::<u64>() {
        Ok(n) if n >= 1 => usize::try_from(n).map_err(|_| format!("{n} core counts is too many")),
        _ => Err(format!(
            "'{}' core counts: allowed a whole number of 1 or more",
            s.trim()
        )),
    }
}

/// Core counts for the models (up to [`MODEL_MAX_CORES`]).
pub(crate) fn parse_cores(s: &str) -> Result<CoreList, String> {
    parse_core_list(s, MODEL_MAX_CORES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn core_lists_take_ranges_and_reject_zero_reversed_and_empty() {
        assert_eq!(
            parse_cores("1-4,8,2").unwrap(),
            CoreList(vec![1, 2, 3, 4, 8])
        );
        assert_eq!(parse_cores(" 16 ").unwrap(), CoreList(vec![16]));
        assert!(parse_cores("0").unwrap_err().contains("1 to 10000"));
        assert!(parse_cores("1-0").unwrap_err().contains("1 to 10000"));
        assert!(parse_cores("8-2").unwrap_err().contains("'8-2'"));
        assert!(parse_cores("-3").unwrap_err().contains("'-3'"));
        assert!(parse_cores("").unwrap_err().contains("empty"));
        assert!(parse_cores("1,,2").is_err());
        assert!(parse_cores("10001").unwrap_err().contains("10001"));
        assert!(parse_cores("1-x").unwrap_err().contains("'x'"));
    }

    #[test]
    fn model_times_reject_what_the_model_cannot_take() {
        assert_eq!(parse_service("358").unwrap(), 358.0);
        assert!(parse_service("0").unwrap_err().contains("'0'"));
        assert!(parse_service("-1").is_err());
        assert!(parse_service("inf").is_err());
        assert!(parse_service("NaN").is_err());
        assert_eq!(parse_delay("0").unwrap(), 0.0);
        assert!(parse_delay("-0.5").unwrap_err().contains("'-0.5'"));
        assert!(parse_delay("soon").unwrap_err().contains("'soon'"));
        assert!(parse_handoff("-1").is_err());
        assert!(parse_first("0").unwrap_err().contains("'0'"));
        assert_eq!(parse_first("14").unwrap(), 14);
    }
}
