//! Whether the interposer took effect in a program, for `locklab run`,
//! which must not rank a lock that never did. With `LOCKLAB_MARK=<dir>`
//! set (by the lab, for one unmeasured run), every process the interposer
//! loads in creates `<dir>/loaded` as it loads, and `<dir>/used` the first
//! time it sets up a lock object of locklab's ([`used`], called from
//! `slot`'s set-up, which runs once per object, and from
//! `pthread_spin_init` where spin locks are locklab's). A program that replaced
//! `LD_PRELOAD`, or is statically linked, leaves no `loaded`; one that
//! never took a lock through the interposer (or only locks the C library
//! keeps) leaves no `used`. Nothing of this is on a lock's path: the set-up
//! is already out of line, and after the first mark it costs one load.
//!
//! Files, not a pipe or shared memory: they work across `fork` and `exec`,
//! for a server that drops its privileges (the lab's directory is open to
//! all, as /tmp is), and whatever the program does with its descriptors.
//! Nothing here allocates: an allocator that takes pthread mutexes may be
//! what calls.

use core::sync::atomic::{AtomicBool, Ordering};

/// Longest directory name taken.
const MAX: usize = 4096;

/// The directory, NUL-terminated; written once, at load, before [`ON`].
static mut DIR: [u8; MAX] = [0; MAX];
/// Whether marks are asked for (`DIR` is set).
static ON: AtomicBool = AtomicBool::new(false);
/// Whether this process has made its `used` mark.
static USED: AtomicBool = AtomicBool::new(false);

/// Reads `LOCKLAB_MARK` and marks the load (at load time, before the
/// program runs).
pub fn at_load() {
    // SAFETY: getenv at start-up; the string is copied at once.
    let p = unsafe { libc::getenv(c"LOCKLAB_MARK".as_ptr()) };
    if p.is_null() {
        return;
    }
    // SAFETY: a NUL-terminated string from the environment.
    let dir = unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes();
    if dir.is_empty() || dir.len() >= MAX {
        return;
    }
    // SAFETY: written once, here, before `ON` lets anyone read it.
    unsafe {
        let d = &mut *core::ptr::addr_of_mut!(DIR);
        d[..dir.len()].copy_from_slice(dir);
        d[dir.len()] = 0;
    }
    ON.store(true, Ordering::Release);
    touch(b"loaded");
}

/// Marks that this process set up a lock object of locklab's (once).
#[cold]
pub fn used() {
    if ON.load(Ordering::Acquire) && !USED.swap(true, Ordering::Relaxed) {
        touch(b"used");
    }
}

/// Creates `<dir>/<name>` (empty; it may exist already), leaving `errno`
/// as it was: the program's call must not see the lab's bookkeeping.
fn touch(name: &[u8]) {
    // SAFETY: `DIR` was written before `ON` was set (Release/Acquire) and
    // is never written again.
    let dir = unsafe { core::ffi::CStr::from_ptr(core::ptr::addr_of!(DIR).cast()) }.to_bytes();
    let mut path = [0u8; MAX + 16];
    if dir.len() + 1 + name.len() >= path.len() {
        return;
    }
    path[..dir.len()].copy_from_slice(dir);
    path[dir.len()] = b'/';
    path[dir.len() + 1..dir.len() + 1 + name.len()].copy_from_slice(name);
    // SAFETY: errno is this thread's; the path is NUL-terminated (the
    // buffer is zeroed past it); the descriptor is ours to close.
    unsafe {
        let errno = *libc::__errno_location();
        let fd = libc::open(
            path.as_ptr().cast(),
            libc::O_WRONLY | libc::O_CREAT | libc::O_CLOEXEC,
            0o666,
        );
        if fd >= 0 {
            libc::close(fd);
        }
        *libc::__errno_location() = errno;
    }
}
