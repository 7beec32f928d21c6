//! `seqlock`: the sequence lock.
//!
//! # Idea
//!
//! Readers take no lock at all. A writer makes a sequence counter odd,
//! writes the data, and makes the counter even again; a reader reads the
//! counter, copies the data, and reads the counter again, and keeps its copy
//! only if both reads saw the same even value (otherwise a writer was, or
//! may have been, at work, and the copy may be torn: it retries). Readers
//! write nothing, so any number of them read in parallel without moving a
//! cache line, and they never delay a writer. The price: a reader may retry
//! without bound while writers keep writing (readers can starve), and every
//! read copies the whole value out (a reader cannot look at the data in
//! place, since it may be torn until validated): it suits small `Copy`
//! values.
//! Writers are serialized among themselves by a ticket lock
//! ([`RawTicket`]), so they are served in FIFO order.
//!
//! Sources: Lameter's seqlock in Linux (`include/linux/seqlock.h`, from
//! 2.5.60, first for `xtime`): `seqcount_t` with `read_seqcount_begin`
//! (wait for an even count), `read_seqcount_retry`,
//! `write_seqcount_begin`/`end`, and `seqlock_t` = a sequence count plus a
//! spinlock for writers. Seed 001 (Bueso) lists seqlocks among the
//! read-mostly primitives that make the readers' side nearly free at the
//! writers' expense. The orderings follow Boehm, "Can Seqlocks Get Along
//! With Programming Language Memory Models?" (MSPC 2012).
//!
//! # No data race: the data is copied by atomics
//!
//! A reader's copy races with a writer's stores by design, and in Rust a
//! plain read that races with a write is undefined behaviour even if the
//! result is thrown away. So the data is read and written only through
//! atomic operations (Boehm's "make the data atomic"), chunk by chunk: as
//! many 8-byte chunks as fit, then 4-, 2- and 1-byte chunks for the tail,
//! always the same split for a given `T`, so no location is accessed by
//! atomics of two sizes.
//!
//! A `Copy` type may have padding, whose bytes are uninitialised, and
//! loading uninitialised bytes as a `u64` (what `AtomicU64` would do) is
//! undefined behaviour too. So outside loom the chunks are accessed with the
//! [`atomic-maybe-uninit`](atomic_maybe_uninit) crate, whose atomics move
//! `MaybeUninit` integers (by inline assembly) and so keep uninitialised
//! bytes uninitialised instead of asserting them to be integers. The copy is
//! a `MaybeUninit<T>` until validated; a validated copy holds exactly the
//! bytes of one value some writer stored (see below), so it is a valid `T`.
//! Hence every `T: Copy` works ([`SeqData`] is implemented for all of them).
//!
//! Miri executes no inline assembly. So under Miri the chunks are copied
//! with the core atomics of the same widths over the same bytes (same
//! split, same orderings, so Miri checks the algorithm's accesses for data
//! races and the orderings above). Those atomics hold integers only: for a
//! value with padding Miri reports the read of its uninitialised bytes,
//! rightly, as that is undefined behaviour for them. So values with padding
//! are checked natively only (the tests say so); every other value runs
//! through the same code as natively, minus the assembly.
//!
//! Loom's atomics are plain integers and cannot hold uninitialised bytes,
//! and `atomic-maybe-uninit` is invisible to loom. So under `--cfg loom` the
//! data is kept in loom `AtomicU64` words (same algorithm, same orderings,
//! checked by loom) and [`SeqData`] is implemented only for types without
//! padding: the primitive integers and arrays of them.
//!
//! # Orderings (Boehm 2012)
//!
//! Writer (holding the writer lock): count `s` to `s + 1` (odd), `Relaxed`;
//! `fence(Release)`; data stores, `Relaxed`; count to `s + 2`, `Release`.
//! Reader: count load `Acquire` (retry if odd); data loads, `Relaxed`;
//! `fence(Acquire)`; count load `Relaxed`; keep the copy iff the two count
//! loads agree.
//!
//! - Why a validated copy is consistent. The first count load reads an even
//!   value `v` stored (`Release`) by the `write_end` of some write W, or the
//!   initial value: that `Acquire` load synchronizes with it, so W's data
//!   stores happen before the reader's data loads, which therefore read W's
//!   values or later ones, never earlier ones. Suppose a data load read a
//!   value of a later write W'. W' made the count odd and then issued its
//!   `fence(Release)` before storing that value; the reader's data load read
//!   it and is followed by the reader's `fence(Acquire)`. So the two fences
//!   synchronize, and W's odd store to the count happens before the
//!   reader's second count load, which must then read that odd value or a
//!   later one, not `v`: the reader retries. So a copy kept read every chunk
//!   from W, and W alone.
//! - Why each piece is needed. Without the reader's `fence(Acquire)` (or
//!   with it before the data loads) nothing orders the second count load
//!   after the data loads: it may read the stale `v` while a data load read
//!   the next write's value, and the torn copy is kept. Without the writer's
//!   `fence(Release)` the odd count may become visible after the data
//!   stores, with the same result. Without `Acquire` on the first load (or
//!   `Release` on the final increment), the reader's data loads are not
//!   ordered after W's stores, and may read older values than W's while the
//!   count says W. The loom model of this lock fails when the fence is
//!   dropped from either side.
//! - The data accesses can then be `Relaxed`: the fences do the ordering.
//!   On x86 every one of these is a plain `mov` (the fences only restrain
//!   the compiler); on AArch64 the reader's fence is one `dmb ishld`.
//! - The writer's increments read the count with a `Relaxed` load and write
//!   with a store rather than a read-modify-write: writers are serialized by
//!   the writer lock (whose `Acquire`/`Release` orders one writer's count
//!   stores before the next one's loads), so nobody else changes the count.
//!
//! The counter wraps: a reader stalled between its two loads for exactly a
//! multiple of 2³¹ writes would accept a torn copy. Linux's 32-bit counter
//! takes the same risk.

use crate::info::{Described, Family, LockInfo};
use crate::spin::{RawTicket, Ticket};
use crate::util::sync::{fence, spin_loop, AtomicU32, Ordering};
use core::mem::MaybeUninit;

/// A raw sequence counter, for callers that protect their own data (which
/// they must read and write through atomics: a plain read that races with a
/// write is undefined behaviour in Rust, even when the reader then retries).
///
/// Reader:
///
/// ```
/// # use locklab::SeqCount;
/// # use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
/// # let (seq, a, b) = (SeqCount::new(), AtomicU64::new(0), AtomicU64::new(0));
/// let (x, y) = loop {
///     let s = seq.read_begin();
///     let (x, y) = (a.load(Relaxed), b.load(Relaxed));
///     if !seq.read_retry(s) {
///         break (x, y);
///     }
/// };
/// # assert_eq!((x, y), (0, 0));
/// ```
///
/// Writer (writers must be serialized by the caller, e.g. by a mutex):
///
/// ```
/// # use locklab::SeqCount;
/// # use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
/// # let (seq, a, b) = (SeqCount::new(), AtomicU64::new(0), AtomicU64::new(0));
/// seq.write_begin();
/// a.store(1, Relaxed);
/// b.store(1, Relaxed);
/// seq.write_end();
/// ```
#[derive(Debug)]
pub struct SeqCount {
    /// Odd while a write is in progress; each write adds two.
    seq: AtomicU32,
}

impl SeqCount {
    crate::loom_const_fn! {
        /// A counter at zero: no write in progress.
        pub fn new() -> Self {
            Self { seq: AtomicU32::new(0) }
        }
    }

    /// Starts a read: waits until no write is in progress and returns the
    /// count to pass to [`read_retry`](Self::read_retry). The data loads
    /// that follow may be `Relaxed`.
    #[inline]
    pub fn read_begin(&self) -> u32 {
        loop {
            if let Some(s) = self.try_read_begin() {
                return s;
            }
            spin_loop();
        }
    }

    /// Starts a read unless a write is in progress right now.
    #[inline]
    pub fn try_read_begin(&self) -> Option<u32> {
        let s = self.seq.load(Ordering::Acquire);
        (s & 1 == 0).then_some(s)
    }

    /// Ends a read begun with `start`: true if a write may have overlapped
    /// it, and the data read since must be thrown away.
    #[inline]
    pub fn read_retry(&self, start: u32) -> bool {
        // Orders the data loads before the count load (module docs).
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) != start
    }

    /// Starts a write: makes the count odd. The data stores that follow may
    /// be `Relaxed`.
    ///
    /// Writers must be serialized (at most one between `write_begin` and
    /// `write_end` at a time); otherwise readers may accept torn data.
    #[inline]
    pub fn write_begin(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        debug_assert!(s & 1 == 0, "seqcount: write_begin inside a write");
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        // Orders the odd count before the data stores (module docs).
        fence(Ordering::Release);
    }

    /// Ends a write: makes the count even again, publishing the data.
    #[inline]
    pub fn write_end(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        debug_assert!(s & 1 == 1, "seqcount: write_end outside a write");
        self.seq.store(s.wrapping_add(1), Ordering::Release);
    }

    /// The current count (a momentary snapshot; odd while a write is in
    /// progress).
    #[inline]
    pub fn sequence(&self) -> u32 {
        self.seq.load(Ordering::Relaxed)
    }
}

impl Default for SeqCount {
    fn default() -> Self {
        Self::new()
    }
}

/// Types a [`SeqLock`] can hold.
///
/// Outside loom this is every `Copy` type (padding is handled, see the
/// module documentation). Under `--cfg loom` the data lives in loom's integer
/// atomics, so only types with no uninitialised bytes qualify: the primitive
/// integers and arrays of them.
///
/// # Safety
/// Under loom: every byte of every value of the type is initialised.
pub unsafe trait SeqData: Copy {}

// SAFETY: outside loom no requirement: padding is carried by
// `atomic-maybe-uninit`.
#[cfg(not(loom))]
unsafe impl<T: Copy> SeqData for T {}

#[cfg(loom)]
mod loom_data {
    use super::SeqData;
    macro_rules! no_padding {
        ($($t:ty)*) => {
            // SAFETY: primitive integers have no padding.
            $(unsafe impl SeqData for $t {})*
        };
    }
    no_padding!(u8 u16 u32 u64 usize i8 i16 i32 i64 isize);
    // SAFETY: an array has no padding between or around its elements.
    unsafe impl<T: SeqData, const N: usize> SeqData for [T; N] {}
}

/// Sequence lock: lock-free readers that retry, writers serialized by a
/// ticket lock. See the module documentation.
///
/// ```
/// let l = locklab::SeqLock::new((1u32, 2u32));
/// l.write(|v| v.1 += 40);
/// assert_eq!(l.read(), (1, 42));
/// ```
///
/// Values with padding, such as `(u8, u64)`, work as well ([`SeqData`]);
/// the example has none so that it runs under Miri too, which cannot check
/// them (module documentation).
pub struct SeqLock<T> {
    seq: SeqCount,
    /// Serializes writers.
    writer: RawTicket,
    data: Cells<T>,
}

// SAFETY: sharing a `SeqLock` moves copies of `T` between threads (a value
// stored on one is copied out on another), so `T: Send` is required, and
// enough: no `&T` into the lock is ever handed out. The data itself is only
// accessed through atomics.
unsafe impl<T: Send> Sync for SeqLock<T> {}

/// Releases the writer lock when dropped (also if the writer's closure
/// panics, before the count was touched).
struct WriterGuard<'a> {
    lock: &'a RawTicket,
    ticket: Ticket,
}

impl Drop for WriterGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the guard is made only right after taking the lock with
        // this ticket.
        unsafe { self.lock.release(self.ticket) }
    }
}

impl<T: SeqData> SeqLock<T> {
    /// A lock holding `value`.
    #[cfg(not(loom))]
    pub const fn new(value: T) -> Self {
        Self {
            seq: SeqCount::new(),
            writer: RawTicket::new(),
            data: Cells::new(value),
        }
    }

    /// A lock holding `value`.
    #[cfg(loom)]
    pub fn new(value: T) -> Self {
        Self {
            seq: SeqCount::new(),
            writer: RawTicket::new(),
            data: Cells::new(value),
        }
    }

    /// A consistent copy of the value, retrying while writes overlap.
    #[inline]
    pub fn read(&self) -> T {
        loop {
            let s = self.seq.read_begin();
            let copy = self.data.load();
            if !self.seq.read_retry(s) {
                // SAFETY: no write overlapped the copy, so it holds exactly
                // the bytes of one stored value (module docs).
                return unsafe { copy.assume_init() };
            }
        }
    }

    /// A consistent copy of the value, or `None` if a write is in progress
    /// or overlapped this one attempt.
    #[inline]
    pub fn try_read(&self) -> Option<T> {
        let s = self.seq.try_read_begin()?;
        let copy = self.data.load();
        if self.seq.read_retry(s) {
            return None;
        }
        // SAFETY: as in `read`.
        Some(unsafe { copy.assume_init() })
    }

    /// Changes the value: `f` gets a copy of the current value to modify,
    /// which is then published. Writers wait for each other (FIFO); readers
    /// never wait for `f`, only for the publication. If `f` panics, nothing
    /// is published.
    pub fn write<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let _g = self.lock_writer();
        // SAFETY: writers are serialized and each stores a whole value
        // before the next one takes the writer lock, whose `Acquire` makes
        // that store visible: this load reads exactly the last value stored.
        let mut value = unsafe { self.data.load().assume_init() };
        let r = f(&mut value);
        self.publish(value);
        r
    }

    /// Replaces the value.
    pub fn store(&self, value: T) {
        let _g = self.lock_writer();
        self.publish(value);
    }

    /// The value, from an owned lock.
    pub fn into_inner(self) -> T {
        // SAFETY: no other thread can be writing: we own the lock.
        unsafe { self.data.load().assume_init() }
    }

    fn lock_writer(&self) -> WriterGuard<'_> {
        let ticket = self.writer.acquire();
        WriterGuard {
            lock: &self.writer,
            ticket,
        }
    }

    /// Stores `value` under the sequence count. The caller holds the writer
    /// lock.
    #[inline]
    fn publish(&self, value: T) {
        self.seq.write_begin();
        self.data.store(MaybeUninit::new(value));
        self.seq.write_end();
    }
}

impl<T: SeqData + Default> Default for SeqLock<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T: SeqData + core::fmt::Debug> core::fmt::Debug for SeqLock<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let mut d = f.debug_struct("SeqLock");
        match self.try_read() {
            Some(v) => d.field("data", &v),
            None => d.field("data", &format_args!("<being written>")),
        };
        d.finish()
    }
}

impl<T> Described for SeqLock<T> {
    const INFO: LockInfo = LockInfo {
        name: "seqlock",
        family: Family::ReaderWriter,
        // Writers are FIFO among themselves, but readers retry without bound
        // while writers keep writing.
        fair: false,
        blocking: false,
        numa_aware: false,
        source: "Lameter's seqlock, Linux include/linux/seqlock.h; Boehm, Can Seqlocks Get Along With Programming Language Memory Models?, MSPC 2012; Bueso (seed 001)",
        summary: "writers make a sequence count odd, write, make it even; readers copy the data by atomics and retry if the count was odd or changed",
    };
}

/// The data, copied in and out by `Relaxed` atomics chunk by chunk (module
/// docs): outside loom `atomic-maybe-uninit` over the value's own bytes.
#[cfg(not(loom))]
#[repr(C)]
struct Cells<T> {
    /// Aligns `value` for 8-byte atomics (the struct's alignment is at least
    /// that of its fields, and a zero-length array takes no room).
    _align: [atomic_maybe_uninit::AtomicMaybeUninit<u64>; 0],
    value: core::cell::UnsafeCell<MaybeUninit<T>>,
}

#[cfg(not(loom))]
mod chunks {
    #[cfg(not(miri))]
    use atomic_maybe_uninit::raw::{AtomicLoad, AtomicStore};
    #[cfg(not(miri))]
    use atomic_maybe_uninit::AtomicMaybeUninit;
    #[cfg(not(miri))]
    use core::mem::MaybeUninit;
    use core::sync::atomic::Ordering;

    /// Calls `f(offset, width)` for the chunks of a `size`-byte value: 8-byte
    /// chunks, then at most one each of 4, 2 and 1 bytes. From an 8-aligned
    /// base every chunk is aligned to its width.
    #[inline(always)]
    pub(super) fn split(size: usize, mut f: impl FnMut(usize, usize)) {
        let mut off = 0;
        while size - off >= 8 {
            f(off, 8);
            off += 8;
        }
        for width in [4, 2, 1] {
            if size - off >= width {
                f(off, width);
                off += width;
            }
        }
        debug_assert_eq!(off, size);
    }

    /// Copies one `P`-sized chunk at `off` from shared `cell` to private
    /// `out` with a `Relaxed` atomic load.
    ///
    /// # Safety
    /// `cell + off` is valid, aligned for `P`, and only ever accessed by
    /// `P`-sized atomics while shared; `out + off` is valid for writes.
    #[cfg(not(miri))]
    #[inline(always)]
    pub(super) unsafe fn load<P: AtomicLoad>(cell: *mut u8, out: *mut u8, off: usize) {
        // SAFETY: by the caller.
        unsafe {
            let a = AtomicMaybeUninit::<P>::from_ptr(cell.add(off).cast::<MaybeUninit<P>>());
            let v = a.load(Ordering::Relaxed);
            out.add(off).cast::<MaybeUninit<P>>().write_unaligned(v);
        }
    }

    /// Copies one `P`-sized chunk at `off` from private `src` to shared
    /// `cell` with a `Relaxed` atomic store.
    ///
    /// # Safety
    /// As for [`load`], with `src + off` valid for reads.
    #[cfg(not(miri))]
    #[inline(always)]
    pub(super) unsafe fn store<P: AtomicStore>(cell: *mut u8, src: *const u8, off: usize) {
        // SAFETY: by the caller.
        unsafe {
            let v = src.add(off).cast::<MaybeUninit<P>>().read_unaligned();
            let a = AtomicMaybeUninit::<P>::from_ptr(cell.add(off).cast::<MaybeUninit<P>>());
            a.store(v, Ordering::Relaxed);
        }
    }

    /// Under Miri: a chunk width with its core atomic (module docs).
    #[cfg(miri)]
    pub(super) trait Chunk: Sized {
        /// # Safety
        /// `p` is valid and aligned, and only accessed by atomics of this
        /// width while shared.
        unsafe fn load_relaxed(p: *mut Self) -> Self;
        /// # Safety
        /// As for `load_relaxed`.
        unsafe fn store_relaxed(p: *mut Self, v: Self);
    }

    #[cfg(miri)]
    macro_rules! chunk {
        ($($t:ty => $a:ty),*) => {$(
            impl Chunk for $t {
                #[inline(always)]
                unsafe fn load_relaxed(p: *mut Self) -> Self {
                    // SAFETY: by the caller.
                    unsafe { <$a>::from_ptr(p) }.load(Ordering::Relaxed)
                }
                #[inline(always)]
                unsafe fn store_relaxed(p: *mut Self, v: Self) {
                    // SAFETY: by the caller.
                    unsafe { <$a>::from_ptr(p) }.store(v, Ordering::Relaxed)
                }
            }
        )*};
    }
    #[cfg(miri)]
    use core::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8};
    #[cfg(miri)]
    chunk!(u8 => AtomicU8, u16 => AtomicU16, u32 => AtomicU32, u64 => AtomicU64);

    /// [`load`] under Miri: the chunk is read as an integer, so it must be
    /// initialised (module docs).
    ///
    /// # Safety
    /// As for the native `load`, and every byte of the chunk is initialised.
    #[cfg(miri)]
    #[inline(always)]
    pub(super) unsafe fn load<P: Chunk>(cell: *mut u8, out: *mut u8, off: usize) {
        // SAFETY: by the caller.
        unsafe {
            let v = P::load_relaxed(cell.add(off).cast::<P>());
            out.add(off).cast::<P>().write_unaligned(v);
        }
    }

    /// [`store`] under Miri, with the same extra condition as [`load`].
    ///
    /// # Safety
    /// As for the native `store`, and every byte of the chunk is
    /// initialised.
    #[cfg(miri)]
    #[inline(always)]
    pub(super) unsafe fn store<P: Chunk>(cell: *mut u8, src: *const u8, off: usize) {
        // SAFETY: by the caller.
        unsafe {
            let v = src.add(off).cast::<P>().read_unaligned();
            P::store_relaxed(cell.add(off).cast::<P>(), v);
        }
    }
}

#[cfg(not(loom))]
impl<T> Cells<T> {
    const fn new(value: T) -> Self {
        Self {
            _align: [],
            value: core::cell::UnsafeCell::new(MaybeUninit::new(value)),
        }
    }

    /// A copy made of `Relaxed` atomic loads; torn if a store overlaps.
    #[inline]
    fn load(&self) -> MaybeUninit<T> {
        let mut out = MaybeUninit::<T>::uninit();
        let cell = self.value.get().cast::<u8>();
        let dst = out.as_mut_ptr().cast::<u8>();
        chunks::split(size_of::<T>(), |off, width| {
            // SAFETY: `split` keeps every chunk inside the value and aligned
            // (`value` is 8-aligned by `_align`), and always splits the same
            // way, so each location is only accessed by one width of atomic.
            unsafe {
                match width {
                    8 => chunks::load::<u64>(cell, dst, off),
                    4 => chunks::load::<u32>(cell, dst, off),
                    2 => chunks::load::<u16>(cell, dst, off),
                    _ => chunks::load::<u8>(cell, dst, off),
                }
            }
        });
        out
    }

    /// Stores `value` with `Relaxed` atomic stores.
    #[inline]
    fn store(&self, value: MaybeUninit<T>) {
        let cell = self.value.get().cast::<u8>();
        let src = value.as_ptr().cast::<u8>();
        chunks::split(size_of::<T>(), |off, width| {
            // SAFETY: as in `load`.
            unsafe {
                match width {
                    8 => chunks::store::<u64>(cell, src, off),
                    4 => chunks::store::<u32>(cell, src, off),
                    2 => chunks::store::<u16>(cell, src, off),
                    _ => chunks::store::<u8>(cell, src, off),
                }
            }
        });
    }
}

/// The data under loom: loom `AtomicU64` words holding the value's bytes
/// (module docs; `T: SeqData` has no uninitialised bytes there).
#[cfg(loom)]
struct Cells<T> {
    words: Box<[crate::util::sync::AtomicU64]>,
    _value: core::marker::PhantomData<T>,
}

#[cfg(loom)]
impl<T: SeqData> Cells<T> {
    const WORDS: usize = size_of::<T>().div_ceil(8);

    /// The bytes of word `i` of `*v` (zero past the value's end).
    fn word(v: *const T, i: usize) -> u64 {
        let mut b = [0u8; 8];
        let n = (size_of::<T>() - 8 * i).min(8);
        // SAFETY: bytes `8i..8i+n` lie inside `*v`, and are initialised
        // (`SeqData` under loom).
        unsafe { core::ptr::copy_nonoverlapping(v.cast::<u8>().add(8 * i), b.as_mut_ptr(), n) };
        u64::from_ne_bytes(b)
    }

    fn new(value: T) -> Self {
        let words = (0..Self::WORDS)
            .map(|i| crate::util::sync::AtomicU64::new(Self::word(&value, i)))
            .collect();
        Self {
            words,
            _value: core::marker::PhantomData,
        }
    }

    fn load(&self) -> MaybeUninit<T> {
        let mut out = MaybeUninit::<T>::uninit();
        for (i, w) in self.words.iter().enumerate() {
            let b = w.load(Ordering::Relaxed).to_ne_bytes();
            let n = (size_of::<T>() - 8 * i).min(8);
            // SAFETY: bytes `8i..8i+n` lie inside `out`.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    b.as_ptr(),
                    out.as_mut_ptr().cast::<u8>().add(8 * i),
                    n,
                )
            };
        }
        out
    }

    fn store(&self, value: MaybeUninit<T>) {
        for (i, w) in self.words.iter().enumerate() {
            w.store(Self::word(value.as_ptr(), i), Ordering::Relaxed);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{iters, threads, Watchdog, HANG};
    use std::sync::atomic::AtomicBool;

    const WORDS: usize = 8;

    /// A writer stores `[i; 8]` for i = 1..=`writes` while `readers`
    /// threads read: every copy must have all eight words equal (a torn read
    /// mixes two writes) and, per reader, never go back.
    /// Sizes are native ones, scaled down under Miri.
    fn torn_read_torture(readers: usize, writes: u64, use_store: bool) {
        let (readers, writes) = (threads(readers), iters(writes));
        let _w = Watchdog::new("seqlock torn_read_torture", HANG);
        let l = SeqLock::new([0u64; WORDS]);
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..readers {
                s.spawn(|| {
                    let mut last = 0;
                    let mut reads = 0u64;
                    loop {
                        let finished = done.load(Ordering::Acquire);
                        let v = l.read();
                        assert!(v.iter().all(|&w| w == v[0]), "torn read: {v:?}");
                        assert!(v[0] >= last, "went back from {last} to {}", v[0]);
                        last = v[0];
                        reads += 1;
                        if finished {
                            // Read after the writer finished: the last value.
                            assert_eq!(v[0], writes);
                            break;
                        }
                        if reads % 256 == 0 {
                            std::thread::yield_now();
                        }
                    }
                });
            }
            s.spawn(|| {
                for i in 1..=writes {
                    if use_store {
                        l.store([i; WORDS]);
                    } else {
                        l.write(|v| {
                            assert!(v.iter().all(|&w| w == i - 1), "writer saw {v:?}");
                            *v = [i; WORDS];
                        });
                    }
                    if i % 256 == 0 {
                        std::thread::yield_now();
                    }
                }
                done.store(true, Ordering::Release);
            });
        });
        assert_eq!(l.into_inner(), [writes; WORDS]);
    }

    #[test]
    fn readers_never_see_a_torn_value_written_by_write() {
        torn_read_torture(3, 500_000, false);
    }

    #[test]
    fn readers_never_see_a_torn_value_written_by_store() {
        torn_read_torture(3, 500_000, true);
    }

    /// Two writers add to one counter through `write` (lost updates would
    /// show if they overlapped), while a reader checks the pair invariant.
    #[test]
    fn writers_are_serialized() {
        let _w = Watchdog::new("seqlock writers_are_serialized", HANG);
        const PER_WRITER: u64 = iters(50_000);
        let l = SeqLock::new((0u64, 0u64));
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    let (a, b) = l.read();
                    assert_eq!(a, b, "torn pair");
                }
            });
            let ws: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        for _ in 0..PER_WRITER {
                            l.write(|(a, b)| {
                                *a += 1;
                                *b += 1;
                            });
                        }
                    })
                })
                .collect();
            for w in ws {
                w.join().unwrap();
            }
            done.store(true, Ordering::Relaxed);
        });
        assert_eq!(l.into_inner(), (2 * PER_WRITER, 2 * PER_WRITER));
    }

    #[test]
    fn try_read_fails_while_a_write_is_in_progress() {
        let l = SeqLock::new(3u32);
        assert_eq!(l.try_read(), Some(3));
        l.seq.write_begin();
        assert_eq!(l.try_read(), None, "try_read during a write");
        l.seq.write_end();
        assert_eq!(l.try_read(), Some(3));
    }

    #[test]
    fn a_write_between_begin_and_retry_forces_a_retry() {
        let c = SeqCount::new();
        let s = c.read_begin();
        assert!(!c.read_retry(s), "no write, no retry");
        c.write_begin();
        assert_eq!(c.try_read_begin(), None, "odd count: a write in progress");
        assert!(c.read_retry(s), "retry while a write is in progress");
        c.write_end();
        assert!(c.read_retry(s), "retry after an overlapping write");
        let s2 = c.read_begin();
        assert_eq!(s2, s.wrapping_add(2));
        assert!(!c.read_retry(s2));
        assert_eq!(c.sequence(), s2);
    }

    /// Values with padding and with sizes that need every chunk width.
    #[test]
    fn values_of_every_shape_round_trip() {
        // Fields of every width and no padding: 16 bytes.
        #[derive(Clone, Copy, Debug, PartialEq)]
        #[repr(C)]
        struct Flat {
            a: u64,
            b: u32,
            c: u16,
            d: u8,
            e: i8,
        }
        let f = SeqLock::new(Flat {
            a: 1,
            b: 2,
            c: 3,
            d: 4,
            e: -5,
        });
        f.write(|v| v.b += 40);
        assert_eq!(f.read().b, 42);
        assert_eq!((f.read().a, f.read().e), (1, -5));

        let odd = SeqLock::new([1u8, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
        odd.store([9; 15]);
        assert_eq!(odd.read(), [9; 15]);
        odd.write(|v| v[14] = 0);
        assert_eq!(odd.try_read().unwrap()[13..], [9, 0]);

        let unit = SeqLock::new(());
        unit.store(());
        unit.read();
    }

    /// Values with padding: uninitialised bytes, carried by
    /// `atomic-maybe-uninit`.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri runs no inline assembly, and core atomics cannot carry padding (module docs)"
    )]
    fn padded_values_round_trip() {
        #[derive(Clone, Copy, Debug, PartialEq)]
        struct Padded {
            a: u8,
            b: u64,
            c: u16,
        }
        let p = SeqLock::new(Padded { a: 1, b: 2, c: 3 });
        p.write(|v| v.b += 40);
        assert_eq!(p.read(), Padded { a: 1, b: 42, c: 3 });

        let tuple = SeqLock::new((1u16, 'x', 2.5f32, true));
        tuple.write(|t| t.1 = 'y');
        assert_eq!(tuple.read(), (1, 'y', 2.5, true));
        assert_eq!(
            format!("{tuple:?}"),
            "SeqLock { data: (1, 'y', 2.5, true) }"
        );
    }

    /// A padded struct under a concurrent writer: its fields are tied to
    /// each other, so a torn copy breaks the tie.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri runs no inline assembly, and core atomics cannot carry padding (module docs)"
    )]
    fn padded_values_are_not_torn() {
        #[derive(Clone, Copy)]
        struct Padded {
            a: u8,
            b: u64,
            c: u16,
            d: u32,
            e: [u64; 4],
        }
        fn padded(i: u64) -> Padded {
            Padded {
                a: i as u8,
                b: i,
                c: i as u16,
                d: i as u32,
                e: [i; 4],
            }
        }
        let _w = Watchdog::new("seqlock padded_values_are_not_torn", HANG);
        let l = SeqLock::new(padded(0));
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    while !done.load(Ordering::Relaxed) {
                        let v = l.read();
                        assert!(v.e.iter().all(|&e| e == v.b), "torn read");
                        assert_eq!(v.a, v.b as u8, "torn read");
                        assert_eq!(v.c, v.b as u16, "torn read");
                        assert_eq!(v.d, v.b as u32, "torn read");
                    }
                });
            }
            for i in 1..=iters(500_000) {
                l.store(padded(i));
            }
            done.store(true, Ordering::Relaxed);
        });
    }

    #[test]
    fn a_panicking_writer_publishes_nothing_and_releases_the_lock() {
        let l = SeqLock::new(1u64);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            l.write(|v| {
                *v = 99;
                panic!("writer fails");
            })
        }));
        assert!(r.is_err());
        assert_eq!(l.try_read(), Some(1), "a failed write was published");
        assert_eq!(l.seq.sequence() & 1, 0);
        l.write(|v| *v += 1);
        assert_eq!(l.read(), 2);
    }

    #[test]
    fn described() {
        assert_eq!(<SeqLock<u8> as Described>::INFO.name, "seqlock");
        assert_eq!(
            <crate::rw::RawBrLock as Described>::INFO.family,
            Family::ReaderWriter
        );
    }
}
