//! Loom model checks: every lock algorithm, unchanged, under loom's
//! exhaustive (preemption-bounded) exploration of interleavings.
//!
//! Run with `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p locklab --test loom --release`
//! (`.ci/run` does). Without `--cfg loom` this target is empty.
#![cfg(loom)]

mod extra;
mod harness;

mod anderson;
mod backoff;
mod brlock;
mod clh;
mod cna;
mod cohort;
mod combining;
mod condvar;
mod elide;
mod futex3;
mod hemlock;
mod hmcs;
mod k42;
mod malthusian;
mod mcs;
mod mcs_tp;
mod mutex;
mod park;
mod qspin;
mod rcu;
mod rw_locks;
mod rwsem;
mod seqlock;
mod tas;
mod ticket;
mod ticket_backoff;
mod ttas;
mod twa;
