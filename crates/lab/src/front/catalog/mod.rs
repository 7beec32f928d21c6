//! The one catalog of studies: the only place the lab names them. A study
//! is a folder under `src/studies/` and one line here: its command, a
//! variant holding its arguments. The arguments implement [`RunCommand`],
//! whose [`RunCommand::STUDY`] names the [`Study`] that reads the points
//! the command stores; [`all`] gathers them from the commands. The
//! standard suite ([`suite`]), which runs several studies in one run,
//! lives here too.

pub mod suite;

#[cfg(test)]
mod plot_tests;
#[cfg(test)]
mod tests;

use crate::core::error::Result;
use crate::core::study::{Ctx, Outcome, RunCommand, Study};
use crate::studies::{
    advise, condvar, costs, hash, interposed, ipc, kv, lhp, model, profile, sim_lhp, sim_spin,
    spin, torture, uncontended,
};
use clap::{Args, Subcommand};

/// An enum of study commands, one variant per study, each holding the
/// study's arguments; its [`RunCommand`] dispatches to theirs and gathers
/// their studies: adding a study is one line here.
macro_rules! commands {
    ($(#[$meta:meta])* pub enum $name:ident {
        $($(#[$vmeta:meta])* $variant:ident($args:ty),)*
    }) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $variant($args),)*
        }

        impl RunCommand for $name {
            fn run(&self, ctx: &Ctx) -> Result<Outcome> {
                match self {
                    $($name::$variant(a) => a.run(ctx),)*
                }
            }

            fn studies(out: &mut Vec<&'static dyn Study>) {
                $(<$args as RunCommand>::studies(out);)*
            }

            fn arg_types(out: &mut Vec<&'static str>) {
                $(<$args as RunCommand>::arg_types(out);)*
            }
        }
    };
}

commands! {
    /// The commands that run a study.
    #[derive(Debug, Subcommand)]
    pub enum Command {
        /// Run benchmarks; alone, the standard quick suite (uncontended, spin, lhp, and a short hash-table study).
        #[command(display_order = 1)]
        Bench(BenchArgs),
        /// Check that locks exclude and never hang: many threads on non-atomic shadow data.
        #[command(display_order = 2)]
        Torture(torture::args::TortureArgs),
        /// Queueing models of a lock: predict throughput from a service time and a delay, or fit them to a measured curve.
        #[command(display_order = 6)]
        Model(model::args::ModelArgs),
        /// Simulators: `sim lhp` simulates lock-holder preemption in VMs under host scheduling policies (seed 004); `sim spin` spin locks on a machine of sockets × cores (seed 001).
        #[command(display_order = 7)]
        Sim(SimArgs),
        /// Run your own program under the C library's locks and under each of locklab's (LD_PRELOAD), and rank them.
        #[command(display_order = 8)]
        Run(interposed::args::RunArgs),
        /// Run your own program once with its locks counted (LD_PRELOAD): which locks it waits on, and where.
        #[command(display_order = 9)]
        Profile(profile::args::ProfileArgs),
        /// Which lock for your workload: measure the candidates that decide it, with the queueing model beyond the cores and the LHP simulator for a VM.
        #[command(display_order = 10)]
        Advise(advise::args::AdviseArgs),
    }
}

commands! {
    /// The benchmarks.
    #[derive(Debug, Subcommand)]
    pub enum BenchKind {
        /// Contention: threads take one lock in a loop with work inside and a delay outside.
        Spin(spin::args::SpinArgs),
        /// One thread: ns per acquire+release, against the atomic floor.
        Uncontended(uncontended::args::UncontendedArgs),
        /// Lock-holder preemption: the spin benchmark at one thread and 1, 2, 4, 8 × the cores, with each lock's preemption sensitivity.
        Lhp(lhp::args::LhpArgs),
        /// Hash-table lookups and updates under each synchronization strategy (seed 003: spinlocks, rwlocks, refcounts, brlock, seqlock, RCU-style peers).
        Hash(hash::args::HashArgs),
        /// The emulated microkernel's IPC path under each kernel concurrency control (seeds 000 and 002: none, big lock, fine-grained, elided).
        Ipc(ipc::args::IpcArgs),
        /// The seeds' key-value macro-benchmark on the emulated microkernel: YCSB clients, servers and a network driver; throughput, per-core utilisation and Xput against cores per kernel variant.
        Kv(kv::args::KvArgs),
        /// Seed 003's Table 1 on this machine (an instruction, a clock, an L2 hit, atomic increments, memory, a local lock, a cache transfer) beside one uncontended operation of each primitive (locks, seqlock, RCU read sides, synchronize, call).
        Costs(costs::CostsArgs),
        /// Condition variables: producers and consumers through a bounded queue, locklab's Mutex and Condvar beside std's and parking_lot's.
        Condvar(condvar::args::CondvarArgs),
    }
}

commands! {
    /// The simulators.
    #[derive(Debug, Subcommand)]
    pub enum SimKind {
        /// Lock-holder preemption in VMs: seed 004's experiments (or a scenario
        /// file) simulated under each host policy, one row per policy.
        Lhp(sim_lhp::args::SimLhpArgs),
        /// Spin locks on a simulated machine of sockets × cores (seed 001's
        /// two 15-core sockets by default), with a cost model of cache
        /// coherence (seed 002's Table 1): throughput, per-core rate,
        /// fairness, hand-overs across sockets.
        Spin(sim_spin::args::SimSpinArgs),
    }
}

/// `bench` and its kinds.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmark; none runs the standard quick suite.
    #[command(subcommand)]
    pub kind: Option<BenchKind>,
}

impl RunCommand for BenchArgs {
    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        match &self.kind {
            Some(kind) => kind.run(ctx),
            None => suite::command(ctx),
        }
    }

    fn studies(out: &mut Vec<&'static dyn Study>) {
        BenchKind::studies(out)
    }

    fn arg_types(out: &mut Vec<&'static str>) {
        BenchKind::arg_types(out)
    }
}

/// `sim` and its kinds.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Which simulator.
    #[command(subcommand)]
    pub kind: SimKind,
}

impl RunCommand for SimArgs {
    fn run(&self, ctx: &Ctx) -> Result<Outcome> {
        self.kind.run(ctx)
    }

    fn studies(out: &mut Vec<&'static dyn Study>) {
        SimKind::studies(out)
    }

    fn arg_types(out: &mut Vec<&'static str>) {
        SimKind::arg_types(out)
    }
}

/// Every study whose points are stored, gathered from the commands in
/// their order here (the order `plot` prefers them in when a run has
/// several).
pub fn all() -> &'static [&'static dyn Study] {
    static ALL: std::sync::OnceLock<Vec<&'static dyn Study>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut out = Vec::new();
        Command::studies(&mut out);
        out
    })
}

/// The study whose points are stored under `name`.
pub fn find(name: &str) -> Option<&'static dyn Study> {
    all().iter().copied().find(|s| s.name() == name)
}

/// The names of the studies that plot, in order.
pub fn plottable() -> Vec<&'static str> {
    all()
        .iter()
        .filter(|s| s.plot().is_some())
        .map(|s| s.name())
        .collect()
}
