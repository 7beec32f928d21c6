//! What the locks are built on that a program may use beside them: the
//! cheap clock that the sleeping locks time their spinning with, and memory
//! straight from the kernel, never from the allocator.
//!
//! The rest of the machinery under the algorithms (the std/loom atomics
//! shim, backoff delays, thread indexes, the per-thread queue nodes) is
//! private: its contracts are the algorithms' own.
//!
//! # The tick clock
//!
//! [`ticks`] is the time-stamp counter on x86_64 (`rdtsc`: about 20
//! cycles, no system call) and nanoseconds since the first call elsewhere.
//! Only differences mean anything; [`ticks_per_ns`] (measured once per
//! process, on first use) and [`tick_rate`] (measured over a window the
//! caller chooses) give their unit. [`spin_ticks`] busy-waits a number of
//! them: the calibrated busy work of the lab's benchmarks and of the
//! emulated kernel's hardware costs.
//!
//! ```
//! let t0 = locklab::sys::ticks();
//! locklab::sys::spin_ticks(1_000);
//! assert!(locklab::sys::ticks().wrapping_sub(t0) >= 1_000);
//! ```
//!
//! # Memory from the kernel
//!
//! [`try_map_anon`] maps fresh zeroed pages. A lock's slow path may run
//! inside `malloc` (the interposer makes a C library's `malloc` take
//! locklab's locks), so the library's own lazily built state comes from
//! here; so does the interposer's arena of lock cells.

#[cfg(not(loom))]
pub use crate::util::pause::ticks_per_ns;
#[cfg(loom)]
pub use crate::util::pause::LOOM_RELAX_NS;
pub use crate::util::pause::{spin_ticks, tick_rate, ticks};
#[cfg(not(loom))]
pub use crate::util::try_map_anon;
