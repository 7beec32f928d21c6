//! The RTM instructions, as `asm!` (rustc has no stable intrinsics for
//! them). Every function here requires a CPU with RTM. Compiled only on
//! x86_64 outside loom; elsewhere a stub in `rtm/mod.rs` takes its place.
//!
//! How an abort looks from Rust: the processor restores every register to
//! its value at `xbegin` (except `eax`, which receives the status, and the
//! instruction pointer, which goes to `xbegin`'s fall-back address) and
//! discards every memory write made since. `xbegin`'s fall-back address is
//! the instruction right after it, so after an abort the `asm!` block that
//! holds the `xbegin` simply finishes a second time, from the same
//! registers and memory it started from, with another value in `eax`. The
//! code that ran inside the transaction left no trace, so to the compiler
//! this is indistinguishable from the block having run once and returned
//! that status: the same contract as C's `_xbegin()`.

use core::arch::asm;
use core::arch::x86_64::{__cpuid_count, __get_cpuid_max};
use core::sync::atomic::{AtomicU8, Ordering};

use crate::elide::{LOCK_BUSY, NESTED};
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
    let cpu = unsafe {
        let (max_leaf, _) = __get_cpuid_max(0);
        max_leaf >= 7 && {
            let r = __cpuid_count(7, 0);
            super::rtm_in_leaf_7(r.ebx, r.edx)
        }
    };
    let yes = cpu && !super::switched_off();
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
