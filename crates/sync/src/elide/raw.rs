//! The `lock_api` layer: [`Elided`] as a [`RawMutex`], the [`ElidedMutex`]
//! and [`AdaptiveElidedMutex`] aliases and [`lock_mutex_with_outcome`]. Not
//! compiled under loom, like the `lock_api` layers of the other locks.

use super::{Adaptive, Elided, ElidedGuard, Htm, Outcome, Policy};
use lock_api::RawMutex;

// SAFETY: a transactional guard is handed out only by a transaction
// that read the fall-back lock free; by `Htm`'s contract any later
// acquisition of that lock (which writes what `is_locked` read) aborts
// the transaction before it commits, and conflicting transactions abort
// each other, so the section is exclusive from `begin` to `end`. A
// fall-back guard is `R`'s own, with `R`'s exclusion and orderings.
// Re-locking inside a transaction aborts instead of returning. `try_lock`
// returns a guard only from those same two paths. The policy only chooses
// between the two paths.
unsafe impl<R: RawMutex, H: Htm, P: Policy> RawMutex for Elided<R, H, P> {
    const INIT: Self = Self::with_policy(R::INIT, H::INIT, P::INIT);
    type Guard = ElidedGuard<R::Guard>;

    #[inline]
    fn lock(&self) -> Self::Guard {
        self.lock_with_outcome().0
    }

    #[inline]
    fn try_lock(&self) -> Option<Self::Guard> {
        self.try_lock_with_outcome().map(|(g, _)| g)
    }

    #[inline]
    unsafe fn unlock(&self, guard: Self::Guard) {
        // SAFETY: the caller passes the guard of a held lock.
        unsafe { self.release(guard) }
    }

    #[inline]
    fn is_locked(&self) -> bool {
        self.is_held()
    }
}

/// A mutex whose sections run as Intel RTM transactions where the CPU
/// has RTM, with the lock `R` as the fall-back (and as the only lock
/// where it has not).
///
/// ```
/// use locklab::elide::{lock_mutex_with_outcome, Path};
///
/// let m: locklab::ElidedMutex<locklab::RawClh, u64> = locklab::ElidedMutex::new(0);
/// *m.lock() += 1;
/// let (mut g, outcome) = lock_mutex_with_outcome(&m);
/// *g += 1;
/// if !locklab::rtm_available() {
///     // No transactions on this CPU: the CLH lock did the work.
///     assert_eq!(outcome.path, Path::Unavailable);
/// }
/// drop(g);
/// assert_eq!(*m.lock(), 2);
/// ```
pub type ElidedMutex<R, T> = lock_api::Mutex<Elided<R>, T>;

/// [`ElidedMutex`] with glibc's adaptive policy ([`Adaptive`]): after an
/// abort that retrying cannot cure, the lock's next few acquisitions skip
/// elision.
///
/// ```
/// use locklab::elide::{lock_mutex_with_outcome, Path};
///
/// let m: locklab::AdaptiveElidedMutex<locklab::RawTicket, u64> =
///     locklab::AdaptiveElidedMutex::new(0);
/// let (mut g, outcome) = lock_mutex_with_outcome(&m);
/// *g += 1;
/// drop(g);
/// if !locklab::rtm_available() {
///     assert_eq!(outcome.path, Path::Unavailable);
/// }
/// assert_eq!(*m.lock(), 1);
/// ```
pub type AdaptiveElidedMutex<R, T> = lock_api::Mutex<Elided<R, super::Rtm, Adaptive>, T>;

/// Locks `mutex` and tells how ([`Elided::lock_with_outcome`] for a
/// `lock_api` mutex).
pub fn lock_mutex_with_outcome<R: RawMutex, H: Htm, P: Policy, T: ?Sized>(
    mutex: &lock_api::Mutex<Elided<R, H, P>, T>,
) -> (lock_api::MutexGuard<'_, Elided<R, H, P>, T>, Outcome) {
    // SAFETY: locking through the raw lock invalidates no guard.
    let (guard, outcome) = unsafe { mutex.raw() }.lock_with_outcome();
    // SAFETY: `guard` is this lock's acquisition, just made, and no
    // other guard exists for it.
    (unsafe { mutex.make_guard_unchecked(guard) }, outcome)
}
