//! The locklab lab: measures lock algorithms on this machine, stores and
//! plots the results. The `locklab` binary is a thin CLI over this crate.
//!
//! Each study lives in its folder under [`studies`]; the other modules are
//! what the studies share, and name none of them.

pub mod cli;
pub mod clock;
pub mod commands;
pub mod compare;
pub mod error;
pub mod export;
pub mod files;
pub mod heap;
pub mod html;
pub mod interrupt;
pub mod lablock;
pub mod machine;
pub mod measure;
pub mod out;
pub mod peers;
pub mod plot;
pub mod program;
pub mod progress;
pub mod registry;
pub mod report;
pub mod results;
pub mod run;
pub mod stats;
pub mod store;
pub mod studies;
pub mod sweep;
pub mod verdict;

pub use error::{LabError, Result};

/// Counts the heap in use for the benchmarks' memory figures ([`heap`]).
#[global_allocator]
static HEAP: heap::Counting = heap::Counting;
