//! The `membarrier(2)` system call, private expedited form: the grace-period
//! side's way of putting a full memory barrier into every running thread of
//! this process, so that RCU readers need none of their own.
//!
//! Linux 4.14 added `MEMBARRIER_CMD_PRIVATE_EXPEDITED`: it interrupts each
//! CPU that runs a thread of the calling process and has it execute a full
//! barrier; threads that are not running pass one anyway when they are next
//! switched in. A process registers its intent once
//! (`MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED`) before it may use the
//! command. liburcu's `urcu-memb` flavour is built on the same call.
//!
//! [`expedited_available`] asks the kernel once per process and registers;
//! where the call is missing (old kernels, seccomp filters, other systems,
//! and Miri, which does not emulate it) RCU falls back to readers that
//! fence. That fallback is the fenced domain (`Builder::fenced`), which the
//! RCU tests run natively beside the membarrier one, and which the
//! environment variable `LOCKLAB_RCU_NO_MEMBARRIER` forces for a process.

#[cfg(all(target_os = "linux", not(loom), not(miri)))]
mod imp {
    use std::sync::OnceLock;

    const CMD_QUERY: libc::c_int = 0;
    const CMD_PRIVATE_EXPEDITED: libc::c_int = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_int = 1 << 4;

    fn membarrier(cmd: libc::c_int) -> libc::c_long {
        // SAFETY: membarrier takes two integer arguments (command, flags)
        // and a CPU id that these commands ignore; it touches no memory of
        // ours.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_int,
                0 as libc::c_int,
            )
        }
    }

    static AVAILABLE: OnceLock<bool> = OnceLock::new();

    pub fn expedited_available() -> bool {
        *AVAILABLE.get_or_init(|| {
            if std::env::var_os("LOCKLAB_RCU_NO_MEMBARRIER").is_some() {
                return false;
            }
            let mask = membarrier(CMD_QUERY);
            mask >= 0
                && mask & CMD_PRIVATE_EXPEDITED as libc::c_long != 0
                && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
        })
    }

    pub fn expedited() {
        // Registration succeeded (callers only get here when
        // `expedited_available()` said so), so the command cannot fail
        // for want of it; EINTR is not among its errors.
        let r = membarrier(CMD_PRIVATE_EXPEDITED);
        debug_assert_eq!(r, 0, "membarrier(PRIVATE_EXPEDITED) failed");
        if r != 0 {
            // Never leave the grace period without its barrier.
            std::process::abort();
        }
    }
}

#[cfg(not(all(target_os = "linux", not(loom), not(miri))))]
mod imp {
    pub fn expedited_available() -> bool {
        false
    }

    pub fn expedited() {
        unreachable!("membarrier is not available here");
    }
}

/// Whether this process may use private expedited `membarrier` (asked once;
/// the environment variable `LOCKLAB_RCU_NO_MEMBARRIER` forces `false`).
pub fn expedited_available() -> bool {
    imp::expedited_available()
}

/// A full memory barrier in every running thread of this process. Only
/// after [`expedited_available`] returned `true`.
pub(crate) fn expedited() {
    imp::expedited()
}
