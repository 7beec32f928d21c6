//! The studies: each folder one study, with its arguments, its plan, its
//! runner, its report and its plot, importing only the core
//! ([`crate::core`]) and what the studies share ([`shared`]), never
//! another study. Its command and the [`crate::core::study::Study`] that reads its
//! points reach the front through one line of the catalog
//! ([`crate::front::catalog`]). `ARCHITECTURE.md` ("Adding a study") walks
//! through it.

pub mod advise;
pub mod condvar;
pub mod costs;
pub mod hash;
pub mod interposed;
pub mod ipc;
pub mod kv;
pub mod lhp;
pub mod model;
pub mod profile;
pub mod shared;
pub mod sim_lhp;
pub mod sim_spin;
pub mod spin;
pub mod torture;
pub mod uncontended;
