//! locklab: lock algorithms for multicore programs.
//!
//! Every algorithm lives in its own file, implements [`lock_api::RawMutex`]
//! (so the ready-made `…Mutex<T>` aliases behave like `parking_lot::Mutex<T>`),
//! and carries a [`LockInfo`] that the locklab lab, the docs and the CLI all
//! read from one place.
//!
//! ```
//! let counter = locklab::TasMutex::new(0u64);
//! *counter.lock() += 1;
//! assert_eq!(*counter.lock(), 1);
//! ```
//!
//! Under `--cfg loom` the algorithms are built on loom's atomics so that the
//! model checks in `tests/loom.rs` exercise the very same code; the
//! `lock_api` layer (which needs `const` initialisers that loom cannot
//! provide) is left out in that configuration.

#![warn(missing_docs)]

pub mod block;
pub mod elide;
pub mod info;
pub mod rcu;
pub mod rw;
pub mod spin;
pub mod sys;
mod util;

use util::loom_const_fn;
#[cfg(not(loom))]
use util::{guardless_raw_mutex, guardless_raw_rwlock};

pub use lock_api;

pub use block::condvar::{Condvar, TwoMutexes, WaitTimeoutResult};
#[cfg(not(loom))]
pub use block::futex3::Futex3Mutex;
pub use block::futex3::RawFutex3;
pub use block::mutex::{AdaptiveSpin, FixedSpin, RawHybridMutex, SpinPolicy};
#[cfg(not(loom))]
pub use block::mutex::{FixedSpinMutex, HybridMutex};
pub use block::park::{SpinCore, SpinPark, SpinYield};
#[cfg(not(loom))]
pub use block::park::{SpinParkMutex, SpinYieldMutex};
pub use block::rwsem::RawRwSem;
#[cfg(not(loom))]
pub use block::rwsem::RwSem;
pub use elide::{rtm_available, rtm_setting, AdaptiveElided, Elided, Rtm, RTM_VAR};
#[cfg(not(loom))]
pub use elide::{AdaptiveElidedMutex, ElidedMutex};
pub use info::{Described, Family, LockInfo};
#[cfg(not(loom))]
pub use rw::BrLock;
pub use rw::{BrReadToken, RawBrLock, SeqCount, SeqData, SeqLock};
pub use rw::{RawRwFair, RawRwReader, RawRwWriter};
#[cfg(not(loom))]
pub use rw::{RwFairLock, RwReaderLock, RwWriterLock};
#[cfg(not(loom))]
pub use spin::{
    BackoffMutex, ClhMutex, K42Mutex, McsMutex, QspinMutex, TasMutex, TicketBackoffMutex,
    TicketMutex, TtasMutex,
};
pub use spin::{ClhToken, McsToken, Ticket};
pub use spin::{
    RawBackoff, RawClh, RawK42, RawMcs, RawQspin, RawTas, RawTicket, RawTicketBackoff, RawTtas,
};
