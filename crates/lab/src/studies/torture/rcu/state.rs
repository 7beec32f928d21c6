//! The state the threads of an RCU torture run share: its parameters, its
//! counters, and the flavour's domain with the published element.

use super::flavor::TortureRcu;
use super::keys::Fixture;
use super::pool::{Elem, PIPE_LEN};
use crossbeam_utils::CachePadded;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Threads that call `synchronize` beside the writer.
pub const SYNCERS: usize = 2;

/// Parameters of an RCU torture run.
#[derive(Debug, Clone, Serialize)]
pub struct RcuTortureConfig {
    /// Reader threads.
    pub readers: u32,
    /// Seconds per flavour.
    pub secs: f64,
    /// Seconds without progress after which the run counts as hung.
    pub watchdog_s: f64,
    /// The domain's backpressure bound (`Builder::max_pending`).
    pub max_pending: usize,
    /// Test hook: the map updater breaks each map rule once, to show that
    /// the map checks can fail.
    #[serde(skip)]
    pub sabotage_map: bool,
}

impl RcuTortureConfig {
    /// The defaults for `readers` readers and `secs` seconds.
    pub fn new(readers: u32, secs: f64, watchdog_s: f64) -> Self {
        RcuTortureConfig {
            readers,
            secs,
            watchdog_s,
            max_pending: 2048,
            sabotage_map: false,
        }
    }
}

/// Shared counters; every thread adds to them.
#[derive(Default)]
pub struct Counters {
    pub(super) reads: Vec<CachePadded<AtomicU64>>,
    pub(super) nested: AtomicU64,
    pub(super) poisoned: AtomicU64,
    pub(super) too_short: AtomicU64,
    pub(super) poll_in_section: AtomicU64,
    pub(super) poll_after_sync: AtomicU64,
    pub(super) barrier_marks: AtomicU64,
    pub(super) barrier_errors: AtomicU64,
    pub(super) barriers: AtomicU64,
    pub(super) writes: AtomicU64,
    pub(super) by_sync: AtomicU64,
    pub(super) by_call: AtomicU64,
    pub(super) by_defer: AtomicU64,
    pub(super) by_poll: AtomicU64,
    pub(super) alloc_fail: AtomicU64,
    pub(super) syncs: AtomicU64,
    pub(super) flood_posted: AtomicU64,
    pub(super) flood_ran: AtomicU64,
    pub(super) map_lookups: AtomicU64,
    pub(super) map_updates: AtomicU64,
    pub(super) map_stable_missing: AtomicU64,
    pub(super) map_wrong_value: AtomicU64,
    pub(super) map_grow_lost: AtomicU64,
    pub(super) map_shrink_returned: AtomicU64,
    /// The most callbacks seen pending (sampled by the monitor every
    /// millisecond and by the flood after every 16 it queues).
    pub(super) peak_pending: AtomicUsize,
    pub(super) pipe: [AtomicU64; PIPE_LEN + 1],
    pub(super) batch: [AtomicU64; PIPE_LEN + 1],
    pub(super) circulation: [AtomicU64; PIPE_LEN + 1],
}

/// Everything the threads of one run share.
pub struct State<R: TortureRcu> {
    pub(super) rcu: R,
    pub(super) pool: Box<[Elem]>,
    /// The published element; always points into `pool`.
    pub(super) slot: AtomicPtr<Elem>,
    pub(super) free: Mutex<Vec<usize>>,
    pub(super) stop: AtomicBool,
    pub(super) c: Arc<Counters>,
    pub(super) map: Fixture<R::F>,
    pub(super) cfg: RcuTortureConfig,
}

impl<R: TortureRcu> State<R> {
    pub(super) fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    pub(super) fn sample_pending(&self) {
        let n = self.rcu.stats().pending_callbacks;
        self.c.peak_pending.fetch_max(n, Ordering::Relaxed);
    }
}
