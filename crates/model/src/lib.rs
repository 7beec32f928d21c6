//! locklab-model: analytic models and simulators of lock contention, for
//! explaining what the lab measures and predicting what it cannot measure
//! (more cores than the machine has, virtual machines on a host).
//!
//! Everything here is pure arithmetic: single-threaded, deterministic, no
//! I/O, no clock. The same inputs give the same outputs on every run, so
//! the lab can print a prediction next to a measurement and a test can
//! check a model's identities exactly.
//!
//! [`queueing`] holds the closed queueing models of one lock shared by N
//! cores:
//!
//! - [`queueing::Repairman`], the machine-repairman model of a big kernel
//!   lock (seed 002, Elphinstone et al., *An Evaluation of Coarse-Grained
//!   Locking for Multicore Microkernels*, section 4): service time S per
//!   acquisition, mean delay Z between a core's acquisitions;
//! - [`queueing::Ticket`], the same chain with a hand-off time that grows
//!   with the number of waiters (Boyd-Wickizer et al., *Non-scalable locks
//!   are dangerous*, Ottawa Linux Symposium 2012): throughput peaks, then
//!   collapses;
//! - [`queueing::fit()`], a least-squares fit of the repairman model to a
//!   measured (cores, throughput) curve.
//!
//! ```
//! use locklab_model::queueing::Repairman;
//!
//! // Seed 002's fitted big lock: 358 cycles inside, about 2000 between
//! // (its fit gave 1999 at a 2000-cycle delay).
//! let bkl = Repairman::new(358.0, 2000.0).unwrap();
//! let one = bkl.solve(1).unwrap();
//! assert!((one.throughput - 1.0 / 2358.0).abs() < 1e-15);
//! assert!((bkl.knee() - 2358.0 / 358.0).abs() < 1e-12);
//! ```
//!
//! Times are in any one unit the caller chooses (ns, cycles, seconds);
//! throughputs come out in acquisitions per that unit.
//!
//! [`lhp`] is a discrete-event simulator of a virtualization host: vCPUs
//! scheduled by a CFS-like scheduler on physical CPUs, guest spin locks,
//! pause-loop exiting, and the host policies against lock-holder
//! preemption that seed 004 (Zhang, Zhang and Chen, *Efficient transitory
//! co-scheduling for MP virtual machines*, 2014) compares, with its four
//! experiments.

#![warn(missing_docs)]

pub mod lhp;
pub mod locksim;
pub mod queueing;
