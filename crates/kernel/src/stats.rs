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
    /// Of those, aborts by cause (`locklab::elide::Cause`): the
    /// transaction found the lock busy ...
    pub abort_lock_busy: u64,
    /// ... another core touched what it had read or written ...
    pub abort_conflict: u64,
    /// ... it outgrew what the hardware tracks ...
    pub abort_capacity: u64,
    /// ... the hardware said a retry could not succeed (any other reason) ...
    pub abort_retry_clear: u64,
    /// ... or none of these.
    pub abort_other: u64,
    /// Kernel entries that took the fall-back lock without attempting a
    /// transaction (counted in `fallbacks` too; the adaptive policy).
    pub skipped: u64,
}

const FIELDS: usize = 17;

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
            self.abort_lock_busy,
            self.abort_conflict,
            self.abort_capacity,
            self.abort_retry_clear,
            self.abort_other,
            self.skipped,
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
            abort_lock_busy: a[11],
            abort_conflict: a[12],
            abort_capacity: a[13],
            abort_retry_clear: a[14],
            abort_other: a[15],
            skipped: a[16],
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
