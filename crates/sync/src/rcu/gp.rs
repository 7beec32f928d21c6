//! The grace-period core shared by both RCU flavours: reader records, the
//! grace-period counter readers snapshot, the sequence that lets concurrent
//! updaters share grace periods, and the wait for pre-existing readers.
//!
//! # Reader records
//!
//! Each registered thread owns one cache-padded [`Record`]. Its `ctr` holds
//! in its high 48 bits the grace-period number the thread last copied from
//! the global `gp_ctr` (at the start of its outermost read-side section, or
//! at its last quiescent state for QSBR) and in its low 16 bits whether it
//! is active: nonzero inside a read-side section (general flavour) or
//! while online (QSBR), 0 when the thread cannot hold references. `gp_ctr`
//! keeps its low bits nonzero (bit 0 always; bit 1 in a fenced domain, so
//! that a section learns the domain's choice from the value it loads
//! anyway), so one store of it opens an outermost section.
//!
//! Nested sections of the general flavour do not touch `ctr`: the record's
//! owner-only `nested` counts the guards beyond the first. So the
//! outermost section loads its own `ctr` (to see that it is outermost),
//! loads `gp_ctr` and stores it; its end loads `nested` (unchanged) and
//! stores 0. No stored value is loaded back to compute the next store, so
//! back-to-back sections form no store-to-load chain, which costs
//! nanoseconds per section on machines with slow store forwarding (a
//! nesting count kept in `ctr` and counted up and down, as liburcu does,
//! would load each store back).
//!
//! A section opened through the reader's exclusive handle
//! (`RcuReader::read_outer`, `&mut self`) is outermost by construction:
//! the borrow checker rules out any other live guard of the reader, and
//! sections nested inside it borrow its guard, so they end first. It skips
//! both looks at the record: a load of `gp_ctr` and a store to begin, a
//! store of 0 to end, the least a general-purpose read side can do without
//! a fence.
//!
//! # A grace period
//!
//! Under the grace-period lock: advance `gp_ctr` to `g` (an `AcqRel`
//! read-modify-write), put a barrier into every reader, then wait until each
//! record is inactive (low bits 0) or copied `g` or later. The grace-period
//! number has 48 bits and never wraps in practice, so one
//! pass suffices where liburcu, with a one-bit phase, needs two.
//!
//! Why a reader that can still hold a removed element is always waited for:
//! the element was unlinked before `synchronize` began, and the reader `R`
//! loaded the old link, so `R`'s load did not see the unlink.
//! - If `R` copied `g` or later, its `Acquire` load of `gp_ctr` read our
//!   advance, which comes after the unlink (the synchronize caller's
//!   read-modify-write of `seq` is read by the advancing thread, see below),
//!   so `R`'s later loads see the unlink: contradiction. So `R`'s copy is
//!   older than `g`, or `R`'s store of it is not yet visible.
//! - Not visible is what the barrier rules out. With `membarrier` (private
//!   expedited) every running thread of the process executes a full barrier
//!   at some instant `T` during the call, and sleeping threads passed one
//!   when they were switched out. `R`'s load of the old link precedes `T`
//!   (after `T` it would see the unlink, which precedes the call), so `R`'s
//!   earlier store to `ctr` precedes `T` and our scan after the call sees it.
//!   The reader itself pays only a compiler barrier.
//! - Without `membarrier` (the *fenced* fallback, and the form loom checks)
//!   the reader publishes `ctr` with a `swap` and the scan reads it with a
//!   read-modify-write (`fetch_add(0)`): if the scan reads it inactive, the reader's
//!   later swap reads the scan's write (or a later one in its release
//!   sequence), so the scan synchronizes with the reader and everything
//!   before the scan, the unlink included, happens before the reader's
//!   loads. On x86 the reader's swap is one `xchg`, as dear as a full fence.
//!
//! A reader leaves (counts its outermost section down to inactive, goes
//! offline, or copies a newer counter at a QSBR quiescent state) with a
//! `Release` store:
//! its loads of protected data are ordered before it, and the scan reads it
//! with `Acquire`, so what runs after the grace period (freeing) happens
//! after the reader's last access.
//!
//! # Under loom
//!
//! The reader's plain stores to `ctr` (leaving a section or going offline,
//! a QSBR quiescent state) are `swap`s with the same
//! ordering under `--cfg loom`. Loom lets
//! a read-modify-write read any store that is last in the modification
//! order as far as its vector clocks tell, and a reader's plain store is
//! unordered with the scan's `fetch_add(0)`s that the reader never read.
//! So loom explores scans whose every `fetch_add(0)` reads the scan's own
//! previous one and never the reader's store: an unfair execution (no
//! machine keeps a store invisible for ever) that spins until loom gives up
//! with "exceeded maximum number of branches", in every model in which a
//! grace period waits for a reader. A `swap` reads the scan's last write,
//! so it is ordered after it and the scan's next `fetch_add(0)` reads the
//! swap. For what the models check the two are the same: the scan
//! synchronizes with the reader's `Release` write either way, and the
//! reader uses nothing the `swap` reads.
//!
//! # Sharing grace periods
//!
//! `seq` counts grace-period transitions the way Linux's `rcu_seq` does:
//! odd while one runs, +2 per grace period. A caller takes a cookie (the
//! value `seq` must reach for a whole grace period to have begun after the
//! call and ended) with a read-modify-write, so the thread that later
//! advances `seq` synchronizes with it and its unlink happens before the
//! advance. It then takes the grace-period lock only if the cookie has not
//! completed yet; callers queued on the lock while another ran a grace
//! period find their cookie done and leave at once. Polling hands the same
//! cookie to the caller.

use crate::util::sync::{spin_loop, AtomicU64, Mutex, Ordering};
use crossbeam_utils::CachePadded;
#[cfg(not(loom))]
use std::time::{Duration, Instant};

/// Low bits of a record's `ctr`: 1 inside a section or while QSBR-online.
pub(crate) const NEST_MASK: u64 = 0xffff;
/// One grace period in `gp_ctr`.
const GP_STEP: u64 = NEST_MASK + 1;
/// A low bit of `gp_ctr`, and so of every copy a reader stores, set in a
/// fenced domain: a section's start reads the domain's choice from the
/// value it loads anyway, and a copy with it is still active.
const FENCED: u64 = 2;

/// Whether a thread may wait for its domain's grace periods (and so for
/// reclamation).
#[derive(Clone, Copy, PartialEq, Eq)]
#[cfg_attr(loom, allow(dead_code))]
pub(crate) enum Waiting {
    /// It may hold references of the domain (inside a read-side section,
    /// or an online QSBR thread): waiting would deadlock.
    Never,
    /// It holds nothing (or is not registered).
    Free,
}

/// One registered reader thread's state, on its own cache line.
pub(crate) struct Record {
    /// Grace-period number (high bits) and activity (low bits).
    pub(crate) ctr: AtomicU64,
    /// General flavour: the owner's live guards beyond the one `ctr`
    /// counts. Only the owner touches it (plain loads and stores); it is
    /// here rather than in the reader handle so that the handle holds no
    /// interior mutability and a loop of read sections can keep the
    /// handle's fields in registers.
    pub(crate) nested: core::sync::atomic::AtomicU32,
    /// The owner's thread name, for stall reports.
    name: std::sync::Mutex<String>,
}

/// A snapshot of the grace-period sequence: the grace period that must end
/// for everything before the snapshot to be safe to reclaim. Returned by
/// [`start_poll`](super::Domain::start_poll) and
/// [`get_state`](super::Domain::get_state).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GpCookie(pub(crate) u64);

/// What a stall report tells: a grace period waited longer than the
/// configured time for one reader.
#[derive(Clone, Debug)]
pub struct Stall {
    /// The grace period's number (completed grace periods before it).
    pub grace_period: u64,
    /// How long the grace period had waited when reported.
    #[cfg(not(loom))]
    pub waited: Duration,
    /// The name of the reader thread that held it (or `"<unnamed>"`).
    pub reader: String,
}

/// Called once per stalled grace period.
pub type StallHandler = Box<dyn Fn(&Stall) + Send + Sync>;

/// Grace-period machinery of one RCU domain.
pub(crate) struct Core {
    /// Read by every reader: `gp_ctr` and whether readers must fence. On a
    /// line of its own so that writes elsewhere do not evict it.
    pub(crate) hot: CachePadded<Hot>,
    /// Grace-period transitions, `rcu_seq` style.
    seq: CachePadded<AtomicU64>,
    /// Registered records; `bool` = in use. Boxed so a record's address is
    /// stable while the vector grows; freed only with the domain.
    records: Mutex<Vec<(Box<CachePadded<Record>>, bool)>>,
    /// Serializes grace periods; holds the scan's scratch list.
    gp_lock: Mutex<Vec<*const Record>>,
    #[cfg(not(loom))]
    stall_after: Option<Duration>,
    #[cfg(not(loom))]
    on_stall: Option<StallHandler>,
}

pub(crate) struct Hot {
    pub(crate) gp_ctr: AtomicU64,
}

impl Hot {
    /// Whether the domain's readers fence: the [`FENCED`] bit of
    /// `gp_ctr`, set at creation and never changed (grace periods add
    /// whole steps).
    #[inline]
    pub(crate) fn fenced(&self) -> bool {
        self.gp_ctr.load(Ordering::Relaxed) & FENCED != 0
    }
}

// SAFETY: the raw pointers in the scratch list point into boxed records that
// live as long as the `Core`; they are only dereferenced under `gp_lock`.
unsafe impl Send for Core {}
// SAFETY: as above; every shared field is atomic or behind a mutex.
unsafe impl Sync for Core {}

/// Stall reporting options of a domain.
#[derive(Default)]
pub(crate) struct StallConfig {
    #[cfg(not(loom))]
    pub(crate) after: Option<Duration>,
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) handler: Option<StallHandler>,
}

impl Core {
    pub(crate) fn new(fenced: bool, stall: StallConfig) -> Self {
        #[cfg(loom)]
        let _ = stall;
        Core {
            hot: CachePadded::new(Hot {
                gp_ctr: AtomicU64::new(GP_STEP | 1 | if fenced { FENCED } else { 0 }),
            }),
            seq: CachePadded::new(AtomicU64::new(0)),
            records: Mutex::new(Vec::new()),
            gp_lock: Mutex::new(Vec::new()),
            #[cfg(not(loom))]
            stall_after: stall.after,
            #[cfg(not(loom))]
            on_stall: stall.handler,
        }
    }

    /// A record for a new reader thread, with `ctr` 0.
    pub(crate) fn register(&self) -> *const Record {
        let name = std::thread::current()
            .name()
            .unwrap_or("<unnamed>")
            .to_string();
        let mut recs = self.records.lock().unwrap();
        let rec: *const Record = match recs.iter_mut().find(|(_, used)| !*used) {
            Some((r, used)) => {
                *used = true;
                &***r
            }
            None => {
                recs.push((
                    Box::new(CachePadded::new(Record {
                        ctr: AtomicU64::new(0),
                        nested: core::sync::atomic::AtomicU32::new(0),
                        name: std::sync::Mutex::new(String::new()),
                    })),
                    true,
                ));
                &**recs.last().unwrap().0
            }
        };
        // SAFETY: records live as long as the core.
        *unsafe { &*rec }.name.lock().unwrap() = name;
        rec
    }

    /// Returns a record whose `ctr` is 0 for reuse.
    pub(crate) fn unregister(&self, rec: *const Record) {
        let mut recs = self.records.lock().unwrap();
        if let Some((_, used)) = recs.iter_mut().find(|(r, _)| core::ptr::eq(&***r, rec)) {
            *used = false;
        }
    }

    /// A reader's `ctr` becomes `gp_ctr`: the start of an outermost
    /// read-side section, or a QSBR thread coming online.
    #[inline(always)]
    pub(crate) fn enter(&self, rec: &Record) {
        let g = self.hot.gp_ctr.load(Ordering::Acquire);
        if g & FENCED != 0 {
            rec.ctr.swap(g, Ordering::AcqRel);
        } else {
            rec.ctr.store(g, Ordering::Relaxed);
            // The grace period's membarrier orders the store before the
            // section's loads; the compiler must not move them above it.
            #[cfg(not(loom))]
            core::sync::atomic::compiler_fence(Ordering::SeqCst);
        }
    }

    /// A reader can no longer hold references (QSBR offline, unregister).
    #[inline(always)]
    pub(crate) fn leave(&self, rec: &Record) {
        #[cfg(not(loom))]
        rec.ctr.store(0, Ordering::Release);
        // A swap under loom: see "Under loom" in the module docs.
        #[cfg(loom)]
        rec.ctr.swap(0, Ordering::Release);
    }

    /// Whether the record's owner may hold references (its own view).
    #[inline]
    pub(crate) fn active(rec: &Record) -> bool {
        rec.ctr.load(Ordering::Relaxed) & NEST_MASK != 0
    }

    /// A QSBR quiescent state: references taken so far are given up and the
    /// thread stays online.
    #[inline(always)]
    pub(crate) fn quiesce(&self, rec: &Record) {
        let g = self.hot.gp_ctr.load(Ordering::Acquire);
        // The reader was online (ctr != 0), so the grace period is already
        // waiting on a visible value; moving it forward needs no fence. The
        // owner's load of its own record is an L1 hit: it stores only when
        // the counter moved.
        if rec.ctr.load(Ordering::Relaxed) != g {
            #[cfg(not(loom))]
            rec.ctr.store(g, Ordering::Release);
            // A swap under loom: see "Under loom" in the module docs.
            #[cfg(loom)]
            rec.ctr.swap(g, Ordering::Release);
        }
    }

    /// The cookie of the first grace period that starts after this call.
    /// A read-modify-write, so the grace period's advance synchronizes with
    /// it (see the module comment).
    pub(crate) fn snapshot(&self) -> GpCookie {
        let s = self.seq.fetch_add(0, Ordering::AcqRel);
        GpCookie((s + 3) & !1)
    }

    /// The cookie of the last grace period that already completed or runs
    /// now; only as a lower bound for [`Core::done`].
    pub(crate) fn completed(&self) -> u64 {
        self.seq.load(Ordering::Acquire) & !1
    }

    /// Whether the grace period of `cookie` has ended.
    #[inline]
    pub(crate) fn done(&self, cookie: GpCookie) -> bool {
        self.seq.load(Ordering::Acquire) >= cookie.0
    }

    /// Waits until the grace period of `cookie` has ended, running grace
    /// periods (or sharing those that others run) as needed.
    pub(crate) fn wait_for(&self, cookie: GpCookie) {
        while !self.done(cookie) {
            let mut scratch = self.gp_lock.lock().unwrap();
            if self.done(cookie) {
                return;
            }
            self.grace_period(&mut scratch);
        }
    }

    /// One grace period: the caller holds `gp_lock`.
    fn grace_period(&self, scratch: &mut Vec<*const Record>) {
        self.seq.fetch_add(1, Ordering::AcqRel);
        let g = self.hot.gp_ctr.fetch_add(GP_STEP, Ordering::AcqRel) + GP_STEP;
        if g & FENCED == 0 {
            super::membarrier::expedited();
        }
        scratch.clear();
        scratch.extend(
            self.records
                .lock()
                .unwrap()
                .iter()
                .filter(|(_, used)| *used)
                .map(|(r, _)| &***r as *const Record),
        );
        #[cfg(not(loom))]
        let started = Instant::now();
        #[cfg(not(loom))]
        let mut reported = false;
        for &rec in scratch.iter() {
            // SAFETY: records live as long as the core; a record freed for
            // reuse meanwhile reads inactive or a fresh copy, both fine.
            let rec = unsafe { &*rec };
            let mut waits = 0u32;
            while !self.passed(rec, g) {
                waits = waits.saturating_add(1);
                #[cfg(not(loom))]
                {
                    backoff(waits);
                    if !reported {
                        if let Some(after) = self.stall_after {
                            let waited = started.elapsed();
                            if waited >= after {
                                reported = true;
                                self.report_stall(rec, g, waited);
                            }
                        }
                    }
                }
                #[cfg(loom)]
                spin_loop();
            }
        }
        self.seq.fetch_add(1, Ordering::Release);
    }

    /// Whether `rec` no longer delays the grace period that advanced
    /// `gp_ctr` to `g`.
    #[inline]
    fn passed(&self, rec: &Record, g: u64) -> bool {
        // `g` carries the domain's FENCED bit, as every copy does.
        let c = if g & FENCED != 0 {
            rec.ctr.fetch_add(0, Ordering::AcqRel)
        } else {
            rec.ctr.load(Ordering::Acquire)
        };
        // Inactive, or its copy (with low bits at least 1) is `g` or later.
        c & NEST_MASK == 0 || c >= g
    }

    #[cfg(not(loom))]
    fn report_stall(&self, rec: &Record, g: u64, waited: Duration) {
        let stall = Stall {
            grace_period: (g >> 16) - 1,
            waited,
            reader: rec.name.lock().map(|n| n.clone()).unwrap_or_default(),
        };
        match &self.on_stall {
            Some(f) => f(&stall),
            None => eprintln!(
                "locklab rcu: grace period {} stalled: reader thread '{}' has held it for {:.1} s",
                stall.grace_period,
                stall.reader,
                waited.as_secs_f64()
            ),
        }
    }

    /// How many grace periods have completed.
    pub(crate) fn grace_periods(&self) -> u64 {
        self.completed() / 2
    }
}

/// The wait between looks at a reader that holds the grace period: spin
/// briefly (sections are short), then yield (the reader may be waiting for
/// this core), then sleep in growing steps up to a millisecond.
#[cfg(not(loom))]
fn backoff(waits: u32) {
    if waits < 32 {
        for _ in 0..16 {
            spin_loop();
        }
    } else if waits < 64 {
        std::thread::yield_now();
    } else {
        let us = (waits - 63).min(1000) as u64;
        std::thread::sleep(Duration::from_micros(us));
    }
}
