//! Kernel concurrency control: how a core that enters the kernel keeps the
//! others out of what it touches. A type parameter of [`Kernel`], so each
//! variant's system-call path is compiled on its own and measured without
//! a dynamic call on the IPC path (booting, running and checking a kernel
//! are compiled once for all variants).
//!
//! - [`NoLock`] (`none`): nothing. Correct only while cores touch disjoint
//!   objects; it is seed 000's "(unsafe!) kernel implementation without any
//!   locking" (§4.2), which gives the theoretical best of a perfect,
//!   zero-overhead fine-grained lock on the multicore ping-pong (seed 002
//!   Fig. 3 calls its one-core baseline "none": a uniprocessor kernel with no
//!   concurrency primitives). Kernels with shared objects refuse it.
//! - [`Bkl`] (`bkl`): one big lock around everything between kernel entry and
//!   exit (seed 002 §3.2; seL4 used a CLH lock). Any mutex of the library.
//! - [`Fine`] (`fine`): the big reader lock for the kernel, each IPC taking
//!   the reader side, then the ticket locks of the objects it touches in
//!   address order; object deletion takes the writer side (seed 002 §3.3).
//! - [`Elide`] (`elide`): the big lock elided with hardware transactions,
//!   falling back to taking it (seed 002 §3.4 and Fig. 1).
//! - [`ElideAdaptive`] (`elide-adaptive`): the same with glibc's per-lock
//!   adaptation (after an abort that retrying cannot cure, the next few
//!   entries take the lock without attempting). [`Elide`] over
//!   [`EitherPolicy`] is either, chosen when the kernel is made: one
//!   compiled kernel for both (the lab runs them so).
//!
//! [`Kernel`]: crate::Kernel

use crate::stats::CoreStats;
use locklab::elide::{Adaptive, Fixed, Path, Policy};
use locklab::RawBrLock;

/// How the kernel is protected. See the module documentation.
pub trait Concurrency: Send + Sync + 'static {
    /// What a core holds while inside the kernel.
    type Entry;
    /// What object deletion holds.
    type Writer;
    /// Whether system calls lock the objects they touch (in address order)
    /// and re-check what they saw before locking.
    const FINE: bool;
    /// Whether cores may share objects (false for `none`).
    const SHARING: bool;
    /// The variant's name, e.g. `bkl(clh)`.
    fn name(&self) -> String;
    /// Kernel entry: after the user state is saved, before any object is
    /// read. Outcomes worth counting (elided sections, aborts) go to `stats`.
    fn enter(&self, stats: &mut CoreStats) -> Self::Entry;
    /// Kernel exit: the entry `enter` returned.
    fn exit(&self, entry: Self::Entry);
    /// Exclusive kernel entry, for operations that free objects.
    fn enter_writer(&self, stats: &mut CoreStats) -> Self::Writer;
    /// Leaves exclusive entry.
    fn exit_writer(&self, w: Self::Writer);
}

/// `none`: no concurrency control. See the module documentation.
#[derive(Debug, Default)]
pub struct NoLock;

impl Concurrency for NoLock {
    type Entry = ();
    type Writer = ();
    const FINE: bool = false;
    const SHARING: bool = false;

    fn name(&self) -> String {
        "none".into()
    }
    #[inline(always)]
    fn enter(&self, _: &mut CoreStats) {}
    #[inline(always)]
    fn exit(&self, _: ()) {}
    fn enter_writer(&self, _: &mut CoreStats) {}
    fn exit_writer(&self, _: ()) {}
}

/// `bkl`: one big kernel lock, the mutex `M`.
pub struct Bkl<M> {
    lock: M,
    name: &'static str,
}

impl<M: lock_api::RawMutex> Bkl<M> {
    /// A big lock of type `M`, reported as `bkl(name)`.
    pub fn new(name: &'static str) -> Self {
        Bkl {
            lock: M::INIT,
            name,
        }
    }
}

/// The guard of a held big lock (the mutex's own guard).
pub struct BklEntry<G>(G);

impl<M> Concurrency for Bkl<M>
where
    M: lock_api::RawMutex + Send + Sync + 'static,
{
    type Entry = BklEntry<M::Guard>;
    type Writer = BklEntry<M::Guard>;
    const FINE: bool = false;
    const SHARING: bool = true;

    fn name(&self) -> String {
        format!("bkl({})", self.name)
    }
    #[inline(always)]
    fn enter(&self, _: &mut CoreStats) -> Self::Entry {
        BklEntry(self.lock.lock())
    }
    #[inline(always)]
    fn exit(&self, e: Self::Entry) {
        // SAFETY: `e` holds the guard of this core's acquisition (`enter`).
        unsafe { self.lock.unlock(e.0) }
    }
    fn enter_writer(&self, s: &mut CoreStats) -> Self::Writer {
        self.enter(s)
    }
    fn exit_writer(&self, w: Self::Writer) {
        self.exit(w)
    }
}

/// `fine`: the big reader lock plus per-object ticket locks.
#[derive(Default)]
pub struct Fine {
    big: RawBrLock,
}

impl Fine {
    /// An unlocked kernel.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Concurrency for Fine {
    type Entry = locklab::BrReadToken;
    type Writer = ();
    const FINE: bool = true;
    const SHARING: bool = true;

    fn name(&self) -> String {
        "fine".into()
    }
    #[inline(always)]
    fn enter(&self, _: &mut CoreStats) -> Self::Entry {
        self.big.acquire_shared()
    }
    #[inline(always)]
    fn exit(&self, e: Self::Entry) {
        // SAFETY: `e` is this core's read acquisition (`enter`).
        unsafe { self.big.release_shared(e) }
    }
    fn enter_writer(&self, _: &mut CoreStats) {
        self.big.acquire_exclusive()
    }
    fn exit_writer(&self, _: ()) {
        // SAFETY: `enter_writer` took the write side for this core.
        unsafe { self.big.release_exclusive() }
    }
}

/// Whether this CPU can run hardware transactions (Intel RTM), so that the
/// `elide` variant elides rather than always taking its fall-back lock.
pub use locklab::rtm_available;

/// `elide`: the big lock `M` elided with hardware transactions (the
/// library's [`locklab::Elided`]): a kernel entry runs as one transaction
/// that reads the lock (so a core that takes it aborts every transaction),
/// retries a few times, and falls back to taking the lock (seed 002 Fig. 1).
/// Without RTM every entry takes the lock. The policy `P` says when to
/// attempt: seed 002's ([`Fixed`]) or glibc's ([`Adaptive`], see
/// [`ElideAdaptive`]).
pub struct Elide<M, P = Fixed> {
    lock: locklab::Elided<M, locklab::Rtm, P>,
    name: &'static str,
    /// The policy's name: `elide` or `elide-adaptive`.
    kind: &'static str,
}

/// `elide-adaptive`: [`Elide`] under glibc's adaptive policy.
pub type ElideAdaptive<M> = Elide<M, Adaptive>;

impl<M: lock_api::RawMutex, P: Policy> Elide<M, P> {
    /// The lock `M` elided, reported as `elide(name)` (or
    /// `elide-adaptive(name)`).
    pub fn new(name: &'static str) -> Self {
        Elide {
            lock: locklab::Elided::new(),
            name,
            kind: P::NAME,
        }
    }
}

/// Which policy an [`Elide`] over [`EitherPolicy`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyChoice {
    /// Seed 002's ([`Fixed`]): `elide`.
    Fixed,
    /// glibc's ([`Adaptive`]): `elide-adaptive`.
    Adaptive,
}

/// [`Fixed`] or [`Adaptive`], chosen when the kernel is made rather than
/// compiled in, so that `elide(L)` and `elide-adaptive(L)` are one compiled
/// kernel: each decision of the policy pays one branch on which it is, the
/// same branch every time. The decisions are those of the policy chosen.
#[derive(Debug)]
pub enum EitherPolicy {
    /// Seed 002's.
    Fixed(Fixed),
    /// glibc's.
    Adaptive(Adaptive),
}

impl Policy for EitherPolicy {
    const INIT: Self = EitherPolicy::Fixed(Fixed);
    const NAME: &'static str = "elide";
    const SOURCE: &'static str = "seed 002 Fig. 1, or glibc's adaptive elision, chosen at run time";
    const SUMMARY: &'static str = "the fixed or the adaptive elision policy, chosen at run time";

    #[inline(always)]
    fn elide(&self) -> bool {
        match self {
            EitherPolicy::Fixed(p) => p.elide(),
            EitherPolicy::Adaptive(p) => p.elide(),
        }
    }
    #[inline(always)]
    fn after_abort(
        &self,
        abort: locklab::elide::Abort,
        attempts: u32,
        threshold: u32,
    ) -> locklab::elide::Next {
        match self {
            EitherPolicy::Fixed(p) => p.after_abort(abort, attempts, threshold),
            EitherPolicy::Adaptive(p) => p.after_abort(abort, attempts, threshold),
        }
    }
    #[inline(always)]
    fn after_try_abort(&self, abort: locklab::elide::Abort) {
        match self {
            EitherPolicy::Fixed(p) => p.after_try_abort(abort),
            EitherPolicy::Adaptive(p) => p.after_try_abort(abort),
        }
    }
}

impl<M: lock_api::RawMutex> Elide<M, EitherPolicy> {
    /// The lock `M` elided under the policy `choice`, reported as
    /// `elide(name)` or `elide-adaptive(name)` as [`Elide::new`] reports it.
    pub fn chosen(name: &'static str, choice: PolicyChoice) -> Self {
        let (policy, kind) = match choice {
            PolicyChoice::Fixed => (EitherPolicy::Fixed(Fixed), Fixed::NAME),
            PolicyChoice::Adaptive => (EitherPolicy::Adaptive(Adaptive::INIT), Adaptive::NAME),
        };
        Elide {
            lock: locklab::Elided::with_policy(M::INIT, locklab::Rtm, policy),
            name,
            kind,
        }
    }
}

impl<M, P> Concurrency for Elide<M, P>
where
    M: lock_api::RawMutex + Send + Sync + 'static,
    P: Policy + Send + Sync + 'static,
{
    type Entry = locklab::elide::ElidedGuard<M::Guard>;
    type Writer = locklab::elide::ElidedGuard<M::Guard>;
    const FINE: bool = false;
    const SHARING: bool = true;

    fn name(&self) -> String {
        format!("{}({})", self.kind, self.name)
    }
    #[inline(always)]
    fn enter(&self, st: &mut CoreStats) -> Self::Entry {
        let (g, o) = self.lock.lock_with_outcome();
        // Counted after the section began: inside a transaction these are
        // stores to this core's own stack, rolled back with it on an abort.
        if g.is_transaction() {
            st.elided += 1;
        } else {
            st.fallbacks += 1;
        }
        st.skipped += u64::from(o.path == Path::Skipped);
        st.aborts += u64::from(o.aborts);
        let c = o.causes;
        st.abort_lock_busy += u64::from(c.lock_busy);
        st.abort_conflict += u64::from(c.conflict);
        st.abort_capacity += u64::from(c.capacity);
        st.abort_retry_clear += u64::from(c.retry_clear);
        st.abort_other += u64::from(c.other);
        g
    }
    #[inline(always)]
    fn exit(&self, e: Self::Entry) {
        // SAFETY: `e` is this core's guard from `enter`.
        unsafe { self.lock.release(e) }
    }
    fn enter_writer(&self, st: &mut CoreStats) -> Self::Writer {
        self.enter(st)
    }
    fn exit_writer(&self, w: Self::Writer) {
        self.exit(w)
    }
}
