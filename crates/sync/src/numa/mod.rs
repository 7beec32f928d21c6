//! NUMA-aware mutual exclusion: locks that hand the lock to a waiter on
//! the holder's NUMA node before one elsewhere, so that the lock word and
//! the data it protects stay in that node's caches for a while, one
//! algorithm per file.
//!
//! - [`RawCboMcs`] (`c-bo-mcs`): lock cohorting (Dice, Marathe and Shavit):
//!   a global test-and-set lock with backoff over one MCS lock per node.
//! - [`RawHmcs`] (`hmcs`): the hierarchical MCS lock (Chabbi, Fagan and
//!   Mellor-Crummey) with two levels: an MCS lock per node under a root
//!   MCS lock in which each node queues with a node of its own.
//! - [`RawCna`] (`cna`): compact NUMA-aware locks (Dice and Kogan): one
//!   word, an MCS queue whose holder moves the waiters of other nodes that
//!   it skips to a secondary queue.
//!
//! Each asks [`topology::current_node`](crate::topology::current_node)
//! for the calling thread's node (a hint: a thread may migrate, and the
//! locks use it only to choose whom to serve, never for exclusion), and
//! the two hierarchical ones keep per-node state in arrays of
//! [`topology::MAX_NODES`](crate::topology::MAX_NODES) entries, node `k`
//! using entry `k % MAX_NODES`.
//!
//! # Fairness
//!
//! None serves waiters in arrival order (their [`LockInfo`]'s `fair` is
//! false): that is the point. Each bounds how many times in a row the lock
//! stays on one node, a bound a const generic sets (the default is the
//! one from each lock's source, stated there). HMCS and CNA are therefore
//! starvation-free with a bound; C-BO-MCS bounds each node's turn too,
//! but its global lock is a test-and-set lock, which promises nothing
//! about who takes it next.
//!
//! [`LockInfo`]: crate::info::LockInfo
//!
//! # Queue nodes
//!
//! C-BO-MCS's per-node locks are [`RawMcs`](crate::RawMcs) itself, nodes
//! and all. HMCS's leaf nodes and CNA's nodes carry more than an MCS node
//! (a status word; a hand-over word, a node number, a count), so each has
//! a `node_table!` of its own, with the spare-node fallback of `mcs.rs`
//! in `util::spares` for any node type (`Claimed`, `Spares`).

pub mod cna;
pub mod cohort;
pub mod hmcs;

pub use cna::{CnaToken, RawCna};
pub use cohort::{CboMcsToken, RawCboMcs};
pub use hmcs::{HmcsToken, RawHmcs};

#[cfg(not(loom))]
pub use cna::CnaMutex;
#[cfg(not(loom))]
pub use cohort::CboMcsMutex;
#[cfg(not(loom))]
pub use hmcs::HmcsMutex;
