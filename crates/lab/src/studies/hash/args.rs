//! The command line of `bench hash`.

use crate::core::args::{
    parse_count, parse_pcts, parse_reps, parse_secs, parse_threads, PctList, ThreadList,
};
use crate::studies::shared::hashtable::runner::{MAX_BUCKETS, MAX_KEYS};
use clap::Args;

/// Parameters of `bench hash`.
#[derive(Debug, Args)]
pub struct HashArgs {
    /// Strategies: `all`, or comma-separated names; global-rw and bucket-rw
    /// take a reader-writer lock in parentheses, e.g. bucket-rw(rw-fair)
    /// (default rw-fair). Names: none, global-spin, bucket-spin,
    /// global-rw(L), bucket-rw(L), refcnt, brlock, seqlock, rcu, rcu-qsbr,
    /// crossbeam-epoch, dashmap, liburcu, liburcu-qsbr.
    #[arg(long, default_value = "all")]
    pub strategies: String,
    /// Thread counts, comma-separated (up to 256).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_threads, default_value = "1,2,4")]
    pub threads: ThreadList,
    /// Percentages of operations that are updates, comma-separated (each 0 to 100).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_pcts, default_value = "0,10,33,50,100")]
    pub update_pct: PctList,
    /// Buckets of the table.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_buckets, default_value = "1024")]
    pub buckets: u64,
    /// Distinct keys (default: buckets × chain).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_keys)]
    pub keys: Option<u64>,
    /// Elements per bucket (default: keys / buckets, or 1 without --keys).
    #[arg(long, allow_negative_numbers = true, value_parser = parse_chain)]
    pub chain: Option<u64>,
    /// Measured seconds per repetition.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_secs, default_value = "0.3")]
    pub secs: f64,
    /// Repetitions per point.
    #[arg(long, allow_negative_numbers = true, value_parser = parse_reps, default_value = "3")]
    pub reps: u32,
    /// Pin thread i to CPU i mod cores.
    #[arg(long)]
    pub pin: bool,
}

pub(crate) fn parse_buckets(s: &str) -> Result<u64, String> {
    parse_count(s, "buckets", MAX_BUCKETS)
}

pub(crate) fn parse_keys(s: &str) -> Result<u64, String> {
    parse_count(s, "keys", MAX_KEYS)
}

pub(crate) fn parse_chain(s: &str) -> Result<u64, String> {
    parse_count(s, "elements per bucket", MAX_KEYS)
}
