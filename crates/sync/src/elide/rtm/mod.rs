//! [`Rtm`]: Intel's Restricted Transactional Memory as an [`Htm`], with
//! the CPUID check that decides whether it is there. The instructions
//! themselves are in `insn`, which only x86_64 outside loom and Miri
//! compiles (Miri executes no inline assembly); a stub takes its place
//! elsewhere.

use super::{Abort, Htm, NESTED};

/// Intel's Restricted Transactional Memory (TSX/RTM): `xbegin`, `xend`,
/// `xabort`, `xtest`.
///
/// Availability is read from CPUID once per process ([`rtm_available`]).
/// On a CPU without RTM, on other architectures, under `--cfg loom` and
/// under Miri,
/// `available()` is false and `begin()` always fails; every method checks
/// availability first, so none ever executes an RTM instruction that the
/// CPU does not have.
#[derive(Debug, Clone, Copy, Default)]
pub struct Rtm;

/// Whether this CPU runs RTM transactions: CPUID leaf 7, sub-leaf 0, EBX
/// bit 11 (RTM), and not EDX bit 11 (`RTM_ALWAYS_ABORT`: microcode that
/// makes every `xbegin` abort, where Linux does not hide RTM), unless the
/// environment switches it off ([`RTM_VAR`]`=off`). Read once and cached.
/// Always false off x86_64, under `--cfg loom` and under Miri.
pub fn rtm_available() -> bool {
    insn::available()
}

/// The environment variable that can switch RTM off for a process:
/// `LOCKLAB_RTM=off` makes [`rtm_available`] false on a CPU that has it,
/// so every elided lock takes its fall-back path and every caller that
/// decides from the CPU decides as on a CPU without RTM. This is how a
/// test suite runs the no-RTM paths on an Intel machine with RTM (the way
/// glibc's tunable `glibc.cpu.x86_rtm` or its hwcaps mask lets a user turn
/// elision off). `auto` (or unset, or empty) reads the CPU. It cannot
/// switch RTM *on* where the CPU lacks it: the instructions would fault.
/// Read once, on the first call of [`rtm_available`]; a later change of
/// the variable does not count.
pub const RTM_VAR: &str = "LOCKLAB_RTM";

/// What [`RTM_VAR`] may hold: `Ok(true)` to switch RTM off, `Ok(false)` to
/// read the CPU, `Err` with the value for anything else (which
/// [`rtm_available`] treats as `auto`; a program can refuse it with this).
pub fn rtm_setting() -> Result<bool, String> {
    parse_rtm_setting(std::env::var_os(RTM_VAR).as_deref())
}

/// [`rtm_setting`] of a value of [`RTM_VAR`] (`None`: unset).
pub(super) fn parse_rtm_setting(v: Option<&std::ffi::OsStr>) -> Result<bool, String> {
    match v {
        None => Ok(false),
        Some(v) => match v.to_str().map(str::trim) {
            Some("off") => Ok(true),
            Some("auto") | Some("") => Ok(false),
            _ => Err(v.to_string_lossy().into_owned()),
        },
    }
}

/// Whether [`RTM_VAR`] switches RTM off.
#[cfg_attr(
    not(all(target_arch = "x86_64", not(loom), not(miri))),
    allow(dead_code)
)]
fn switched_off() -> bool {
    rtm_setting().unwrap_or(false)
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
        insn::available()
    }

    #[inline]
    fn begin(&self) -> Result<(), Abort> {
        if !insn::available() {
            return Err(Abort::default());
        }
        // SAFETY: the CPU has RTM.
        let status = unsafe { insn::xbegin() };
        if status == insn::STARTED {
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
        unsafe { insn::xend() }
    }

    #[inline]
    fn abort_lock_busy(&self) -> Abort {
        if insn::available() {
            // SAFETY: the CPU has RTM; outside a transaction this is a no-op.
            unsafe { insn::xabort_lock_busy() };
        }
        Abort::LOCK_BUSY
    }

    #[inline]
    fn abort_nested(&self) -> Abort {
        if insn::available() {
            // SAFETY: as in `abort_lock_busy`.
            unsafe { insn::xabort_nested() };
        }
        Abort::xabort(NESTED)
    }

    #[inline]
    fn in_transaction(&self) -> bool {
        // SAFETY: `xtest` runs only on a CPU with RTM.
        insn::available() && unsafe { insn::xtest() }
    }
}

#[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
mod insn;

/// No RTM here: nothing to execute, and `available` is false so that no
/// caller gets this far.
#[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
mod insn {
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
#[cfg_attr(
    not(all(target_arch = "x86_64", not(loom), not(miri))),
    allow(dead_code)
)]
pub(super) const fn rtm_in_leaf_7(ebx: u32, edx: u32) -> bool {
    const RTM: u32 = 1 << 11;
    const RTM_ALWAYS_ABORT: u32 = 1 << 11;
    ebx & RTM != 0 && edx & RTM_ALWAYS_ABORT == 0
}
