//! `qspin`: a 32-bit queued spinlock in the manner of Linux's qspinlock.
//!
//! An MCS lock squeezed into one 32-bit word, with a shortcut for light
//! contention. The word holds:
//!
//! ```text
//!  31            18 17  16 15      9   8   7        0
//! | thread idx + 1 | slot |  unused  | P | locked    |
//!  `----- tail: the last queued node --'   `- pending bit, locked byte
//! ```
//!
//! - Uncontended: one CAS 0 → locked; release clears the locked byte.
//! - The first contender sets the pending bit and spins on the word until
//!   the locked byte clears, then turns pending into locked. It needs no
//!   queue node, which is the point: a lock that sees at most two CPUs at
//!   once never touches a node.
//! - Further contenders queue MCS-style: claim a node from this thread's
//!   `util::nodes::NodeTable` row, publish it as the
//!   tail (thread index + 1 and slot, so that 0 means "no tail"), link
//!   behind the previous tail's node and spin on their own node. The queue
//!   head instead waits for locked and pending both to clear, then takes the
//!   lock, clearing the tail if it is the last, and wakes its successor.
//! - A thread gives its node back as soon as it owns the lock, so nodes are
//!   only held while waiting and the guard carries nothing. A thread that
//!   finds no free node (four nested waits, e.g. from signal handlers) spins
//!   on trylock instead, as the kernel does when its per-CPU nodes run out.
//!
//! Source: Linux `kernel/locking/qspinlock.c` and
//! `include/asm-generic/qspinlock_types.h` (Waiman Long, Peter Zijlstra);
//! P. Zijlstra and W. Long, "locking: qspinlock", LWN 590189, 2014; seed 001
//! (Bueso) on MCS and qspinlock.
//!
//! Mixed-size accesses: the kernel updates the locked byte, the
//! locked+pending halfword and the tail halfword with byte and halfword
//! stores. Rust gives racing mixed-size atomics no meaning, and loom cannot
//! model them, so this file works on the whole word with 32-bit operations
//! only (`fetch_or` sets pending, a CAS loop swaps the tail, `fetch_sub`
//! turns pending into locked). The one exception is the unlock on x86_64
//! outside loom and Miri, a byte store through inline assembly (see
//! `release`); Miri, which runs no assembly, checks the portable unlock.
//!
//! Orderings:
//! - Taking the lock is always ordered after the previous release by an
//!   Acquire read of a word in which the locked byte (and, for the queue
//!   head, pending) reads clear: the fast-path CAS, the pending owner's
//!   `fetch_or` or its wait loop, the head's wait loop. Every write to the
//!   word is a read-modify-write, so each such read is in the release
//!   sequence of the last unlock. The writes that follow (pending → locked,
//!   setting locked, the head's CAS) need no ordering of their own: by then
//!   nobody else can take the lock.
//! - Unlock is Release (a `Release` RMW, or on x86_64 a plain byte store,
//!   which x86 orders after every earlier access).
//! - The tail CAS is `AcqRel`: Release publishes our freshly reset node to
//!   the thread that finds it as its predecessor; Acquire does the same for
//!   us with our predecessor's node before we write its `next`.
//! - Linking (`prev.next = me`, Release) pairs with the predecessor's
//!   Acquire read of `next`, so our reset of `head = false` is ordered
//!   before the predecessor's `head = true`; otherwise that store could be
//!   overwritten by our reset and we would wait forever.
//! - Waking the successor (`next.head = true`) is Release and the wait for
//!   it Acquire, mirroring the kernel's `smp_store_release` /
//!   `smp_cond_load_acquire`; the data itself reaches the new head through
//!   the lock word.
//! - Setting and undoing pending, and the pending-to-locked hand-over wait,
//!   move no data: Relaxed, except the first `fetch_or`, which may take a
//!   free lock at once and so is Acquire.

use core::ptr;

use crate::info::{Described, Family, LockInfo};
use crate::util::nodes::DEPTH;
use crate::util::sync::{spin_loop, AtomicBool, AtomicPtr, AtomicU32, Ordering};
use crate::util::thread_index::MAX_THREADS;

const LOCKED: u32 = 1;
const LOCKED_MASK: u32 = 0xff;
const PENDING: u32 = 1 << 8;
const LOCKED_PENDING_MASK: u32 = LOCKED_MASK | PENDING;
const SLOT_SHIFT: u32 = 16;
const THREAD_SHIFT: u32 = 18;
const TAIL_MASK: u32 = !0 << SLOT_SHIFT;
/// How long a newcomer waits for a pending → locked hand-over already under
/// way before it gives up and queues (the kernel's `_Q_PENDING_LOOPS`).
#[cfg(not(loom))]
const PENDING_LOOPS: u32 = 1 << 9;
#[cfg(loom)]
const PENDING_LOOPS: u32 = 1;

const _: () = assert!(DEPTH <= 1 << (THREAD_SHIFT - SLOT_SHIFT));
const _: () = assert!(MAX_THREADS < 1 << (32 - THREAD_SHIFT));

/// A queued waiter's node.
#[derive(Debug, Default)]
struct QNode {
    /// The waiter queued right behind this one, once it has linked in.
    next: AtomicPtr<QNode>,
    /// Set by the predecessor when this waiter becomes the queue head.
    head: AtomicBool,
}

crate::node_table!(static NODES: QNode);

#[inline]
fn encode_tail(thread: u32, slot: u8) -> u32 {
    ((thread + 1) << THREAD_SHIFT) | (u32::from(slot) << SLOT_SHIFT)
}

#[inline]
fn decode_tail(tail: u32) -> &'static QNode {
    let thread = (tail >> THREAD_SHIFT) - 1;
    let slot = ((tail >> SLOT_SHIFT) & ((1 << (THREAD_SHIFT - SLOT_SHIFT)) - 1)) as u8;
    NODES.get(thread, slot)
}

/// Whether [`RawQspin::release`] clears the locked byte with a byte store
/// (on Intel processors) rather than a 32-bit `fetch_sub` (on the others,
/// AMD's among them, where the byte store stalls the next acquisition).
/// Decided once per process from the CPU vendor (`cpuid` leaf 0); always
/// false off x86_64 and under loom and Miri.
pub fn byte_store_unlock() -> bool {
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    {
        use core::sync::atomic::{AtomicU8, Ordering::Relaxed};
        // 0: not decided yet; 1: byte store; 2: fetch_sub. Racing first
        // callers decide the same.
        static CHOICE: AtomicU8 = AtomicU8::new(0);
        match CHOICE.load(Relaxed) {
            1 => true,
            2 => false,
            _ => {
                let id = core::arch::x86_64::__cpuid(0);
                // "GenuineIntel", in the register order EBX, EDX, ECX.
                let intel = (id.ebx, id.edx, id.ecx) == (0x756e_6547, 0x4965_6e69, 0x6c65_746e);
                CHOICE.store(if intel { 1 } else { 2 }, Relaxed);
                intel
            }
        }
    }
    #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
    {
        false
    }
}

/// Queued spinlock in one 32-bit word. See the module documentation.
#[derive(Debug)]
pub struct RawQspin {
    val: AtomicU32,
}

impl RawQspin {
    crate::loom_const_fn! {
        /// An unlocked lock.
        pub fn new() -> Self {
            Self { val: AtomicU32::new(0) }
        }
    }

    /// Spins until the lock is ours.
    #[inline]
    pub fn acquire(&self) {
        if let Err(val) = self
            .val
            .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
        {
            self.acquire_slow(val);
        }
    }

    /// Takes the lock if the word is all clear right now (nobody holds,
    /// pends or queues).
    #[inline]
    pub fn try_acquire(&self) -> bool {
        // Look first: a failed CAS would still pull the line in exclusive.
        self.val.load(Ordering::Relaxed) == 0
            && self
                .val
                .compare_exchange(0, LOCKED, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
    }

    #[cold]
    #[inline(never)]
    fn acquire_slow(&self, mut val: u32) {
        // Only pending is set: its owner is about to turn it into locked.
        // Wait a little for that rather than queue behind it.
        if val == PENDING {
            let mut n = PENDING_LOOPS;
            while val == PENDING && n > 0 {
                spin_loop();
                val = self.val.load(Ordering::Relaxed);
                n -= 1;
            }
        }
        // Nobody pends or queues: try to become the pending waiter.
        if val & !LOCKED_MASK == 0 {
            val = self.val.fetch_or(PENDING, Ordering::Acquire);
            if val & !LOCKED_MASK == 0 {
                if val & LOCKED_MASK != 0 {
                    while self.val.load(Ordering::Acquire) & LOCKED_MASK != 0 {
                        spin_loop();
                    }
                }
                // Locked is clear and nobody else can set it while we pend
                // (the fast path and trylock need a zero word, the queue
                // head waits for pending to clear): pending → locked.
                self.val.fetch_sub(PENDING - LOCKED, Ordering::Relaxed);
                return;
            }
            // Someone got there first. Undo our pending bit if we set it.
            if val & PENDING == 0 {
                self.val.fetch_and(!PENDING, Ordering::Relaxed);
            }
        }
        self.queue();
    }

    #[cold]
    fn queue(&self) {
        let Some(claim) = NODES.claim() else {
            // Out of nodes: spin on trylock (unfair, but never reached
            // without nested waits).
            while !self.try_acquire() {
                spin_loop();
            }
            return;
        };
        let node = claim.node;
        let tail = encode_tail(claim.thread, claim.slot);
        node.next.store(ptr::null_mut(), Ordering::Relaxed);
        node.head.store(false, Ordering::Relaxed);

        // The lock may have come free while we got ready.
        if self.try_acquire() {
            NODES.release(claim.thread, claim.slot);
            return;
        }

        // Publish our node as the tail, keeping locked and pending.
        let mut old = self.val.load(Ordering::Relaxed);
        while let Err(v) = self.val.compare_exchange(
            old,
            (old & LOCKED_PENDING_MASK) | tail,
            Ordering::AcqRel,
            Ordering::Relaxed,
        ) {
            old = v;
        }

        let mut next: *mut QNode = ptr::null_mut();
        if old & TAIL_MASK != 0 {
            let prev = decode_tail(old);
            prev.next
                .store(ptr::from_ref(node).cast_mut(), Ordering::Release);
            while !node.head.load(Ordering::Acquire) {
                spin_loop();
            }
            // Our successor may have linked already; saves a wait below.
            next = node.next.load(Ordering::Acquire);
        }

        // Queue head: wait for the owner and any pending waiter to go.
        let mut val;
        loop {
            val = self.val.load(Ordering::Acquire);
            if val & LOCKED_PENDING_MASK == 0 {
                break;
            }
            spin_loop();
        }

        // Last in the queue: take the lock and clear the tail in one go.
        if val & TAIL_MASK == tail
            && self
                .val
                .compare_exchange(val, LOCKED, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            NODES.release(claim.thread, claim.slot);
            return;
        }

        // Someone queued behind us (or set pending and is about to): take
        // the lock, leave the tail, and make the successor the head.
        self.val.fetch_or(LOCKED, Ordering::Relaxed);
        while next.is_null() {
            spin_loop();
            next = node.next.load(Ordering::Acquire);
        }
        // SAFETY: `next` came from our node's `next`, written by a waiter
        // that linked its own node-table node there; table nodes live as
        // long as the table (forever).
        unsafe { &*next }.head.store(true, Ordering::Release);
        NODES.release(claim.thread, claim.slot);
    }

    /// Releases the lock by clearing the locked byte.
    ///
    /// On Intel x86_64 processors (outside loom and Miri) a one-byte store,
    /// as Linux's `queued_spin_unlock`; elsewhere
    /// [`release_rmw`](Self::release_rmw). On an AMD EPYC the byte store
    /// made the next acquisition's 32-bit compare-and-swap of the same word
    /// wait for it (a narrower store cannot be forwarded to a wider read):
    /// 9.4–9.9 ns a pair against 5.5–6.3 with the `fetch_sub`, measured
    /// side by side in one process (docs/library.md, "Where the fast path
    /// goes"). [`byte_store_unlock`] says which this process uses.
    ///
    /// # Safety
    /// The caller must hold the lock.
    #[inline]
    pub unsafe fn release(&self) {
        #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
        if byte_store_unlock() {
            // SAFETY: the caller holds the lock.
            unsafe { self.release_byte_store() }
        } else {
            // SAFETY: the caller holds the lock.
            unsafe { self.release_rmw() }
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom), not(miri))))]
        // SAFETY: the caller holds the lock.
        unsafe {
            self.release_rmw();
        }
    }

    /// The portable unlock: one 32-bit `fetch_sub` with Release. What
    /// [`release`](Self::release) does off x86_64 and under loom and Miri;
    /// public so the lab can measure what the byte store saves.
    ///
    /// # Safety
    /// The caller must hold the lock.
    #[inline]
    pub unsafe fn release_rmw(&self) {
        // The locked byte is exactly LOCKED while held: no borrow.
        self.val.fetch_sub(LOCKED, Ordering::Release);
    }

    /// The kernel's unlock: a plain store of 0 to the locked byte. What
    /// [`release`](Self::release) does on Intel x86_64 processors.
    ///
    /// # Safety
    /// The caller must hold the lock.
    #[cfg(all(target_arch = "x86_64", not(loom), not(miri)))]
    #[inline]
    pub unsafe fn release_byte_store(&self) {
        let locked_byte = self.val.as_ptr().cast::<u8>();
        // SAFETY: we step outside Rust's memory model on purpose, so here
        // is the whole argument.
        // - The pointer is valid and aligned for a byte: it is the first
        //   byte of `self.val`, which `&self` keeps alive; x86_64 is little
        //   endian, so that byte is bits 0–7, the locked byte. It comes from
        //   `AtomicU32::as_ptr` (an `UnsafeCell`), so writing through it is
        //   permitted while shared references exist.
        // - What the store means: the Rust reference treats an `asm!` block
        //   like a call to foreign code that may access the memory it is
        //   given, and the compiler must treat it as a black box. Rust's
        //   memory model does not define a byte store racing with 32-bit
        //   atomics, so the meaning comes from the hardware, as it does for
        //   Linux's `smp_store_release(&lock->locked, 0)` on x86 (a compiler
        //   barrier and a plain `movb`).
        // - Atomicity and coherence: an aligned byte store is atomic (Intel
        //   SDM vol. 3A, "Guaranteed Atomic Operations"), and locked
        //   instructions are atomic with respect to all other memory
        //   operations ("Bus Locking"), so every `lock`-prefixed RMW that
        //   other threads run on this word (the CAS, `fetch_or`,
        //   `fetch_and`, `fetch_sub` and the tail CAS loop, which all
        //   compile to locked instructions) falls wholly before or wholly
        //   after our store: none can read locked = 1 before it and write
        //   the 1 back after it. Those RMWs never change the locked byte
        //   while it is set (only its holder clears it), so ours is the only
        //   write to it that can overlap them, and the bits they change
        //   (pending, tail) are not in the byte we write.
        // - Release: x86 does not reorder a store with earlier loads or
        //   stores ("Memory Ordering in P6 and More Recent Processor
        //   Families"), so the critical section is visible before the byte
        //   reads 0. The compiler cannot sink critical-section accesses
        //   below the block either: without `nomem`/`readonly` it must
        //   assume the block reads and writes any memory it can reach.
        // - Acquirers read the word with `lock cmpxchg` or plain loads,
        //   which on x86 are acquire loads of the whole word; a load that
        //   sees our zero sees everything before it.
        // - Loom and Miri builds and other architectures use
        //   `release_rmw`, and all the algorithm's other accesses are
        //   32-bit, so loom and Miri check the algorithm with the portable
        //   unlock.
        unsafe {
            core::arch::asm!(
                "mov byte ptr [{0}], 0",
                in(reg) locked_byte,
                options(nostack, preserves_flags),
            );
        }
    }

    /// Whether some thread holds the lock (a momentary snapshot).
    #[inline]
    pub fn is_held(&self) -> bool {
        self.val.load(Ordering::Relaxed) & LOCKED_MASK != 0
    }

    /// The raw lock word, for tests that watch the pending and tail bits.
    #[cfg(all(test, not(loom)))]
    fn word(&self) -> u32 {
        self.val.load(Ordering::Relaxed)
    }
}

impl Default for RawQspin {
    fn default() -> Self {
        Self::new()
    }
}

impl Described for RawQspin {
    const INFO: LockInfo = LockInfo {
        name: "qspin",
        family: Family::Queue,
        fair: true,
        blocking: false,
        numa_aware: false,
        source: "Linux kernel/locking/qspinlock.c (Long, Zijlstra); Zijlstra & Long, locking: qspinlock, LWN 590189, 2014; Bueso (seed 001)",
        summary: "one 32-bit word: locked byte, pending bit for the first waiter, MCS tail for the rest",
    };
}

#[cfg(not(loom))]
mod raw {
    use super::RawQspin;

    // SAFETY: every way into the lock ends with this thread alone having
    // turned the locked byte from 0 to 1 after an Acquire read of a word
    // with locked (and, for the queue head, pending) clear; see the module
    // documentation. The node is given back before `lock` returns, so the
    // guard is stateless and may move between threads.
    crate::guardless_raw_mutex!(RawQspin);

    /// A mutex protected by a queued spinlock.
    pub type QspinMutex<T> = lock_api::Mutex<RawQspin, T>;
}

#[cfg(not(loom))]
pub use raw::QspinMutex;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::testing::{
        churn_threads, hammer_fifo, iters, nested_non_lifo, Watchdog, HANG,
    };
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
        let start = std::time::Instant::now();
        while !cond() {
            assert!(start.elapsed() < HANG, "timed out waiting for {what}");
            std::thread::yield_now();
        }
    }

    #[test]
    fn tail_encoding_round_trips_through_the_node_table() {
        for (thread, slot) in [(0, 0), (5, 3), (MAX_THREADS as u32 - 1, 1)] {
            let t = encode_tail(thread, slot);
            assert_eq!(t & !TAIL_MASK, 0);
            assert_ne!(t, 0);
            assert!(core::ptr::eq(decode_tail(t), NODES.get(thread, slot)));
        }
    }

    #[test]
    fn six_threads_count_exactly() {
        hammer_fifo::<RawQspin>(6, 500);
    }

    #[test]
    fn one_thread_holds_several_locks_released_out_of_order() {
        nested_non_lifo::<RawQspin>(6);
    }

    #[test]
    fn threads_exit_and_recycle_indexes_while_others_keep_locking() {
        churn_threads::<RawQspin>();
    }

    #[test]
    fn pending_then_queue_then_hand_over_in_order() {
        let _w = Watchdog::new("qspin pending/queue", HANG);
        let lock = RawQspin::new();
        let order = std::sync::Mutex::new(Vec::new());
        let entered = AtomicUsize::new(0);
        lock.acquire();
        assert_eq!(lock.word(), LOCKED);
        std::thread::scope(|s| {
            let contender = |id: usize| {
                let (lock, order, entered) = (&lock, &order, &entered);
                move || {
                    lock.acquire();
                    order.lock().unwrap().push(id);
                    entered.fetch_add(1, Ordering::Relaxed);
                    // SAFETY: held.
                    unsafe { lock.release() };
                }
            };
            // First contender: pending bit, no tail.
            s.spawn(contender(1));
            wait_for("pending", || lock.word() & PENDING != 0);
            assert_eq!(
                lock.word() & TAIL_MASK,
                0,
                "the pending waiter needs no node"
            );
            // Second: queues, becomes head, waits for locked and pending.
            s.spawn(contender(2));
            wait_for("a tail", || lock.word() & TAIL_MASK != 0);
            let head_tail = lock.word() & TAIL_MASK;
            // Third: queues behind the second.
            s.spawn(contender(3));
            wait_for("a new tail", || {
                let t = lock.word() & TAIL_MASK;
                t != 0 && t != head_tail
            });
            assert_eq!(lock.word() & LOCKED_PENDING_MASK, LOCKED | PENDING);
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(entered.load(Ordering::Relaxed), 0);
            // SAFETY: held since the top.
            unsafe { lock.release() };
        });
        assert_eq!(
            *order.lock().unwrap(),
            [1, 2, 3],
            "FIFO: pending, then queue order"
        );
        assert_eq!(lock.word(), 0, "the last one out clears the tail");
    }

    #[test]
    fn without_free_nodes_a_waiter_spins_on_trylock() {
        let _w = Watchdog::new("qspin out of nodes", HANG);
        let lock = RawQspin::new();
        let count = std::cell::UnsafeCell::new(0u64);
        struct Shared<'a>(&'a std::cell::UnsafeCell<u64>);
        // SAFETY: only touched under `lock`.
        unsafe impl Sync for Shared<'_> {}
        let shared = Shared(&count);
        std::thread::scope(|s| {
            // A helper that keeps the word busy: pending and queue paths.
            for _ in 0..2 {
                let (lock, shared) = (&lock, &shared);
                s.spawn(move || {
                    for _ in 0..iters(2_000) {
                        lock.acquire();
                        // SAFETY: under the lock.
                        unsafe { *shared.0.get() += 1 };
                        // SAFETY: held.
                        unsafe { lock.release() };
                    }
                });
            }
            let (lock, shared) = (&lock, &shared);
            s.spawn(move || {
                // Occupy every node of this thread, as nested waits would.
                let claims: Vec<_> = (0..DEPTH).map(|_| NODES.claim().unwrap()).collect();
                assert!(NODES.claim().is_none());
                for _ in 0..iters(2_000) {
                    lock.acquire();
                    // SAFETY: under the lock.
                    unsafe { *shared.0.get() += 1 };
                    // SAFETY: held.
                    unsafe { lock.release() };
                }
                for c in claims {
                    NODES.release(c.thread, c.slot);
                }
            });
        });
        assert_eq!(count.into_inner(), 3 * iters(2_000));
    }

    /// Whichever unlock `release` picks on this CPU, the kernel's byte
    /// store is also checked under contention: a plain load and store of a
    /// shared counter inside the lock loses updates if exclusion fails.
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    #[test]
    fn two_threads_count_exactly_with_the_byte_store_unlock() {
        use std::sync::atomic::AtomicU64;
        // Two threads and a yield now and then: spinning threads beyond
        // the cores, beside the rest of the suite, ran for minutes.
        const EACH: u64 = 20_000;
        let _w = Watchdog::new("qspin byte-store unlock", HANG);
        let lock = RawQspin::new();
        let count = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    for i in 0..EACH {
                        lock.acquire();
                        let n = count.load(Ordering::Relaxed);
                        count.store(n + 1, Ordering::Relaxed);
                        // SAFETY: held.
                        unsafe { lock.release_byte_store() };
                        if i % 256 == 0 {
                            std::thread::yield_now();
                        }
                    }
                });
            }
        });
        assert_eq!(count.into_inner(), 2 * EACH);
        assert_eq!(lock.word(), 0);
    }

    #[test]
    fn both_unlocks_release_the_lock() {
        let lock = RawQspin::new();
        lock.acquire();
        // SAFETY: held.
        unsafe { lock.release() };
        assert_eq!(lock.word(), 0);
        lock.acquire();
        // SAFETY: held.
        unsafe { lock.release_rmw() };
        assert_eq!(lock.word(), 0);
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        {
            lock.acquire();
            // SAFETY: held.
            unsafe { lock.release_byte_store() };
            assert_eq!(lock.word(), 0);
        }
        assert!(lock.try_acquire());
        assert!(!lock.try_acquire());
        assert!(lock.is_held());
        // SAFETY: held.
        unsafe { lock.release() };
        assert!(!lock.is_held());
    }

    #[test]
    fn metadata() {
        assert_eq!(RawQspin::INFO.name, "qspin");
        assert_eq!(RawQspin::INFO.family, Family::Queue);
        assert_eq!(
            (RawQspin::INFO.fair, RawQspin::INFO.blocking),
            (true, false)
        );
    }
}
