//! [`Policy`]: when an [`Elided`] lock tries a transaction, and what it
//! does after an abort; and [`Fixed`], the policy of seed 002's Fig. 1.
//!
//! The protocol (read the lock inside the transaction, `xabort` if held,
//! commit or release on unlock) is the same under every policy, and so is
//! the argument for mutual exclusion: a policy only chooses between paths
//! that are each exclusive on their own (a transaction that read the lock
//! free, or the fall-back lock), so no decision of a policy, however
//! stale the state it was made from, can let two sections overlap. A
//! policy decides how often a thread takes the fall-back lock, which is
//! performance, not safety: the trait is safe to implement.
//!
//! Every method is called outside any transaction ([`Elided`] aborts a
//! transaction that takes an elided lock before it asks its policy), so a
//! policy may keep shared state without that state joining a
//! transaction's read or write set.

use super::Abort;
#[cfg(doc)]
use super::{Adaptive, Elided};

/// What to do after an aborted attempt of `lock`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Next {
    /// Wait until the fall-back lock reads free, then begin again.
    WaitThenRetry,
    /// Begin again at once.
    Retry,
    /// Take the fall-back lock.
    GiveUp,
}

/// When an [`Elided`] lock elides. See the module documentation; the two
/// policies are [`Fixed`] (seed 002's Fig. 1) and [`Adaptive`] (glibc's
/// x86 elision).
pub trait Policy {
    /// The policy of a lock built by `lock_api`'s `const INIT`. Not under
    /// loom, whose atomics cannot be built in a const.
    #[cfg(not(loom))]
    const INIT: Self;

    /// The name of the elided lock, before the fall-back's name in
    /// parentheses: `elide` gives `elide(clh)`.
    const NAME: &'static str;

    /// Where the policy comes from, for the lock's metadata.
    const SOURCE: &'static str;

    /// What the lock does, in a line, for the lock's metadata.
    const SUMMARY: &'static str;

    /// Before `lock` or `try_lock`: whether to attempt a transaction at
    /// all (false: take, or try, the fall-back lock without one).
    fn elide(&self) -> bool;

    /// After the `attempts`-th aborted attempt of one `lock` (counted from
    /// 1), which aborted with `abort`; `threshold` is the lock's
    /// [`Elided::threshold`].
    fn after_abort(&self, abort: Abort, attempts: u32, threshold: u32) -> Next;

    /// After `try_lock`'s one attempt aborted with `abort` (the fall-back
    /// lock is tried next, once).
    fn after_try_abort(&self, abort: Abort);
}

/// Seed 002's Fig. 1: every acquisition attempts, every abort counts
/// whatever its cause, and after each one the thread waits for the lock
/// to read free and begins again, until [`Elided::threshold`] attempts
/// have aborted. No state: nothing is remembered from one acquisition to
/// the next.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Fixed;

impl Policy for Fixed {
    #[cfg(not(loom))]
    const INIT: Self = Fixed;
    const NAME: &'static str = "elide";
    const SOURCE: &'static str = "speculative lock elision: Rajwar & Goodman, MICRO 2001; Intel TSX/RTM (Intel SDM vol. 1 ch. 16); kernel transaction code of seed 002 (Elphinstone et al. 2016, Fig. 1); 3 attempts as glibc's x86 elision";
    const SUMMARY: &'static str = "run the section in an RTM transaction that only reads the lock; after 3 aborts by default (waiting for the lock to be free between them) take the lock; without RTM, the lock alone";

    #[inline]
    fn elide(&self) -> bool {
        true
    }

    #[inline]
    fn after_abort(&self, _: Abort, attempts: u32, threshold: u32) -> Next {
        // As in Fig. 1, counted before compared: a threshold of 0 acts as 1.
        if attempts >= threshold {
            Next::GiveUp
        } else {
            Next::WaitThenRetry
        }
    }

    #[inline]
    fn after_try_abort(&self, _: Abort) {}
}
