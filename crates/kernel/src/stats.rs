//! What each emulated core counts, kept in the core's own variables and
//! published now and then to a padded per-core slot that the benchmark
//! samples (so counting never bounces a shared cache line).

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// One core's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// System calls executed.
    pub syscalls: u64,
    /// Messages moved between threads (IPC transfers, replies included).
    pub transfers: u64,
    /// System calls that failed their checks (bad capability, deleted object).
    pub errors: u64,
    /// Context switches (the current thread changed on kernel exit).
    pub switches: u64,
    /// Kernel critical sections timed (with `measure_hold`).
    pub holds: u64,
    /// Their total length in ticks.
    pub hold_ticks: u64,
    /// Threads the timer preempted.
    pub preemptions: u64,
    /// Times the core left its idle loop to schedule.
    pub idle_entries: u64,
    /// Kernel entries that ran as a hardware transaction (elision).
    pub elided: u64,
    /// Kernel entries that took the fall-back lock (elision).
    pub fallbacks: u64,
    /// Transactions aborted before the entry ran (elision).
    pub aborts: u64,
}

const FIELDS: usize = 11;

impl CoreStats {
    fn to_array(self) -> [u64; FIELDS] {
        [
            self.syscalls,
            self.transfers,
            self.errors,
            self.switches,
            self.holds,
            self.hold_ticks,
            self.preemptions,
            self.idle_entries,
            self.elided,
            self.fallbacks,
            self.aborts,
        ]
    }

    fn from_array(a: [u64; FIELDS]) -> Self {
        CoreStats {
            syscalls: a[0],
            transfers: a[1],
            errors: a[2],
            switches: a[3],
            holds: a[4],
            hold_ticks: a[5],
            preemptions: a[6],
            idle_entries: a[7],
            elided: a[8],
            fallbacks: a[9],
            aborts: a[10],
        }
    }

    /// Field-wise sum.
    pub fn plus(self, o: Self) -> Self {
        let (a, b) = (self.to_array(), o.to_array());
        Self::from_array(std::array::from_fn(|i| a[i].wrapping_add(b[i])))
    }

    /// Field-wise difference (`self` later than `earlier`).
    pub fn minus(self, earlier: Self) -> Self {
        let (a, b) = (self.to_array(), earlier.to_array());
        Self::from_array(std::array::from_fn(|i| a[i].wrapping_sub(b[i])))
    }
}

/// A core's published counters.
#[derive(Debug, Default)]
pub struct Published(CachePadded<[AtomicU64; FIELDS]>);

impl Published {
    /// Publishes `s` (only the owning core writes).
    #[inline]
    pub fn store(&self, s: &CoreStats) {
        for (slot, v) in self.0.iter().zip(s.to_array()) {
            slot.store(v, Relaxed);
        }
    }

    /// The last published counters.
    pub fn load(&self) -> CoreStats {
        CoreStats::from_array(std::array::from_fn(|i| self.0[i].load(Relaxed)))
    }
}
