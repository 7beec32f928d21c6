//! The locklab lab: measures lock algorithms on this machine, stores and
//! plots the results. The `locklab` binary is a thin CLI over this crate.
//!
//! The lab is three layers, each importing only the layers below it
//! (`tests/layout.rs` checks the module graph):
//!
//! - [`core`]: the measurement core, the store, statistics, machine facts,
//!   tables and charts, argument parsers, and the [`core::study::Study`]
//!   trait with the context a study runs in. It names no study.
//! - [`studies`]: one folder per study, importing only the core (and the
//!   shared modules of the studies' folder, which import no study).
//! - [`front`]: the command line, the one catalog of studies, and the
//!   commands over stored runs (show, runs, compare, baseline, report,
//!   plot, export).

pub mod core;
pub mod front;
pub mod studies;

pub use crate::core::error::{LabError, Result};

/// Counts the heap in use for the benchmarks' memory figures
/// ([`core::heap`]).
#[global_allocator]
static HEAP: core::heap::Counting = core::heap::Counting;
