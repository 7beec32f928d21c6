//! The studies: each folder one study, with its arguments, its plan, its
//! runner, its report and its plot. The code they share (the store, the
//! machine facts, the lock registry, the measurement core, the table and
//! chart helpers, a run's way into the store) lives outside this folder
//! and names no study.
//!
//! A study whose points are stored implements [`Study`], and is listed in
//! [`all`]: that is how `show`, `show --json` and `plot` find what to do
//! with a run's points. Its command is one line in [`command`]: a variant
//! holding its arguments, which implement [`command::RunCommand`]. The
//! crate's README ("Adding a study") walks through it.

pub mod advise;
pub mod costs;
pub mod hash;
pub mod interposed;
pub mod ipc;
pub mod ipc_points;
pub mod kernel;
pub mod kv;
pub mod lhp;
pub mod model;
pub mod profile;
pub mod sim_lhp;
pub mod spin;
pub mod torture;
pub mod uncontended;
