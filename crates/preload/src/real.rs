//! The C library's own functions, for what passes through: `pthread` and
//! `pthread-rw`, and the objects the interposer leaves to it
//! (process-shared, robust and priority-protocol mutexes, process-shared
//! condition variables and reader-writer locks).
//!
//! The mutex and reader-writer lock calls go to glibc's exported
//! `__pthread_*` aliases, linked directly: no `dlsym`, which may allocate,
//! while an allocator that takes pthread mutexes is starting. The rest are
//! looked up once with `dlsym(RTLD_NEXT, …)` and kept.

use core::ffi::{c_char, c_int, c_void};
use core::sync::atomic::{AtomicUsize, Ordering};
use libc::{
    clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, pthread_mutexattr_t,
    pthread_rwlock_t, pthread_rwlockattr_t, pthread_spinlock_t, timespec,
};

// In the unit tests, which do not define the pthread functions, the C
// library's public names (its `__pthread_*` aliases are of an old symbol
// version, which only a shared object may still link).
extern "C" {
    #[cfg_attr(test, link_name = "pthread_mutex_init")]
    pub fn __pthread_mutex_init(m: *mut pthread_mutex_t, a: *const pthread_mutexattr_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_mutex_destroy")]
    pub fn __pthread_mutex_destroy(m: *mut pthread_mutex_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_mutex_lock")]
    pub fn __pthread_mutex_lock(m: *mut pthread_mutex_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_mutex_trylock")]
    pub fn __pthread_mutex_trylock(m: *mut pthread_mutex_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_mutex_unlock")]
    pub fn __pthread_mutex_unlock(m: *mut pthread_mutex_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_rwlock_init")]
    pub fn __pthread_rwlock_init(l: *mut pthread_rwlock_t, a: *const pthread_rwlockattr_t)
        -> c_int;
    #[cfg_attr(test, link_name = "pthread_rwlock_destroy")]
    pub fn __pthread_rwlock_destroy(l: *mut pthread_rwlock_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_rwlock_rdlock")]
    pub fn __pthread_rwlock_rdlock(l: *mut pthread_rwlock_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_rwlock_tryrdlock")]
    pub fn __pthread_rwlock_tryrdlock(l: *mut pthread_rwlock_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_rwlock_wrlock")]
    pub fn __pthread_rwlock_wrlock(l: *mut pthread_rwlock_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_rwlock_trywrlock")]
    pub fn __pthread_rwlock_trywrlock(l: *mut pthread_rwlock_t) -> c_int;
    #[cfg_attr(test, link_name = "pthread_rwlock_unlock")]
    pub fn __pthread_rwlock_unlock(l: *mut pthread_rwlock_t) -> c_int;
}

/// A function of the C library found by name, once.
struct Next {
    name: &'static [u8],
    addr: AtomicUsize,
}

impl Next {
    const fn new(name: &'static [u8]) -> Self {
        Next {
            name,
            addr: AtomicUsize::new(0),
        }
    }

    /// The function's address; ends the process if the C library lacks it.
    fn get(&self) -> usize {
        let a = self.addr.load(Ordering::Acquire);
        if a != 0 {
            return a;
        }
        // SAFETY: `name` is NUL-terminated (every `Next` below ends in \0).
        let a =
            unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr().cast::<c_char>()) } as usize;
        if a == 0 {
            let msg = b"locklab-preload: the C library has no ";
            // SAFETY: writes from live slices, then ends the process.
            unsafe {
                libc::write(2, msg.as_ptr().cast::<c_void>(), msg.len());
                libc::write(2, self.name.as_ptr().cast::<c_void>(), self.name.len() - 1);
                libc::write(2, b"\n".as_ptr().cast::<c_void>(), 1);
                libc::_exit(2);
            }
        }
        self.addr.store(a, Ordering::Release);
        a
    }
}

macro_rules! next_fn {
    ($(#[$m:meta])* $name:ident, $sym:literal, fn($($arg:ident: $ty:ty),*)) => {
        $(#[$m])*
        /// # Safety
        /// As the C library's function of this name.
        pub unsafe fn $name($($arg: $ty),*) -> c_int {
            static NEXT: Next = Next::new(concat!($sym, "\0").as_bytes());
            // SAFETY: the C library's function of this name has this
            // signature (POSIX, glibc's headers).
            let f: unsafe extern "C" fn($($ty),*) -> c_int = unsafe { core::mem::transmute(NEXT.get()) };
            // SAFETY: the caller's contract.
            unsafe { f($($arg),*) }
        }
    };
}

next_fn!(
    mutex_timedlock,
    "pthread_mutex_timedlock",
    fn(m: *mut pthread_mutex_t, t: *const timespec)
);
next_fn!(
    mutex_clocklock,
    "pthread_mutex_clocklock",
    fn(m: *mut pthread_mutex_t, c: clockid_t, t: *const timespec)
);
next_fn!(
    cond_init,
    "pthread_cond_init",
    fn(c: *mut pthread_cond_t, a: *const pthread_condattr_t)
);
next_fn!(
    cond_destroy,
    "pthread_cond_destroy",
    fn(c: *mut pthread_cond_t)
);
next_fn!(
    cond_wait,
    "pthread_cond_wait",
    fn(c: *mut pthread_cond_t, m: *mut pthread_mutex_t)
);
next_fn!(
    cond_timedwait,
    "pthread_cond_timedwait",
    fn(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, t: *const timespec)
);
next_fn!(
    cond_clockwait,
    "pthread_cond_clockwait",
    fn(c: *mut pthread_cond_t, m: *mut pthread_mutex_t, k: clockid_t, t: *const timespec)
);
next_fn!(
    cond_signal,
    "pthread_cond_signal",
    fn(c: *mut pthread_cond_t)
);
next_fn!(
    cond_broadcast,
    "pthread_cond_broadcast",
    fn(c: *mut pthread_cond_t)
);
next_fn!(
    rwlock_timedrdlock,
    "pthread_rwlock_timedrdlock",
    fn(l: *mut pthread_rwlock_t, t: *const timespec)
);
next_fn!(
    rwlock_timedwrlock,
    "pthread_rwlock_timedwrlock",
    fn(l: *mut pthread_rwlock_t, t: *const timespec)
);
next_fn!(
    rwlock_clockrdlock,
    "pthread_rwlock_clockrdlock",
    fn(l: *mut pthread_rwlock_t, k: clockid_t, t: *const timespec)
);
next_fn!(
    rwlock_clockwrlock,
    "pthread_rwlock_clockwrlock",
    fn(l: *mut pthread_rwlock_t, k: clockid_t, t: *const timespec)
);
next_fn!(
    spin_init,
    "pthread_spin_init",
    fn(s: *mut pthread_spinlock_t, p: c_int)
);
next_fn!(
    spin_destroy,
    "pthread_spin_destroy",
    fn(s: *mut pthread_spinlock_t)
);
next_fn!(
    spin_lock,
    "pthread_spin_lock",
    fn(s: *mut pthread_spinlock_t)
);
next_fn!(
    spin_trylock,
    "pthread_spin_trylock",
    fn(s: *mut pthread_spinlock_t)
);
next_fn!(
    spin_unlock,
    "pthread_spin_unlock",
    fn(s: *mut pthread_spinlock_t)
);
