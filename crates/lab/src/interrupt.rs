//! Ctrl-C ends a run cleanly: the first SIGINT sets a flag that benchmarks
//! poll between (and during) repetitions, so the point in progress is
//! dropped, the finished points stay stored and the run is left marked
//! incomplete. A second SIGINT kills the process the default way.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    // Only async-signal-safe work here: one atomic store.
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Installs the handler (once per process; later calls are harmless).
pub fn install() {
    #[cfg(unix)]
    // SAFETY: `sa` is fully initialised before use; the handler only does an
    // atomic store, which is async-signal-safe. SA_RESETHAND restores the
    // default action so a second Ctrl-C terminates at once.
    unsafe {
        let mut sa: libc::sigaction = core::mem::zeroed();
        sa.sa_sigaction = on_sigint as *const () as libc::sighandler_t;
        sa.sa_flags = libc::SA_RESETHAND;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, core::ptr::null_mut());
    }
}

/// Whether the user asked to stop.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
