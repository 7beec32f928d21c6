//! `combining`: flat combining, a mutex that runs its callers' critical
//! sections for them.
//!
//! Source: D. Hendler, I. Incze, N. Shavit and M. Tzafrir, "Flat Combining
//! and the Synchronization-Parallelism Tradeoff", SPAA 2010. A caller hands
//! [`CombiningMutex::apply`] a closure over the protected value. It writes
//! a pointer to that request (a type-erased `Job` on its own stack, which
//! stays alive because the caller waits for it) into a publication slot,
//! then either takes the lock word and becomes the *combiner*, running
//! every published request (its own included), or spins on its slot until
//! a combiner has served it, or the lock is free to take.
//!
//! # Word layouts
//!
//! ```text
//! lock (u32, own cache line):
//!     0       free
//!     k + 1   held by the combiner whose thread index is k
//!
//! slots[i] (pointer, each on its own cache line):
//!     null    free
//!     p       published: p is the `Request` heading a `Job` on the stack
//!             of the thread that wrote it, still to be served
//!     DONE    (address 1) served: the outcome is in the job
//!
//!     null --requester: CAS--> p --combiner: store--> DONE --requester: store--> null
//! ```
//!
//! A `Job` is `repr(C)`: a `Request` head (a function pointer, the job's
//! type-erased `run`), then a cell with the closure and, once served, its
//! outcome (its result, or the payload of its panic). The combiner reaches
//! the job only through the head pointer, and only while the slot holds it
//! (between the publication and its own `DONE` store); the requester
//! touches the job only before publishing and after it reads `DONE`.
//!
//! # The protocol
//!
//! - `apply`: if the lock word reads free, try to take it (a CAS): the
//!   winner runs its own request directly, then serves the slots. This
//!   fast path is this file's addition to the paper's protocol: an
//!   uncontended request costs one CAS, one scan and one store, not also a
//!   publication and its clean-up.
//! - Otherwise publish: claim a free slot by CAS (null → p), starting at
//!   the slot numbered by the thread index modulo the slot count, so that
//!   up to that many threads with consecutive indexes each keep finding
//!   their own line. Then wait: when the slot reads `DONE`, store null and
//!   return the outcome; when the lock word reads free, try to take it
//!   and, if that works, serve the slots (this one's included) and look
//!   again.
//! - A thread that finds every slot taken has published nothing: it tries
//!   to take the lock word itself (and runs its own request directly, as
//!   in the fast path), or looks for a free slot again. So any number of
//!   threads can share a mutex with any number of slots; a thread beyond
//!   the slots merely competes as in a test-and-set lock.
//! - A *tenure* (the paper's combining pass) is: the combiner's own request
//!   if it has an unpublished one, then scans of every slot in index
//!   order, serving each published request (run the closure under
//!   `catch_unwind`, write the outcome into the job, store `DONE`); a scan
//!   that served something is followed by another, up to [`SCANS`] scans
//!   in all (so the combiner's own wait stays bounded); then the lock word
//!   goes back to free.
//!
//! # The publication structure
//!
//! The paper keeps a list of per-thread publication records: a thread
//! allocates one per data structure, keeps it in thread-local storage,
//! publishes by a plain store into it, and the combiner unlinks records
//! that stayed idle for a while (re-linked by their owner when next
//! needed). Here a mutex has a fixed array of cache-padded slots, claimed
//! for one request at a time by CAS:
//! - nothing is allocated or registered per thread, nothing needs aging
//!   or cleaning up when a thread exits, and the combiner walks an array
//!   instead of chasing list pointers (the library's lock paths never
//!   allocate: the interposer runs locks inside `malloc`);
//! - the price is one CAS per published request where the paper's owner
//!   publishes with a store, and a scan of every slot per tenure even when
//!   few threads use the mutex (a load apiece; the slots nobody else uses
//!   stay in the combiner's cache);
//! - it stays correct with more threads than slots (see the protocol), and
//!   [`CombiningMutex::with_slots`] chooses the count.
//!
//! # Orderings
//!
//! - Publishing (the claiming CAS) is `SeqCst`. Its Release part publishes
//!   the job (closure, captures, head) to the combiner, whose scan reads
//!   the slot with `SeqCst` (an Acquire). The `SeqCst` parts, with the
//!   `SeqCst` CAS that takes the lock word, give the service guarantee:
//!   all three are in the single total order S of `SeqCst` operations, a
//!   tenure whose taking CAS follows the publication in S scans the slot
//!   after it in S, and a `SeqCst` load that follows a `SeqCst` store in S
//!   reads it or something written after it (C++20 [atomics.order]: an
//!   older value would put the load coherence-before the store, hence
//!   before it in S). So **a published request is served by the tenure
//!   running when it is published, or by the next one** (which its own
//!   thread starts, if nobody else does). On x86 these are the instructions
//!   `Acquire` and `Release` would give anyway (a locked CAS, a plain
//!   load).
//! - Taking the lock word is Acquire (within the `SeqCst`) and freeing it
//!   Release: each tenure's accesses to the data happen before the next
//!   tenure's. The Relaxed loads of the lock word before the CAS are only
//!   a hint (a CAS that would fail is not tried); the re-entry check reads
//!   the word Relaxed too, which suffices: only this thread writes its own
//!   index there, so coherence shows it that value exactly while it holds
//!   the word (a recycled thread index reaches a new thread through the
//!   index table's Release/Acquire, after the old thread's last release).
//! - Marking a request served (`DONE`) is Release and the requester's wait
//!   reads it Acquire: the closure's effects (including writes through
//!   references it captured from the requester), the outcome written into
//!   the job and the combiner's last access to the job all happen before
//!   the requester reads the outcome and its stack frame goes away.
//! - Freeing the slot (store null) is Relaxed: the value carries nothing (a
//!   new claimant publishes its job with its own CAS), and no combiner can
//!   still read the old pointer: `DONE` was stored by a combiner under the
//!   lock word, and every later tenure's taking CAS happens after that
//!   tenure's release, so by coherence it reads `DONE` or newer.
//! - The claim's Relaxed load before the CAS is only a hint.
//!
//! # Panics, bounds and re-entry
//!
//! A closure that panics does so inside the combiner's `catch_unwind`: the
//! payload becomes the request's outcome and its requester resumes
//! unwinding on its own thread; the combiner and the other requests carry
//! on and nothing is poisoned (the data may be left as the closure left
//! it, as with `parking_lot`'s mutex). No unwinding ever crosses a tenure,
//! so the lock word is always given back.
//!
//! The mutex is `Sync` when `T: Send`, as `std`'s mutex: whichever thread
//! combines gets `&mut T`. `apply` requires `F: Send` (the closure runs and
//! is dropped on the combiner's thread) and `R: Send` (the result is made
//! there and returned here). `F` need not be `'static`: the requester
//! cannot leave `apply` before its request is served (nothing on that path
//! unwinds). [`CombiningMutex::try_apply`] only ever runs the closure on
//! the calling thread, as the combiner, and needs neither bound. A closure
//! sees the *combiner's* thread: its thread-locals and
//! `std::thread::current()`.
//!
//! An `apply` on a mutex from a closure running on that same mutex would
//! wait for itself; the lock word names the combiner's thread, so it
//! panics instead (and that panic, too, goes to the closure's requester).
//! An `apply` on *another* `CombiningMutex` from a closure is fine
//! (nested delegation), given the usual care for lock order.
//!
//! Waiters spin (`spin_loop`) and give their time slice away every
//! [`YIELD_EVERY`] spins, so that a preempted combiner gets a CPU back
//! sooner when threads outnumber cores; nothing sleeps in the kernel.

use core::fmt;
use core::marker::PhantomData;
use core::panic::AssertUnwindSafe;
use core::ptr;
use std::thread;

use crate::info::{Described, Family, LockInfo};
use crate::util::sync::{spin_loop, yield_now, AtomicPtr, AtomicU32, Ordering};
use crate::util::{thread_index, CachePadded};

/// The number of publication slots of a [`CombiningMutex`] made by
/// [`CombiningMutex::new`]. Up to this many threads at a time can publish
/// requests; more still work (see the module documentation).
pub const DEFAULT_SLOTS: usize = 16;

/// The most scans of the slots one tenure makes: a scan that served a
/// request is followed by another, up to this many in all.
pub const SCANS: usize = 3;

/// A waiter gives its time slice away every this many spins.
pub const YIELD_EVERY: u32 = 128;

/// The lock word when no combiner holds it.
const FREE: u32 = 0;

/// A slot's word once its request has been served: no `Job` is at an odd
/// address (they hold a function pointer, so are at least 2-aligned).
const DONE: *mut Request = ptr::without_provenance_mut(1);

/// The metadata of [`CombiningMutex`] (also its [`Described::INFO`]).
pub const INFO: LockInfo = LockInfo {
    name: "combining",
    family: Family::Delegation,
    // A published request waits for at most the tenure running when it was
    // published and the next; threads beyond the slots compete as in a
    // test-and-set lock. Not FIFO either way.
    fair: false,
    blocking: false,
    numa_aware: false,
    source: "Hendler, Incze, Shavit & Tzafrir, Flat Combining and the Synchronization-Parallelism Tradeoff, SPAA 2010",
    summary: "callers publish closures in slots; whoever takes the lock runs them all, so the data stays in its cache",
};

/// An `UnsafeCell` whose accesses loom checks under `--cfg loom` (the data
/// and every job's closure and outcome cross threads through it), and a
/// plain `core::cell::UnsafeCell` otherwise.
#[cfg(not(loom))]
struct Cell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> Cell<T> {
    const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    #[inline(always)]
    fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }

    fn get_mut(&mut self) -> &mut T {
        self.0.get_mut()
    }

    fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

#[cfg(loom)]
struct Cell<T>(loom::cell::UnsafeCell<T>);

#[cfg(loom)]
impl<T> Cell<T> {
    fn new(value: T) -> Self {
        Self(loom::cell::UnsafeCell::new(value))
    }

    fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        self.0.with_mut(f)
    }

    fn get_mut(&mut self) -> &mut T {
        // SAFETY: `&mut self`: nobody else can reach the cell.
        self.0.with_mut(|p| unsafe { &mut *p })
    }

    fn into_inner(self) -> T {
        self.0.into_inner()
    }
}

/// The type-erased head of a request: what a slot points at. It is the
/// first field of a `repr(C)` [`Job`], and every pointer to it is made
/// from a reference to the whole job, so it can be cast back.
#[repr(C)]
struct Request {
    /// [`Job::run`] of the job this heads.
    run: unsafe fn(*const Request, *mut ()),
}

/// A request as its requester builds it on its stack.
#[repr(C)]
struct Job<T, F, R> {
    head: Request,
    body: Cell<Body<F, R>>,
    _data: PhantomData<fn(&mut T)>,
}

/// What crosses threads: the closure one way, its outcome the other.
struct Body<F, R> {
    f: Option<F>,
    out: Option<thread::Result<R>>,
}

impl<T, F: FnOnce(&mut T) -> R, R> Job<T, F, R> {
    #[inline]
    fn new(f: F) -> Self {
        Self {
            head: Request { run: Self::run },
            body: Cell::new(Body {
                f: Some(f),
                out: None,
            }),
            _data: PhantomData,
        }
    }

    /// The pointer a slot holds: made from a reference to the whole job,
    /// so that [`run`](Self::run) may cast it back.
    #[inline]
    fn request(&self) -> *mut Request {
        ptr::from_ref(self).cast::<Request>().cast_mut()
    }

    /// Runs the closure on the data, catching a panic, and stores the
    /// outcome in the job.
    ///
    /// # Safety
    /// `req` is the [`request`](Self::request) of a live `Job<T, F, R>`
    /// whose body nobody else accesses during the call, and `data` points
    /// to a `T` that nobody else accesses during the call.
    unsafe fn run(req: *const Request, data: *mut ()) {
        // SAFETY: `req` points at a live `Job<T, F, R>` (the caller's
        // contract): it was made from a reference to the whole job, whose
        // first field the head is (`repr(C)`).
        let job = unsafe { &*req.cast::<Self>() };
        job.body.with_mut(|body| {
            // SAFETY: nobody else accesses the body during the call.
            let body = unsafe { &mut *body };
            let f = body.f.take();
            let out = std::panic::catch_unwind(AssertUnwindSafe(move || {
                let f = f.expect("locklab: a combining request ran twice");
                // SAFETY: nobody else accesses the data during the call.
                f(unsafe { &mut *data.cast::<T>() })
            }));
            body.out = Some(out);
        });
    }

    /// The outcome, once served (on the requester's thread).
    #[inline]
    fn outcome(&self) -> Option<thread::Result<R>> {
        // SAFETY: called by the requester after its request was served
        // (the `DONE` it read Acquire, or its own tenure), so no combiner
        // touches the body any more.
        self.body.with_mut(|body| unsafe { (*body).out.take() })
    }
}

/// The result of a served request, or its panic resumed on this thread.
#[inline]
fn finish<R>(out: Option<thread::Result<R>>) -> R {
    match out {
        Some(Ok(r)) => r,
        Some(Err(payload)) => std::panic::resume_unwind(payload),
        None => unreachable!("locklab: a combining request came back unserved"),
    }
}

/// The lock word of this thread: its index + 1.
#[inline]
fn me() -> u32 {
    thread_index::current() + 1
}

/// One step of a wait.
#[inline]
fn pause(spins: &mut u32) {
    *spins = spins.wrapping_add(1);
    if *spins % YIELD_EVERY == 0 {
        yield_now();
    } else {
        spin_loop();
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn reentered() -> ! {
    panic!(
        "CombiningMutex::apply from a closure running on the same mutex (it would wait for itself)"
    )
}

type Slot = CachePadded<AtomicPtr<Request>>;

#[cfg(not(loom))]
const fn empty_slots<const SLOTS: usize>() -> [Slot; SLOTS] {
    [const { CachePadded::new(AtomicPtr::new(ptr::null_mut())) }; SLOTS]
}

#[cfg(loom)]
fn empty_slots<const SLOTS: usize>() -> [Slot; SLOTS] {
    core::array::from_fn(|_| CachePadded::new(AtomicPtr::new(ptr::null_mut())))
}

/// A flat-combining mutex: [`apply`](Self::apply) runs a closure on the
/// protected value, on whichever thread is combining at the time. See the
/// module documentation for the protocol.
///
/// `SLOTS` is the number of publication slots (each a cache line); up to
/// that many threads can have a request published at once.
///
/// ```
/// use locklab::CombiningMutex;
///
/// static QUEUE: CombiningMutex<Vec<u32>> = CombiningMutex::new(Vec::new());
///
/// std::thread::scope(|s| {
///     for t in 0..4 {
///         s.spawn(move || QUEUE.apply(|q| q.push(t)));
///     }
/// });
/// let len = QUEUE.apply(|q| {
///     q.sort();
///     q.len()
/// });
/// assert_eq!(len, 4);
/// ```
pub struct CombiningMutex<T, const SLOTS: usize = DEFAULT_SLOTS> {
    lock: CachePadded<AtomicU32>,
    slots: [Slot; SLOTS],
    data: Cell<T>,
}

// SAFETY: the data is reached only by the thread holding the lock word
// (its Acquire CAS and Release store order the holders), or through
// `&mut self`; it may be any thread, so `T: Send` is required, as for
// `std::sync::Mutex`. Closures and results cross threads only through
// `apply`, whose bounds require them to be `Send`.
unsafe impl<T: Send, const SLOTS: usize> Sync for CombiningMutex<T, SLOTS> {}

impl<T> CombiningMutex<T> {
    crate::loom_const_fn! {
        /// A mutex holding `value`, with [`DEFAULT_SLOTS`] publication
        /// slots. (Another count: [`with_slots`](Self::with_slots).)
        pub fn new(value: T) -> Self {
            Self::with_slots(value)
        }
    }
}

impl<T, const SLOTS: usize> CombiningMutex<T, SLOTS> {
    crate::loom_const_fn! {
        /// A mutex holding `value`, with `SLOTS` publication slots (at
        /// least one): `CombiningMutex::<_, 4>::with_slots(value)`.
        pub fn with_slots(value: T) -> Self {
            const { assert!(SLOTS > 0, "a CombiningMutex needs a publication slot") };
            Self {
                lock: CachePadded::new(AtomicU32::new(FREE)),
                slots: empty_slots(),
                data: Cell::new(value),
            }
        }
    }

    /// Runs `f` on the value, under mutual exclusion with every other
    /// request, and returns its result. `f` runs on whichever thread is
    /// combining: maybe this one, maybe another (so it must be `Send`, as
    /// must its result). If `f` panics, the panic resumes here, on this
    /// thread; the mutex is not poisoned.
    ///
    /// # Panics
    /// If `f` panics; and if called from a closure running on this same
    /// mutex (which would otherwise wait for itself).
    ///
    /// A closure that is not `Send` is refused at compile time:
    ///
    /// ```compile_fail,E0277
    /// let m = locklab::CombiningMutex::new(0u32);
    /// let here = std::rc::Rc::new(1);
    /// m.apply(|v| *v += *here);
    /// ```
    ///
    /// And so is a result that is not `Send`:
    ///
    /// ```compile_fail,E0277
    /// let m = locklab::CombiningMutex::new(0u32);
    /// let _ = m.apply(|v| std::rc::Rc::new(*v));
    /// ```
    #[inline]
    pub fn apply<F, R>(&self, f: F) -> R
    where
        F: FnOnce(&mut T) -> R + Send,
        R: Send,
    {
        let me = me();
        let word = self.lock.load(Ordering::Relaxed);
        if word == me {
            reentered();
        }
        let job = Job::<T, F, R>::new(f);
        if word == FREE && self.try_lock(me) {
            // SAFETY: we hold the lock word; the job is ours and unpublished.
            unsafe { self.tenure(Some(job.request())) };
        } else {
            self.publish_and_wait(me, job.request());
        }
        finish(job.outcome())
    }

    /// Runs `f` on the value if no combiner holds the mutex right now (this
    /// thread becomes the combiner, and serves the published requests
    /// after its own); `None` if one does, including when called from a
    /// closure running on this mutex. `f` runs on this thread, so it need
    /// not be `Send`. A panic in `f` resumes here, after the tenure.
    #[inline]
    pub fn try_apply<R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let me = me();
        if self.lock.load(Ordering::Relaxed) != FREE || !self.try_lock(me) {
            return None;
        }
        let job = Job::<T, _, R>::new(f);
        // SAFETY: we hold the lock word; the job is ours and unpublished.
        unsafe { self.tenure(Some(job.request())) };
        Some(finish(job.outcome()))
    }

    /// Whether a combiner holds the mutex (a momentary snapshot).
    #[inline]
    pub fn is_locked(&self) -> bool {
        self.lock.load(Ordering::Relaxed) != FREE
    }

    /// The value, through an exclusive borrow (no request can be pending).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }

    /// The value.
    pub fn into_inner(self) -> T {
        self.data.into_inner()
    }

    /// Takes the lock word if it is free (see the orderings).
    #[inline]
    fn try_lock(&self, me: u32) -> bool {
        self.lock
            .compare_exchange(FREE, me, Ordering::SeqCst, Ordering::Relaxed)
            .is_ok()
    }

    /// Claims a free slot for `req`, publishing it; `None` if all are taken.
    fn claim(&self, me: u32, req: *mut Request) -> Option<&Slot> {
        let start = (me - 1) as usize % SLOTS;
        let (head, tail) = self.slots.split_at(start);
        tail.iter().chain(head).find(|slot| {
            slot.load(Ordering::Relaxed).is_null()
                && slot
                    .compare_exchange(ptr::null_mut(), req, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
        })
    }

    /// Publishes `req` and waits until it has been served: by another
    /// combiner, or by this thread in a tenure of its own.
    #[inline(never)]
    fn publish_and_wait(&self, me: u32, req: *mut Request) {
        let mut spins = 0;
        let slot = loop {
            if let Some(slot) = self.claim(me, req) {
                break slot;
            }
            // Every slot is taken: this request can only be served by
            // taking the lock word.
            if self.lock.load(Ordering::Relaxed) == FREE && self.try_lock(me) {
                // SAFETY: we hold the lock word; `req` is our job,
                // unpublished.
                unsafe { self.tenure(Some(req)) };
                return;
            }
            pause(&mut spins);
        };
        loop {
            if slot.load(Ordering::Acquire) == DONE {
                slot.store(ptr::null_mut(), Ordering::Relaxed);
                return;
            }
            if self.lock.load(Ordering::Relaxed) == FREE && self.try_lock(me) {
                // SAFETY: we hold the lock word. Our own request is in a
                // slot, so this tenure serves it unless one before did.
                unsafe { self.tenure(None) };
                continue;
            }
            pause(&mut spins);
        }
    }

    /// A tenure: serves `own` (if any), then every published request, and
    /// frees the lock word.
    ///
    /// # Safety
    /// The caller holds the lock word; `own` is the request of a live job
    /// of the caller's that is in no slot.
    unsafe fn tenure(&self, own: Option<*mut Request>) {
        if let Some(req) = own {
            // SAFETY: the caller's contract: the job is live and only ours,
            // and the lock word gives us the data.
            unsafe { self.serve(req) };
        }
        for _ in 0..SCANS {
            let mut served = false;
            for slot in &self.slots {
                let req = slot.load(Ordering::SeqCst);
                if req.is_null() || req == DONE {
                    continue;
                }
                // SAFETY: a published request: its job lives until its
                // requester reads `DONE`, nobody else serves it while we
                // hold the lock word, and the lock word gives us the data.
                unsafe { self.serve(req) };
                slot.store(DONE, Ordering::Release);
                served = true;
            }
            if !served {
                break;
            }
        }
        self.lock.store(FREE, Ordering::Release);
    }

    /// Runs one request on the data.
    ///
    /// # Safety
    /// The caller holds the lock word, and `req` is the request of a live
    /// job that nobody else accesses during the call.
    #[inline]
    unsafe fn serve(&self, req: *const Request) {
        self.data.with_mut(|data| {
            // SAFETY: `req` heads a live job (the caller's contract), whose
            // `run` is then called as it requires: the body is ours during
            // the call and so is the data (we hold the lock word).
            unsafe { ((*req).run)(req, data.cast()) }
        });
    }

    /// How many slots hold a published request right now.
    #[cfg(all(test, not(loom)))]
    fn published(&self) -> usize {
        self.slots
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .filter(|&p| !p.is_null() && p != DONE)
            .count()
    }
}

impl<T: Default> Default for CombiningMutex<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

impl<T> From<T> for CombiningMutex<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T, const SLOTS: usize> fmt::Debug for CombiningMutex<T, SLOTS> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CombiningMutex")
            .field("slots", &SLOTS)
            .field("locked", &self.is_locked())
            .finish_non_exhaustive()
    }
}

impl<T, const SLOTS: usize> Described for CombiningMutex<T, SLOTS> {
    const INFO: LockInfo = INFO;
}

/// Teeth, checked by breaking the code above on purpose once each (and
/// restoring it): with `DONE` stored before the request ran, the two
/// delegation tests and the known-answer test failed natively (a
/// requester got no outcome back; one run ended in a segfault); with the
/// `DONE` store Relaxed, Miri reported a data race on the outcome in
/// every test with contention; a scan that skips slot 0 hung
/// `more_threads_than_slots` until its watchdog aborted the run. The
/// loom models' teeth are listed in `tests/loom/combining.rs`.
#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{iters, threads, until, Watchdog, HANG};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
    use std::sync::{Arc, Barrier};

    /// The most threads a test here uses.
    const MAX_T: usize = 8;

    /// Shared data for the known-answer tests: a total, a shadow count per
    /// thread, and a pair whose invariant (`a == b`) breaks if two
    /// requests overlap.
    #[derive(Default)]
    struct Books {
        total: u64,
        per_thread: [u64; MAX_T],
        a: u64,
        b: u64,
    }

    impl Books {
        /// Counts one request of thread `t`; the new total.
        fn count(&mut self, t: usize) -> u64 {
            assert_eq!(self.a, self.b, "two requests overlapped");
            self.a += 1;
            for _ in 0..8 {
                std::hint::spin_loop();
            }
            if self.a % 16 == 0 {
                // A combiner that stops here keeps the lock word while the
                // other threads run: they publish, and are served by it,
                // however the machine schedules them.
                thread::yield_now();
            }
            self.b = self.a;
            self.per_thread[t] += 1;
            self.total += 1;
            self.total
        }
    }

    /// What only request `seq` of thread `t` can predict: set in the high
    /// 32 bits, so that mixing it into a count below 2^32 and unmixing it
    /// with another request's tag leaves a value far out of range.
    fn tag(t: usize, seq: u64) -> u64 {
        let mut z = ((t as u64) << 32 | seq).wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) | 1 << 63
    }

    /// `threads` threads each apply `iters` counted requests, each
    /// returning its new total mixed with its own tag; every caller checks
    /// that what it got back is its own (the unmixed total in range and
    /// rising from one of its requests to the next); the totals seen must
    /// be exactly 1..=n (each request ran once), and each thread's shadow
    /// count exact.
    fn known_answer<const SLOTS: usize>(threads: usize, iters: u64) {
        let (threads, iters) = (self::threads(threads), self::iters(iters));
        assert!(threads <= MAX_T);
        let _w = Watchdog::new("combining known answer", HANG);
        let m = CombiningMutex::<Books, SLOTS>::with_slots(Books::default());
        let n = threads as u64 * iters;
        let start = Barrier::new(threads);
        let mut seen: Vec<u64> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..threads)
                .map(|t| {
                    let (m, start) = (&m, &start);
                    s.spawn(move || {
                        start.wait();
                        let mut mine = Vec::with_capacity(iters as usize);
                        for seq in 0..iters {
                            let got = m.apply(move |b| b.count(t) ^ tag(t, seq));
                            let total = got ^ tag(t, seq);
                            assert!(
                                (1..=n).contains(&total),
                                "thread {t} request {seq} got another request's result"
                            );
                            assert!(
                                mine.last().is_none_or(|&last| last < total),
                                "thread {t}: a later request saw an earlier total"
                            );
                            mine.push(total);
                        }
                        mine
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        seen.sort_unstable();
        assert!(
            seen.iter().copied().eq(1..=n),
            "a request ran twice or not at all"
        );
        assert!(!m.is_locked(), "left locked");
        let books = m.into_inner();
        assert_eq!(books.total, n, "lost update");
        for t in 0..threads {
            assert_eq!(books.per_thread[t], iters, "thread {t}'s shadow count");
        }
    }

    #[test]
    fn every_request_runs_once_and_returns_its_own_result() {
        known_answer::<DEFAULT_SLOTS>(8, 2000);
    }

    #[test]
    fn more_threads_than_slots() {
        known_answer::<2>(6, 1000);
        known_answer::<1>(4, 500);
    }

    /// The main thread holds the lock word in a request of its own until
    /// another thread has published one: that request then runs on the
    /// main thread (this checks that delegation happens, independently of
    /// scheduling), and its result goes to its requester.
    #[test]
    fn a_request_published_during_a_tenure_runs_on_the_combiners_thread() {
        let _w = Watchdog::new("combining delegation", HANG);
        let m = CombiningMutex::new(0u64);
        let inside = AtomicBool::new(false);
        let main = thread::current().id();
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                until(|| inside.load(Relaxed));
                m.apply(|v| {
                    *v += 10;
                    // Long enough for the requester to notice a `DONE`
                    // that came before its result (a defect this catches).
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    (*v, thread::current().id())
                })
            });
            m.apply(|v| {
                *v += 1;
                inside.store(true, Relaxed);
                until(|| m.published() == 1);
            });
            assert_eq!(h.join().unwrap(), (11, main));
        });
        assert_eq!(m.into_inner(), 11);
    }

    /// As above, with a delegated request that panics, one that applies
    /// on the same mutex (re-entry) and one that is fine: each panic
    /// resumes on its own requester's thread with its own payload, the
    /// combiner and the third request are unaffected, and the mutex works
    /// on.
    #[test]
    fn a_panicking_request_unwinds_on_its_own_thread_only() {
        let _w = Watchdog::new("combining panic", HANG);
        let m = CombiningMutex::new(0u64);
        let inside = AtomicBool::new(false);
        let main = thread::current().id();
        std::thread::scope(|s| {
            let panicker = s.spawn(|| {
                until(|| inside.load(Relaxed));
                std::panic::catch_unwind(AssertUnwindSafe(|| {
                    m.apply(|v| {
                        *v += 100; // kept: a panic rolls nothing back
                        assert_eq!(thread::current().id(), main);
                        std::panic::panic_any(("mine", 7u32));
                    })
                }))
            });
            let reenterer = s.spawn(|| {
                until(|| inside.load(Relaxed));
                std::panic::catch_unwind(AssertUnwindSafe(|| m.apply(|_| m.apply(|v| *v))))
            });
            let fine = s.spawn(|| {
                until(|| inside.load(Relaxed));
                m.apply(|v| {
                    *v += 10;
                    thread::current().id()
                })
            });
            m.apply(|v| {
                *v += 1;
                inside.store(true, Relaxed);
                until(|| m.published() == 3);
            });
            let payload = panicker.join().unwrap().unwrap_err();
            assert_eq!(payload.downcast_ref::<(&str, u32)>(), Some(&("mine", 7)));
            let payload = reenterer.join().unwrap().unwrap_err();
            let text = payload.downcast_ref::<&str>().unwrap();
            assert!(text.contains("same mutex"), "{text}");
            assert_eq!(fine.join().unwrap(), main);
        });
        assert!(!m.is_locked());
        assert_eq!(m.apply(|v| *v), 111);
        assert_eq!(m.try_apply(|v| *v), Some(111));
    }

    /// Many threads, every fifth request panicking with its own payload:
    /// each caller gets its own panic back (or its own result), every
    /// closure is dropped exactly once (the capture's count comes back to
    /// one), and the count is exact.
    #[test]
    fn panics_under_contention_go_to_their_own_callers() {
        let (threads, iters) = (threads(6), iters(600));
        let _w = Watchdog::new("combining panics", HANG);
        let m = CombiningMutex::new(Books::default());
        let capture = Arc::new(());
        let panicked = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..threads {
                let (m, capture, panicked) = (&m, &capture, &panicked);
                s.spawn(move || {
                    for seq in 0..iters {
                        let held = capture.clone();
                        let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                            m.apply(move |b| {
                                let _held = held;
                                let total = b.count(t);
                                if seq % 5 == 0 {
                                    // A panic without the hook's message
                                    // (hundreds of them would flood the
                                    // test output), unwinding the same way.
                                    std::panic::resume_unwind(Box::new((t, seq)));
                                }
                                total ^ tag(t, seq)
                            })
                        }));
                        match r {
                            Ok(got) => {
                                assert_ne!(seq % 5, 0);
                                assert!(got ^ tag(t, seq) <= threads as u64 * iters);
                            }
                            Err(p) => {
                                assert_eq!(p.downcast_ref::<(usize, u64)>(), Some(&(t, seq)));
                                panicked.fetch_add(1, Relaxed);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(Arc::strong_count(&capture), 1, "a closure was not dropped");
        assert_eq!(panicked.into_inner(), threads as u64 * iters.div_ceil(5));
        let books = m.into_inner();
        assert_eq!(books.total, threads as u64 * iters);
        assert!(books.per_thread[..threads].iter().all(|&c| c == iters));
    }

    /// Requests of different closure and result types on one mutex, from
    /// several threads at once: a word, nothing, a string, a large array,
    /// a boxed trait object, and writes through a reference the closure
    /// borrowed from its caller's stack.
    #[test]
    fn requests_of_different_types_share_one_mutex() {
        let (threads, iters) = (threads(4), iters(300));
        let _w = Watchdog::new("combining types", HANG);
        let m = CombiningMutex::new(Vec::<u64>::new());
        std::thread::scope(|s| {
            for t in 0..threads as u64 {
                let m = &m;
                s.spawn(move || {
                    let mut local = [0u64; 4];
                    for i in 0..iters {
                        match (i + t) % 6 {
                            0 => {
                                let len = m.apply(|v| {
                                    v.push(t);
                                    v.len()
                                });
                                assert!(len >= 1);
                            }
                            1 => m.apply(|v| v.push(t)),
                            2 => {
                                let text = m.apply(move |v| {
                                    v.push(t);
                                    format!("{t}:{i}")
                                });
                                assert_eq!(text, format!("{t}:{i}"));
                            }
                            3 => {
                                let big = [t ^ i; 64];
                                let back = m.apply(move |v| {
                                    v.push(t);
                                    big.map(|x| x + 1)
                                });
                                assert!(back.iter().all(|&x| x == (t ^ i) + 1));
                            }
                            4 => {
                                let b: Box<dyn std::any::Any + Send> = m.apply(move |v| {
                                    v.push(t);
                                    Box::new((t, i)) as Box<dyn std::any::Any + Send>
                                });
                                assert_eq!(b.downcast_ref::<(u64, u64)>(), Some(&(t, i)));
                            }
                            _ => {
                                let local = &mut local;
                                m.apply(move |v| {
                                    v.push(t);
                                    local[(i % 4) as usize] += i;
                                });
                            }
                        }
                    }
                    let want: u64 = (0..iters).filter(|i| (i + t) % 6 == 5).sum();
                    assert_eq!(local.iter().sum::<u64>(), want);
                });
            }
        });
        let v = m.into_inner();
        assert_eq!(v.len() as u64, threads as u64 * iters);
        for t in 0..threads as u64 {
            assert_eq!(v.iter().filter(|&&x| x == t).count() as u64, iters);
        }
    }

    /// Closures that apply on a second mutex (nested delegation: the inner
    /// request is published from the outer one's combiner), while other
    /// threads use each mutex alone.
    #[test]
    fn nested_applies_on_two_mutexes() {
        let (threads, iters) = (threads(6), iters(400));
        let _w = Watchdog::new("combining nested", HANG);
        let a = CombiningMutex::new(0u64);
        let b = CombiningMutex::new(0u64);
        let inner = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..threads {
                let (a, b, inner) = (&a, &b, &inner);
                s.spawn(move || {
                    for _ in 0..iters {
                        match t % 3 {
                            0 => {
                                let (x, y) = a.apply(|x| {
                                    *x += 1;
                                    (
                                        *x,
                                        b.apply(|y| {
                                            *y += 1;
                                            *y
                                        }),
                                    )
                                });
                                assert!(x >= 1 && y >= 1);
                                inner.fetch_add(1, Relaxed);
                            }
                            1 => a.apply(|x| *x += 1),
                            _ => b.apply(|y| *y += 1),
                        }
                    }
                });
            }
        });
        let per = |k: usize| (0..threads).filter(|t| t % 3 == k).count() as u64 * iters;
        assert_eq!(inner.into_inner(), per(0));
        assert_eq!(a.into_inner(), per(0) + per(1));
        assert_eq!(b.into_inner(), per(0) + per(2));
    }

    /// Two long-lived threads keep applying while short-lived ones come,
    /// apply a few times and exit, one after another: their thread indexes
    /// (and so their first slots) are recycled under a busy mutex.
    #[test]
    fn threads_exit_while_others_keep_applying() {
        const SHORT: usize = if cfg!(miri) { 4 } else { 12 };
        let short_iters = iters(20);
        let _w = Watchdog::new("combining churn", HANG);
        let m = CombiningMutex::<Books, 4>::with_slots(Books::default());
        let stop = AtomicBool::new(false);
        let long_total = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..2 {
                let (m, stop, long_total) = (&m, &stop, &long_total);
                s.spawn(move || {
                    let mut seq = 0;
                    while !stop.load(Relaxed) {
                        let got = m.apply(move |b| b.count(t) ^ tag(t, seq));
                        assert!(got ^ tag(t, seq) < 1 << 32);
                        seq += 1;
                    }
                    long_total.fetch_add(seq, Relaxed);
                });
            }
            for _ in 0..SHORT {
                s.spawn(|| {
                    for seq in 0..short_iters {
                        let got = m.apply(move |b| b.count(2) ^ tag(2, seq));
                        assert!(got ^ tag(2, seq) < 1 << 32);
                    }
                })
                .join()
                .unwrap();
            }
            stop.store(true, Relaxed);
        });
        let books = m.into_inner();
        assert_eq!(
            books.total,
            long_total.into_inner() + SHORT as u64 * short_iters,
            "lost update"
        );
        assert_eq!(books.per_thread[2], SHORT as u64 * short_iters);
    }

    #[test]
    fn try_apply_fails_while_a_combiner_runs_and_succeeds_after() {
        let _w = Watchdog::new("combining try", HANG);
        let m = CombiningMutex::new(0u32);
        assert!(!m.is_locked());
        m.apply(|v| {
            assert!(m.is_locked());
            std::thread::scope(|s| {
                s.spawn(|| assert!(m.try_apply(|v| *v += 1).is_none()));
            });
            // From the combiner's own closure: busy as well, not a deadlock.
            assert!(m.try_apply(|v| *v += 1).is_none());
            *v += 1;
        });
        assert!(!m.is_locked());
        // `try_apply` runs its closure here, so it need not be `Send`.
        let here = std::rc::Rc::new(5);
        assert_eq!(
            m.try_apply(|v| {
                *v += *here;
                *v
            }),
            Some(6)
        );
        assert!(!m.is_locked());
    }

    /// `try_apply`, when it takes the lock word, serves the requests
    /// published meanwhile too.
    #[test]
    fn try_apply_serves_the_published_requests() {
        let _w = Watchdog::new("combining try serves", HANG);
        let m = CombiningMutex::new(0u64);
        let go = Barrier::new(2);
        std::thread::scope(|s| {
            let h = s.spawn(|| {
                go.wait();
                m.apply(|v| {
                    *v += 10;
                    thread::current().id()
                })
            });
            let main = thread::current().id();
            let got = m.try_apply(|v| {
                *v += 1;
                go.wait();
                until(|| m.published() == 1);
                *v
            });
            assert_eq!(got, Some(1));
            assert_eq!(h.join().unwrap(), main);
        });
        assert_eq!(m.into_inner(), 11);
    }

    #[test]
    fn a_static_mutex_and_the_plain_accessors() {
        static COUNT: CombiningMutex<u64> = CombiningMutex::new(0);
        COUNT.apply(|c| *c += 1);
        assert!(COUNT.apply(|c| *c) >= 1);

        let mut m = CombiningMutex::<Vec<Arc<()>>, 3>::with_slots(Vec::new());
        let one = Arc::new(());
        m.apply(|v| v.push(one.clone()));
        m.get_mut().push(one.clone());
        assert_eq!(Arc::strong_count(&one), 3);
        let s = format!("{m:?}");
        assert!(s.contains("slots: 3") && s.contains("locked: false"), "{s}");
        drop(m);
        assert_eq!(Arc::strong_count(&one), 1, "the value was not dropped");
        assert_eq!(CombiningMutex::<u8>::default().into_inner(), 0);
        assert_eq!(CombiningMutex::from(7u8).into_inner(), 7);
    }

    #[test]
    fn metadata() {
        let info = <CombiningMutex<()> as Described>::INFO;
        assert_eq!(info, INFO);
        assert_eq!(info.name, "combining");
        assert_eq!(info.family, Family::Delegation);
        assert_eq!(
            (info.fair, info.blocking, info.numa_aware),
            (false, false, false)
        );
        assert!(info.source.contains("SPAA 2010"));
    }
}
