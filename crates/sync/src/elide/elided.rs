//! [`Elided`]: the elision protocol over a fall-back lock `R` (acquire,
//! try, release) and what it reports about each acquisition ([`Path`],
//! [`Outcome`], [`ElidedGuard`]).

use core::fmt;

use lock_api::{GuardNoSend, RawMutex};

use super::{Abort, Htm, Rtm};
use crate::util::sync::spin_loop;

/// How many aborted attempts make a thread give up and take the fall-back
/// lock: 3, glibc's default for x86 (see the module documentation).
pub const DEFAULT_THRESHOLD: u32 = 3;

/// How a section was entered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Path {
    /// Inside a hardware transaction; the lock was only read.
    Transaction,
    /// On the fall-back lock, after the threshold's aborts (or, from
    /// `try_lock`, after its one attempt).
    Fallback,
    /// On the fall-back lock because the hardware has no RTM: nothing was
    /// attempted.
    Unavailable,
}

/// What happened before a section started: its path, how many attempts
/// aborted first, and the last abort's reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Outcome {
    /// Transactional, or on the fall-back lock (and why).
    pub path: Path,
    /// Aborted attempts before this section started.
    pub aborts: u32,
    /// The last of those aborts, if any.
    pub last_abort: Option<Abort>,
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

/// Hardware lock elision over the lock `R`, which is the fall-back. See
/// the module documentation.
#[derive(Debug)]
pub struct Elided<R, H = Rtm> {
    fallback: R,
    // Visible in `elide` so that its tests can read the scripted log.
    pub(super) htm: H,
    threshold: u32,
}

impl<R: RawMutex> Elided<R, Rtm> {
    /// Elision over an unlocked `R`, with Intel RTM and the default
    /// threshold.
    pub const fn new() -> Self {
        Self::from_parts(R::INIT, Rtm)
    }
}

impl<R: RawMutex> Default for Elided<R, Rtm> {
    fn default() -> Self {
        Self::new()
    }
}

impl<R: RawMutex, H: Htm> Elided<R, H> {
    /// Elision over `fallback` (which must be unlocked) with the hardware
    /// `htm` and the default threshold.
    pub const fn from_parts(fallback: R, htm: H) -> Self {
        Self {
            fallback,
            htm,
            threshold: DEFAULT_THRESHOLD,
        }
    }

    /// The same lock, giving up after `attempts` aborted transactions (0
    /// acts as 1: see the module documentation).
    pub const fn with_threshold(mut self, attempts: u32) -> Self {
        self.threshold = attempts;
        self
    }

    /// The number of aborted attempts after which a thread takes the
    /// fall-back lock.
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
        let mut aborts = 0;
        let mut last_abort = None;
        loop {
            let abort = match self.htm.begin() {
                Ok(()) => {
                    if !self.fallback.is_locked() {
                        let outcome = Outcome {
                            path: Path::Transaction,
                            aborts,
                            last_abort,
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
            if aborts >= self.threshold {
                return self.give_up(aborts, abort);
            }
            while self.fallback.is_locked() {
                spin_loop();
            }
        }
    }

    /// Takes the lock if that needs no waiting: one transaction, else one
    /// try of the fall-back lock.
    #[inline]
    pub fn try_lock_with_outcome(&self) -> Option<(ElidedGuard<R::Guard>, Outcome)> {
        if !self.htm.available() {
            return self.fallback.try_lock().map(unavailable);
        }
        self.refuse_nesting();
        let abort = match self.htm.begin() {
            Ok(()) => {
                if !self.fallback.is_locked() {
                    let outcome = Outcome {
                        path: Path::Transaction,
                        aborts: 0,
                        last_abort: None,
                    };
                    return Some((ElidedGuard::Transaction(GuardNoSend::new()), outcome));
                }
                self.htm.abort_lock_busy()
            }
            Err(abort) => abort,
        };
        let outcome = Outcome {
            path: Path::Fallback,
            aborts: 1,
            last_abort: Some(abort),
        };
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
    fn give_up(&self, aborts: u32, last: Abort) -> (ElidedGuard<R::Guard>, Outcome) {
        let outcome = Outcome {
            path: Path::Fallback,
            aborts,
            last_abort: Some(last),
        };
        (ElidedGuard::Fallback(self.fallback.lock()), outcome)
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

fn unavailable<G>(guard: G) -> (ElidedGuard<G>, Outcome) {
    let outcome = Outcome {
        path: Path::Unavailable,
        aborts: 0,
        last_abort: None,
    };
    (ElidedGuard::Fallback(guard), outcome)
}
