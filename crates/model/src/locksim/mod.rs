//! A discrete-event simulator of spin locks on a machine of sockets ×
//! cores, with a cost model of cache coherence: for the questions no
//! machine at hand can answer (how a ticket lock's throughput per core
//! falls from 2 to 15 cores of one socket and across two, seed 001's
//! Table 2), held to the queueing model where the model applies.
//!
//! **The machine.** Simulated threads run one per core, placed by
//! [`Placement`] on a [`Topology`]. Memory is cache lines; each line has
//! a place (modified in one core's cache, shared by several, or only in
//! memory, which is the home socket's) and the cost of an access is set
//! by where the line is when it is asked for ([`Costs`]): a hit in the
//! core's own cache, a transfer from another core of its socket, from
//! another socket, or from memory (local or remote). A line serves one
//! transfer at a time: an access that needs the line while it is moving
//! waits for it (`Line::busy_until`), which is how many spinners that
//! re-read a line after each hand-over delay the one that will take it
//! (the collapse seed 001 measures and Boyd-Wickizer et al. model). Hits
//! are not serialised. An access takes effect, in the line's order, when
//! it starts; the thread goes on when it ends. Costs within the socket are
//! those of a line in another core's L1; L2 and L3 are not modelled, nor
//! are store buffers, prefetching, SMT or frequency changes.
//!
//! **Spinning.** A thread that waits for a line to change (a ticket lock's
//! `owner`, an MCS node's flag) reads it once and then watches its cached
//! copy, which costs nothing until another core writes the line; the write
//! invalidates every watcher, and each re-reads the line (a transfer, in
//! the line's order) when the write is done. A test-and-set lock spins
//! with swaps, each a transfer.
//!
//! **The threads** loop: acquire; a critical section of `cs` time and a
//! write to each of `cs_lines` lines of data (which move with the lock);
//! release; a delay outside the lock. Each algorithm ([`Algorithm`]) is
//! the sequence of accesses of its file in `crates/sync`; each variant
//! says which file and what is left out.
//!
//! **What it counts**, over a window that opens after a warm-up: each
//! thread's acquisitions, hand-overs within and across sockets (the
//! previous holder's socket against the next one's), and the time lines
//! spent moving. Everything is deterministic: the same [`Config`] (seed
//! included) gives the same [`Outcome`].

mod machine;
mod sim;

pub use machine::{Costs, Placement, Topology};
pub use sim::{replay, simulate};

use crate::lhp::config::Dist;

/// A lock algorithm, as the accesses of its file in `crates/sync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// `spin/tas.rs`: swap 1 into the lock word until the old value is 0;
    /// release stores 0. (The `spin_loop` hint between failed swaps is
    /// not modelled: the next swap is issued when the last one ends.)
    Tas,
    /// `spin/ttas.rs`: read the word until it is 0, then swap; release
    /// stores 0.
    Ttas,
    /// `spin/ticket.rs`: `fetch_add` on `next`, then read `owner` (the
    /// same line) until it is the ticket; release stores `owner + 1`.
    Ticket,
    /// `spin/mcs.rs`, the classic queue: swap the thread's node into the
    /// tail; with a predecessor, link behind it (a write to its node's
    /// line) and watch the own node's flag; release reads the own node's
    /// `next` and, with no successor, swings the tail back with a
    /// compare-and-swap, else clears the successor's flag. (The file's
    /// embedded node for a free lock makes the same accesses uncontended:
    /// one read-modify-write to acquire, a read and one to release.)
    Mcs,
    /// `numa/cohort.rs`, C-BO-MCS (Dice, Marathe and Shavit, lock
    /// cohorting): an MCS lock per socket (its tail on a line of that
    /// socket's memory) under one global test-and-test-and-set lock. The
    /// MCS hand-over's word is the grant: the next holder of a socket's
    /// local lock finds in its own node the count of passes of the global
    /// lock (above 0, the global lock came with it) or 0 (it takes the
    /// global lock itself, as does one that found the local queue empty).
    /// A release with a waiter of its socket (a successor linked, or the
    /// tail not its own) grants the count + 1, up to the file's bound of
    /// 100 in a row; otherwise it releases the global lock and then
    /// the local one with a grant of 0. (The global lock's randomized
    /// backoff is not modelled: a waiter for it watches its line.)
    CboMcs,
    /// `numa/cna.rs`, CNA (Dice and Kogan, compact NUMA-aware locks): MCS
    /// whose holder reads along the queue (each waiter's node line) for
    /// the first waiter of its own socket, cuts the waiters it skipped out
    /// into a secondary queue (writes to their nodes) and grants the lock
    /// with the secondary queue's head; with no waiter of its socket, or
    /// after the file's bound of 2^16 such hand-overs, it splices the
    /// secondary queue back in front and grants its head.
    Cna,
    /// `numa/hmcs.rs`, the two-level hierarchical MCS lock (Chabbi, Fagan
    /// and Mellor-Crummey): an MCS leaf per socket under a root MCS lock
    /// whose queue holds each leaf's one root node (a line of that
    /// socket's). The leaf's first holder queues its leaf's root node at
    /// the root; holders pass the lock down the leaf queue with a count
    /// in the successor's `status`, up to the file's bound of 63, then
    /// release the root and hand the leaf on with `ACQUIRE_PARENT`.
    Hmcs,
    /// `spin/clh.rs`: mark a node of this thread's pool locked, swap it
    /// into the tail, watch the predecessor's node until it is released
    /// (then take that node into the pool); release is one store into the
    /// own node, which stays in the queue for its successor.
    Clh,
    /// `spin/hemlock.rs`: swap the thread's grant word into the tail;
    /// with a predecessor, watch its grant word until it names this lock,
    /// then clear it (the acknowledgement). Release swings the tail back
    /// with a compare-and-swap, or writes the lock into the own grant
    /// word and watches it until the successor has cleared it.
    Hemlock,
    /// `spin/qspin.rs`, Linux's qspinlock in one word (its locked byte and
    /// pending bit one field of the lock's line, its tail the other): a
    /// compare-and-swap of a free word; the first contender sets pending
    /// (`fetch_or`) and watches the word until the locked byte clears,
    /// then turns pending into locked (`fetch_sub`); further contenders
    /// queue as MCS (a node write, the tail swapped in the word, a link
    /// written into the predecessor's node, a watch of the own node); the
    /// queue's head watches the word until locked and pending clear, then
    /// takes the lock, swinging the tail back if it is the last, else
    /// clearing its successor's flag. Release clears the locked byte with
    /// a read-modify-write (the file's `fetch_sub`; its byte store on
    /// Intel costs the same here unless `atomic` is set).
    Qspin,
}

impl Algorithm {
    /// Every algorithm, by name.
    pub const ALL: [Algorithm; 10] = [
        Algorithm::Tas,
        Algorithm::Ttas,
        Algorithm::Ticket,
        Algorithm::Mcs,
        Algorithm::Clh,
        Algorithm::Hemlock,
        Algorithm::Qspin,
        Algorithm::CboMcs,
        Algorithm::Hmcs,
        Algorithm::Cna,
    ];

    /// The lab's name of the lock.
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Tas => "tas",
            Algorithm::Ttas => "ttas",
            Algorithm::Ticket => "ticket",
            Algorithm::Mcs => "mcs",
            Algorithm::CboMcs => "c-bo-mcs",
            Algorithm::Cna => "cna",
            Algorithm::Clh => "clh",
            Algorithm::Hemlock => "hemlock",
            Algorithm::Qspin => "qspin",
            Algorithm::Hmcs => "hmcs",
        }
    }

    /// Whether waiters are served in the order they arrived.
    pub fn fifo(self) -> bool {
        matches!(
            self,
            Algorithm::Ticket | Algorithm::Mcs | Algorithm::Clh | Algorithm::Hemlock
        )
    }
}

/// One simulation: a lock, a machine, a workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The lock.
    pub algorithm: Algorithm,
    /// The machine.
    pub topology: Topology,
    /// Which core each thread runs on.
    pub placement: Placement,
    /// What an access costs.
    pub costs: Costs,
    /// Threads, one per core (at most the topology's cores).
    pub threads: u32,
    /// The critical section's own time, ns.
    pub cs: Dist,
    /// Lines of data the critical section writes (each moves with the lock).
    pub cs_lines: u32,
    /// The delay outside the lock, ns.
    pub delay: Dist,
    /// The socket whose memory holds the lock word and the critical
    /// section's data (seed 001's "lock in remote memory" puts it on a
    /// socket none of the threads run on).
    pub lock_socket: u32,
    /// Simulated time before the window opens, ns.
    pub warmup_ns: f64,
    /// The window, ns.
    pub window_ns: f64,
    /// The seed of the random lengths.
    pub seed: u64,
}

/// What a simulation found, over its window.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Acquisitions per second over the window.
    pub throughput: f64,
    /// Each thread's acquisitions in the window.
    pub per_thread: Vec<u64>,
    /// Hand-overs in the window between threads of one socket.
    pub within_socket: u64,
    /// Hand-overs in the window between threads of two sockets.
    pub across_sockets: u64,
    /// Time lines spent moving in the window (transfers, summed), ns.
    pub transfer_ns: f64,
    /// For each thread, the simulated time it spent in each phase over the
    /// whole run (acquiring, in the critical section, releasing, in its
    /// delay), ns: they add up to the run's length.
    pub phases: Vec<[f64; 4]>,
    /// The run's length (warm-up and window), ns.
    pub run_ns: f64,
    /// The threads in the order they took the lock from the run's start
    /// (the first 64 acquisitions).
    pub order: Vec<u32>,
}

/// Why a simulation cannot run.
#[derive(Debug, Clone, PartialEq)]
pub struct SimError(pub String);

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SimError {}

#[cfg(test)]
mod tests;
