//! The contention profile: with `LOCKLAB_PROFILE=<dir>` set, every lock
//! object the program uses is counted, and at exit the counts go to
//! `<dir>/<pid>.prof` (read by `locklab profile`).
//!
//! **What is counted**, per object (mutex, reader-writer lock, spin lock):
//! acquisitions; contended ones (the first attempt found it taken) and how
//! long they waited; failed `trylock`s and timed-out timed forms (`busy`);
//! how long it was held (from the acquisition's end to the release);
//! shared acquisitions of reader-writer locks apart, with their own waits
//! and holds; condition-variable waits on a mutex and their time; which
//! threads took it (one bit per thread, for the first 64); the first and
//! last acquisition's time; and the return address of the first contended
//! acquisition's caller.
//!
//! **How.** An acquisition first tries the lock at once; only if that
//! fails is the wait timed (two clock reads). Holds are timed for each of
//! an object's first [`EARLY`] acquisitions, then for one in [`SAMPLE`]
//! (a systematic sample, whatever the acquisitions' order), so that an
//! uncontended acquisition and its release usually read no clock at all:
//! on the machines this was built on a clock read costs more than an
//! uncontended lock/unlock pair, and timing every hold tripled that
//! pair's cost. Each sampled hold stands for `SAMPLE` holds: the dump
//! gives the weighted total and the weight, and the holds' total is the
//! weighted total scaled to the acquisitions (exact for an object taken
//! at most `EARLY` times); their maximum is the timed ones'. The clock is
//! the time-stamp
//! counter on x86-64 (`rdtsc`), calibrated against `CLOCK_MONOTONIC` over
//! the whole run at exit; elsewhere `CLOCK_MONOTONIC` itself. Counts are
//! kept in an open-addressed table keyed by the object's address, in
//! memory of its own (`mmap`, 2^16 objects; the objects beyond are left
//! uncounted and their number is reported). Whatever is counted during an
//! exclusive hold is written by the holder alone, under the lock (plain
//! loads and stores of atomics, no read-modify-write); shared holders
//! count with atomic read-modify-writes.
//!
//! **What it changes.** The extra attempt before a blocking acquisition
//! (one more compare-and-swap on a contended line), the clock reads and
//! the table's cache lines: `locklab profile` reports what this costs per
//! uncontended acquisition (docs/programs.md has the figure). Objects are told
//! apart by address: one destroyed and another made at the same address
//! add up. Objects the C library keeps (process-shared, robust,
//! priority-protocol) are not counted; the first such call is noted once
//! on stderr.
//!
//! **A forked child** starts with an empty table (its parent's counts stay
//! the parent's); a process that `exec`s leaves its counts behind (the new
//! program starts its own profile under the same pid, which is what is
//! written).

use core::cell::Cell;
use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};

const RELAXED: Ordering = Ordering::Relaxed;

/// Whether the profile is on (set once, at load).
static ON: AtomicBool = AtomicBool::new(false);

/// Whether this process counts.
#[inline]
pub fn on() -> bool {
    ON.load(RELAXED)
}

/// The kinds of object.
pub const MUTEX: u64 = 1;
/// See [`MUTEX`].
pub const RWLOCK: u64 = 2;
/// See [`MUTEX`].
pub const SPIN: u64 = 3;

/// One object's counts (times in clock ticks until the dump).
#[repr(C, align(64))]
pub struct Entry {
    key: AtomicUsize,
    kind: AtomicU64,
    acq: AtomicU64,
    contended: AtomicU64,
    busy: AtomicU64,
    wait_tot: AtomicU64,
    wait_max: AtomicU64,
    hold_tot: AtomicU64,
    hold_max: AtomicU64,
    held_since: AtomicU64,
    first: AtomicU64,
    last: AtomicU64,
    threads: AtomicU64,
    reads: AtomicU64,
    read_contended: AtomicU64,
    read_wait_tot: AtomicU64,
    read_wait_max: AtomicU64,
    read_hold_tot: AtomicU64,
    read_hold_max: AtomicU64,
    cond_waits: AtomicU64,
    cond_tot: AtomicU64,
    caller: AtomicUsize,
    hold_samples: AtomicU64,
    read_hold_samples: AtomicU64,
    /// The thread pointer of the last thread counted in `threads`.
    last_thread: AtomicUsize,
}

/// Every hold of an object's first this many acquisitions is timed.
pub const EARLY: u64 = 64;

/// After those, one acquisition in this many has its hold timed.
pub const SAMPLE: u64 = 16;

/// What a hold begun by acquisition `n` (from 0) stands for, if timed.
#[inline]
fn weight(n: u64) -> Option<u64> {
    if n < EARLY {
        Some(1)
    } else if n % SAMPLE == 0 {
        Some(SAMPLE)
    } else {
        None
    }
}

/// Objects the table holds.
const SLOTS: usize = 1 << 16;
/// Slots looked at before an object is given up as uncounted.
const PROBES: usize = 64;

static TABLE: AtomicPtr<Entry> = AtomicPtr::new(core::ptr::null_mut());
/// Objects that found no slot.
static OVERFLOW: AtomicU64 = AtomicU64::new(0);
/// Calls on objects the C library keeps.
static GLIBC_ONLY: AtomicU64 = AtomicU64::new(0);
/// Calls that misused a mutex: an unlock of a default-type mutex the
/// caller does not hold (refused with `EPERM`, see [`crate::mutex`]).
static MISUSE: AtomicU64 = AtomicU64::new(0);
/// Threads that took a counted lock.
static THREADS: AtomicU32 = AtomicU32::new(0);
/// The clock and `CLOCK_MONOTONIC` at load (for the calibration).
static START_TICKS: AtomicU64 = AtomicU64::new(0);
static START_NS: AtomicU64 = AtomicU64::new(0);
/// Where the dump goes: the directory's path, NUL-terminated.
static mut DIR: [u8; 4096] = [0; 4096];

/// The clock.
#[inline]
fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: rdtsc has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        mono_ns()
    }
}

fn mono_ns() -> u64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock and a live timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut t) };
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// A fresh table, or null if there is no memory for one.
fn map_table(at: *mut Entry) -> *mut Entry {
    let len = SLOTS * core::mem::size_of::<Entry>();
    let fixed = if at.is_null() { 0 } else { libc::MAP_FIXED };
    // SAFETY: an anonymous private mapping (at `at`, replacing the old
    // table, in a forked child); all zeros is an empty table.
    let p = unsafe {
        libc::mmap(
            at.cast(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | fixed,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        core::ptr::null_mut()
    } else {
        p.cast()
    }
}

/// Turns the profile on if `LOCKLAB_PROFILE` names a directory (at load,
/// before the program runs).
pub fn at_load() {
    // SAFETY: getenv at start-up; the string is copied at once.
    let p = unsafe { libc::getenv(c"LOCKLAB_PROFILE".as_ptr()) };
    if p.is_null() {
        return;
    }
    // SAFETY: a NUL-terminated string from the environment.
    let dir = unsafe { core::ffi::CStr::from_ptr(p) }.to_bytes();
    if dir.is_empty() || dir.len() >= 4096 {
        say(b"locklab-preload: LOCKLAB_PROFILE must name a directory (at most 4095 bytes); not profiling\n");
        return;
    }
    // SAFETY: written once, here, before any thread reads it.
    unsafe {
        let d = &mut *core::ptr::addr_of_mut!(DIR);
        d[..dir.len()].copy_from_slice(dir);
        d[dir.len()] = 0;
    }
    let t = map_table(core::ptr::null_mut());
    if t.is_null() {
        say(b"locklab-preload: no memory for the profile's table; not profiling\n");
        return;
    }
    TABLE.store(t, RELAXED);
    START_NS.store(mono_ns(), RELAXED);
    START_TICKS.store(now(), RELAXED);
    // SAFETY: registers a plain function to run at exit.
    unsafe { libc::atexit(dump_at_exit) };
    ON.store(true, Ordering::Release);
}

/// In a forked child: an empty table.
pub fn forget_in_child() {
    if !on() {
        return;
    }
    let t = TABLE.load(RELAXED);
    if map_table(t).is_null() {
        ON.store(false, RELAXED);
        return;
    }
    OVERFLOW.store(0, RELAXED);
    GLIBC_ONLY.store(0, RELAXED);
    THREADS.store(0, RELAXED);
    IDX.with(|i| i.set(0));
    START_NS.store(mono_ns(), RELAXED);
    START_TICKS.store(now(), RELAXED);
}

fn say(msg: &[u8]) {
    // SAFETY: writes a live buffer to stderr.
    unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
}

/// The slot of `addr`: where its key is, or where it would go.
#[inline]
fn probe(addr: usize, insert: bool) -> Option<&'static Entry> {
    let t = TABLE.load(RELAXED);
    if t.is_null() {
        return None;
    }
    // Fibonacci hashing of the address (objects are at least 4-aligned).
    let mut i = (addr as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - 16);
    for _ in 0..PROBES {
        // SAFETY: `i` < SLOTS, inside the mapping, which lives for good.
        let e = unsafe { &*t.add(i as usize) };
        let k = e.key.load(RELAXED);
        if k == addr {
            return Some(e);
        }
        if k == 0 {
            if !insert {
                return None;
            }
            match e.key.compare_exchange(0, addr, RELAXED, RELAXED) {
                Ok(_) => return Some(e),
                Err(k) if k == addr => return Some(e),
                Err(_) => {}
            }
        }
        i = (i + 1) & (SLOTS as u64 - 1);
    }
    if insert {
        OVERFLOW.fetch_add(1, RELAXED);
    }
    None
}

/// The counts of the object at `addr` (of `kind`), made on first use;
/// `None` if the table has no room for it.
#[inline]
pub fn entry(addr: usize, kind: u64) -> Option<&'static Entry> {
    let e = probe(addr, true)?;
    if e.kind.load(RELAXED) != kind {
        e.kind.store(kind, RELAXED);
    }
    Some(e)
}

/// The counts of the object at `addr`, if it has any.
#[inline]
pub fn find(addr: usize) -> Option<&'static Entry> {
    probe(addr, false)
}

/// A call on an object the C library keeps: counted, and the first noted.
#[cold]
pub fn glibc_only() {
    if GLIBC_ONLY.fetch_add(1, RELAXED) == 0 {
        say(b"locklab-preload: a process-shared, robust or priority-protocol lock is the C library's own and is not profiled (noted once)\n");
    }
}

/// A misuse refused with an error (counted whether or not the profile is
/// on: the count costs nothing on a correct program's path).
#[cold]
pub fn misuse() {
    MISUSE.fetch_add(1, RELAXED);
}

thread_local! {
    /// This thread's number (from 1; 0 before its first counted lock).
    static IDX: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread is finding a caller (locks taken meanwhile do
    /// not look for theirs).
    static FINDING: Cell<bool> = const { Cell::new(false) };
    /// This thread's timed shared holds: (object, start, weight).
    static READS: [Cell<(usize, u64, u64)>; 16] = const { [const { Cell::new((0, 0, 0)) }; 16] };
}

/// The calling thread's pointer: unique among live threads, and cheaper
/// than a thread-local of a shared library (which takes a call to find).
/// Also the owner a default-type mutex keeps ([`crate::mutex`]).
#[inline(always)]
pub(crate) fn thread_pointer() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let tp: usize;
        // SAFETY: the x86-64 ELF TLS ABI keeps the thread pointer itself
        // at %fs:0; the load has no other effect.
        unsafe {
            core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        tp
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // SAFETY: no preconditions.
        unsafe { libc::pthread_self() as usize }
    }
}

/// Adds the calling thread to `e`'s threads, unless it was the last one
/// added (the thread-local lookup of its bit is then skipped).
#[inline]
fn count_thread(e: &Entry, shared: bool) {
    let tp = thread_pointer();
    if e.last_thread.load(RELAXED) == tp {
        return;
    }
    e.last_thread.store(tp, RELAXED);
    let bit = thread_bit();
    let th = e.threads.load(RELAXED);
    if th & bit == 0 {
        if shared {
            e.threads.fetch_or(bit, RELAXED);
        } else {
            e.threads.store(th | bit, RELAXED);
        }
    }
}

/// This thread's bit.
#[inline]
fn thread_bit() -> u64 {
    IDX.with(|c| {
        let mut v = c.get();
        if v == 0 {
            v = THREADS.fetch_add(1, RELAXED) + 1;
            c.set(v);
        }
        1u64 << ((v - 1) % 64)
    })
}

/// `x += v` by the one writer (under the lock).
#[inline]
fn add(x: &AtomicU64, v: u64) {
    x.store(x.load(RELAXED).wrapping_add(v), RELAXED);
}

/// `x = max(x, v)` by the one writer.
#[inline]
fn max(x: &AtomicU64, v: u64) {
    if v > x.load(RELAXED) {
        x.store(v, RELAXED);
    }
}

/// What an attempt at once returned: acquired (0), busy, or an error
/// that ends the call.
#[inline]
fn busy(r: c_int) -> bool {
    r == libc::EBUSY
}

/// An exclusive acquisition: `attempt` tries at once (0, `EBUSY`, or an
/// error); if busy, `wait` blocks (0, or an error such as `ETIMEDOUT`),
/// unless it is `None` (a try form). `fresh` says, after it succeeded,
/// whether it began a hold (not a recursive mutex taken again).
#[inline]
pub fn exclusive(
    e: &Entry,
    attempt: impl FnOnce() -> c_int,
    wait: Option<impl FnOnce() -> c_int>,
    fresh: impl FnOnce() -> bool,
) -> c_int {
    let r = attempt();
    if r == 0 {
        if fresh() {
            acquired(e, None);
        }
        return 0;
    }
    if !busy(r) {
        return r;
    }
    let Some(wait) = wait else {
        e.busy.fetch_add(1, RELAXED);
        return r;
    };
    let caller = find_caller(e);
    let t0 = now();
    let r = wait();
    if r != 0 {
        if r == libc::ETIMEDOUT {
            e.busy.fetch_add(1, RELAXED);
        }
        return r;
    }
    let t = now();
    keep_caller(e, caller);
    if fresh() {
        acquired(e, Some((t, t.saturating_sub(t0))));
    }
    0
}

/// Counts an exclusive acquisition (holding the lock); a contended one
/// brings the time it ended and how long it waited.
#[inline]
fn acquired(e: &Entry, contended: Option<(u64, u64)>) {
    let n = e.acq.load(RELAXED);
    e.acq.store(n + 1, RELAXED);
    if let Some((t, w)) = contended {
        add(&e.contended, 1);
        add(&e.wait_tot, w);
        max(&e.wait_max, w);
        e.last.store(t, RELAXED);
    }
    if weight(n).is_some() {
        let t = match contended {
            Some((t, _)) => t,
            None => now(),
        };
        if e.first.load(RELAXED) == 0 {
            e.first.store(t, RELAXED);
        }
        e.last.store(t, RELAXED);
        e.held_since.store(t, RELAXED);
    }
    count_thread(e, false);
}

/// The holder releases: its hold is counted if it was timed.
#[inline]
pub fn release(e: &Entry) {
    let s = e.held_since.load(RELAXED);
    if s != 0 {
        let h = now().saturating_sub(s);
        e.held_since.store(0, RELAXED);
        // The holder's acquisition was the last counted: its weight.
        let w = weight(e.acq.load(RELAXED).saturating_sub(1)).unwrap_or(SAMPLE);
        add(&e.hold_tot, h * w);
        add(&e.hold_samples, w);
        max(&e.hold_max, h);
    }
}

/// A shared acquisition of the reader-writer lock at `addr`, as
/// [`exclusive`] (readers count with atomic read-modify-writes).
#[inline]
pub fn shared(
    e: &Entry,
    addr: usize,
    attempt: impl FnOnce() -> c_int,
    wait: Option<impl FnOnce() -> c_int>,
) -> c_int {
    let r = attempt();
    let waited = if r == 0 {
        None
    } else if !busy(r) {
        return r;
    } else if let Some(wait) = wait {
        let caller = find_caller(e);
        let t0 = now();
        let r = wait();
        if r != 0 {
            if r == libc::ETIMEDOUT {
                e.busy.fetch_add(1, RELAXED);
            }
            return r;
        }
        let t = now();
        keep_caller(e, caller);
        Some((t, t.saturating_sub(t0)))
    } else {
        e.busy.fetch_add(1, RELAXED);
        return r;
    };
    let n = e.reads.fetch_add(1, RELAXED);
    if let Some((t, w)) = waited {
        e.read_contended.fetch_add(1, RELAXED);
        e.read_wait_tot.fetch_add(w, RELAXED);
        e.read_wait_max.fetch_max(w, RELAXED);
        e.last.store(t, RELAXED);
    }
    if let Some(w) = weight(n) {
        let t = match waited {
            Some((t, _)) => t,
            None => now(),
        };
        let _ = e.first.compare_exchange(0, t, RELAXED, RELAXED);
        e.last.store(t, RELAXED);
        READS.with(|rs| {
            if let Some(c) = rs.iter().find(|c| c.get().0 == 0) {
                c.set((addr, t, w));
            }
        });
    }
    count_thread(e, true);
    0
}

/// A shared holder of the lock at `addr` releases.
#[inline]
pub fn release_shared(e: &Entry, addr: usize) {
    let start = READS.with(|rs| {
        rs.iter().find(|c| c.get().0 == addr).map(|c| {
            let (_, s, w) = c.get();
            c.set((0, 0, 0));
            (s, w)
        })
    });
    if let Some((s, w)) = start {
        let h = now().saturating_sub(s);
        e.read_hold_tot.fetch_add(h * w, RELAXED);
        e.read_hold_samples.fetch_add(w, RELAXED);
        e.read_hold_max.fetch_max(h, RELAXED);
    }
}

/// A condition wait with the mutex at `m`: the hold ends as the wait
/// begins (the hold after it, which no acquisition began, is not timed);
/// the wait is counted on the mutex.
pub fn cond_wait(m: usize, wait: impl FnOnce() -> c_int) -> c_int {
    let t0 = now();
    if let Some(e) = find(m) {
        release(e);
    }
    let r = wait();
    if let Some(e) = entry(m, MUTEX) {
        let t = now();
        add(&e.cond_waits, 1);
        add(&e.cond_tot, t.saturating_sub(t0));
    }
    r
}

// ------------------------------------------------------------ the caller

extern "C" {
    fn _Unwind_Backtrace(
        trace: extern "C" fn(*mut c_void, *mut c_void) -> c_int,
        arg: *mut c_void,
    ) -> c_int;
    fn _Unwind_GetIP(ctx: *mut c_void) -> usize;
}

/// The base address of the module holding `addr` (0 if none).
fn module_of(addr: usize) -> usize {
    // SAFETY: a zeroed Dl_info is valid for dladdr to fill.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables.
    if unsafe { libc::dladdr(addr as *const c_void, &mut info) } == 0 {
        return 0;
    }
    info.dli_fbase as usize
}

/// This library's base address.
fn our_base() -> usize {
    static BASE: AtomicUsize = AtomicUsize::new(0);
    let b = BASE.load(RELAXED);
    if b != 0 {
        return b;
    }
    let b = module_of(our_base as *const () as usize);
    BASE.store(b, RELAXED);
    b
}

extern "C" fn frame(ctx: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: the unwinder's context of a live frame.
    let ip = unsafe { _Unwind_GetIP(ctx) };
    if ip == 0 {
        return 5; // _URC_END_OF_STACK
    }
    if module_of(ip) == our_base() {
        return 0; // _URC_NO_REASON: go on
    }
    // SAFETY: `arg` is the caller's live usize.
    unsafe { *arg.cast::<usize>() = ip };
    5
}

/// The caller of a contended acquisition (the first frame outside this
/// library), if `e` has none yet: found before the wait, so that the
/// stack is not walked while the lock is held, and kept by
/// [`keep_caller`] only once the acquisition succeeded (an error-checking
/// mutex asked again by its holder fails, and is not contended).
#[inline]
fn find_caller(e: &Entry) -> usize {
    if e.caller.load(RELAXED) != 0 {
        return 0;
    }
    walk_to_caller()
}

#[cold]
#[inline(never)]
fn walk_to_caller() -> usize {
    if FINDING.with(|f| f.replace(true)) {
        return 0;
    }
    let mut ip = 0usize;
    // SAFETY: walks this thread's stack; the callback writes to `ip`.
    unsafe { _Unwind_Backtrace(frame, (&mut ip as *mut usize).cast()) };
    FINDING.with(|f| f.set(false));
    ip
}

/// Keeps `ip` as `e`'s first contended caller, unless one was kept first.
#[inline]
fn keep_caller(e: &Entry, ip: usize) {
    if ip != 0 {
        let _ = e.caller.compare_exchange(0, ip, RELAXED, RELAXED);
    }
}

// ------------------------------------------------------------ the dump

extern "C" fn dump_at_exit() {
    if !ON.swap(false, Ordering::AcqRel) {
        return;
    }
    // SAFETY: written once at load.
    let dir = unsafe { core::ffi::CStr::from_ptr(core::ptr::addr_of!(DIR).cast()) };
    let dir = std::path::Path::new(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(dir.to_bytes()),
    );
    if let Err(e) = dump(dir) {
        say(format!(
            "locklab-preload: cannot write the profile to {}: {e}\n",
            dir.display()
        )
        .as_bytes());
    }
}

/// The module (path, base) and the dynamic symbol (name, address) of a
/// code address, as the loader knows them.
fn describe(ip: usize) -> (String, usize, String, usize) {
    // SAFETY: a zeroed Dl_info is valid for dladdr to fill.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: dladdr only reads the loader's tables.
    if unsafe { libc::dladdr(ip as *const c_void, &mut info) } == 0 {
        return ("-".into(), 0, "-".into(), 0);
    }
    let s = |p: *const libc::c_char| {
        if p.is_null() {
            "-".to_string()
        } else {
            // SAFETY: the loader's NUL-terminated strings.
            unsafe { core::ffi::CStr::from_ptr(p) }
                .to_string_lossy()
                .replace(char::is_whitespace, "_")
        }
    };
    let module = if info.dli_fname.is_null() {
        "-".to_string()
    } else {
        // SAFETY: as above.
        unsafe { core::ffi::CStr::from_ptr(info.dli_fname) }
            .to_string_lossy()
            .into_owned()
    };
    (
        module,
        info.dli_fbase as usize,
        s(info.dli_sname),
        info.dli_saddr as usize,
    )
}

/// Writes `<dir>/<pid>.prof`. The format (text, one record a line, times
/// in nanoseconds) is read by `locklab profile`:
///
/// ```text
/// locklab-profile 1
/// pid P / ppid P / exe PATH / lock NAME / rwlock NAME
/// elapsed_ns N / tick_ns F / threads N / overflow N / glibc_only N
/// [misuse N: unlocks of a default mutex the caller did not hold, if any]
/// obj ADDR KIND acq contended busy wait_tot wait_max hold_tot hold_max
///     threads_mask first_ns last_ns reads read_contended read_wait_tot
///     read_wait_max read_hold_tot read_hold_max cond_waits cond_tot
///     hold_weight read_hold_weight
///     caller_ip module_base symbol_addr symbol MODULE-PATH
/// ```
///
/// The hold totals are of the timed holds, each multiplied by the number
/// of holds it stands for (their sum is the weight), not yet scaled to all
/// acquisitions.
fn dump(dir: &std::path::Path) -> std::io::Result<()> {
    use std::fmt::Write as _;
    let t = TABLE.load(RELAXED);
    if t.is_null() {
        return Ok(());
    }
    // The calibration: ticks against nanoseconds over at least 20 ms.
    let mut ns1 = mono_ns();
    let ns0 = START_NS.load(RELAXED);
    if ns1.saturating_sub(ns0) < 20_000_000 {
        std::thread::sleep(std::time::Duration::from_nanos(20_000_000 - (ns1 - ns0)));
        ns1 = mono_ns();
    }
    let ticks = now().saturating_sub(START_TICKS.load(RELAXED)).max(1);
    let tick_ns = (ns1 - ns0) as f64 / ticks as f64;
    let ns = |x: u64| (x as f64 * tick_ns).round() as u64;
    let since = |x: u64| {
        if x == 0 {
            0
        } else {
            ns(x.saturating_sub(START_TICKS.load(RELAXED)))
        }
    };
    let name = |o: &[u8]| String::from_utf8_lossy(o).into_owned();
    let pid = std::process::id();
    let mut out = String::new();
    let _ = writeln!(out, "locklab-profile 1");
    let _ = writeln!(out, "pid {pid}");
    // SAFETY: getppid cannot fail.
    let _ = writeln!(out, "ppid {}", unsafe { libc::getppid() });
    let exe = std::fs::read_link("/proc/self/exe")
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| "-".into());
    let _ = writeln!(out, "exe {exe}");
    let _ = writeln!(out, "lock {}", name(crate::config::mutex().name.as_bytes()));
    let _ = writeln!(
        out,
        "rwlock {}",
        name(crate::config::rwlock().name.as_bytes())
    );
    let _ = writeln!(out, "elapsed_ns {}", ns1 - ns0);
    let _ = writeln!(out, "tick_ns {tick_ns:.6}");
    let _ = writeln!(out, "threads {}", THREADS.load(RELAXED));
    let _ = writeln!(out, "overflow {}", OVERFLOW.load(RELAXED));
    let _ = writeln!(out, "glibc_only {}", GLIBC_ONLY.load(RELAXED));
    // Written only when there was one, so that a reader that predates the
    // record still reads the profile of a correct program.
    let misuse = MISUSE.load(RELAXED);
    if misuse > 0 {
        let _ = writeln!(out, "misuse {misuse}");
    }
    for i in 0..SLOTS {
        // SAFETY: inside the mapping.
        let e = unsafe { &*t.add(i) };
        let key = e.key.load(RELAXED);
        let g = |x: &AtomicU64| x.load(RELAXED);
        if key == 0 || g(&e.acq) + g(&e.reads) + g(&e.busy) + g(&e.cond_waits) == 0 {
            continue;
        }
        let caller = e.caller.load(RELAXED);
        let (module, base, sym, saddr) = if caller == 0 {
            ("-".to_string(), 0, "-".to_string(), 0)
        } else {
            describe(caller)
        };
        let _ = writeln!(
            out,
            "obj {key:#x} {} {} {} {} {} {} {} {} {:#x} {} {} {} {} {} {} {} {} {} {} {} {} {caller:#x} {base:#x} {saddr:#x} {sym} {module}",
            g(&e.kind),
            g(&e.acq),
            g(&e.contended),
            g(&e.busy),
            ns(g(&e.wait_tot)),
            ns(g(&e.wait_max)),
            ns(g(&e.hold_tot)),
            ns(g(&e.hold_max)),
            g(&e.threads),
            since(g(&e.first)),
            since(g(&e.last)),
            g(&e.reads),
            g(&e.read_contended),
            ns(g(&e.read_wait_tot)),
            ns(g(&e.read_wait_max)),
            ns(g(&e.read_hold_tot)),
            ns(g(&e.read_hold_max)),
            g(&e.cond_waits),
            ns(g(&e.cond_tot)),
            g(&e.hold_samples),
            g(&e.read_hold_samples),
        );
    }
    let tmp = dir.join(format!("{pid}.prof.partial"));
    std::fs::write(&tmp, out)?;
    std::fs::rename(&tmp, dir.join(format!("{pid}.prof")))
}
