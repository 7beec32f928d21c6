//! The command line of `bench kv`.

use crate::core::args::CoreList;
use crate::studies::shared::kernel::RepArgs;
use clap::Args;
use locklab_kernel::kv::{KeyDist, Workload};

/// Parameters of `bench kv`.
#[derive(Debug, Args)]
pub struct KvArgs {
    /// Kernel variants, as for `bench ipc`: `all`, or comma-separated names:
    /// none, bkl, fine, elide, elide-adaptive; bkl and the elide variants
    /// take a mutex of the library in parentheses, e.g. bkl(ticket)
    /// (default clh). Default: none, bkl, fine, and elide and
    /// elide-adaptive where the CPU has RTM. `none` runs at one core only.
    #[arg(long)]
    pub variants: Option<String>,
    /// Emulated core counts, like 1,2,4 or 1-4: core 0 runs the network
    /// driver, every other core a key-value server and its two clients;
    /// one core runs all of it (default: 1 up to the CPUs this process may
    /// use).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::studies::shared::kernel::parse_emulated_cores)]
    pub cores: Option<CoreList>,
    /// YCSB workload: a (50 % updates), b (5 % updates), c (read-only, the
    /// seeds' choice), e (95 % short scans, 5 % inserts), f (50 %
    /// read-modify-writes).
    #[arg(long, value_parser = parse_workload, default_value = "c")]
    pub workload: WorkloadArg,
    /// Records in each server's table (YCSB records of ten 100-byte fields;
    /// seed 000 used 32 000).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_records, default_value = "32000")]
    pub records: u64,
    /// How clients choose keys: zipfian (θ = 0.99, YCSB's default) or uniform.
    #[arg(long, value_parser = parse_keys, default_value = "zipfian")]
    pub keys: KeysArg,
    /// Seconds, repetitions, pinning, elision's fall-back path.
    #[command(flatten)]
    pub rep: RepArgs,
}

/// Most records a server's table holds (about 1 GB of records per server).
pub const MAX_RECORDS: u64 = 1_000_000;

/// A validated `--workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadArg(pub Workload);

/// A validated `--keys`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeysArg(pub KeyDist);

fn parse_workload(s: &str) -> Result<WorkloadArg, String> {
    Workload::from_name(s.trim())
        .map(WorkloadArg)
        .ok_or_else(|| format!("'{s}' is not a YCSB workload: allowed a, b, c, e, f"))
}

fn parse_keys(s: &str) -> Result<KeysArg, String> {
    KeyDist::from_name(s.trim())
        .map(KeysArg)
        .ok_or_else(|| format!("'{s}' is not a key distribution: allowed zipfian, uniform"))
}

fn parse_records(s: &str) -> Result<u64, String> {
    let s = s.trim();
    match s.parse::<u64>() {
        Ok(n) if (1..=MAX_RECORDS).contains(&n) => Ok(n),
        _ => Err(format!(
            "'{s}' records: allowed a whole number from 1 to {MAX_RECORDS}"
        )),
    }
}
