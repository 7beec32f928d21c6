//! Read-mostly synchronization that spins: reader-writer locks, the
//! big-reader lock and the sequence lock, one algorithm per file.
//!
//! The reader-writer locks implement [`lock_api::RawRwLock`] (with
//! ready `…RwLock<T>` aliases outside loom) and carry a
//! [`LockInfo`](crate::LockInfo) of family
//! [`ReaderWriter`](crate::Family::ReaderWriter), like the mutexes. The
//! sleeping reader-writer lock is [`rwsem`](crate::block::rwsem).

pub mod fair;
pub mod reader_pref;
pub mod writer_pref;

pub use fair::RawRwFair;
#[cfg(not(loom))]
pub use fair::RwFairLock;
pub use reader_pref::RawRwReader;
#[cfg(not(loom))]
pub use reader_pref::RwReaderLock;
pub use writer_pref::RawRwWriter;
#[cfg(not(loom))]
pub use writer_pref::RwWriterLock;
