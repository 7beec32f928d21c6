//! [`Adaptive`]: per-lock adaptive elision, the policy of glibc's x86
//! lock elision, beside seed 002's [`Fixed`] attempts.
//!
//! The idea: an abort that retrying cannot cure will happen again on the
//! next acquisitions too (the lock is busy, or the section does something
//! no transaction survives: a system call, too much data), so each lock
//! keeps a skip count, and while it is positive acquisitions take the
//! fall-back lock without attempting a transaction, counting it down.
//!
//! Where it comes from: glibc's elision for x86 (`__lll_lock_elision` and
//! `__lll_trylock_elision` in `sysdeps/unix/sysv/linux/x86/elision-lock.c`
//! and `elision-trylock.c`, the skip count being the mutex's
//! `__elision`/`adapt_count` field; defaults in `elision-conf.c`; tunables
//! documented in the glibc manual, "Elision Tunables"), as it stood until
//! glibc 2.43 removed lock elision. Written from that description, not
//! from glibc's code:
//!
//! - `lock`: if the skip count is positive, store it less one and take
//!   the lock. Otherwise attempt up to `glibc.elision.tries` transactions
//!   (`retry_try_xbegin`, 3: here [`Elided::threshold`], also 3). An
//!   abort with the retry bit set is retried at once (no wait for the
//!   lock, unlike Fig. 1). An abort with it clear ends the attempts: if it
//!   was the transaction's own `xabort` because the lock was busy, the
//!   skip count becomes `glibc.elision.skip_lock_busy` (3), otherwise
//!   `glibc.elision.skip_lock_internal_abort` (3); then take the lock.
//!   Running out of attempts takes the lock and leaves the count alone.
//! - `try_lock`: the same skip test, one attempt, and after an abort with
//!   the retry bit clear (a busy lock included) the skip count becomes
//!   `glibc.elision.skip_trylock_internal_abort` (3); then try the lock.
//!
//! The numbers are [`Tunables`] (defaults [`Tunables::GLIBC`]); the lock
//! is `elide-adaptive(<fall-back>)`.
//!
//! Orderings. The skip count is a hint: it guards no data and publishes
//! none, and whatever value a thread reads (stale, or one whose update
//! another thread's store overwrote) it only chooses between a
//! transaction that checks the lock and the fall-back lock itself, each
//! exclusive on its own (see [`Policy`]). So every access is `Relaxed`:
//! nothing needs to be ordered before or after it, and coherence of the
//! one location is all that is relied on (a thread reads some value that
//! was stored there). It is read and then stored, not decremented with an
//! atomic read-modify-write: a `lock`-prefixed instruction on every
//! skipped acquisition would cost more than the lost decrements it saves
//! (two threads that read 2 both store 1, so one skip fewer), and glibc
//! accepted the same. The store of a new count is skipped when the count
//! already holds it, so that repeated aborts do not keep writing the line.
//!
//! Where it lives: beside the fall-back lock, most likely on its cache
//! line, so a store to it aborts every transaction that has read the
//! lock. Every store is made just before this thread acquires (or tries)
//! the fall-back lock, which aborts those transactions anyway; and no
//! transaction reads the count (it is read before `xbegin`). Padding it
//! onto a line of its own would cost a line per lock for nothing.

use super::policy::{Next, Policy};
use super::Abort;
#[cfg(doc)]
use super::{Elided, Fixed};
use crate::util::sync::{AtomicU32, Ordering::Relaxed};

/// How many acquisitions skip elision after each kind of abort: glibc's
/// x86 elision tunables of the same names (see the module
/// documentation). The number of attempts per acquisition, glibc's
/// `glibc.elision.tries`, is [`Elided::threshold`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tunables {
    /// After `lock`'s transaction found the lock busy
    /// (`glibc.elision.skip_lock_busy`).
    pub skip_lock_busy: u32,
    /// After `lock`'s transaction aborted with the retry bit clear for any
    /// other reason (`glibc.elision.skip_lock_internal_abort`).
    pub skip_lock_internal_abort: u32,
    /// After `try_lock`'s transaction aborted with the retry bit clear
    /// (`glibc.elision.skip_trylock_internal_abort`).
    pub skip_trylock_internal_abort: u32,
}

impl Tunables {
    /// glibc's defaults for x86 (`elision-conf.c`): 3 for each.
    pub const GLIBC: Tunables = Tunables {
        skip_lock_busy: 3,
        skip_lock_internal_abort: 3,
        skip_trylock_internal_abort: 3,
    };
}

impl Default for Tunables {
    fn default() -> Self {
        Self::GLIBC
    }
}

/// Per-lock adaptive elision: after an abort that retrying cannot cure,
/// the next few acquisitions of this lock take the fall-back lock without
/// a transaction. See the module documentation.
#[derive(Debug)]
pub struct Adaptive {
    /// Acquisitions left to skip elision (glibc's `adapt_count`); a hint.
    skip: AtomicU32,
    tunables: Tunables,
}

impl Adaptive {
    crate::loom_const_fn! {
        /// The policy with glibc's defaults.
        pub fn new() -> Self {
            Self::with_tunables(Tunables::GLIBC)
        }
    }

    crate::loom_const_fn! {
        /// The policy with `tunables`.
        pub fn with_tunables(tunables: Tunables) -> Self {
            Self { skip: AtomicU32::new(0), tunables }
        }
    }

    /// Its tunables.
    pub fn tunables(&self) -> Tunables {
        self.tunables
    }

    /// How many acquisitions will skip elision (a momentary snapshot).
    pub fn skips_left(&self) -> u32 {
        self.skip.load(Relaxed)
    }

    /// Skips the next `n` acquisitions.
    #[inline]
    fn skip_next(&self, n: u32) {
        if self.skip.load(Relaxed) != n {
            self.skip.store(n, Relaxed);
        }
    }
}

impl Default for Adaptive {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy for Adaptive {
    #[cfg(not(loom))]
    const INIT: Self = Adaptive::new();
    const NAME: &'static str = "elide-adaptive";
    const SOURCE: &'static str = "speculative lock elision: Rajwar & Goodman, MICRO 2001; Intel TSX/RTM (Intel SDM vol. 1 ch. 16); protocol of seed 002 (Elphinstone et al. 2016, Fig. 1); per-lock adaptation of glibc's x86 elision (elision-lock.c, tunables glibc.elision.*, until glibc 2.43)";
    const SUMMARY: &'static str = "RTM elision that reads the lock; retries aborts with the retry bit set (3 attempts), and after a busy lock or an abort that cannot succeed on retry skips elision for the lock's next 3 acquisitions";

    /// Attempts unless the skip count is positive; a skip counts it down.
    #[inline]
    fn elide(&self) -> bool {
        let left = self.skip.load(Relaxed);
        if left == 0 {
            return true;
        }
        self.skip.store(left - 1, Relaxed);
        false
    }

    #[inline]
    fn after_abort(&self, abort: Abort, attempts: u32, threshold: u32) -> Next {
        if !abort.retry {
            self.skip_next(if abort.is_lock_busy() {
                self.tunables.skip_lock_busy
            } else {
                self.tunables.skip_lock_internal_abort
            });
            Next::GiveUp
        } else if attempts >= threshold {
            Next::GiveUp
        } else {
            Next::Retry
        }
    }

    #[inline]
    fn after_try_abort(&self, abort: Abort) {
        if !abort.retry {
            self.skip_next(self.tunables.skip_trylock_internal_abort);
        }
    }
}
