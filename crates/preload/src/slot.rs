//! Where a lock's cell lives in a C library object, and the small things
//! every interposed call needs: the caller's thread id, deadlines from
//! `timespec`s, and the wait of the timed forms.
//!
//! **In the object.** A cell that fits the room the C object leaves (16
//! bytes, 8-aligned, in `pthread_mutex_t` and `pthread_rwlock_t`) lives in
//! it: no table, no pointer to chase, nothing allocated. The C library's
//! static initializers are all zeros there, so an object is set up lazily:
//! a state word, also zero in every initializer, says whether its cell has
//! been written (one load on the object's own cache line per call).
//!
//! **Beside it.** A larger cell (the hybrid mutex, which embeds a CLH
//! queue for its spinners; MCS, whose guard names a queue node; brlock's
//! per-CPU slots) lives in a block of its own, and the object holds the
//! block's address. Blocks come from an arena of `mmap`ed chunks with a
//! free list per size class, never from `malloc`: an allocator that takes
//! pthread mutexes (jemalloc, tcmalloc) must not be called while one of its
//! own mutexes is being set up. A block is taken when an object is first
//! used (never again on the lock path) and returned by `destroy`.
//!
//! **Out of memory.** When the arena cannot grow (`mmap` fails: the
//! address space is exhausted, `RLIMIT_AS`), the set-up fails instead of
//! ending the process: the object's state word says so for good
//! ([`FAILED`], until `destroy`), and [`cell`] returns null to every
//! caller, which either reports `ENOMEM` (the `init` functions set the
//! cell up at once, where an error can be returned) or falls back to
//! something that needs no cell (a statically initialized object, whose
//! first use can return no error: see `mutex`, `rwlock` and `cond`).

use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// State word values.
const FRESH: u32 = 0;
const BUSY: u32 = 1;
/// The cell is set up.
pub const READY: u32 = 2;
/// The set-up found no memory. Any value from this one up means so: an
/// object that falls back to the C library may count its users in the
/// state word's place (glibc's mutex keeps `__nusers` there), which only
/// goes up from here.
pub const FAILED: u32 = 3;

/// Room for a cell in the object.
pub const ROOM: usize = 16;

/// The cell of the object whose state word is at `state` and whose room
/// (or block address) is at `room`, set up on first use with `init`; null
/// if a block was needed and none could be had (then for good, until
/// [`tear_down`]).
///
/// # Safety
/// `state` and `room` point into one live object the caller may use, the
/// room 8-aligned and [`ROOM`] bytes long, and every caller of this object
/// passes the same `size`, `align` and `init`.
#[inline]
pub unsafe fn cell(
    state: *mut u8,
    room: *mut u8,
    size: usize,
    align: usize,
    init: unsafe fn(*mut u8),
) -> *mut u8 {
    // SAFETY: a u32 of the object, aligned (the callers' offsets are).
    let st = unsafe { &*state.cast::<AtomicU32>() };
    // SAFETY: the caller's contract.
    if st.load(Ordering::Acquire) != READY && !unsafe { set_up(st, room, size, align, init) } {
        return core::ptr::null_mut();
    }
    if fits(size, align) {
        room
    } else {
        // SAFETY: set up: the room holds the block's address.
        unsafe { (*room.cast::<AtomicUsize>()).load(Ordering::Relaxed) as *mut u8 }
    }
}

/// The cell of an object whose cell is known to be set up (its state word
/// [`READY`]): [`cell`] without reading the state word.
///
/// # Safety
/// As for [`cell`], and the cell is set up.
#[inline(always)]
pub unsafe fn set_up_cell(room: *mut u8, size: usize, align: usize) -> *mut u8 {
    if fits(size, align) {
        room
    } else {
        // SAFETY: set up: the room holds the block's address.
        unsafe { (*room.cast::<AtomicUsize>()).load(Ordering::Relaxed) as *mut u8 }
    }
}

/// Whether a cell of this size and alignment lives in the object.
#[inline]
pub const fn fits(size: usize, align: usize) -> bool {
    size <= ROOM && align <= 8
}

/// At `pthread_*_init` of an object just zeroed (`len` bytes from
/// `object`): a cell that does not fit in the object is taken now, where
/// running out of memory can still be reported. `0`, or `ENOMEM` with the
/// object zeroed again (not initialized after all).
///
/// # Safety
/// As [`cell`], with `state` and `room` at those offsets of `object`, and
/// `object` writable for `len` bytes.
pub unsafe fn reserve_at_init(
    object: *mut u8,
    len: usize,
    state: usize,
    room: usize,
    size: usize,
    align: usize,
    init: unsafe fn(*mut u8),
) -> libc::c_int {
    if fits(size, align) {
        return 0;
    }
    // SAFETY: the caller's contract: offsets inside the object.
    let c = unsafe { cell(object.add(state), object.add(room), size, align, init) };
    if c.is_null() {
        // SAFETY: the caller's contract.
        unsafe { object.write_bytes(0, len) };
        return libc::ENOMEM;
    }
    0
}

/// Sets the cell up (or waits for the thread that does); false if it
/// failed for want of memory.
#[cold]
unsafe fn set_up(
    st: &AtomicU32,
    room: *mut u8,
    size: usize,
    align: usize,
    init: unsafe fn(*mut u8),
) -> bool {
    loop {
        match st.compare_exchange(FRESH, BUSY, Ordering::Acquire, Ordering::Acquire) {
            Ok(_) => {
                if fits(size, align) {
                    // SAFETY: the room is ours to write until READY.
                    unsafe { init(room) };
                } else {
                    let block = alloc(size, align);
                    if block.is_null() {
                        st.store(FAILED, Ordering::Release);
                        return false;
                    }
                    // SAFETY: a fresh block of `size` bytes, aligned.
                    unsafe { init(block) };
                    // SAFETY: the room holds an 8-aligned word.
                    unsafe {
                        (*room.cast::<AtomicUsize>()).store(block as usize, Ordering::Relaxed)
                    };
                }
                st.store(READY, Ordering::Release);
                // A lock of locklab's took effect (see `mark`).
                crate::mark::used();
                return true;
            }
            Err(READY) => return true,
            Err(BUSY) => pause_a_little(),
            Err(_) => return false,
        }
    }
}

/// Undoes [`cell`]'s set-up: the block (if any) goes back to the arena and
/// the object is fresh again (`destroy`, then maybe `init`).
///
/// # Safety
/// As for [`cell`], and nobody uses the object any more.
pub unsafe fn tear_down(state: *mut u8, room: *mut u8, size: usize, align: usize) {
    // SAFETY: as in `cell`.
    let st = unsafe { &*state.cast::<AtomicU32>() };
    if st.load(Ordering::Acquire) == READY && !fits(size, align) {
        // SAFETY: set up: the room holds the block's address.
        let block = unsafe { (*room.cast::<AtomicUsize>()).load(Ordering::Relaxed) };
        free(block as *mut u8, size, align);
    }
    st.store(FRESH, Ordering::Release);
}

/// Size classes of the arena: powers of two from 64 bytes.
const CLASSES: usize = 16;
/// Chunks are at least this big.
const CHUNK: usize = 1 << 20;

struct Arena {
    lock: AtomicBool,
    free: [AtomicUsize; CLASSES],
    next: AtomicUsize,
    end: AtomicUsize,
}

static ARENA: Arena = Arena {
    lock: AtomicBool::new(false),
    free: [const { AtomicUsize::new(0) }; CLASSES],
    next: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
};

fn class(size: usize, align: usize) -> (usize, usize) {
    let bytes = size.max(align).max(64).next_power_of_two();
    (bytes.trailing_zeros() as usize - 6, bytes)
}

/// Runs `f` holding the arena's lock (a test-and-set lock of its own: the
/// arena serves the interposed locks, so it cannot use them).
fn locked<T>(f: impl FnOnce() -> T) -> T {
    while ARENA.lock.swap(true, Ordering::Acquire) {
        pause_a_little();
    }
    let r = f();
    ARENA.lock.store(false, Ordering::Release);
    r
}

/// A block of the arena, or null if it cannot grow.
pub(crate) fn alloc(size: usize, align: usize) -> *mut u8 {
    let (c, bytes) = class(size, align);
    assert!(c < CLASSES, "a lock cell of {size} bytes");
    locked(|| {
        let head = ARENA.free[c].load(Ordering::Relaxed);
        if head != 0 {
            // SAFETY: a freed block's first word links the free list.
            let next = unsafe { *(head as *const usize) };
            ARENA.free[c].store(next, Ordering::Relaxed);
            return head as *mut u8;
        }
        let mut at = ARENA.next.load(Ordering::Relaxed).next_multiple_of(bytes);
        if at == 0 || at + bytes > ARENA.end.load(Ordering::Relaxed) {
            let len = CHUNK.max(bytes);
            let Some(p) = locklab::sys::try_map_anon(len) else {
                return core::ptr::null_mut();
            };
            at = p as usize;
            ARENA.end.store(at + len, Ordering::Relaxed);
        }
        ARENA.next.store(at + bytes, Ordering::Relaxed);
        at as *mut u8
    })
}

/// Gives a block of [`alloc`] back.
pub(crate) fn free(block: *mut u8, size: usize, align: usize) {
    let (c, _) = class(size, align);
    locked(|| {
        // SAFETY: a block of this class, no longer used: its first word
        // links it into the free list.
        unsafe { *(block as *mut usize) = ARENA.free[c].load(Ordering::Relaxed) };
        ARENA.free[c].store(block as usize, Ordering::Relaxed);
    });
}

thread_local! {
    /// This thread's kernel id, or 0 before its first use (and in a forked
    /// child, whose one thread has a new id).
    static TID: core::cell::Cell<i32> = const { core::cell::Cell::new(0) };
}

/// The calling thread's kernel id (what the C library stores as a mutex's
/// owner).
#[inline]
pub fn tid() -> i32 {
    TID.with(|t| {
        let v = t.get();
        if v != 0 {
            return v;
        }
        // SAFETY: gettid has no arguments and cannot fail.
        let v = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        t.set(v);
        v
    })
}

/// After `fork`, in the child: its one thread has a new id.
pub extern "C" fn forget_tid_in_child() {
    TID.with(|t| t.set(0));
}

/// An owner word of an object (an `i32` the C library also keeps there).
///
/// # Safety
/// `p` points to an aligned i32 of a live object.
#[inline]
pub unsafe fn owner<'a>(p: *mut u8) -> &'a AtomicI32 {
    // SAFETY: the caller's contract.
    unsafe { &*p.cast::<AtomicI32>() }
}

/// The instant a `timespec` deadline on `clock` stands for, or the POSIX
/// error: `EINVAL` for a bad clock or nanoseconds out of range.
///
/// # Safety
/// `abs` points to a readable `timespec`.
pub unsafe fn deadline(clock: libc::clockid_t, abs: *const libc::timespec) -> Result<Instant, i32> {
    if clock != libc::CLOCK_REALTIME && clock != libc::CLOCK_MONOTONIC {
        return Err(libc::EINVAL);
    }
    // SAFETY: the caller's contract.
    let abs = unsafe { *abs };
    if !(0..1_000_000_000).contains(&abs.tv_nsec) {
        return Err(libc::EINVAL);
    }
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock and a live timespec to write.
    unsafe { libc::clock_gettime(clock, &mut now) };
    let ns = |t: libc::timespec| i128::from(t.tv_sec) * 1_000_000_000 + i128::from(t.tv_nsec);
    let left = (ns(abs) - ns(now)).max(0);
    let left = Duration::from_nanos(u64::try_from(left).unwrap_or(u64::MAX));
    Ok(Instant::now()
        .checked_add(left)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(1 << 32)))
}

/// Tries `attempt` until it succeeds (`0`) or the deadline passes
/// (`ETIMEDOUT`). The timed forms of the C interface have no counterpart in
/// `lock_api`'s raw traits: they poll, spinning briefly, then yielding,
/// then sleeping up to 50 µs between attempts (never past the deadline).
pub fn poll_until(deadline: Instant, mut attempt: impl FnMut() -> bool) -> i32 {
    let mut round = 0u32;
    loop {
        if attempt() {
            return 0;
        }
        let now = Instant::now();
        if now >= deadline {
            return libc::ETIMEDOUT;
        }
        round += 1;
        if round < 16 {
            for _ in 0..64 {
                core::hint::spin_loop();
            }
        } else if round < 32 {
            std::thread::yield_now();
        } else {
            std::thread::sleep((deadline - now).min(Duration::from_micros(50)));
        }
    }
}

fn pause_a_little() {
    for _ in 0..32 {
        core::hint::spin_loop();
    }
    std::thread::yield_now();
}
