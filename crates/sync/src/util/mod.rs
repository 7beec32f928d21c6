//! Building blocks shared by the algorithms: the std/loom atomics shim,
//! backoff delays, compact thread indexes, the per-thread queue-node arrays
//! and the pool of migrating CLH nodes.

/// Defines a `const fn` normally and a plain `fn` under loom, whose atomics
/// cannot be built in a const. Lock constructors use it so the same
/// algorithm code serves both the `lock_api` layer and the model checks.
#[doc(hidden)]
#[macro_export]
macro_rules! loom_const_fn {
    ($(#[$m:meta])* $vis:vis fn $name:ident() -> $ret:ty $body:block) => {
        $(#[$m])* #[cfg(not(loom))] $vis const fn $name() -> $ret $body
        $(#[$m])* #[cfg(loom)] $vis fn $name() -> $ret $body
    };
}

pub mod backoff;
pub mod clh_pool;
pub mod nodes;
pub mod pause;
pub mod sync;
#[cfg(all(test, not(loom)))]
pub(crate) mod testing;
pub mod thread_index;

pub use crossbeam_utils::CachePadded;
