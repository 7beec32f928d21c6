//! [`Elided`]: the elision protocol over a fall-back lock `R` (acquire,
//! try, release), under a [`Policy`] that says when to attempt, and what it
//! reports about each acquisition ([`Path`], [`Outcome`], [`ElidedGuard`]).

use core::fmt;

use lock_api::{GuardNoSend, RawMutex};

use super::{Abort, Adaptive, Causes, Fixed, Htm, Next, Policy, Rtm};
use crate::util::sync::spin_loop;

/// How many aborted attempts make a thread give up and take the fall-back
/// lock: 3, glibc's default for x86 (see the module documentation).
pub const DEFAULT_THRESHOLD: u32 = 3;

/// How a section was entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Path {
    /// Inside a hardware transaction; the lock was only read.
    Transaction,
    /// On the fall-back lock, after the policy gave up on aborted attempts
    /// (or, from `try_lock`, after its one attempt).
    Fallback,
    /// On the fall-back lock without an attempt: the policy skipped
    /// elision for this acquisition ([`Adaptive`] after an abort that
    /// retrying cannot cure).
    Skipped,
    /// On the fall-back lock because the hardware has no RTM: nothing was
    /// attempted.
    Unavailable,
}

/// What happened before a section started: its path, how many attempts
/// aborted first, the last abort's reason, and every abort by cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// Transactional, or on the fall-back lock (and why).
    pub path: Path,
    /// Aborted attempts before this section started.
    pub aborts: u32,
    /// The last of those aborts, if any.
    pub last_abort: Option<Abort>,
    /// Those aborts by cause (they add up to `aborts`).
    pub causes: Causes,
}

/// One acquisition of an [`Elided`] lock. Not `Send`: a transaction
/// belongs to the thread that began it.
pub enum ElidedGuard<G> {
    /// The section runs in a hardware transaction; the lock was only read.
    Transaction(GuardNoSend),
    /// The section holds the fall-back lock with this guard.
    Fallback(G),
}

impl<G: fmt::Debug> fmt::Debug for ElidedGuard<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElidedGuard::Transaction(_) => f.write_str("Transaction"),
            ElidedGuard::Fallback(g) => f.debug_tuple("Fallback").field(g).finish(),
        }
    }
}

impl<G> ElidedGuard<G> {
    /// Whether the section runs in a hardware transaction.
    pub fn is_transaction(&self) -> bool {
        matches!(self, ElidedGuard::Transaction(_))
    }
}

/// Hardware lock elision over the lock `R`, which is the fall-back, on
/// the hardware `H`, attempting transactions as the policy `P` says
/// ([`Fixed`]: seed 002's Fig. 1; [`Adaptive`]: glibc's). See the module
/// documentation.
#[derive(Debug)]
pub struct Elided<R, H = Rtm, P = Fixed> {
    fallback: R,
    // Visible in `elide` so that its tests can read the scripted log.
    pub(super) htm: H,
    policy: P,
    threshold: u32,
}

/// Elision with the [`Adaptive`] policy: `elide-adaptive(<fall-back>)`.
pub type AdaptiveElided<R, H = Rtm> = Elided<R, H, Adaptive>;

#[cfg(not(loom))]
impl<R: RawMutex, P: Policy> Elided<R, Rtm, P> {
    /// Elision over an unlocked `R`, with Intel RTM, the policy's defaults
    /// and the default threshold.
    pub const fn new() -> Self {
        Self::with_policy(R::INIT, Rtm, P::INIT)
    }
}

#[cfg(not(loom))]
impl<R: RawMutex, P: Policy> Default for Elided<R, Rtm, P> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: RawMutex, H: Htm> Elided<R, H> {
    /// Elision over `fallback` (which must be unlocked) with the hardware
    /// `htm`, the policy of Fig. 1 and the default threshold.
    pub const fn from_parts(fallback: R, htm: H) -> Self {
        Self::with_policy(fallback, htm, Fixed)
    }
}

impl<R: RawMutex, H: Htm, P: Policy> Elided<R, H, P> {
    /// Elision over `fallback` (which must be unlocked) with the hardware
    /// `htm`, the policy `policy` and the default threshold.
    pub const fn with_policy(fallback: R, htm: H, policy: P) -> Self {
        Self {
            fallback,
            htm,
            policy,
            threshold: DEFAULT_THRESHOLD,
        }
    }

    /// The policy.
    pub fn policy(&self) -> &P {
        &self.policy
    }

    /// The same lock, giving up after `attempts` aborted transactions (0
    /// acts as 1: see the module documentation).
    pub const fn with_threshold(mut self, attempts: u32) -> Self {
        self.threshold = attempts;
        self
    }

    /// The number of aborted attempts after which a thread takes the
    /// fall-back lock (glibc's `glibc.elision.tries`; [`Adaptive`] may give
    /// up sooner).
    pub fn threshold(&self) -> u32 {
        self.threshold
    }

    /// The fall-back lock. Holding it directly is holding this lock: every
    /// transaction sees it held.
    pub fn fallback(&self) -> &R {
        &self.fallback
    }

    /// Acquires the lock (seed 002's `beginTransaction`) and tells how.
    #[inline]
    pub fn lock_with_outcome(&self) -> (ElidedGuard<R::Guard>, Outcome) {
        if !self.htm.available() {
            return unavailable(self.fallback.lock());
        }
        self.refuse_nesting();
        if !self.policy.elide() {
            return self.skip();
        }
        let mut aborts = 0;
        let mut last_abort = None;
        let mut causes = Causes::default();
        loop {
            let abort = match self.htm.begin() {
                Ok(()) => {
                    if !self.fallback.is_locked() {
                        let outcome = Outcome {
                            path: Path::Transaction,
                            aborts,
                            last_abort,
                            causes,
                        };
                        return (ElidedGuard::Transaction(GuardNoSend::new()), outcome);
                    }
                    // Held. Inside a real transaction this does not return:
                    // `begin` above returns the abort instead.
                    self.htm.abort_lock_busy()
                }
                Err(abort) => abort,
            };
            aborts += 1;
            last_abort = Some(abort);
            causes.count(abort);
            match self.policy.after_abort(abort, aborts, self.threshold) {
                Next::GiveUp => return self.give_up(aborts, abort, causes),
                Next::Retry => {}
                Next::WaitThenRetry => {
                    while self.fallback.is_locked() {
                        spin_loop();
                    }
                }
            }
        }
    }

    /// Takes the lock if that needs no waiting: one transaction (unless the
    /// policy skips it), else one try of the fall-back lock.
    #[inline]
    pub fn try_lock_with_outcome(&self) -> Option<(ElidedGuard<R::Guard>, Outcome)> {
        if !self.htm.available() {
            return self.try_fallback(no_attempt(Path::Unavailable));
        }
        self.refuse_nesting();
        if !self.policy.elide() {
            return self.try_fallback(no_attempt(Path::Skipped));
        }
        let abort = match self.htm.begin() {
            Ok(()) => {
                if !self.fallback.is_locked() {
                    let outcome = no_attempt(Path::Transaction);
                    return Some((ElidedGuard::Transaction(GuardNoSend::new()), outcome));
                }
                self.htm.abort_lock_busy()
            }
            Err(abort) => abort,
        };
        self.policy.after_try_abort(abort);
        let mut causes = Causes::default();
        causes.count(abort);
        self.try_fallback(Outcome {
            path: Path::Fallback,
            aborts: 1,
            last_abort: Some(abort),
            causes,
        })
    }

    /// One try of the fall-back lock, on the way `outcome` tells.
    #[inline]
    fn try_fallback(&self, outcome: Outcome) -> Option<(ElidedGuard<R::Guard>, Outcome)> {
        self.fallback
            .try_lock()
            .map(|g| (ElidedGuard::Fallback(g), outcome))
    }

    /// Releases the lock (seed 002's `endTransaction`): commits a
    /// transactional section, releases the fall-back lock otherwise.
    ///
    /// # Safety
    /// `guard` must come from an acquisition of this lock, on this thread.
    #[inline]
    pub unsafe fn release(&self, guard: ElidedGuard<R::Guard>) {
        match guard {
            ElidedGuard::Transaction(_) => {
                // Only this direction: a fall-back guard may be released
                // inside another lock's transaction (module documentation).
                debug_assert!(
                    self.htm.in_transaction(),
                    "a transactional guard released outside its transaction"
                );
                // SAFETY: this guard's `begin` started the transaction, and
                // the guard is given up with it.
                unsafe { self.htm.end() }
            }
            // SAFETY: the caller passes the guard of this acquisition.
            ElidedGuard::Fallback(g) => unsafe { self.fallback.unlock(g) },
        }
    }

    /// Whether the fall-back lock is held (a momentary snapshot); sections
    /// running in transactions do not show.
    #[inline]
    pub fn is_held(&self) -> bool {
        self.fallback.is_locked()
    }

    #[cold]
    fn give_up(
        &self,
        aborts: u32,
        last: Abort,
        causes: Causes,
    ) -> (ElidedGuard<R::Guard>, Outcome) {
        let outcome = Outcome {
            path: Path::Fallback,
            aborts,
            last_abort: Some(last),
            causes,
        };
        (ElidedGuard::Fallback(self.fallback.lock()), outcome)
    }

    /// The policy skipped elision: the fall-back lock, no attempt.
    #[cold]
    fn skip(&self) -> (ElidedGuard<R::Guard>, Outcome) {
        (
            ElidedGuard::Fallback(self.fallback.lock()),
            no_attempt(Path::Skipped),
        )
    }

    /// Inside a transaction, aborts it (see the module documentation).
    #[inline]
    fn refuse_nesting(&self) {
        if self.htm.in_transaction() {
            self.htm.abort_nested();
            panic!("an elided lock taken inside a transaction that did not abort");
        }
    }
}

/// The outcome of an acquisition on `path` that no abort preceded.
fn no_attempt(path: Path) -> Outcome {
    Outcome {
        path,
        aborts: 0,
        last_abort: None,
        causes: Causes::default(),
    }
}

fn unavailable<G>(guard: G) -> (ElidedGuard<G>, Outcome) {
    (ElidedGuard::Fallback(guard), no_attempt(Path::Unavailable))
}
