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
//! - Unlock asks the guard, not `xtest`. Fig. 1's `endTransaction` asks
//!   `xtest`, which is right only while a thread holds one elided lock at a
//!   time. A thread that holds lock A on its fall-back, then B in a
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
//! - Without RTM (other CPUs, other architectures, `--cfg loom`) every
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

use core::fmt;

use lock_api::{GuardNoSend, RawMutex};

use crate::info::{Described, LockInfo};
use crate::util::sync::spin_loop;

/// How many aborted attempts make a thread give up and take the fall-back
/// lock: 3, glibc's default for x86 (see the module documentation).
pub const DEFAULT_THRESHOLD: u32 = 3;

/// The `xabort` code of a transaction that found the lock held (seed 002's
/// `_xabort('L')`).
pub const LOCK_BUSY: u8 = b'L';

/// The `xabort` code of a transaction that tried to take an elided lock
/// inside itself (see the module documentation).
pub const NESTED: u8 = b'N';

// The RTM abort status in `eax` (Intel SDM vol. 1, "RTM Abort Status
// Definition"): bits 0–5 say why, bits 24–31 carry `xabort`'s operand.
const STATUS_EXPLICIT: u32 = 1 << 0;
const STATUS_RETRY: u32 = 1 << 1;
const STATUS_CONFLICT: u32 = 1 << 2;
const STATUS_CAPACITY: u32 = 1 << 3;
const STATUS_DEBUG: u32 = 1 << 4;
const STATUS_NESTED: u32 = 1 << 5;
const STATUS_CODE_SHIFT: u32 = 24;

/// Why a hardware transaction aborted: the RTM status bits, decoded.
///
/// Several bits may be set at once; none set means the hardware gave no
/// reason (an interrupt, an exception or an instruction transactions do
/// not allow, among others).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Abort {
    /// Aborted by `xabort`, with its 8-bit code.
    pub explicit: Option<u8>,
    /// The hardware thinks a retry may succeed.
    pub retry: bool,
    /// Another processor touched memory the transaction had read or
    /// written.
    pub conflict: bool,
    /// The transaction outgrew what the hardware can track.
    pub capacity: bool,
    /// A debug breakpoint was hit.
    pub debug: bool,
    /// The abort happened in a nested transaction.
    pub nested: bool,
}

impl Abort {
    /// The abort of a transaction that found the lock held.
    pub const LOCK_BUSY: Abort = Abort::xabort(LOCK_BUSY);

    /// An explicit abort with `code`, as `xabort code` reports it.
    pub const fn xabort(code: u8) -> Self {
        Self::from_status(STATUS_EXPLICIT | (code as u32) << STATUS_CODE_SHIFT)
    }

    /// Decodes the status `xbegin` leaves in `eax` after an abort.
    pub const fn from_status(status: u32) -> Self {
        let explicit = status & STATUS_EXPLICIT != 0;
        Self {
            explicit: if explicit {
                Some((status >> STATUS_CODE_SHIFT) as u8)
            } else {
                None
            },
            retry: status & STATUS_RETRY != 0,
            conflict: status & STATUS_CONFLICT != 0,
            capacity: status & STATUS_CAPACITY != 0,
            debug: status & STATUS_DEBUG != 0,
            nested: status & STATUS_NESTED != 0,
        }
    }

    /// The status word this abort decodes from.
    pub const fn status(self) -> u32 {
        let mut s = 0;
        if let Some(code) = self.explicit {
            s |= STATUS_EXPLICIT | (code as u32) << STATUS_CODE_SHIFT;
        }
        if self.retry {
            s |= STATUS_RETRY;
        }
        if self.conflict {
            s |= STATUS_CONFLICT;
        }
        if self.capacity {
            s |= STATUS_CAPACITY;
        }
        if self.debug {
            s |= STATUS_DEBUG;
        }
        if self.nested {
            s |= STATUS_NESTED;
        }
        s
    }

    /// Whether this is the abort of a transaction that found the lock held.
    pub const fn is_lock_busy(self) -> bool {
        matches!(self.explicit, Some(LOCK_BUSY))
    }
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sep = "";
        let mut part = |f: &mut fmt::Formatter<'_>, s: fmt::Arguments<'_>| {
            let r = write!(f, "{sep}{s}");
            sep = "+";
            r
        };
        if let Some(code) = self.explicit {
            if code.is_ascii_graphic() {
                part(f, format_args!("explicit '{}'", code as char))?;
            } else {
                part(f, format_args!("explicit {code:#04x}"))?;
            }
        }
        for (set, name) in [
            (self.conflict, "conflict"),
            (self.capacity, "capacity"),
            (self.debug, "debug"),
            (self.nested, "nested"),
            (self.retry, "retry"),
        ] {
            if set {
                part(f, format_args!("{name}"))?;
            }
        }
        if self.status() == 0 {
            f.write_str("no reason given")?;
        }
        Ok(())
    }
}

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

/// Intel's Restricted Transactional Memory (TSX/RTM): `xbegin`, `xend`,
/// `xabort`, `xtest`.
///
/// Availability is read from CPUID once per process ([`rtm_available`]).
/// On a CPU without RTM, on other architectures and under `--cfg loom`,
/// `available()` is false and `begin()` always fails; every method checks
/// availability first, so none ever executes an RTM instruction that the
/// CPU does not have.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rtm;

/// Whether this CPU runs RTM transactions: CPUID leaf 7, sub-leaf 0, EBX
/// bit 11 (RTM), and not EDX bit 11 (`RTM_ALWAYS_ABORT`: microcode that
/// makes every `xbegin` abort, where Linux does not hide RTM). Read once
/// and cached. Always false off x86_64 and under `--cfg loom`.
pub fn rtm_available() -> bool {
    rtm::available()
}

// SAFETY: RTM is the hardware these promises describe (Intel SDM vol. 1,
// ch. 16): a started transaction commits atomically or aborts to its
// `xbegin` with every effect discarded, `xtest` tells whether one runs, and
// `xabort` inside one aborts it. Without RTM, `begin` fails without
// executing anything.
unsafe impl Htm for Rtm {
    const INIT: Self = Rtm;

    #[inline]
    fn available(&self) -> bool {
        rtm::available()
    }

    #[inline]
    fn begin(&self) -> Result<(), Abort> {
        if !rtm::available() {
            return Err(Abort::default());
        }
        // SAFETY: the CPU has RTM.
        let status = unsafe { rtm::xbegin() };
        if status == rtm::STARTED {
            Ok(())
        } else {
            Err(Abort::from_status(status))
        }
    }

    #[inline]
    unsafe fn end(&self) {
        debug_assert!(self.in_transaction(), "xend outside a transaction");
        // SAFETY: the caller is in a transaction, so the CPU has RTM and
        // `xend` will not fault.
        unsafe { rtm::xend() }
    }

    #[inline]
    fn abort_lock_busy(&self) -> Abort {
        if rtm::available() {
            // SAFETY: the CPU has RTM; outside a transaction this is a no-op.
            unsafe { rtm::xabort_lock_busy() };
        }
        Abort::LOCK_BUSY
    }

    #[inline]
    fn abort_nested(&self) -> Abort {
        if rtm::available() {
            // SAFETY: as in `abort_lock_busy`.
            unsafe { rtm::xabort_nested() };
        }
        Abort::xabort(NESTED)
    }

    #[inline]
    fn in_transaction(&self) -> bool {
        // SAFETY: `xtest` runs only on a CPU with RTM.
        rtm::available() && unsafe { rtm::xtest() }
    }
}

/// The RTM instructions, as `asm!` (rustc has no stable intrinsics for
/// them). Every function here requires a CPU with RTM.
///
/// How an abort looks from Rust: the processor restores every register to
/// its value at `xbegin` (except `eax`, which receives the status, and the
/// instruction pointer, which goes to `xbegin`'s fall-back address) and
/// discards every memory write made since. `xbegin`'s fall-back address is
/// the instruction right after it, so after an abort the `asm!` block that
/// holds the `xbegin` simply finishes a second time, from the same
/// registers and memory it started from, with another value in `eax`. The
/// code that ran inside the transaction left no trace, so to the compiler
/// this is indistinguishable from the block having run once and returned
/// that status: the same contract as C's `_xbegin()`.
#[cfg(all(target_arch = "x86_64", not(loom)))]
mod rtm {
    use core::arch::asm;
    use core::arch::x86_64::{__cpuid_count, __get_cpuid_max};
    use core::sync::atomic::{AtomicU8, Ordering};

    use super::{LOCK_BUSY, NESTED};
    use crate::util::CachePadded;

    /// `xbegin`'s `eax` when the transaction has started (`_XBEGIN_STARTED`):
    /// all ones, which no abort status can be (bits 6–23 are reserved, 0).
    pub(super) const STARTED: u32 = u32::MAX;

    const UNKNOWN: u8 = 0;
    const ABSENT: u8 = 1;
    const PRESENT: u8 = 2;

    /// The cached CPUID answer. Not through `util::sync`: this module is not
    /// compiled under loom. `Relaxed` suffices: every thread that computes
    /// the answer computes the same one, and nothing else is published.
    /// On a line of its own: debug builds read it inside transactions (in
    /// `debug_assert!`s), and a neighbour written by other threads would
    /// abort them.
    static RTM: CachePadded<AtomicU8> = CachePadded::new(AtomicU8::new(UNKNOWN));

    #[inline]
    pub(super) fn available() -> bool {
        match RTM.load(Ordering::Relaxed) {
            PRESENT => true,
            ABSENT => false,
            _ => detect(),
        }
    }

    #[cold]
    fn detect() -> bool {
        // `unsafe` for older toolchains, where these are unsafe functions.
        // SAFETY: every x86_64 CPU has `cpuid`; leaf 7 is read only if leaf
        // 0 says it exists.
        #[allow(unused_unsafe)]
        let yes = unsafe {
            let (max_leaf, _) = __get_cpuid_max(0);
            max_leaf >= 7 && {
                let r = __cpuid_count(7, 0);
                super::rtm_in_leaf_7(r.ebx, r.edx)
            }
        };
        RTM.store(if yes { PRESENT } else { ABSENT }, Ordering::Relaxed);
        yes
    }

    /// `xbegin`: the abort status, or [`STARTED`] inside the transaction.
    ///
    /// # Safety
    /// The CPU must have RTM.
    #[inline(always)]
    pub(super) unsafe fn xbegin() -> u32 {
        let status: u32;
        // SAFETY: the caller checked RTM. `eax` is set to STARTED; `xbegin`
        // leaves it alone when the transaction starts and falls through to
        // `2:`. On an abort the processor rolls back (see the module
        // documentation), writes the status into `eax` and jumps to the
        // fall-back address, which is the same `2:`. Not `nomem`: the block
        // must keep the compiler from moving the section's accesses above
        // it. No stack use.
        unsafe {
            asm!(
                "xbegin 2f",
                "2:",
                inout("eax") STARTED => status,
                options(nostack),
            );
        }
        status
    }

    /// `xend`: commits the transaction.
    ///
    /// # Safety
    /// The calling thread must be in a transaction (`xend` outside one
    /// raises #GP).
    #[inline(always)]
    pub(super) unsafe fn xend() {
        // SAFETY: in a transaction, per the caller. Not `nomem`: the
        // section's accesses must stay above the commit.
        unsafe { asm!("xend", options(nostack)) }
    }

    /// `xabort` with [`LOCK_BUSY`]; the code must be an immediate, hence
    /// one function per code.
    ///
    /// # Safety
    /// The CPU must have RTM. Inside a transaction this does not return (the
    /// transaction's `xbegin` returns the status instead); outside one it
    /// does nothing.
    #[inline(always)]
    pub(super) unsafe fn xabort_lock_busy() {
        // SAFETY: per the caller.
        unsafe { asm!("xabort {code}", code = const LOCK_BUSY, options(nostack)) }
    }

    /// `xabort` with [`NESTED`].
    ///
    /// # Safety
    /// As for [`xabort_lock_busy`].
    #[inline(always)]
    pub(super) unsafe fn xabort_nested() {
        // SAFETY: per the caller.
        unsafe { asm!("xabort {code}", code = const NESTED, options(nostack)) }
    }

    /// `xtest`: whether the thread runs in a transaction (ZF clear if so).
    ///
    /// # Safety
    /// The CPU must have RTM (or HLE; without either, `xtest` raises #UD).
    #[inline(always)]
    pub(super) unsafe fn xtest() -> bool {
        let inside: u8;
        // SAFETY: per the caller. Reads and writes no memory.
        unsafe {
            asm!(
                "xtest",
                "setnz {inside}",
                inside = out(reg_byte) inside,
                options(nostack, nomem),
            );
        }
        inside != 0
    }
}

/// No RTM here: nothing to execute, and `available` is false so that no
/// caller gets this far.
#[cfg(not(all(target_arch = "x86_64", not(loom))))]
mod rtm {
    pub(super) const STARTED: u32 = u32::MAX;

    pub(super) fn available() -> bool {
        false
    }

    pub(super) unsafe fn xbegin() -> u32 {
        unreachable!("RTM is not available")
    }

    pub(super) unsafe fn xend() {
        unreachable!("RTM is not available")
    }

    pub(super) unsafe fn xabort_lock_busy() {}

    pub(super) unsafe fn xabort_nested() {}

    pub(super) unsafe fn xtest() -> bool {
        false
    }
}

/// Decodes RTM support from CPUID leaf 7, sub-leaf 0: EBX bit 11 is RTM,
/// EDX bit 11 is `RTM_ALWAYS_ABORT` (Intel SDM vol. 2A, CPUID).
#[cfg_attr(not(all(target_arch = "x86_64", not(loom))), allow(dead_code))]
const fn rtm_in_leaf_7(ebx: u32, edx: u32) -> bool {
    const RTM: u32 = 1 << 11;
    const RTM_ALWAYS_ABORT: u32 = 1 << 11;
    ebx & RTM != 0 && edx & RTM_ALWAYS_ABORT == 0
}

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
    htm: H,
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

/// Longest `elide(<name>)` that [`Described`] can spell.
const NAME_CAP: usize = 64;

/// `elide(<name>)` for the lock `R`, spelt at compile time: a generic
/// `&'static str` cannot be `concat!`ed, so the bytes are copied into a
/// fixed buffer by a `const fn` and the name borrows its filled prefix.
struct Name<R>(core::marker::PhantomData<R>);

impl<R: Described> Name<R> {
    const FILLED: ([u8; NAME_CAP], usize) = spell(["elide(", R::INFO.name, ")"]);
    const BYTES: &'static [u8; NAME_CAP] = &Self::FILLED.0;
    const STR: &'static str = match core::str::from_utf8(Self::BYTES.split_at(Self::FILLED.1).0) {
        Ok(s) => s,
        Err(_) => panic!("a prefix of joined strings is UTF-8"),
    };
}

/// Joins `parts` into a buffer: the bytes and how many are used.
const fn spell(parts: [&str; 3]) -> ([u8; NAME_CAP], usize) {
    let mut buf = [0u8; NAME_CAP];
    let mut len = 0;
    let mut p = 0;
    while p < parts.len() {
        let bytes = parts[p].as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            assert!(len < NAME_CAP, "lock name too long for elide(…)");
            buf[len] = bytes[i];
            len += 1;
            i += 1;
        }
        p += 1;
    }
    (buf, len)
}

impl<R: Described, H> Described for Elided<R, H> {
    // The family and blocking of the fall-back lock, which is what waits;
    // never fair, since transactions pass the fall-back's queue.
    const INFO: LockInfo = LockInfo {
        name: Name::<R>::STR,
        family: R::INFO.family,
        fair: false,
        blocking: R::INFO.blocking,
        source: "speculative lock elision: Rajwar & Goodman, MICRO 2001; Intel TSX/RTM (Intel SDM vol. 1 ch. 16); kernel transaction code of seed 002 (Elphinstone et al. 2016, Fig. 1); 3 attempts as glibc's x86 elision",
        summary: "run the section in an RTM transaction that only reads the lock; after 3 aborts by default (waiting for the lock to be free between them) take the lock; without RTM, the lock alone",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::{Elided, ElidedGuard, Htm, Outcome};
    use lock_api::RawMutex;

    // SAFETY: a transactional guard is handed out only by a transaction
    // that read the fall-back lock free; by `Htm`'s contract any later
    // acquisition of that lock (which writes what `is_locked` read) aborts
    // the transaction before it commits, and conflicting transactions abort
    // each other, so the section is exclusive from `begin` to `end`. A
    // fall-back guard is `R`'s own, with `R`'s exclusion and orderings.
    // Re-locking inside a transaction aborts instead of returning. `try_lock`
    // returns a guard only from those same two paths.
    unsafe impl<R: RawMutex, H: Htm> RawMutex for Elided<R, H> {
        const INIT: Self = Self::from_parts(R::INIT, H::INIT);
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

    /// Locks `mutex` and tells how ([`Elided::lock_with_outcome`] for a
    /// `lock_api` mutex).
    pub fn lock_mutex_with_outcome<R: RawMutex, H: Htm, T: ?Sized>(
        mutex: &lock_api::Mutex<Elided<R, H>, T>,
    ) -> (lock_api::MutexGuard<'_, Elided<R, H>, T>, Outcome) {
        // SAFETY: locking through the raw lock invalidates no guard.
        let (guard, outcome) = unsafe { mutex.raw() }.lock_with_outcome();
        // SAFETY: `guard` is this lock's acquisition, just made, and no
        // other guard exists for it.
        (unsafe { mutex.make_guard_unchecked(guard) }, outcome)
    }
}

#[cfg(not(loom))]
pub use raw::{lock_mutex_with_outcome, ElidedMutex};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{hammer, until, Watchdog, HANG};
    use crate::{
        AdaptiveSpin, RawClh, RawHybridMutex, RawTicket, RawTicketBackoff, RawTtas, SpinPark,
    };
    use std::cell::Cell;
    use std::collections::VecDeque;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;

    const CONFLICT: Abort = Abort::from_status(STATUS_CONFLICT | STATUS_RETRY);
    const CAPACITY: Abort = Abort::from_status(STATUS_CAPACITY);
    const RETRY: Abort = Abort::from_status(STATUS_RETRY);
    const NO_REASON: Abort = Abort::from_status(0);
    /// One abort of each kind, as a script of failed `begin`s.
    const ABORTS: [Abort; 5] = [CONFLICT, CAPACITY, RETRY, Abort::LOCK_BUSY, NO_REASON];

    /// What the scripted hardware saw, in order.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Event {
        Begin(Result<(), Abort>),
        End,
        AbortLockBusy,
        AbortNested,
        /// A test thread's own step, logged in the same sequence.
        Note(&'static str),
    }

    thread_local! {
        /// Whether this thread is in a scripted transaction: per thread, as
        /// the hardware's is, and shared by every `Scripted` like it.
        static INSIDE: Cell<bool> = const { Cell::new(false) };
    }

    /// Hardware whose `begin`s return a script, then `then` for ever, and
    /// that logs every call.
    struct Scripted {
        available: bool,
        script: Mutex<VecDeque<Result<(), Abort>>>,
        then: Result<(), Abort>,
        log: Mutex<Vec<Event>>,
    }

    impl Scripted {
        fn new(
            script: impl IntoIterator<Item = Result<(), Abort>>,
            then: Result<(), Abort>,
        ) -> Self {
            Self {
                available: true,
                script: Mutex::new(script.into_iter().collect()),
                then,
                log: Mutex::new(Vec::new()),
            }
        }

        fn unavailable() -> Self {
            Self {
                available: false,
                ..Self::new([], Err(NO_REASON))
            }
        }

        fn push(&self, e: Event) {
            self.log.lock().unwrap().push(e);
        }

        fn note(&self, what: &'static str) {
            self.push(Event::Note(what));
        }

        fn log(&self) -> Vec<Event> {
            self.log.lock().unwrap().clone()
        }

        fn begins(&self) -> usize {
            let log = self.log.lock().unwrap();
            log.iter().filter(|e| matches!(e, Event::Begin(_))).count()
        }

        fn saw(&self, e: Event) -> bool {
            self.log.lock().unwrap().contains(&e)
        }

        fn hardware(&self) {
            assert!(self.available, "an RTM instruction on a CPU without RTM");
        }
    }

    // SAFETY: this is no transactional memory: a scripted transaction
    // isolates nothing and cannot roll back. The tests use it only where
    // that makes no difference: one thread at a time is in a scripted
    // transaction, the protected data is not touched, and other threads
    // only hold the fall-back lock, which the scripted transaction reads as
    // a real one would. An abort inside a transaction returns (as it would
    // outside one) after leaving it; `Elided` calls them only after reading
    // the lock, so there is nothing to roll back.
    unsafe impl Htm for Scripted {
        const INIT: Self = Scripted {
            available: true,
            script: Mutex::new(VecDeque::new()),
            then: Err(NO_REASON),
            log: Mutex::new(Vec::new()),
        };

        fn available(&self) -> bool {
            self.available
        }

        fn begin(&self) -> Result<(), Abort> {
            self.hardware();
            assert!(!INSIDE.get(), "begin inside a transaction");
            let r = self.script.lock().unwrap().pop_front().unwrap_or(self.then);
            INSIDE.set(r.is_ok());
            self.push(Event::Begin(r));
            r
        }

        unsafe fn end(&self) {
            self.hardware();
            assert!(INSIDE.replace(false), "xend outside a transaction");
            self.push(Event::End);
        }

        fn abort_lock_busy(&self) -> Abort {
            self.hardware();
            INSIDE.set(false);
            self.push(Event::AbortLockBusy);
            Abort::LOCK_BUSY
        }

        fn abort_nested(&self) -> Abort {
            self.hardware();
            INSIDE.set(false);
            self.push(Event::AbortNested);
            Abort::xabort(NESTED)
        }

        fn in_transaction(&self) -> bool {
            self.hardware();
            INSIDE.get()
        }
    }

    /// A fall-back lock that counts what is done to it.
    struct Probe<R> {
        inner: R,
        locks: AtomicUsize,
        unlocks: AtomicUsize,
        peeks: AtomicUsize,
    }

    // SAFETY: forwards to `R`.
    unsafe impl<R: RawMutex> RawMutex for Probe<R> {
        const INIT: Self = Probe {
            inner: R::INIT,
            locks: AtomicUsize::new(0),
            unlocks: AtomicUsize::new(0),
            peeks: AtomicUsize::new(0),
        };
        type Guard = R::Guard;

        fn lock(&self) -> R::Guard {
            let g = self.inner.lock();
            self.locks.fetch_add(1, Ordering::Relaxed);
            g
        }

        fn try_lock(&self) -> Option<R::Guard> {
            let g = self.inner.try_lock()?;
            self.locks.fetch_add(1, Ordering::Relaxed);
            Some(g)
        }

        unsafe fn unlock(&self, guard: R::Guard) {
            self.unlocks.fetch_add(1, Ordering::Relaxed);
            // SAFETY: forwarded from the caller.
            unsafe { self.inner.unlock(guard) }
        }

        fn is_locked(&self) -> bool {
            self.peeks.fetch_add(1, Ordering::Relaxed);
            self.inner.is_locked()
        }
    }

    impl<R> Probe<R> {
        fn locks(&self) -> usize {
            self.locks.load(Ordering::Relaxed)
        }
        fn unlocks(&self) -> usize {
            self.unlocks.load(Ordering::Relaxed)
        }
        fn peeks(&self) -> usize {
            self.peeks.load(Ordering::Relaxed)
        }
    }

    type Test = Elided<Probe<RawTicket>, Scripted>;

    fn elided(
        script: impl IntoIterator<Item = Result<(), Abort>>,
        then: Result<(), Abort>,
        threshold: u32,
    ) -> Test {
        Elided::from_parts(Probe::INIT, Scripted::new(script, then)).with_threshold(threshold)
    }

    fn outcome(path: Path, aborts: u32, last_abort: Option<Abort>) -> Outcome {
        Outcome {
            path,
            aborts,
            last_abort,
        }
    }

    #[test]
    fn the_threshold_is_honoured_and_then_the_fallback_is_held_and_released() {
        for threshold in 1..=ABORTS.len() as u32 {
            let l = elided(ABORTS.map(Err), Err(CONFLICT), threshold);
            let (g, o) = l.lock_with_outcome();
            assert!(!g.is_transaction());
            let last = ABORTS[threshold as usize - 1];
            assert_eq!(o, outcome(Path::Fallback, threshold, Some(last)));
            assert_eq!(l.htm.begins(), threshold as usize, "attempts");
            assert!(l.fallback().is_locked());
            assert_eq!(l.fallback().locks(), 1);
            // SAFETY: held, on this thread.
            unsafe { l.release(g) };
            assert!(!l.fallback().is_locked(), "unlock released the fall-back");
            assert_eq!(l.fallback().unlocks(), 1);
            assert!(!l.htm.saw(Event::End), "no xend without a transaction");
        }
        // 0 acts as 1, as in Fig. 1.
        let l = elided([], Err(CONFLICT), 0);
        let (g, o) = l.lock_with_outcome();
        assert_eq!(o, outcome(Path::Fallback, 1, Some(CONFLICT)));
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
    }

    #[test]
    fn after_fewer_aborts_than_the_threshold_the_section_is_a_transaction() {
        for k in 0..ABORTS.len() {
            let l = elided(
                ABORTS[..k].iter().copied().map(Err),
                Ok(()),
                1 + ABORTS.len() as u32,
            );
            let (g, o) = l.lock_with_outcome();
            assert!(g.is_transaction(), "after {k} aborts");
            assert_eq!(
                o,
                outcome(
                    Path::Transaction,
                    k as u32,
                    k.checked_sub(1).map(|i| ABORTS[i])
                )
            );
            assert!(l.htm.in_transaction());
            assert_eq!(l.fallback().locks(), 0, "the fall-back was only read");
            // SAFETY: held, on this thread.
            unsafe { l.release(g) };
            assert_eq!(l.htm.log().last(), Some(&Event::End), "unlock commits");
            assert!(!l.htm.in_transaction());
            assert_eq!(
                l.fallback().unlocks(),
                0,
                "and does not unlock the fall-back"
            );
        }
    }

    #[test]
    fn a_retry_waits_until_the_fallback_is_free() {
        let _w = Watchdog::new("elide retry waits", HANG);
        // The first attempt aborts (a conflict); the next would start.
        let l = elided([Err(CONFLICT)], Ok(()), 3);
        let (g, o) = std::thread::scope(|s| {
            s.spawn(|| {
                let held = l.fallback().lock();
                l.htm.note("held");
                // Release once the other thread waits (reads the lock
                // while it is held) or has begun again without waiting.
                until(|| l.fallback().peeks() >= 2 || l.htm.begins() >= 2);
                l.htm.note("released");
                // SAFETY: taken above, on this thread.
                unsafe { l.fallback().unlock(held) };
            });
            until(|| l.htm.saw(Event::Note("held")));
            l.lock_with_outcome()
        });
        assert_eq!(
            l.htm.log(),
            [
                Event::Note("held"),
                Event::Begin(Err(CONFLICT)),
                Event::Note("released"),
                Event::Begin(Ok(())),
            ],
            "begun again while the fall-back was held"
        );
        assert!(g.is_transaction());
        assert_eq!(o, outcome(Path::Transaction, 1, Some(CONFLICT)));
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
    }

    #[test]
    fn a_transaction_that_finds_the_fallback_held_aborts_with_lock_busy() {
        let _w = Watchdog::new("elide lock busy", HANG);
        // Every attempt starts: only the lock's state decides.
        let l = elided([], Ok(()), 3);
        let entered = AtomicBool::new(false);
        let (g, o) = std::thread::scope(|s| {
            s.spawn(|| {
                let held = l.fallback().lock();
                l.htm.note("held");
                // (Or once the other thread is in, which it must not be.)
                until(|| l.htm.saw(Event::AbortLockBusy) || entered.load(Ordering::Relaxed));
                l.htm.note("released");
                // SAFETY: taken above, on this thread.
                unsafe { l.fallback().unlock(held) };
            });
            until(|| l.htm.saw(Event::Note("held")));
            let r = l.lock_with_outcome();
            entered.store(true, Ordering::Relaxed);
            r
        });
        assert_eq!(
            l.htm.log(),
            [
                Event::Note("held"),
                Event::Begin(Ok(())),
                Event::AbortLockBusy,
                Event::Note("released"),
                Event::Begin(Ok(())),
            ]
        );
        assert!(g.is_transaction());
        assert_eq!(o, outcome(Path::Transaction, 1, Some(Abort::LOCK_BUSY)));
        assert!(o.last_abort.unwrap().is_lock_busy());
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        assert_eq!(l.fallback().locks(), 1, "only the other thread's");
    }

    #[test]
    fn without_rtm_every_acquisition_goes_straight_to_the_fallback() {
        // `Scripted::unavailable` fails the test on any RTM instruction.
        let l = Elided::from_parts(Probe::<RawTicket>::INIT, Scripted::unavailable());
        let (g, o) = l.lock_with_outcome();
        assert_eq!(o, outcome(Path::Unavailable, 0, None));
        assert!(!g.is_transaction());
        assert!(l.fallback().is_locked());
        assert!(l.try_lock_with_outcome().is_none(), "held");
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        assert_eq!(l.fallback().unlocks(), 1);
        let (g, o) = l.try_lock_with_outcome().expect("free");
        assert_eq!(o, outcome(Path::Unavailable, 0, None));
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        assert_eq!(l.fallback().locks(), 2);
        assert!(l.htm.log().is_empty());
    }

    #[test]
    fn try_lock_makes_one_attempt_then_tries_the_fallback() {
        let l = elided([Ok(()), Err(CAPACITY)], Ok(()), 3);
        let (g, o) = l.try_lock_with_outcome().expect("free");
        assert!(g.is_transaction());
        assert_eq!(o, outcome(Path::Transaction, 0, None));
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        let (g, o) = l.try_lock_with_outcome().expect("free");
        assert_eq!(o, outcome(Path::Fallback, 1, Some(CAPACITY)));
        assert!(l.try_lock_with_outcome().is_none(), "held by this thread");
        // SAFETY: held, on this thread.
        unsafe { l.release(g) };
        assert_eq!(
            l.htm.log(),
            [
                Event::Begin(Ok(())),
                Event::End,
                Event::Begin(Err(CAPACITY)),
                Event::Begin(Ok(())),
                Event::AbortLockBusy,
            ]
        );
    }

    #[test]
    fn unlock_follows_the_guard_not_xtest() {
        // A ends up on its fall-back, then B elides; A is released first,
        // inside B's transaction.
        let a = elided([], Err(CONFLICT), 1);
        let b = elided([], Ok(()), 3);
        let (ga, oa) = a.lock_with_outcome();
        assert_eq!(oa.path, Path::Fallback);
        let (gb, ob) = b.lock_with_outcome();
        assert_eq!(ob.path, Path::Transaction);
        // SAFETY: held, on this thread.
        unsafe { a.release(ga) };
        assert!(!a.fallback().is_locked(), "A's fall-back released");
        assert!(b.htm.in_transaction(), "B's transaction still runs");
        assert!(!a.htm.saw(Event::End) && !b.htm.saw(Event::End));
        // SAFETY: held, on this thread.
        unsafe { b.release(gb) };
        assert_eq!(b.htm.log().last(), Some(&Event::End));
    }

    #[test]
    fn taking_an_elided_lock_inside_a_transaction_aborts_it() {
        for try_lock in [false, true] {
            let l = elided([], Ok(()), 3);
            let (g, _) = l.lock_with_outcome();
            assert!(g.is_transaction());
            // The same lock again: a real abort would roll back to the
            // first `begin`; the scripted one returns, and `Elided` panics
            // rather than hand out a second guard.
            let again = catch_unwind(AssertUnwindSafe(|| {
                if try_lock {
                    l.try_lock_with_outcome().map(|(g, _)| g)
                } else {
                    Some(l.lock_with_outcome().0)
                }
            }));
            assert!(again.is_err(), "a second guard for a held lock");
            assert_eq!(l.htm.log(), [Event::Begin(Ok(())), Event::AbortNested]);
            assert_eq!(l.fallback().locks(), 0);
            // The scripted abort left the transaction; there is nothing
            // left to end (and a raw guard releases nothing when dropped).
            let _ = g;
        }
    }

    #[test]
    fn threads_exclude_each_other_through_rtm_or_its_fallback() {
        // On a CPU without RTM (this lab's machine) this runs the fall-back
        // path. With RTM, the torture's spin hints inside the section may
        // abort every transaction: see the next test.
        hammer::<Elided<RawTicket>>(4, 2_000);
        hammer::<Elided<RawClh>>(4, 2_000);
        hammer::<Elided<RawHybridMutex<AdaptiveSpin>>>(4, 2_000);
    }

    #[test]
    fn short_sections_keep_a_pair_equal_and_a_count_exact() {
        // A section with nothing in it that aborts a transaction by itself
        // (no spin hint, no panic path taken), so that with RTM conflicting
        // transactions and fall-back sections mix; without RTM, the
        // fall-back alone. An unfair fall-back, so that preempted waiters
        // do not convoy with more threads than cores.
        const THREADS: usize = 4;
        const ITERS: u64 = 50_000;
        let _w = Watchdog::new("elide pair", HANG);
        let m = ElidedMutex::<RawTtas, (u64, u64)>::new((0, 0));
        let start = std::sync::Barrier::new(THREADS);
        let per_thread: Vec<(u64, u64)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let (mut overlaps, mut transactions) = (0, 0);
                        for _ in 0..ITERS {
                            let (mut g, o) = lock_mutex_with_outcome(&m);
                            // Counted only if the section commits.
                            overlaps += u64::from(g.0 != g.1);
                            g.0 += 1;
                            // Widen the window, without a spin hint.
                            for i in 0..32 {
                                std::hint::black_box(i);
                            }
                            g.1 = g.0;
                            drop(g);
                            transactions += u64::from(o.path == Path::Transaction);
                        }
                        (overlaps, transactions)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let overlaps: u64 = per_thread.iter().map(|t| t.0).sum();
        let transactions: u64 = per_thread.iter().map(|t| t.1).sum();
        let (a, b) = m.into_inner();
        assert_eq!(overlaps, 0, "sections overlapped");
        assert_eq!((a, b), (THREADS as u64 * ITERS, a), "lost update");
        if rtm_available() {
            eprintln!("{transactions} of {a} sections ran as transactions");
        } else {
            assert_eq!(transactions, 0);
        }
    }

    #[test]
    fn rtm_does_nothing_where_the_cpu_lacks_it() {
        if rtm_available() {
            return;
        }
        assert!(!Rtm.available());
        assert_eq!(Rtm.begin(), Err(NO_REASON));
        assert!(!Rtm.in_transaction());
        assert_eq!(Rtm.abort_lock_busy(), Abort::LOCK_BUSY);
        let m = ElidedMutex::<RawTicket, u32>::new(1);
        let (g, o) = lock_mutex_with_outcome(&m);
        assert_eq!((*g, o), (1, outcome(Path::Unavailable, 0, None)));
    }

    #[test]
    fn rtm_instructions_when_the_cpu_has_them() {
        if !rtm_available() {
            eprintln!("no RTM on this CPU: the RTM instructions were not run");
            return;
        }
        assert!(!Rtm.in_transaction());
        // Transactions may abort for no reason of ours: try a few times.
        let mut committed = false;
        for _ in 0..1_000 {
            if Rtm.begin().is_ok() {
                let inside = Rtm.in_transaction();
                // SAFETY: begun just above.
                unsafe { Rtm.end() };
                assert!(inside, "xtest inside a transaction");
                committed = true;
                break;
            }
        }
        assert!(committed, "1000 empty transactions aborted");
        assert!(!Rtm.in_transaction());
        let mut explicit = None;
        for _ in 0..1_000 {
            match Rtm.begin() {
                Ok(()) => {
                    Rtm.abort_lock_busy();
                    // SAFETY: still inside, if xabort returned.
                    unsafe { Rtm.end() };
                    panic!("xabort returned inside a transaction");
                }
                Err(a) if a.explicit.is_some() => {
                    explicit = Some(a);
                    break;
                }
                Err(_) => {}
            }
        }
        assert!(explicit.is_some_and(Abort::is_lock_busy), "{explicit:?}");
        // Outside a transaction xabort does nothing.
        assert_eq!(Rtm.abort_lock_busy(), Abort::LOCK_BUSY);
        let l = Elided::<RawTicket>::new();
        let mut transactions = 0;
        for _ in 0..1_000 {
            let (g, o) = l.lock_with_outcome();
            transactions += u32::from(o.path == Path::Transaction);
            // SAFETY: held, on this thread.
            unsafe { l.release(g) };
        }
        eprintln!("RTM: {transactions} of 1000 uncontended sections ran as transactions");
    }

    #[test]
    fn rtm_is_bit_11_of_leaf_7_unless_it_always_aborts() {
        assert!(rtm_in_leaf_7(1 << 11, 0));
        assert!(rtm_in_leaf_7(!0, !(1 << 11)));
        assert!(!rtm_in_leaf_7(0, 0));
        assert!(!rtm_in_leaf_7(1 << 4, 0), "HLE is not RTM");
        assert!(!rtm_in_leaf_7(1 << 11, 1 << 11), "RTM_ALWAYS_ABORT");
    }

    #[test]
    fn abort_status_decodes_and_prints() {
        // The bits as Intel's manual numbers them.
        let bit = |n: u32| Abort::from_status(1 << n);
        assert_eq!(bit(0).explicit, Some(0));
        assert!(bit(1).retry && bit(2).conflict && bit(3).capacity);
        assert!(bit(4).debug && bit(5).nested);
        assert_eq!(bit(6), NO_REASON, "reserved");
        let a = Abort::from_status(0x4C00_0001);
        assert_eq!(a.explicit, Some(b'L'));
        assert!(a.is_lock_busy());
        assert_eq!(a, Abort::LOCK_BUSY);
        for status in [0, 1, 2, 4, 8, 16, 32, 0x3e, 0xff00_0001, 0x4E00_0021] {
            assert_eq!(Abort::from_status(status).status(), status);
        }
        assert!(CAPACITY.capacity && !CAPACITY.retry && CAPACITY.explicit.is_none());
        assert_eq!(Abort::LOCK_BUSY.to_string(), "explicit 'L'");
        assert_eq!(CONFLICT.to_string(), "conflict+retry");
        assert_eq!(
            Abort::from_status(0x0100_0021).to_string(),
            "explicit 0x01+nested"
        );
        assert_eq!(NO_REASON.to_string(), "no reason given");
    }

    #[test]
    fn metadata_names_the_fallback() {
        assert_eq!(<Elided<RawClh>>::INFO.name, "elide(clh)");
        let clh = <Elided<RawClh>>::INFO;
        assert_eq!(clh.family, RawClh::INFO.family);
        assert_eq!((clh.fair, clh.blocking), (false, false));
        let park = <Elided<SpinPark<RawTicketBackoff>>>::INFO;
        assert_eq!(park.name, "elide(spin-park(ticket-backoff))");
        assert!(park.blocking);
    }
}
