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
///
/// In this crate's own unit tests (`cfg(test)`), every 64th call on a
/// thread also yields the CPU. The tests run the FIFO spin locks with more
/// threads than cores (more waiters than `anderson`'s slots, twelve threads
/// on CI's two cores), where a hand-over to a waiter that the scheduler has
/// preempted waits for that waiter's next time slice while the others spin
/// through theirs: one CI run spent over two minutes on 24,000 hand-overs.
/// Yielding changes only how long a waiter keeps its core, never what it
/// reads or writes, so the tests still check every ordering and count; the
/// library as built for users spins with the bare hint.
#[inline(always)]
pub fn spin_loop() {
    #[cfg(loom)]
    loom::hint::spin_loop();
    #[cfg(all(test, not(loom)))]
    test_spin();
    #[cfg(not(any(test, loom)))]
    core::hint::spin_loop();
}

/// [`spin_loop`] in this crate's unit tests: the hint, and a yield every
/// 64th call on this thread.
#[cfg(all(test, not(loom)))]
fn test_spin() {
    use std::cell::Cell;
    std::thread_local!(static SPINS: Cell<u32> = const { Cell::new(0) });
    core::hint::spin_loop();
    let n = SPINS.with(|c| {
        let n = c.get().wrapping_add(1);
        c.set(n);
        n
    });
    if n % 64 == 0 {
        std::thread::yield_now();
    }
}

/// Give the rest of this thread's time slice away.
#[inline]
pub fn yield_now() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::yield_now();
}
