//! Metadata every lock algorithm carries, so that the lab, the docs and the
//! CLI list the same set from one place.

/// The broad class an algorithm belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Busy-waiting on one shared word (test-and-set and relatives).
    Spin,
    /// Busy-waiting with FIFO hand-over through a ticket counter.
    Ticket,
    /// Busy-waiting in a queue, each waiter spinning on its own cache line.
    Queue,
    /// Sleeps in the kernel when contended.
    Blocking,
    /// Hierarchical and NUMA-aware: waiters on the holder's node go first
    /// (cohort locks, HMCS, CNA).
    Numa,
    /// Delegation: one thread runs the others' critical sections for them
    /// (flat combining).
    Delegation,
    /// Readers share, writers exclude (reader-writer locks, big-reader
    /// locks, sequence locks); those that sleep are `Blocking` instead.
    ReaderWriter,
    /// A lock from outside locklab, measured for comparison.
    Peer,
}

impl Family {
    /// Short lower-case name, as printed by the CLI.
    pub const fn as_str(self) -> &'static str {
        match self {
            Family::Spin => "spin",
            Family::Ticket => "ticket",
            Family::Queue => "queue",
            Family::Blocking => "blocking",
            Family::Numa => "numa",
            Family::Delegation => "delegation",
            Family::ReaderWriter => "rw",
            Family::Peer => "peer",
        }
    }
}

impl core::fmt::Display for Family {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What an algorithm is and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockInfo {
    /// The name the lab and CLI use (`ticket-backoff`, `qspin`, …).
    pub name: &'static str,
    /// The class of algorithm.
    pub family: Family,
    /// Whether waiters are served in arrival order (no starvation).
    pub fair: bool,
    /// Whether waiters may sleep in the kernel instead of spinning.
    pub blocking: bool,
    /// Whether it keeps hand-overs within a NUMA node (see
    /// [`topology`](crate::topology)).
    pub numa_aware: bool,
    /// Where the algorithm comes from (paper or kernel file).
    pub source: &'static str,
    /// One line on the idea.
    pub summary: &'static str,
}

/// Implemented by every locklab raw lock: its metadata.
pub trait Described {
    /// The algorithm's metadata.
    const INFO: LockInfo;
}
