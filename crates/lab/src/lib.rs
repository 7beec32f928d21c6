//! The locklab lab: measures lock algorithms on this machine, stores and
//! plots the results. The `locklab` binary is a thin CLI over this crate.

pub mod error;
pub mod machine;
pub mod plot;
pub mod report;
pub mod results;
pub mod store;

pub use error::{LabError, Result};
