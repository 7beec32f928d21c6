//! What a run of `locklab run` records: the name its points are stored
//! under, the names of its contenders beside the locks, and what each
//! repetition keeps beyond wall and CPU time.

use crate::core::program::launch::Exit;
use crate::core::results::StudyMetrics;
use serde::{Deserialize, Serialize};

/// The name its points are stored under.
pub const BENCH: &str = "run";

/// The C library's lock elision, where it exists.
pub const GLIBC_ELISION: &str = "glibc-elision";

/// What a repetition of `locklab run` keeps beyond wall and CPU time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMetrics {
    /// User CPU seconds of the program.
    pub user_s: f64,
    /// System CPU seconds.
    pub sys_s: f64,
    /// Peak resident memory of the program, KiB (see
    /// `Outcome::max_rss_kib`).
    pub max_rss_kib: u64,
    /// How it ended.
    pub exit: Exit,
    /// The figure `--metric` read from its output, if asked and found.
    pub metric: Option<f64>,
}

impl StudyMetrics for RunMetrics {
    const KEY: &'static str = "run";
}
