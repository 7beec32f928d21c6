//! `elide`: hardware lock elision (Intel RTM) over any mutex of the
//! library, with that mutex as the fall-back.
//!
//! The idea is speculative lock elision (R. Rajwar and J. R. Goodman,
//! "Speculative lock elision: enabling highly concurrent multithreaded
//! execution", MICRO 2001): run the critical section as a hardware
//! transaction that only *reads* the lock. Sections that touch different
//! cache lines then run in parallel under one lock; when two conflict, the
//! hardware aborts one of them, discards everything it did and reports why.
//! A transaction is never guaranteed to commit (it may overflow the cache,
//! be interrupted, or meet an instruction that always aborts), so after a
//! few aborts the thread takes the lock for real.
//!
//! The protocol is that of seed 002 (Elphinstone et al., "An Evaluation of
//! Coarse-Grained Locking for Multicore Microkernels", 2016, §3.4 and
//! Fig. 1), which brackets almost all of seL4 in one transaction over its
//! big lock:
//!
//! 1. `xbegin`. If the transaction aborts, count the attempt; at the
//!    threshold give up, otherwise wait until the lock reads free and try
//!    again.
//! 2. Inside the transaction, read the lock. If it is held, `xabort('L')`:
//!    an abort like any other, back to step 1.
//! 3. Given up: acquire the lock (the fall-back).
//! 4. Unlock: commit (`xend`) a transactional section, release the lock
//!    otherwise.
//!
//! Why step 2 makes the section exclusive (seed 002, §2.4): the read puts
//! the lock's cache lines in the transaction's read set. A thread that
//! acquires the lock writes them, and the hardware aborts every transaction
//! that has read them; a transaction that finds the lock held aborts
//! itself. So a transaction commits only if nobody held the lock at any
//! moment between its read and its commit, and a section on the fall-back
//! lock never overlaps a committed one. Two transactions that touch the
//! same data are kept apart by the hardware's conflict detection. What this
//! asks of the wrapped lock `R`: `is_locked()` is true whenever the lock is
//! held, and it reads memory that every acquisition writes. Every lock of
//! the library qualifies (the word of the one-word locks, both counters of
//! the ticket locks, the tail of the queue locks).
//!
//! Why step 1 waits for the lock to be free before retrying: a transaction
//! started while the lock is held is sure to abort in step 2, so retrying
//! at once would burn the whole threshold against one holder and send every
//! thread that arrived meanwhile onto the lock as well, which then keeps
//! the lock busy and the next arrivals aborting ("the lemming effect").
//!
//! Details of this version:
//! - The threshold is [`DEFAULT_THRESHOLD`] = 3 attempts, what glibc's x86
//!   elision tries by default (tunable `glibc.elision.tries`, `retry_try_xbegin`
//!   in `sysdeps/unix/sysv/linux/x86/elision-conf.c`); seed 002 does not say
//!   what its `RTM_ATTEMPTS_THRESHOLD` was. As in Fig. 1 the count is
//!   incremented before it is compared, so 0 behaves as 1, and every abort
//!   counts whatever its cause (glibc gives up at once when the hardware
//!   says a retry cannot succeed; Fig. 1 does not).
//! - When to attempt and what to do after an abort is the lock's
//!   [`Policy`]: [`Fixed`] is Fig. 1 as above (`elide(<lock>)`);
//!   [`Adaptive`] is glibc's x86 elision (`elide-adaptive(<lock>)`): aborts
//!   with the retry bit set are retried at once, and one with it clear (a
//!   busy lock included) takes the lock and makes the lock's next few
//!   acquisitions skip elision ([`Tunables`], glibc's defaults). A policy
//!   only chooses between paths that are each exclusive, so mutual
//!   exclusion does not depend on it.
//! - Unlock asks the guard, not `xtest`. Fig. 1's `endTransaction` asks
//!   `xtest`, which is correct in the seed's kernel: it elides one lock,
//!   the big kernel lock, so a thread holds at most one elided lock at a
//!   time. A library lock can be one of several, and then `xtest` is wrong
//!   when a thread holding two elided locks releases them out of order:
//!   one that holds lock A on its fall-back, then B in a
//!   transaction, and releases A first, is inside B's transaction while it
//!   releases A: asking `xtest` would commit B early (leaving the rest of
//!   B's section unprotected) and leave A held. The guard records which path
//!   the acquisition took; a transactional guard debug-asserts `xtest`.
//! - Taking an elided lock inside a transaction aborts it (code
//!   [`NESTED`]). Inside a transaction a thread cannot tell whether it
//!   already holds this very lock transactionally (elision leaves no trace,
//!   that is the point), and taking it again would return a second guard:
//!   two `&mut` to the same data. `lock_api` requires a re-lock never to
//!   return. After the abort the outer section retries and in the end runs
//!   on its fall-back lock; the inner acquisition then elides as usual, or,
//!   for the same lock, waits forever as the plain lock would.
//! - Without RTM (other CPUs, other architectures, `--cfg loom`, Miri) every
//!   acquisition goes straight to `R` and no RTM instruction is executed
//!   (on a CPU without RTM they raise #UD). The availability check is one
//!   load of a cached CPUID answer.
//! - The wait between attempts spins (with the shim's `spin_loop`, which
//!   loom turns into a yield) whatever `R` is: with a sleeping lock as the
//!   fall-back, a thread sleeps only once it has given up and called `R`.
//! - `try_lock` makes one transactional attempt, then tries `R` once.
//! - `is_locked` is `R`'s: a transactional section leaves nothing to see.
//! - No shared counters of commits and aborts: a counter written by every
//!   section is a conflict that aborts every other transaction. Instead
//!   [`Elided::lock_with_outcome`] tells the caller what happened
//!   ([`Outcome`]) and the caller keeps its own tallies.
//!
//! Orderings. The fall-back path is `R`'s and inherits its orderings. The
//! transactional path has no Rust atomics to order: it relies on RTM,
//! whose committed transaction appears to every other processor to happen
//! at once and is ordered like a `LOCK`-prefixed instruction, while an
//! aborted one leaves no effect (Intel 64 and IA-32 Architectures Software
//! Developer's Manual, vol. 1, ch. 16, "Programming with Intel TSX"). That
//! argument lives in the x86 memory model, which Rust's has no words for;
//! what the Rust side must ensure is that the compiler moves no access of
//! the section across `xbegin` or `xend`, and it does not: the `asm!` blocks
//! may read and write any memory as far as it knows. The reads of the lock
//! while waiting are hints and need no ordering; the read that decides is
//! the one inside the transaction.

// One file per idea.
mod abort; // why a transaction aborted: `xabort` codes and RTM status
mod adaptive; // the `Adaptive` policy: glibc's per-lock skip counts
mod elided; // the protocol: `Elided`, its guard and what it reports
mod htm; // the `Htm` trait: what elision asks of the hardware
mod name; // `Described`: `elide(<fall-back>)` and the fall-back's facts
mod policy; // the `Policy` trait and `Fixed`, seed 002's Fig. 1
#[cfg(not(loom))]
mod raw; // the `lock_api` layer: `RawMutex`, `ElidedMutex`
mod rtm; // Intel RTM: the `Htm` of real hardware, and its instructions
#[cfg(all(test, not(loom)))]
mod tests;

pub use abort::{Abort, Cause, Causes, LOCK_BUSY, NESTED};
pub use adaptive::{Adaptive, Tunables};
pub use elided::{AdaptiveElided, Elided, ElidedGuard, Outcome, Path, DEFAULT_THRESHOLD};
pub use htm::Htm;
pub use policy::{Fixed, Next, Policy};
#[cfg(not(loom))]
pub use raw::{lock_mutex_with_outcome, AdaptiveElidedMutex, ElidedMutex};
pub use rtm::{rtm_available, rtm_setting, Rtm, RTM_VAR};
