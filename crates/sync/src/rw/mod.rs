//! Read-mostly synchronization that spins: reader-writer locks, the
//! big-reader lock and the sequence lock, one algorithm per file.
//!
//! The reader-writer locks and the big-reader lock implement
//! [`lock_api::RawRwLock`] (with ready aliases outside loom) and carry a
//! [`LockInfo`](crate::LockInfo) of family
//! [`ReaderWriter`](crate::Family::ReaderWriter), like the mutexes. The
//! sequence lock carries one too but is no `RawRwLock`: its readers take
//! nothing and retry, so it copies a `Copy` value out instead of lending a
//! reference. The sleeping reader-writer lock is
//! [`rwsem`](crate::block::rwsem).

pub mod brlock;
pub mod fair;
pub mod reader_pref;
pub mod seqlock;
pub mod writer_pref;

#[cfg(not(loom))]
pub use brlock::BrLock;
pub use brlock::{BrReadToken, RawBrLock};
pub use fair::RawRwFair;
#[cfg(not(loom))]
pub use fair::RwFairLock;
pub use reader_pref::RawRwReader;
#[cfg(not(loom))]
pub use reader_pref::RwReaderLock;
pub use seqlock::{SeqCount, SeqData, SeqLock};
pub use writer_pref::RawRwWriter;
#[cfg(not(loom))]
pub use writer_pref::RwWriterLock;
