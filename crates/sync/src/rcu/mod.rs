//! User-space read-copy update: readers that take no lock, updaters that
//! wait for (or defer work past) a grace period.
//!
//! RCU (McKenney, seed 003) lets readers walk a linked structure with no
//! lock, no atomic read-modify-write and no write to shared memory. An
//! updater publishes a new version, unlinks the old one, and frees it only
//! after a *grace period*: a time in which every thread that was inside a
//! read-side section when the grace period began has left it. Readers that
//! begin later cannot find the unlinked element.
//!
//! Two flavours share one grace-period core (the `gp` module docs
//! give the ordering argument):
//!
//! | | read side | who pays |
//! |---|---|---|
//! | [`Rcu`] (general purpose) | the outermost `read()` copies the grace-period counter into the thread's own record, its end stores 0; nested guards only count; `read_outer()`, through the exclusive handle, skips the nesting check: a load and a store to enter, a store to leave | the grace period, with `membarrier(2)`; where that is missing, readers fence (`swap`) |
//! | [`Qsbr`] (quiescent-state based) | nothing: a guard only borrows the reader | every registered thread must call [`QsbrReader::quiescent_state`] now and then, or go offline |
//!
//! A thread that is outside every read-side section never delays a grace
//! period of [`Rcu`]; an online [`Qsbr`] thread delays each one until its
//! next quiescent state.
//!
//! ```
//! use locklab::rcu::Rcu;
//! use std::sync::atomic::{AtomicPtr, Ordering};
//!
//! let rcu = Rcu::new();
//! let slot = AtomicPtr::new(Box::into_raw(Box::new(1u64)));
//! let reader = rcu.register();
//! {
//!     let _g = reader.read();
//!     // SAFETY: published boxes are freed only after a grace period.
//!     assert_eq!(unsafe { *slot.load(Ordering::Acquire) }, 1);
//! }
//! let old = slot.swap(Box::into_raw(Box::new(2)), Ordering::AcqRel);
//! // SAFETY: `old` is unlinked; no reader can find it after the grace period.
//! rcu.defer_drop(unsafe { Box::from_raw(old) });
//! rcu.barrier();
//! # drop(unsafe { Box::from_raw(slot.load(Ordering::Relaxed)) });
//! ```
//!
//! Updates: [`Domain::synchronize`] waits for a grace period (concurrent
//! callers share one); [`Domain::call`] and [`Domain::defer_drop`] queue
//! work that a background thread runs in batches after one;
//! [`Domain::barrier`] waits for everything queued so far;
//! [`Domain::start_poll`] and [`Domain::poll`] let an updater check without
//! blocking. Too many queued callbacks make `call` wait (backpressure); a
//! reader that holds a grace period too long gets a stall report.
//!
//! Readers register once per thread and domain ([`Rcu::register`]), as with
//! liburcu's `rcu_register_thread`; the returned handle is what `read()` is
//! called on, so the read side needs no thread-local lookup. Deadlocks that
//! RCU makes easy are caught: `synchronize` or `barrier` inside a read-side
//! section of the same domain panics instead of waiting for itself, and a
//! QSBR thread that calls them outside a guard goes offline while it waits.
//!
//! Structures: [`RcuList`] and [`RcuHashMap`].

mod gp;
#[cfg(not(loom))]
pub mod hash;
#[cfg(not(loom))]
pub mod list;
pub mod membarrier;
#[cfg(not(loom))]
mod reclaim;

pub use self::gp::{GpCookie, Stall, StallHandler};

#[cfg(all(test, not(loom)))]
mod tests;
#[cfg(not(loom))]
pub use hash::RcuHashMap;
#[cfg(not(loom))]
pub use list::RcuList;

use self::gp::{Core, Record, StallConfig, Waiting};
use std::marker::PhantomData;
use std::sync::Arc;
#[cfg(not(loom))]
use std::time::Duration;

/// Which read side a [`Domain`] has.
pub trait Flavor: Send + Sync + 'static + sealed::Sealed {
    /// The name the lab and the docs use.
    const NAME: &'static str;
    /// Whether readers report quiescent states.
    const QSBR: bool;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::General {}
    impl Sealed for super::QuiescentState {}
}

/// The general-purpose flavour: read-side markers, no reporting.
#[derive(Debug)]
pub enum General {}
/// The quiescent-state-based flavour: free read side, threads report.
#[derive(Debug)]
pub enum QuiescentState {}

impl Flavor for General {
    const NAME: &'static str = "rcu";
    const QSBR: bool = false;
}
impl Flavor for QuiescentState {
    const NAME: &'static str = "rcu-qsbr";
    const QSBR: bool = true;
}

/// A general-purpose RCU domain.
pub type Rcu = Domain<General>;
/// A quiescent-state-based RCU domain.
pub type Qsbr = Domain<QuiescentState>;

/// One RCU domain: its readers, grace periods and callbacks. Cheap to
/// clone (a shared handle); when the last clone is dropped the queued
/// callbacks still run, after a grace period, and the reclaimer exits.
pub struct Domain<F: Flavor> {
    shared: Arc<Shared>,
    _flavor: PhantomData<fn() -> F>,
}

struct Shared {
    core: Arc<Core>,
    #[cfg(not(loom))]
    cbs: Arc<reclaim::Callbacks>,
}

#[cfg(not(loom))]
impl Drop for Shared {
    fn drop(&mut self) {
        self.cbs.shutdown();
    }
}

impl<F: Flavor> Clone for Domain<F> {
    fn clone(&self) -> Self {
        Domain {
            shared: self.shared.clone(),
            _flavor: PhantomData,
        }
    }
}

impl<F: Flavor> core::fmt::Debug for Domain<F> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Domain")
            .field("flavor", &F::NAME)
            .field("fenced", &self.is_fenced())
            .finish_non_exhaustive()
    }
}

impl<F: Flavor> Default for Domain<F> {
    fn default() -> Self {
        Self::new()
    }
}

/// Settings of a new [`Domain`].
pub struct Builder<F: Flavor> {
    fenced: bool,
    #[cfg(not(loom))]
    stall_after: Option<Duration>,
    on_stall: Option<StallHandler>,
    max_pending: usize,
    _flavor: PhantomData<fn() -> F>,
}

impl<F: Flavor> Builder<F> {
    /// Readers fence even where `membarrier` would let them off (for
    /// measuring the difference, and for tests of the fallback).
    pub fn fenced(mut self, yes: bool) -> Self {
        self.fenced = yes;
        self
    }

    /// Report a grace period that waits longer than `after` for a reader
    /// (once per grace period); `None` turns reports off. Default: 10 s.
    #[cfg(not(loom))]
    pub fn stall_timeout(mut self, after: Option<Duration>) -> Self {
        self.stall_after = after;
        self
    }

    /// Where stall reports go (default: one line on stderr).
    pub fn on_stall(mut self, f: impl Fn(&Stall) + Send + Sync + 'static) -> Self {
        self.on_stall = Some(Box::new(f));
        self
    }

    /// How many callbacks may wait for a grace period before `call` and
    /// `defer_drop` wait for reclamation (default 65 536).
    pub fn max_pending(mut self, n: usize) -> Self {
        self.max_pending = n.max(1);
        self
    }

    /// The domain.
    pub fn build(self) -> Domain<F> {
        let fenced = self.fenced || !membarrier::expedited_available();
        let stall = StallConfig {
            #[cfg(not(loom))]
            after: self.stall_after,
            handler: self.on_stall,
        };
        #[cfg(loom)]
        let _ = self.max_pending;
        Domain {
            shared: Arc::new(Shared {
                core: Arc::new(Core::new(fenced, stall)),
                #[cfg(not(loom))]
                cbs: Arc::new(reclaim::Callbacks::new(self.max_pending)),
            }),
            _flavor: PhantomData,
        }
    }
}

/// Counters of a domain, for monitoring and the lab.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Grace periods completed.
    pub grace_periods: u64,
    /// Callbacks queued or running.
    pub pending_callbacks: usize,
    /// Bytes of `defer_drop`ped objects awaiting a grace period.
    pub backlog_bytes: usize,
    /// The most `backlog_bytes` has been since the last reset.
    pub peak_backlog_bytes: usize,
    /// Callbacks run.
    pub completed_callbacks: u64,
}

impl<F: Flavor> Domain<F> {
    /// A domain with default settings.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Settings for a new domain.
    pub fn builder() -> Builder<F> {
        Builder {
            fenced: false,
            #[cfg(not(loom))]
            stall_after: Some(Duration::from_secs(10)),
            on_stall: None,
            max_pending: 1 << 16,
            _flavor: PhantomData,
        }
    }

    fn core(&self) -> &Arc<Core> {
        &self.shared.core
    }

    /// Identifies the domain; guards carry the same value.
    pub fn id(&self) -> usize {
        Arc::as_ptr(self.core()) as usize
    }

    /// Whether this domain's readers fence (no `membarrier` here, or asked
    /// for with [`Builder::fenced`]).
    pub fn is_fenced(&self) -> bool {
        self.core().hot.fenced()
    }

    /// Whether the calling thread may wait for this domain's grace periods:
    /// not if it is inside a read-side section, nor if it is an online
    /// QSBR reader (which may hold guards that nothing counts).
    fn waiting(&self) -> Waiting {
        #[cfg(not(loom))]
        if let Some(rec) = mine::lookup(self.id()) {
            // SAFETY: the record lives as long as the core we hold.
            let rec = unsafe { &*rec };
            if Core::active(rec) {
                return Waiting::Never;
            }
        }
        Waiting::Free
    }

    /// Waits for a grace period: every read-side section that began before
    /// the call has ended when it returns. Concurrent callers share grace
    /// periods.
    ///
    /// # Panics
    /// On a thread that may hold references of this domain: inside a
    /// read-side section of [`Rcu`], or a [`Qsbr`] reader that is online
    /// (call [`QsbrReader::synchronize`] instead, which goes offline). Either
    /// would wait for itself.
    pub fn synchronize(&self) {
        self.cond_synchronize(self.core().snapshot());
    }

    /// Waits until the grace period of `cookie` has ended (at once if it
    /// has). Panics like [`Domain::synchronize`].
    pub fn cond_synchronize(&self, cookie: GpCookie) {
        let core = self.core();
        if core.done(cookie) {
            return;
        }
        if self.waiting() == Waiting::Never {
            panic!(
                "locklab rcu: synchronize() from a thread that may hold references of the domain \
                 (inside a read-side section, or an online QSBR reader: use \
                 QsbrReader::synchronize) would wait for itself"
            );
        }
        core.wait_for(cookie);
    }

    /// A cookie for a grace period that begins after this call, without
    /// asking for one to run (compare [`Domain::start_poll`]).
    pub fn get_state(&self) -> GpCookie {
        self.core().snapshot()
    }

    /// A cookie for a grace period that begins after this call, and makes
    /// sure one will run (on the reclaimer thread). Check it with
    /// [`Domain::poll`].
    pub fn start_poll(&self) -> GpCookie {
        let cookie = self.core().snapshot();
        #[cfg(not(loom))]
        self.shared.cbs.request_gp(self.core(), &self.shared.cbs);
        cookie
    }

    /// Whether the grace period of `cookie` has ended: everything unlinked
    /// before the cookie was taken may now be freed.
    pub fn poll(&self, cookie: GpCookie) -> bool {
        self.core().done(cookie)
    }

    /// Grace periods completed so far.
    pub fn grace_periods(&self) -> u64 {
        self.core().grace_periods()
    }
}

#[cfg(not(loom))]
impl<F: Flavor> Domain<F> {
    /// Runs `f` on the reclaimer thread after a grace period. Never blocks
    /// for the grace period; waits only when more than
    /// [`Builder::max_pending`] callbacks are queued (and not inside a
    /// read-side section, nor on the reclaimer itself).
    pub fn call(&self, f: impl FnOnce() + Send + 'static) {
        let s = &self.shared;
        s.cbs.call(s.core(), &s.cbs, f, self.waiting());
    }

    /// Drops `b` after a grace period, without allocating; its size counts
    /// in [`Stats::backlog_bytes`] until then.
    pub fn defer_drop<T: Send + 'static>(&self, b: Box<T>) {
        let s = &self.shared;
        s.cbs.defer_drop(s.core(), &s.cbs, b, self.waiting());
    }

    /// Waits until every callback queued before the call has run.
    ///
    /// # Panics
    /// From a callback, or inside a read-side section of this domain.
    pub fn barrier(&self) {
        let s = &self.shared;
        s.cbs.barrier(s.core(), &s.cbs, self.waiting());
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        let cbs = &self.shared.cbs;
        Stats {
            grace_periods: self.grace_periods(),
            pending_callbacks: cbs.pending(),
            backlog_bytes: cbs.bytes(),
            peak_backlog_bytes: cbs.peak_bytes(),
            completed_callbacks: cbs.completed(),
        }
    }

    /// Bytes of `defer_drop`ped objects awaiting a grace period.
    pub fn backlog_bytes(&self) -> usize {
        self.shared.cbs.bytes()
    }

    /// Starts a new peak for [`Stats::peak_backlog_bytes`].
    pub fn reset_peak_backlog(&self) {
        self.shared.cbs.reset_peak();
    }
}

#[cfg(not(loom))]
impl Shared {
    fn core(&self) -> &Arc<Core> {
        &self.core
    }
}

/// The records of the domains this thread is registered with, so that
/// `synchronize` can tell whether its caller is a reader.
#[cfg(not(loom))]
mod mine {
    use super::Record;
    use std::cell::RefCell;

    thread_local! {
        static MINE: RefCell<Vec<(usize, *const Record)>> = const { RefCell::new(Vec::new()) };
    }

    pub(super) fn lookup(domain: usize) -> Option<*const Record> {
        MINE.try_with(|m| {
            m.borrow()
                .iter()
                .find(|(d, _)| *d == domain)
                .map(|&(_, r)| r)
        })
        .ok()
        .flatten()
    }

    pub(super) fn add(domain: usize, rec: *const Record) {
        MINE.with(|m| {
            let mut m = m.borrow_mut();
            assert!(
                m.iter().all(|(d, _)| *d != domain),
                "locklab rcu: this thread is already registered with this domain; \
                 use its reader handle"
            );
            m.push((domain, rec));
        })
    }

    pub(super) fn remove(domain: usize) {
        let _ = MINE.try_with(|m| m.borrow_mut().retain(|(d, _)| *d != domain));
    }
}

/// A read-side guard of some domain: while it lives, what its thread read
/// from that domain's protected structures is not reclaimed.
///
/// # Safety
/// `domain` must be the [`Domain::id`] of the domain whose grace periods
/// wait for the guard.
pub unsafe trait ReadGuard {
    /// The domain the guard protects against.
    fn domain(&self) -> usize;
}

/// Panics unless `guard` protects against the domain `domain_id` (that of
/// the structure `what` it is used on). The failure path is out of line,
/// so a loop of lookups pays a compare and nothing else.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn check_guard<G: ReadGuard>(guard: &G, domain_id: usize, what: &'static str) {
    #[cold]
    #[inline(never)]
    fn wrong(what: &str) -> ! {
        panic!("locklab rcu: a guard of another domain does not protect this {what}")
    }
    if guard.domain() != domain_id {
        wrong(what)
    }
}

/// A thread's registration with a general-purpose domain. Not `Send`:
/// registered per thread, like liburcu's `rcu_register_thread`.
pub struct RcuReader {
    core: Arc<Core>,
    rec: *const Record,
}

/// A read-side section of [`Rcu`]; nests.
pub struct RcuGuard<'r> {
    reader: &'r RcuReader,
    /// Opened by [`RcuReader::read_outer`]: outermost, with every guard
    /// nested in it borrowing it, so its end needs no look at the record.
    exclusive: bool,
    /// The domain's id, taken where the section's start has the core's
    /// address at hand, so a structure's check of the guard compares a
    /// register.
    domain: usize,
}

impl Domain<General> {
    /// Registers the calling thread as a reader.
    ///
    /// # Panics
    /// If the thread already has a reader of this domain.
    pub fn register(&self) -> RcuReader {
        let core = self.core().clone();
        let rec = core.register();
        #[cfg(not(loom))]
        mine::add(self.id(), rec);
        RcuReader { core, rec }
    }
}

impl RcuReader {
    #[inline(always)]
    fn rec(&self) -> &Record {
        // SAFETY: the record lives as long as the core this handle holds.
        unsafe { &*self.rec }
    }

    /// Enters a read-side section (or nests in the current one).
    #[inline(always)]
    pub fn read(&self) -> RcuGuard<'_> {
        // The record says whether the thread is in a section (only its
        // owner writes it); the outermost section copies `gp_ctr` into it
        // and its end stores 0, and no value flows from one section's end
        // into the next one's stores, so back-to-back sections form no
        // store-to-load chain. Nested sections only count, in the record's
        // owner-only `nested`.
        let rec = self.rec();
        if Core::active(rec) {
            let n = rec.nested.load(core::sync::atomic::Ordering::Relaxed);
            let n = n
                .checked_add(1)
                .expect("locklab rcu: read sections nested too deeply");
            rec.nested.store(n, core::sync::atomic::Ordering::Relaxed);
        } else {
            self.core.enter(rec);
        }
        RcuGuard {
            reader: self,
            exclusive: false,
            domain: Arc::as_ptr(&self.core) as usize,
        }
    }

    /// Enters an outermost read-side section, for a thread that holds its
    /// reader exclusively (as a loop of lookups does). `&mut self` proves
    /// that no other guard of this reader is alive, so unlike
    /// [`read`](RcuReader::read) the section does not look at the record to
    /// learn whether it nests: a load of the grace-period counter and a
    /// store to begin, a store to end. Sections may nest inside it through
    /// [`RcuGuard::reader`].
    ///
    /// ```
    /// use locklab::rcu::{Rcu, RcuHashMap};
    ///
    /// let rcu = Rcu::new();
    /// let map = RcuHashMap::with_buckets(&rcu, 64);
    /// map.insert(1u64, 10u64);
    /// let mut reader = rcu.register();
    /// let g = reader.read_outer();
    /// let inner = g.reader().read(); // nests
    /// assert_eq!(map.get(&1, &inner), Some(&10));
    /// ```
    #[inline(always)]
    pub fn read_outer(&mut self) -> RcuGuard<'_> {
        let domain = Arc::as_ptr(&self.core) as usize;
        self.core.enter(self.rec());
        RcuGuard {
            reader: self,
            exclusive: true,
            domain,
        }
    }

    /// Whether the thread is inside a read-side section.
    pub fn in_read_section(&self) -> bool {
        Core::active(self.rec())
    }
}

impl RcuGuard<'_> {
    /// The reader, for sections nested in this one (they borrow this guard,
    /// so they end before it).
    pub fn reader(&self) -> &RcuReader {
        self.reader
    }
}

impl Drop for RcuGuard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        let rec = self.reader.rec();
        if self.exclusive {
            // Outermost, and every guard nested in it is gone: they
            // borrowed it.
            self.reader.core.leave(rec);
            return;
        }
        // Guards are alike, so they may drop in any order: the last one
        // alive ends the section.
        match rec.nested.load(core::sync::atomic::Ordering::Relaxed) {
            // `Release`: the section's loads are ordered before the store
            // that ends it.
            0 => self.reader.core.leave(rec),
            n => rec
                .nested
                .store(n - 1, core::sync::atomic::Ordering::Relaxed),
        }
    }
}

// SAFETY: the guard keeps the record's ctr nonzero, so every grace period of
// the domain with this id (its reader's) waits for it.
unsafe impl ReadGuard for RcuGuard<'_> {
    #[inline(always)]
    fn domain(&self) -> usize {
        self.domain
    }
}

impl Drop for RcuReader {
    fn drop(&mut self) {
        #[cfg(not(loom))]
        mine::remove(Arc::as_ptr(&self.core) as usize);
        self.core.unregister(self.rec);
    }
}

/// A thread's registration with a QSBR domain; online from the start. Not
/// `Send`.
///
/// An online reader may hold references at any time (its guards are not
/// counted: they cost nothing), so it must not wait for a grace period of
/// its own domain: [`Domain::synchronize`] and [`Domain::barrier`] refuse
/// it. Use this handle's [`synchronize`](QsbrReader::synchronize) and
/// [`barrier`](QsbrReader::barrier), which take `&mut self` (so no guard is
/// alive) and go offline while they wait. For the same reason `call` and
/// `defer_drop` never wait on an online reader; the reader is throttled in
/// [`quiescent_state`](QsbrReader::quiescent_state) instead.
pub struct QsbrReader {
    core: Arc<Core>,
    rec: *const Record,
    /// The domain's callbacks, one load away for the backlog check.
    #[cfg(not(loom))]
    cbs: Arc<reclaim::Callbacks>,
}

/// A read-side section of [`Qsbr`]: free, it only borrows the reader so
/// that the thread cannot report a quiescent state or go offline while it
/// holds references.
pub struct QsbrGuard<'r> {
    reader: &'r QsbrReader,
}

/// While this lives the QSBR thread is offline: it holds no references and
/// delays no grace period (for blocking calls). Online again on drop.
pub struct Offline<'r> {
    reader: &'r mut QsbrReader,
}

impl Domain<QuiescentState> {
    /// Registers the calling thread as a reader; it is online at once.
    ///
    /// # Panics
    /// If the thread already has a reader of this domain.
    pub fn register(&self) -> QsbrReader {
        let core = self.core().clone();
        let rec = core.register();
        // SAFETY: the record lives as long as the core.
        core.enter(unsafe { &*rec });
        #[cfg(not(loom))]
        mine::add(self.id(), rec);
        QsbrReader {
            core,
            rec,
            #[cfg(not(loom))]
            cbs: self.shared.cbs.clone(),
        }
    }
}

impl QsbrReader {
    #[inline(always)]
    fn rec(&self) -> &Record {
        // SAFETY: the record lives as long as the core this handle holds.
        unsafe { &*self.rec }
    }

    /// A read-side section: free; the guard borrows the reader.
    #[inline(always)]
    pub fn read(&self) -> QsbrGuard<'_> {
        QsbrGuard { reader: self }
    }

    /// Reports a quiescent state: no reference taken before it is used
    /// after it. Cheap: a load of the grace-period counter and, when a
    /// grace period began since the last report, a store; if more callbacks
    /// wait than the domain allows, it waits offline for the reclaimer to
    /// catch up. Call it between operations.
    #[inline]
    pub fn quiescent_state(&mut self) {
        let rec = self.rec();
        self.core.quiesce(rec);
        #[cfg(not(loom))]
        if self.cbs.over_limit() {
            throttle_offline(&self.core, rec, &self.cbs);
        }
    }

    /// Goes offline until the returned value is dropped.
    pub fn offline(&mut self) -> Offline<'_> {
        let rec = self.rec();
        self.core.leave(rec);
        Offline { reader: self }
    }

    /// Waits for a grace period, offline meanwhile.
    pub fn synchronize(&mut self) {
        let off = self.offline();
        let core = off.reader.core.clone();
        core.wait_for(core.snapshot());
    }

    /// Waits, offline, until every callback queued before the call has run.
    #[cfg(not(loom))]
    pub fn barrier(&mut self) {
        let (core, cbs) = (self.core.clone(), self.cbs.clone());
        let _off = self.offline();
        cbs.barrier(&core, &cbs, Waiting::Free);
    }
}

impl QsbrGuard<'_> {
    /// The reader (for a section nested in this one, as with
    /// [`RcuGuard::reader`]).
    pub fn reader(&self) -> &QsbrReader {
        self.reader
    }
}

/// A QSBR reader's backpressure: offline while the reclaimer catches up.
/// Takes the reader's parts, not the reader, so that the handle's address
/// never leaves a loop of lookups and its fields can stay in registers.
#[cfg(not(loom))]
#[cold]
#[inline(never)]
fn throttle_offline(core: &Core, rec: &Record, cbs: &reclaim::Callbacks) {
    core.leave(rec);
    cbs.throttle();
    core.enter(rec);
}

impl Drop for Offline<'_> {
    fn drop(&mut self) {
        let rec = self.reader.rec();
        self.reader.core.enter(rec);
    }
}

// SAFETY: a guard borrows its online reader, which cannot report a
// quiescent state or go offline until the guard is gone; every grace
// period of the domain with this id waits for the reader.
unsafe impl ReadGuard for QsbrGuard<'_> {
    #[inline(always)]
    fn domain(&self) -> usize {
        Arc::as_ptr(&self.reader.core) as usize
    }
}

impl Drop for QsbrReader {
    fn drop(&mut self) {
        let rec = self.rec();
        self.core.leave(rec);
        #[cfg(not(loom))]
        mine::remove(Arc::as_ptr(&self.core) as usize);
        self.core.unregister(self.rec);
    }
}
