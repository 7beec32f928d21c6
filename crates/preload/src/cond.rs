//! `pthread_cond_*` over locklab's condition variable
//! ([`locklab::Condvar`]), which works with any mutex: it releases the
//! mutex, sleeps on a sequence word of its own, and takes the mutex back
//! (no lost wake-ups: the waiter reads the word before releasing), and its
//! broadcast wakes the waiters one at a time, each as the previous one
//! holds the mutex, instead of sending them all onto it at once.
//!
//! The object is glibc's `pthread_cond_t` (48 bytes). Ours keeps a state
//! word at offset 0 and, at offset 8, the address of a block of the arena
//! ([`slot`]) that holds the condition variable; all zeros is
//! `PTHREAD_COND_INITIALIZER`'s fresh state, set up on the first wait. The
//! clock of the timed waits (from `pthread_condattr_setclock`) is kept at
//! offset 40. A process-shared condition variable is glibc's: glibc marks
//! it in bit 0 of its `__wrefs` word (offset 36), which ours leaves 0.
//!
//! **Why beside the object.** A broadcast's waiters leave one by one, each
//! waking the next once it holds the mutex again, so they use the
//! condition variable's memory after the broadcast has returned. POSIX
//! lets a program destroy it then (no thread is blocked on it any more)
//! and reuse its memory at once: the woken waiters must not depend on the
//! object. So the state lives in a block that the waiters count
//! themselves into (`Block::refs`): `destroy` detaches the block from
//! the object, and whoever leaves it last (`destroy`, or the last waiter
//! still inside) gives it back to the arena. `init` takes the block at
//! once and says `ENOMEM` when there is none; a statically initialized
//! one whose first wait finds no memory waits by polling instead (a
//! spurious wake-up after at most a millisecond, which POSIX allows).
//!
//! **Signalled under the mutex: the wake waits for the release.** A
//! signal or broadcast made while the caller holds the waiters' mutex (as
//! most C programs do) chooses its waiters at once but wakes them only
//! once that mutex is released ([`Condvar::choose_one`],
//! [`Condvar::choose_all`], then [`Condvar::wake_chosen`]). Woken at once,
//! a waiter can only wait for the mutex; under a spin lock it spins, and
//! where it woke on its signaller's CPU (a woken thread may preempt the
//! one that woke it) it spins while the holder cannot run, until the
//! scheduler's tick: about 8 ms per hand-off on a loaded 2-core machine,
//! against 10 µs under the C library's mutex, which sleeps
//! (`tests/handoff.rs`). The notifier knows the waiters' mutex from the
//! block (`inside`, `with`: the waiters inside a wait, exactly, and their
//! mutex), read under the block's guard, which keeps those waiters, and so
//! the mutex, alive while it is read, and it defers only if it holds that
//! mutex ([`crate::mutex::held_here`]): then the chosen waiter could not
//! have returned before the release anyway, and POSIX's promises are the
//! same (the waiters released are those asleep at the call; a timed one
//! whose deadline comes first may consume the signal, which POSIX
//! allows). The wake owed is kept per thread (`defer`, eight at most;
//! beyond, a signal wakes at once) with a count on the block, which keeps
//! it alive for a `destroy` in between, and the mutex is marked
//! ([`crate::mutex::owe_at_release`]) so that its release, by
//! `pthread_mutex_unlock` or by a condition wait, pays it ([`pay_owed`]).
//!
//! **Cancellation.** `pthread_cond_wait` and `pthread_cond_timedwait` are
//! cancellation points. glibc acts on a deferred cancel at its own
//! cancellation points by switching to asynchronous cancellation around
//! the blocking system call, so that `pthread_cancel`'s signal unwinds the
//! thread from inside it; we do the same around our futex wait (`sleep`).
//! The unwinding that follows must find the mutex held again before the
//! program's first clean-up handler runs, and the condition variable's
//! books in order: before sleeping, the waiter pushes a clean-up of its
//! own (glibc's `_pthread_cleanup_push`, whose handlers glibc's unwinder
//! runs as it leaves their frame, before any handler of the caller's),
//! which takes the mutex back (with its recursion count), passes on a
//! wake-up it may have consumed (a spurious wake-up for another waiter,
//! never a lost one), and ends the wait as a return would. The unwinding
//! then crosses only frames without destructors (Rust's plain old frames)
//! and functions declared `"C-unwind"`, the case Rust defines for a
//! foreign forced unwind.
//!
//! **One mutex at a time.** Waiters of one condition variable with
//! different mutexes at once are undefined in POSIX; a wait with a second
//! mutex while waiters of the first are not yet released returns `EINVAL`
//! without releasing the mutex. The binding ends as soon as the last of
//! those waiters is released (by a broadcast, by the signal that wakes it,
//! or by its own time-out), not when it has left: a waiter woken by a
//! broadcast may still wait for its mutex. The bookkeeping (`Block`'s
//! `bound`, `unreleased`, `epoch`) errs towards accepting: a count that is
//! low at worst misses a misuse, never refuses a correct program.

use crate::mutex::{classify, held_here, owe_at_release, relock_ours, unlock_ours, Mutex};
use crate::ops::MutexOps;
use crate::{config, profile, real, slot};
use core::ffi::{c_int, c_long, c_void};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use libc::{clockid_t, pthread_cond_t, pthread_condattr_t, pthread_mutex_t, timespec};
use locklab::Condvar;
use std::time::{Duration, Instant};

const STATE: usize = 0;
const ROOM: usize = 8;
const GLIBC_WREFS: usize = 36;
const CLOCK: usize = 40;

/// What a condition variable of ours keeps beside its object.
struct Block {
    cv: Condvar,
    /// Threads inside a wait (from registering, mutex held, to leaving,
    /// mutex held again) and wakes owed at a mutex's release ([`defer`]),
    /// plus [`DEAD`] once the object was destroyed.
    refs: AtomicU32,
    /// A test-and-set lock over the binding's words and `inside` and
    /// `with` (held for a few instructions; never while blocking).
    guard: AtomicBool,
    /// The mutex of the waiters not yet released, or 0.
    bound: AtomicUsize,
    /// How many waiters with `bound` are not yet released (low at worst).
    unreleased: AtomicU32,
    /// Bumped whenever every waiter is released (a broadcast, a signal to
    /// the last one): a waiter of an older epoch is no longer counted.
    epoch: AtomicU32,
    /// Threads inside a wait, exactly (guarded: from `bind` to
    /// `leave_wait`), and the mutex they wait with ([`MIXED`] if two
    /// mutexes were accepted at once), for a notifier that may defer its
    /// wake to that mutex's release ([`Block::held_mutex`]).
    inside: AtomicU32,
    /// See `inside`.
    with: AtomicUsize,
}

/// `Block::with` when waiters with two mutexes are inside at once
/// (undefined in POSIX, and refused unless the binding's count was low):
/// nothing is deferred until they have all left.
const MIXED: usize = usize::MAX;

/// The object was destroyed: the last thread out frees the block.
const DEAD: u32 = 1 << 31;

/// # Safety
/// `p` is valid for writes of a `Block`, aligned.
unsafe fn block_init(p: *mut u8) {
    // SAFETY: the caller's contract.
    unsafe {
        p.cast::<Block>().write(Block {
            cv: Condvar::new(),
            refs: AtomicU32::new(0),
            guard: AtomicBool::new(false),
            bound: AtomicUsize::new(0),
            unreleased: AtomicU32::new(0),
            epoch: AtomicU32::new(0),
            inside: AtomicU32::new(0),
            with: AtomicUsize::new(0),
        })
    };
}

const SIZE: usize = core::mem::size_of::<Block>();
const ALIGN: usize = core::mem::align_of::<Block>();
const _: () = assert!(
    !slot::fits(SIZE, ALIGN),
    "the block must live beside the object"
);

impl Block {
    /// Runs `f` holding the guard.
    fn guarded<T>(&self, f: impl FnOnce() -> T) -> T {
        while self.guard.swap(true, Ordering::Acquire) {
            while self.guard.load(Ordering::Relaxed) {
                std::thread::yield_now();
            }
        }
        let r = f();
        self.guard.store(false, Ordering::Release);
        r
    }

    /// A waiter with mutex `m` registers as not yet released, and counts
    /// itself in (`refs`, `inside`): its epoch, or `None` (and nothing
    /// counted) if waiters with another mutex are not yet released.
    fn bind(&self, m: usize) -> Option<u32> {
        self.guarded(|| {
            let bound = self.bound.load(Ordering::Relaxed);
            let n = self.unreleased.load(Ordering::Relaxed);
            if n > 0 && bound != m {
                return None;
            }
            self.bound.store(m, Ordering::Relaxed);
            self.unreleased.store(n + 1, Ordering::Relaxed);
            let inside = self.inside.load(Ordering::Relaxed);
            let with = self.with.load(Ordering::Relaxed);
            let with = if inside == 0 || with == m { m } else { MIXED };
            self.with.store(with, Ordering::Relaxed);
            self.inside.store(inside + 1, Ordering::Relaxed);
            self.refs.fetch_add(1, Ordering::Relaxed);
            Some(self.epoch.load(Ordering::Relaxed))
        })
    }

    /// One waiter is released: its sleep ended (then `epoch` is its own),
    /// or a signal released one of them (`None`).
    fn release_one(&self, epoch: Option<u32>) {
        self.guarded(|| {
            if epoch.is_some_and(|e| e != self.epoch.load(Ordering::Relaxed)) {
                return;
            }
            let n = self.unreleased.load(Ordering::Relaxed).saturating_sub(1);
            self.unreleased.store(n, Ordering::Relaxed);
            if n == 0 {
                self.bound.store(0, Ordering::Relaxed);
            }
        })
    }

    /// Every waiter is released (a broadcast).
    fn release_all(&self) {
        self.guarded(|| {
            self.epoch.store(
                self.epoch.load(Ordering::Relaxed).wrapping_add(1),
                Ordering::Relaxed,
            );
            self.unreleased.store(0, Ordering::Relaxed);
            self.bound.store(0, Ordering::Relaxed);
        })
    }

    /// The mutex the waiters inside wait with, if the calling thread
    /// holds it (then it stays alive while the caller holds it), else 0.
    /// Read under the guard, which keeps every waiter counted in `inside`
    /// from leaving: such a waiter is still inside its wait (it has yet to
    /// return to its caller with the mutex), so the mutex is alive while
    /// it is read (destroying it now would be undefined in POSIX).
    ///
    /// # Safety
    /// The configuration is one of locklab's locks.
    unsafe fn held_mutex(&self) -> usize {
        self.guarded(|| {
            let with = self.with.load(Ordering::Relaxed);
            if self.inside.load(Ordering::Relaxed) == 0 || with == MIXED {
                return 0;
            }
            // SAFETY: alive, as above; the caller's contract.
            match unsafe { held_here(with as *mut pthread_mutex_t) } {
                true => with,
                false => 0,
            }
        })
    }

    /// A waiter leaves: the end of its wait (mutex held again), or a
    /// registration undone.
    ///
    /// # Safety
    /// `b` is a live block the caller registered in with [`Block::bind`].
    unsafe fn leave_wait(b: *const Block) {
        // SAFETY: the caller's contract.
        let block = unsafe { &*b };
        block.guarded(|| {
            let inside = block.inside.load(Ordering::Relaxed) - 1;
            block.inside.store(inside, Ordering::Relaxed);
            if inside == 0 {
                block.with.store(0, Ordering::Relaxed);
            }
        });
        // SAFETY: the caller's contract.
        unsafe { Block::leave(b, false) };
    }

    /// A thread leaves (a waiter) or the object is destroyed (`dead`):
    /// whoever is last gives the block back.
    ///
    /// # Safety
    /// `b` is a live block that the caller counted in (a waiter) or
    /// detached from its object (`destroy`).
    unsafe fn leave(b: *const Block, dead: bool) {
        // SAFETY: the caller's contract.
        let refs = unsafe { &(*b).refs };
        let last = if dead {
            refs.fetch_or(DEAD, Ordering::AcqRel) & !DEAD == 0
        } else {
            refs.fetch_sub(1, Ordering::AcqRel) == DEAD | 1
        };
        if last {
            slot::free(b.cast_mut().cast(), SIZE, ALIGN);
        }
    }
}

/// Whether glibc keeps this condition variable (all of them under
/// `pthread`, and process-shared ones).
///
/// # Safety
/// `c` points to a live `pthread_cond_t`.
unsafe fn glibc_keeps(c: *mut pthread_cond_t) -> bool {
    config::is_pass(config::mutex())
        // SAFETY: a word of the live object.
        || unsafe { &*c.cast::<u8>().add(GLIBC_WREFS).cast::<AtomicU32>() }.load(Ordering::Relaxed) & 1 != 0
}

/// The block of a condition variable of ours, set up if it is not yet;
/// null if there is no memory for it.
///
/// # Safety
/// `c` is a live object of ours.
unsafe fn block(c: *mut pthread_cond_t) -> *const Block {
    let base = c.cast::<u8>();
    // SAFETY: the state word and the room of a live object, aligned.
    unsafe { slot::cell(base.add(STATE), base.add(ROOM), SIZE, ALIGN, block_init) }
        .cast_const()
        .cast()
}

/// The block of a condition variable of ours if it has one (signal and
/// broadcast: one that has none has had no waiter).
///
/// # Safety
/// `c` is a live object of ours.
unsafe fn block_if_set_up<'a>(c: *mut pthread_cond_t) -> Option<&'a Block> {
    let base = c.cast::<u8>();
    // SAFETY: the state word of a live object; its acquire pairs with the
    // set-up's release (a waiter sets up before it registers, under its
    // mutex, which a notifier that must see it took after it).
    if unsafe { &*base.add(STATE).cast::<AtomicU32>() }.load(Ordering::Acquire) != slot::READY {
        return None;
    }
    // SAFETY: set up: the room holds the block's address.
    let b = unsafe { &*base.add(ROOM).cast::<AtomicUsize>() }.load(Ordering::Relaxed);
    // SAFETY: a live block (the object is not destroyed while in use).
    (b != 0).then(|| unsafe { &*(b as *const Block) })
}

/// # Safety
/// POSIX's contract for `pthread_cond_init`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_init(
    c: *mut pthread_cond_t,
    attr: *const pthread_condattr_t,
) -> c_int {
    let mut shared = libc::PTHREAD_PROCESS_PRIVATE;
    let mut clock = libc::CLOCK_REALTIME;
    if !attr.is_null() {
        // SAFETY: a live attribute object, read by the C library.
        unsafe {
            libc::pthread_condattr_getpshared(attr, &mut shared);
            libc::pthread_condattr_getclock(attr, &mut clock);
        }
    }
    if config::is_pass(config::mutex()) || shared != libc::PTHREAD_PROCESS_PRIVATE {
        // SAFETY: passed through as is.
        return unsafe { real::cond_init(c, attr) };
    }
    // SAFETY: POSIX: `c` points to an object to initialize.
    unsafe {
        c.cast::<u8>()
            .write_bytes(0, core::mem::size_of::<pthread_cond_t>());
        *c.cast::<u8>().add(CLOCK).cast::<clockid_t>() = clock;
    }
    // The block now, where the error can be told.
    // SAFETY: a fresh object of ours.
    if unsafe { block(c) }.is_null() {
        // SAFETY: as above: left fresh (a program that uses it anyway
        // gets the statically initialized one's fallback).
        unsafe { c.cast::<u8>().write_bytes(0, CLOCK) };
        return libc::ENOMEM;
    }
    0
}

/// # Safety
/// POSIX's contract for `pthread_cond_destroy`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_destroy(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: POSIX: a live object.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_destroy(c) };
    }
    // SAFETY: a live object of ours.
    if let Some(b) = unsafe { block_if_set_up(c) } {
        // SAFETY: detached below; waiters still leaving keep it alive.
        unsafe { Block::leave(b, true) };
    }
    // SAFETY: the object is the caller's to reuse now: fresh again.
    unsafe { c.cast::<u8>().write_bytes(0, CLOCK) };
    0
}

/// # Safety
/// POSIX's contract for `pthread_cond_signal`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_signal(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: POSIX: a live object.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_signal(c) };
    }
    // SAFETY: ours.
    if let Some(b) = unsafe { block_if_set_up(c) } {
        // SAFETY: ours: the configuration is one of locklab's locks.
        let m = unsafe { b.held_mutex() };
        b.release_one(None);
        // SAFETY: `m` is 0 or a mutex the caller holds.
        if !unsafe { defer(b, m, false) } {
            b.cv.notify_one();
        }
    }
    0
}

/// # Safety
/// POSIX's contract for `pthread_cond_broadcast`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C" fn pthread_cond_broadcast(c: *mut pthread_cond_t) -> c_int {
    // SAFETY: POSIX: a live object.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_broadcast(c) };
    }
    // SAFETY: ours.
    if let Some(b) = unsafe { block_if_set_up(c) } {
        // SAFETY: as in `pthread_cond_signal`.
        let m = unsafe { b.held_mutex() };
        b.release_all();
        // SAFETY: as in `pthread_cond_signal`.
        if !unsafe { defer(b, m, true) } {
            b.cv.notify_all();
        }
    }
    0
}

// ------------------------------------------------- wakes owed at a release

/// Wakes a thread owes at the release of a mutex it holds: (the mutex's
/// address, the block's), 0 for a free entry. A thread holds few mutexes
/// under which it signals before releasing them; when the entries are
/// taken, a signal wakes at once, as it would without them.
type Owed = [(usize, usize); 8];

thread_local! {
    /// The calling thread's wakes owed ([`defer`], [`pay_owed`]): read and
    /// written only by their thread; no destructor, nothing allocated.
    static OWED: core::cell::Cell<Owed> = const { core::cell::Cell::new([(0, 0); 8]) };
}

/// A signal (`all`: a broadcast) whose waiters use `m`, which the caller
/// holds (0: not so), deferred to `m`'s release: the waiters are chosen now
/// ([`Condvar::choose_one`], [`Condvar::choose_all`]) and woken once the
/// mutex is free ([`pay_owed`]), instead of waking to find it held.
/// Whether it did (`false`: the caller notifies at once).
///
/// # Safety
/// `m` is 0 or a mutex the caller holds (from [`Block::held_mutex`]).
unsafe fn defer(b: &Block, m: usize, all: bool) -> bool {
    let mp = m as *mut pthread_mutex_t;
    if m == 0 {
        return false;
    }
    OWED.with(|o| {
        let mut owed = o.get();
        let Some(free) = owed.iter().position(|e| e.0 == 0) else {
            return false;
        };
        let chosen = if all {
            b.cv.choose_all() > 0
        } else {
            b.cv.choose_one()
        };
        if chosen {
            // The block stays alive until the wake is paid: a chosen waiter
            // is still counted in it now.
            b.refs.fetch_add(1, Ordering::Relaxed);
            owed[free] = (m, b as *const Block as usize);
            o.set(owed);
            // SAFETY: the caller holds `m` (above).
            unsafe { owe_at_release(mp) };
        }
        true
    })
}

/// Pays the wakes the calling thread owes at the release of `m`, which it
/// has just released (`mutex`'s release paths, when `m` was marked by
/// [`owe_at_release`]).
pub fn pay_owed(m: *mut pthread_mutex_t) {
    let mut due = [0usize; 8];
    OWED.with(|o| {
        let mut owed = o.get();
        for (i, e) in owed.iter_mut().enumerate() {
            if e.0 == m as usize {
                due[i] = e.1;
                *e = (0, 0);
            }
        }
        o.set(owed);
    });
    for &b in due.iter().filter(|&&b| b != 0) {
        let b = b as *const Block;
        // SAFETY: counted in by `defer`, so alive until this leaves.
        unsafe {
            (*b).cv.wake_chosen();
            Block::leave(b, false);
        }
    }
}

// ------------------------------------------------------------ the wait

/// glibc's old-style clean-up buffer (`struct _pthread_cleanup_buffer`),
/// which its unwinder runs as it leaves the frame that holds it.
#[repr(C)]
struct CleanupBuffer {
    routine: Option<unsafe extern "C" fn(*mut c_void)>,
    arg: *mut c_void,
    canceltype: c_int,
    prev: *mut CleanupBuffer,
}

extern "C" {
    fn _pthread_cleanup_push(
        buf: *mut CleanupBuffer,
        routine: unsafe extern "C" fn(*mut c_void),
        arg: *mut c_void,
    );
    fn _pthread_cleanup_pop(buf: *mut CleanupBuffer, execute: c_int);
}

// The calls that may start a cancellation's unwinding: declared so that
// Rust lets it pass (it crosses only frames without destructors).
extern "C-unwind" {
    fn pthread_setcanceltype(ty: c_int, old: *mut c_int) -> c_int;
    fn pthread_testcancel();
    #[link_name = "syscall"]
    fn cancellable_syscall(n: c_long, ...) -> c_long;
}

const PTHREAD_CANCEL_ASYNCHRONOUS: c_int = 1;

/// How a wait's sleep ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// Woken, or a signal, or the word had changed: a return.
    Woken,
    /// The deadline passed.
    TimedOut,
}

/// A waiter's state while it sleeps: what [`on_cancel`] needs to undo
/// the wait.
struct Waiting {
    block: *const Block,
    m: *mut pthread_mutex_t,
    target: Mutex,
    ops: &'static MutexOps,
    /// The recursion count the mutex had (ours).
    count: u32,
    epoch: u32,
}

impl Waiting {
    /// The end of a wait, mutex released: the waiter is released, takes
    /// the mutex back, and leaves the condition variable.
    ///
    /// # Safety
    /// The waiter's sleep is over; `m` is the mutex it released.
    unsafe fn finish(&self, passing_on: bool) {
        // SAFETY: the block stays alive while the waiter is counted in.
        let b = unsafe { &*self.block };
        b.release_one(Some(self.epoch));
        match self.target {
            // SAFETY: the caller released this glibc mutex.
            Mutex::Glibc => unsafe {
                real::__pthread_mutex_lock(self.m);
            },
            // SAFETY: take it back with the count it had.
            Mutex::Ours(cell, ty) => unsafe { relock_ours(self.m, cell, ty, self.ops, self.count) },
        }
        if passing_on {
            b.cv.notify_one();
        }
        b.cv.end_wait(self.block.cast());
        // SAFETY: registered at the start of the wait.
        unsafe { Block::leave_wait(self.block) };
    }
}

/// The clean-up glibc's unwinder runs when the waiter is cancelled asleep:
/// the wait ends as a return would, before the caller's handlers run.
///
/// # Safety
/// `arg` is the sleeping waiter's [`Waiting`].
unsafe extern "C" fn on_cancel(arg: *mut c_void) {
    // SAFETY: the caller's contract; its frame is not yet unwound.
    unsafe { (*arg.cast::<Waiting>()).finish(true) };
}

/// Sleeps on `word` while it holds `observed` (until `deadline`), as a
/// cancellation point: asynchronous cancellation around the futex wait,
/// and `w`'s clean-up pushed.
///
/// # Safety
/// `w` is the calling waiter's, live until this returns.
#[inline(never)]
unsafe fn sleep(
    word: &AtomicU32,
    observed: u32,
    deadline: Option<Instant>,
    w: *mut Waiting,
) -> Wake {
    let ts = deadline.map(|d| {
        let left = d.saturating_duration_since(Instant::now());
        timespec {
            // Clamp: a deadline centuries away is "forever".
            tv_sec: left.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_nsec: left.subsec_nanos() as libc::c_long,
        }
    });
    let tp = ts
        .as_ref()
        .map_or(core::ptr::null(), |t| t as *const timespec);
    let mut buf = CleanupBuffer {
        routine: None,
        arg: core::ptr::null_mut(),
        canceltype: 0,
        prev: core::ptr::null_mut(),
    };
    let mut old = 0;
    // SAFETY: the buffer lives in this frame until it is popped below (or
    // the frame is unwound, when glibc runs it and forgets it); the futex
    // wait reads a live word; the cancel type is restored.
    let (r, err) = unsafe {
        _pthread_cleanup_push(&mut buf, on_cancel, w.cast());
        pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &mut old);
        let r = cancellable_syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            observed,
            tp,
        );
        let err = *libc::__errno_location();
        pthread_setcanceltype(old, &mut old);
        _pthread_cleanup_pop(&mut buf, 0);
        (r, err)
    };
    if r != 0 && err == libc::ETIMEDOUT {
        Wake::TimedOut
    } else {
        Wake::Woken
    }
}

/// Waits on a condition variable of ours with `m` (until `deadline`).
///
/// # Safety
/// `c` ours and live; `m` a live mutex the caller holds.
unsafe fn wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    deadline: Option<Instant>,
) -> c_int {
    let ops = config::mutex();
    // SAFETY: the caller's contract.
    let target = unsafe { classify(m, ops) };
    // SAFETY: the caller's contract.
    let b = unsafe { block(c) };
    if b.is_null() {
        // SAFETY: the caller holds `m`.
        return unsafe { poll_wait(m, target, ops, deadline) };
    }
    // SAFETY: set up, and alive while its object is (the caller's).
    let block = unsafe { &*b };
    let Some(epoch) = block.bind(m as usize) else {
        // Waiters with another mutex are not yet released: undefined in
        // POSIX; an error here (the mutex was not released).
        return libc::EINVAL;
    };
    // The binding is ours (above): the condvar's own, keyed by the block,
    // never refuses.
    let Ok(observed) = block.cv.begin_wait(b.cast()) else {
        // One key never makes two mutexes; were it to, an error, not a
        // panic (which would unwind into the C caller from here).
        block.release_one(Some(epoch));
        // SAFETY: registered above.
        unsafe { Block::leave_wait(b) };
        return libc::EINVAL;
    };
    let released = match target {
        // SAFETY: the caller holds `m`, a glibc mutex.
        Mutex::Glibc => match unsafe { real::__pthread_mutex_unlock(m) } {
            0 => Ok(1),
            e => Err(e),
        },
        // SAFETY: ours: release it (whatever its recursion count).
        Mutex::Ours(cell, ty) => unsafe { unlock_ours(m, cell, ty, ops, true) },
    };
    let count = match released {
        Ok(count) => count,
        Err(e) => {
            // Not the caller's to release: undo the registration.
            block.release_one(Some(epoch));
            block.cv.end_wait(b.cast());
            // SAFETY: registered above.
            unsafe { Block::leave_wait(b) };
            return e;
        }
    };
    let mut w = Waiting {
        block: b,
        m,
        target,
        ops,
        count,
        epoch,
    };
    // SAFETY: `w` lives until `sleep` returns.
    let wake = unsafe { sleep(block.cv.futex_word(), observed, deadline, &mut w) };
    // SAFETY: the sleep is over; the caller released `m` above.
    unsafe { w.finish(false) };
    match wake {
        Wake::TimedOut => libc::ETIMEDOUT,
        Wake::Woken => 0,
    }
}

/// A wait on a condition variable that has no block (its first wait found
/// no memory): release the mutex, sleep a little (never past the
/// deadline), take it back, and return as on a spurious wake-up, which
/// POSIX allows; still a cancellation point, acted on with the mutex held.
///
/// # Safety
/// As for [`wait`].
#[cold]
unsafe fn poll_wait(
    m: *mut pthread_mutex_t,
    target: Mutex,
    ops: &'static MutexOps,
    deadline: Option<Instant>,
) -> c_int {
    let count = match target {
        // SAFETY: the caller holds `m`.
        Mutex::Glibc => match unsafe { real::__pthread_mutex_unlock(m) } {
            0 => 1,
            e => return e,
        },
        // SAFETY: as above.
        Mutex::Ours(cell, ty) => match unsafe { unlock_ours(m, cell, ty, ops, true) } {
            Ok(count) => count,
            Err(e) => return e,
        },
    };
    let now = Instant::now();
    let nap = deadline.map_or(Duration::from_millis(1), |d| {
        d.saturating_duration_since(now)
            .min(Duration::from_millis(1))
    });
    let ts = timespec {
        tv_sec: 0,
        tv_nsec: nap.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a raw nanosleep (not the C library's, which is a
    // cancellation point: the mutex is not held here).
    unsafe { libc::syscall(libc::SYS_nanosleep, &ts, core::ptr::null_mut::<timespec>()) };
    match target {
        // SAFETY: released above.
        Mutex::Glibc => unsafe {
            real::__pthread_mutex_lock(m);
        },
        // SAFETY: as above.
        Mutex::Ours(cell, ty) => unsafe { relock_ours(m, cell, ty, ops, count) },
    }
    // SAFETY: the mutex is held again and nothing is left to undo.
    unsafe { pthread_testcancel() };
    match deadline {
        Some(d) if Instant::now() >= d => libc::ETIMEDOUT,
        _ => 0,
    }
}

/// # Safety
/// POSIX's contract for `pthread_cond_wait`.
unsafe fn wait_plain(c: *mut pthread_cond_t, m: *mut pthread_mutex_t) -> c_int {
    // SAFETY: POSIX: live objects.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_wait(c, m) };
    }
    // SAFETY: POSIX: the caller holds `m`.
    unsafe { wait(c, m, None) }
}

/// # Safety
/// POSIX's contract for `pthread_cond_timedwait`.
unsafe fn timedwait_plain(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: POSIX: live objects.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_timedwait(c, m, abs) };
    }
    // SAFETY: ours: its clock word.
    let clock = unsafe { *c.cast::<u8>().add(CLOCK).cast::<clockid_t>() };
    // SAFETY: POSIX: `abs` readable.
    match unsafe { slot::deadline(clock, abs) } {
        // SAFETY: POSIX: the caller holds `m`.
        Ok(d) => unsafe { wait(c, m, Some(d)) },
        Err(e) => e,
    }
}

/// # Safety
/// glibc's contract for `pthread_cond_clockwait`.
unsafe fn clockwait_plain(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: POSIX: live objects.
    if unsafe { glibc_keeps(c) } {
        // SAFETY: passed through as is.
        return unsafe { real::cond_clockwait(c, m, clock, abs) };
    }
    // SAFETY: `abs` readable.
    match unsafe { slot::deadline(clock, abs) } {
        // SAFETY: POSIX: the caller holds `m`.
        Ok(d) => unsafe { wait(c, m, Some(d)) },
        Err(e) => e,
    }
}

/// # Safety
/// POSIX's contract for `pthread_cond_wait`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn pthread_cond_wait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
) -> c_int {
    // SAFETY: the caller's contract.
    let wait = || unsafe { wait_plain(c, m) };
    if profile::on() {
        return profile::cond_wait(m as usize, wait);
    }
    wait()
}

/// # Safety
/// POSIX's contract for `pthread_cond_timedwait`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn pthread_cond_timedwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    let wait = || unsafe { timedwait_plain(c, m, abs) };
    if profile::on() {
        return profile::cond_wait(m as usize, wait);
    }
    wait()
}

/// # Safety
/// glibc's contract for `pthread_cond_clockwait`.
#[cfg_attr(not(test), no_mangle)]
pub unsafe extern "C-unwind" fn pthread_cond_clockwait(
    c: *mut pthread_cond_t,
    m: *mut pthread_mutex_t,
    clock: clockid_t,
    abs: *const timespec,
) -> c_int {
    // SAFETY: the caller's contract.
    let wait = || unsafe { clockwait_plain(c, m, clock, abs) };
    if profile::on() {
        return profile::cond_wait(m as usize, wait);
    }
    wait()
}
