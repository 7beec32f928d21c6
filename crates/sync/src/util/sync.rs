//! The one door through which every algorithm reaches atomics.
//!
//! Normally this is `core::sync::atomic`; under `--cfg loom` it is loom's
//! model-checked replacement, so the algorithms are checked unchanged. Spin
//! loops must call [`spin_loop`] here rather than `core::hint::spin_loop`:
//! under loom it yields to the scheduler, without which a model of a spinning
//! thread never ends.

#[cfg(not(loom))]
pub use core::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
/// A blocking mutex for bookkeeping off the hot path (node pools), so that
/// loom sees the ordering it provides.
#[cfg(loom)]
pub use loom::sync::Mutex;
/// A blocking mutex for bookkeeping off the hot path (node pools), so that
/// loom sees the ordering it provides.
#[cfg(not(loom))]
pub use std::sync::Mutex;

/// Tell the CPU (or loom) that this thread is busy-waiting.
#[inline(always)]
pub fn spin_loop() {
    #[cfg(loom)]
    loom::hint::spin_loop();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}

/// Give the rest of this thread's time slice away.
#[inline]
pub fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}
