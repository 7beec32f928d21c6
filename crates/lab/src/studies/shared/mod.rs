//! What several studies share: the engines they run and the facts they
//! read the same way. A module here imports the core and other shared
//! modules, never a study (`tests/layout.rs` checks it).

pub mod contention;
pub mod hashtable;
pub mod ipc_points;
pub mod kernel;
pub mod lock_profile;
