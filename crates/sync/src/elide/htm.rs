//! The [`Htm`] trait: transactional hardware as lock elision uses it, and
//! the promises [`Elided`]'s mutual exclusion rests on.

use super::Abort;
#[cfg(doc)]
use super::{Elided, Rtm, LOCK_BUSY, NESTED};

/// Transactional hardware, as lock elision uses it: Intel RTM ([`Rtm`]),
/// or a test double that scripts what the hardware does.
///
/// # Safety
///
/// [`Elided`]'s mutual exclusion rests on these promises:
/// - If `begin` returns `Ok`, then until `end` returns, the calling
///   thread's memory accesses appear to other threads as one atomic step,
///   and if another thread writes what the transaction has read (or
///   touches what it has written), the transaction aborts: all of its
///   effects are discarded and execution continues as a return of the
///   same `begin` call with `Err`.
/// - `in_transaction` is true on a thread that is in a transaction (in
///   particular between such a `begin` and its end or abort), and false
///   otherwise.
/// - Inside a transaction, `abort_lock_busy` and `abort_nested` abort it
///   (and so do not return); outside one they return the abort `begin`
///   would report.
/// - If `available` is false, `begin` never returns `Ok`.
pub unsafe trait Htm {
    /// The value a lock built by `lock_api`'s `const INIT` holds.
    const INIT: Self;

    /// Whether the hardware can run transactions at all. When false,
    /// [`Elided`] calls no other method.
    fn available(&self) -> bool;

    /// Starts a transaction (`xbegin`): `Ok` inside it, or `Err` with the
    /// reason once it has aborted.
    fn begin(&self) -> Result<(), Abort>;

    /// Commits the transaction (`xend`).
    ///
    /// # Safety
    /// The calling thread must be in a transaction that it began for the
    /// purpose it now ends: committing a transaction that an [`Elided`]
    /// guard relies on leaves the rest of that section unprotected.
    unsafe fn end(&self);

    /// Aborts the transaction with code [`LOCK_BUSY`]
    /// (`xabort('L')`).
    fn abort_lock_busy(&self) -> Abort;

    /// Aborts the transaction with code [`NESTED`].
    fn abort_nested(&self) -> Abort;

    /// Whether the calling thread runs inside a transaction (`xtest`).
    fn in_transaction(&self) -> bool;
}
