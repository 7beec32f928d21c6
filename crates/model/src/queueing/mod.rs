//! Closed queueing models of one lock shared by N cores.
//!
//! Each core alternates between working outside the lock for a mean delay
//! Z and taking the lock; while one core holds it, the others that want it
//! wait. The state of the system is k, the number of cores holding or
//! waiting for the lock (0 ≤ k ≤ N). Both models are birth–death chains
//! on that state ([`chain`]); they differ only in how long one
//! acquisition keeps the lock busy (exponentially distributed, of mean):
//!
//! | model | busy time per acquisition in state k | file |
//! |---|---|---|
//! | machine repairman (big lock, scalable queue lock) | S | [`repairman`] |
//! | ticket-lock collapse | S + C·k | [`ticket`] |
//!
//! A busy time of exactly S makes k alone no longer a Markov chain;
//! [`constant`] solves that repairman (M/D/1//N) exactly at releases.
//!
//! [`fit()`] fits the repairman's S and Z to a measured curve.
//!
//! Invalid parameters (S ≤ 0, Z < 0, N = 0, anything not finite) are
//! [`ModelError`]s, never panics.

pub mod chain;
pub mod constant;
pub mod error;
pub mod fit;
pub mod repairman;
pub mod ticket;

pub use chain::Solution;
pub use constant::MAX_CONSTANT_CORES;
pub use error::{most_cores, ModelError, MAX_CORES};
pub use fit::{
    fit, fit_family, Fit, FitError, FitOptions, MAX_MISS, MAX_THROUGHPUT, MIN_THROUGHPUT,
};
pub use repairman::Repairman;
pub use ticket::Ticket;
