//! Ctrl-C ends a run cleanly: the first SIGINT sets a flag that benchmarks
//! poll between (and during) repetitions, so the point in progress is
//! dropped, the finished points stay stored and the run is left marked
//! incomplete. A second SIGINT kills the process the default way.
//!
//! The commands that run a user's program take SIGTERM the same way
//! ([`install_with_term`]): the program runs in a process group of its
//! own, which the lab must end before it goes, so a polite request to
//! stop has to reach the lab's own code. While such a group
//! runs, its id is kept here ([`set_group`]), so that a second signal,
//! which ends the lab at once, first kills that group: nothing the lab
//! started outlives it, however impatient the user.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The process group of the program the lab is running, or 0.
static GROUP: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe work here: atomics, kill, sigaction, raise.
    if !REQUESTED.swap(true, Ordering::Relaxed) {
        return;
    }
    // The second request: the lab ends now, the default way, and the
    // program's group with it.
    let g = GROUP.load(Ordering::Relaxed);
    // SAFETY: kill, sigaction and raise are async-signal-safe; `sa` is
    // fully initialised. The signal is blocked while this handler runs, so
    // the raised one is delivered, with the default action, on return.
    unsafe {
        if g > 0 {
            libc::kill(-g, libc::SIGKILL);
        }
        let mut sa: libc::sigaction = core::mem::zeroed();
        sa.sa_sigaction = libc::SIG_DFL;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, core::ptr::null_mut());
        libc::raise(sig);
    }
}

fn catch(sig: libc::c_int) {
    // SAFETY: `sa` is fully initialised before use; the handler does only
    // async-signal-safe work (see `on_signal`).
    unsafe {
        let mut sa: libc::sigaction = core::mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, core::ptr::null_mut());
    }
}

/// Installs the handler for SIGINT (once per process; later calls are
/// harmless).
pub fn install() {
    catch(libc::SIGINT);
}

/// Installs the handler for SIGINT and SIGTERM: for the commands that run
/// a user's program, which must end its process group before they go.
pub fn install_with_term() {
    catch(libc::SIGINT);
    catch(libc::SIGTERM);
}

/// Whether the user asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Names the process group of the program now running (0: none), for a
/// second signal to kill before the lab ends.
pub fn set_group(pgid: i32) {
    GROUP.store(pgid, Ordering::Relaxed);
}
