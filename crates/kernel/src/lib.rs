//! locklab-kernel: an emulated multicore microkernel's IPC path, with the
//! kernel's concurrency control as a type parameter.
//!
//! It reproduces the kernel side of seeds 000 and 002 (Peters et al., "For a
//! microkernel, a big lock is fine"; Elphinstone et al., "An evaluation of
//! coarse-grained locking for multicore microkernels"): seL4-like threads,
//! endpoints and notifications; rendezvous IPC in two-phase system calls;
//! per-core scheduler queues; and four ways to keep cores apart in the
//! kernel ([`cc`]): none, a big kernel lock, fine-grained locks under a big
//! reader lock, and the big lock elided with hardware transactions.
//!
//! Each emulated core is an OS thread running the user programs of its
//! threads ([`user`]) and entering the kernel for every system call. A
//! checker ([`check`]) verifies the kernel's invariants after a run.
//!
//! ```
//! use locklab_kernel::{cc::Bkl, check, Config, Kernel, System};
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! let sys = System::pingpong(1, 0.0, 1);
//! let k = Arc::new(Kernel::boot(Bkl::<locklab::RawClh>::new("clh"), &sys, Config::default()).unwrap());
//! let (_, run) = k
//!     .run(sys.programs(), Arc::new(|_| {}), Duration::from_secs(10), |m| {
//!         while m.total().syscalls < 1000 {
//!             std::thread::yield_now();
//!         }
//!     })
//!     .unwrap();
//! assert!(check::check_kernel(&k).is_empty());
//! assert!(check::check_programs(&k, &run).is_empty());
//! ```

#![warn(missing_docs)]

pub mod cc;
pub mod check;
pub mod idle;
pub mod irq;
mod kernel;
pub mod kv;
pub mod objects;
mod setup;
pub mod stats;
pub mod syscall;
pub mod user;

pub use kernel::{BootError, Config, Hang, Kernel, Monitor, RunResult, System, ThreadSpec};
