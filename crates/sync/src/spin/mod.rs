//! Busy-waiting mutual exclusion, one algorithm per file.
//!
//! Each raw lock has inherent `acquire`/`try_acquire`/`release` methods (the
//! algorithm, model-checked under loom) and, outside loom, a thin
//! `lock_api::RawMutex` layer with a ready `…Mutex<T>` alias.

pub mod tas;

pub use tas::RawTas;
#[cfg(not(loom))]
pub use tas::TasMutex;
