//! Compact thread indexes: small integers, unique among live threads, handed
//! back when a thread exits and reused by the next one.
//!
//! Queue locks address a waiter's node by (thread index, nesting slot), the
//! way Linux's qspinlock addresses per-CPU nodes by (CPU number, index). A
//! compact index keeps that address small enough to pack into a lock word
//! (14 bits in `qspin`), and recycling keeps the node tables small however
//! many short-lived threads a program spawns.
//!
//! No allocation happens here (std build): the first lock a thread takes
//! asks for its index, and that lock may be one a `malloc` takes (jemalloc's
//! and tcmalloc's pthread mutexes, under the interposer), so an allocation
//! would re-enter the allocator. Free indexes live in a static bitmap, the
//! index in a destructor-free thread-local, and the hand-back at thread exit
//! is done by the `thread_exit` module's hook rather than by a
//! thread-local destructor (whose registration allocates).

/// The largest number of threads that may use locklab's queue locks at once.
/// Indexes are `0..MAX_THREADS`, so `index + 1` fits the 14-bit thread field
/// of the `qspin` tail (where 0 means "no tail").
pub const MAX_THREADS: usize = (1 << 14) - 1;

#[cfg(not(loom))]
mod imp {
    //! Std build. Free indexes are the set bits of a static bitmap, so
    //! allocating and freeing one is a few atomic read-modify-writes on
    //! static memory: no `Vec`, no mutex, and no thread-local with a
    //! destructor (registering one `calloc`s). Nothing here allocates,
    //! which matters because the first lock a thread takes may be one that
    //! a `malloc` takes (see [`thread_exit`]).
    //!
    //! Orderings: freeing is a `Release` `fetch_or` of the index's bit,
    //! claiming an `Acquire` `fetch_and` that finds the bit set. The claim
    //! reads the value written by the free or by a later read-modify-write
    //! of the same word (every update of the bitmap is one, so they all
    //! continue the free's release sequence), so the old owner's last use
    //! of the index (its rows in the node tables, whose `busy` masks are
    //! written with plain Relaxed stores by their owner alone) happens
    //! before the new owner's first. Indexes from `NEXT` have never had an
    //! owner, so a Relaxed counter suffices there.
    use super::MAX_THREADS;
    use crate::util::thread_exit;
    use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    /// Indexes handed out so far from the top: every index below it has been
    /// given out at least once, and only those can be free.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    /// Bit `i % 64` of word `i / 64` is set while index `i` is free.
    static FREE: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];
    const WORDS: usize = MAX_THREADS.div_ceil(64);

    /// `CACHE` holds no index yet (or no longer).
    const UNSET: u32 = u32::MAX;

    fn allocate() -> u32 {
        // Lowest free index first keeps the node tables dense. A word's
        // bits may change under us; a lost race retries with what the
        // failed claim saw. An index freed behind the scan is simply missed
        // this time.
        let words = (NEXT.load(Ordering::Relaxed) as usize)
            .min(MAX_THREADS)
            .div_ceil(64);
        for (w, word) in FREE.iter().enumerate().take(words) {
            let mut bits = word.load(Ordering::Relaxed);
            while bits != 0 {
                let bit = 1u64 << bits.trailing_zeros();
                let before = word.fetch_and(!bit, Ordering::Acquire);
                if before & bit != 0 {
                    return (w * 64) as u32 + bit.trailing_zeros();
                }
                bits = before & !bit;
            }
        }
        let i = NEXT.fetch_add(1, Ordering::Relaxed);
        if i as usize >= MAX_THREADS {
            // Not a recoverable condition for a lock: there is no node to
            // queue with. Abort with a message rather than corrupt a queue.
            crate::util::abort_with("locklab: more than 16383 live threads use queue locks\n");
        }
        i
    }

    // The message above spells the limit out (formatting might allocate).
    const _: () = assert!(MAX_THREADS == 16383);

    /// Puts `i` back for the next thread (see the orderings above).
    fn free(i: u32) {
        let i = i as usize;
        FREE[i / 64].fetch_or(1 << (i % 64), Ordering::Release);
    }

    #[cfg(not(all(
        feature = "static-tls",
        target_arch = "x86_64",
        target_os = "linux",
        not(miri)
    )))]
    mod cache {
        use core::cell::Cell;

        thread_local! {
            // The hot path reads only this: a const-initialised `Cell` with
            // no destructor compiles to one thread-pointer-relative load in
            // an executable (in a shared object, a call of the dynamic
            // loader's `__tls_get_addr`: see `static_tls` below), with no
            // "initialised yet?" state to check and no destructor to
            // register. The index is handed back by the thread-exit hook
            // instead.
            static CACHE: Cell<u32> = const { Cell::new(super::UNSET) };
        }

        #[inline(always)]
        pub fn get() -> u32 {
            CACHE.get()
        }

        #[inline]
        pub fn set(v: u32) {
            CACHE.set(v)
        }
    }

    /// The feature `static-tls` (x86-64 Linux): the cache in a thread-local
    /// word of the initial-exec model, read at a fixed offset from the
    /// thread pointer in a shared object too. A shared object's ordinary
    /// thread-locals take the general-dynamic model, which calls the
    /// dynamic loader's `__tls_get_addr` on every access: on the hot path of
    /// every lock that names its holder (the hybrid mutex, the queue
    /// locks), that call was a third of what the interposer
    /// (`locklab-preload`, an `LD_PRELOAD` library) added to an
    /// uncontended pair. Rust offers no choice of model on stable, so the
    /// word is declared in assembly (the initial-exec model is what C's
    /// `__attribute__((tls_model("initial-exec")))` gives, as malloc
    /// libraries loaded by `LD_PRELOAD` use). Valid in an executable (the
    /// linker turns it into the local-exec model) and in a shared object
    /// loaded at start-up (its thread-locals are in the static block);
    /// a shared object with it that is `dlopen`ed later takes room from
    /// the C library's small reserve of static thread-local storage, and
    /// fails to load if none is left. Stored as the index plus one, so
    /// that the zero-filled initial value means "none".
    #[cfg(all(
        feature = "static-tls",
        target_arch = "x86_64",
        target_os = "linux",
        not(miri)
    ))]
    mod cache {
        core::arch::global_asm!(
            ".pushsection .tbss,\"awT\",@nobits",
            ".p2align 2",
            ".globl __locklab_thread_index_v1",
            ".hidden __locklab_thread_index_v1",
            ".type __locklab_thread_index_v1, @object",
            ".size __locklab_thread_index_v1, 4",
            "__locklab_thread_index_v1:",
            ".zero 4",
            ".popsection",
        );

        #[inline(always)]
        pub fn get() -> u32 {
            let v: u32;
            // SAFETY: reads the calling thread's own word of the static
            // thread-local block (its offset from the thread pointer, from
            // the GOT); nothing else is touched.
            unsafe {
                core::arch::asm!(
                    "mov {t}, qword ptr [rip + __locklab_thread_index_v1@GOTTPOFF]",
                    "mov {v:e}, dword ptr fs:[{t}]",
                    t = out(reg) _,
                    v = out(reg) v,
                    options(nostack, readonly, preserves_flags),
                )
            };
            v.wrapping_sub(1)
        }

        #[inline]
        pub fn set(v: u32) {
            // SAFETY: writes the calling thread's own word, as `get` reads.
            unsafe {
                core::arch::asm!(
                    "mov {t}, qword ptr [rip + __locklab_thread_index_v1@GOTTPOFF]",
                    "mov dword ptr fs:[{t}], {v:e}",
                    t = out(reg) _,
                    v = in(reg) v.wrapping_add(1),
                    options(nostack, preserves_flags),
                )
            };
        }
    }

    /// This thread's index, allocated on first use.
    #[inline]
    pub fn current() -> u32 {
        let i = cache::get();
        if i != UNSET {
            return i;
        }
        first_use()
    }

    #[cold]
    #[inline(never)]
    fn first_use() -> u32 {
        let i = allocate();
        // Cached before arming: a lock taken inside `arm` (whatever it
        // calls) finds the index and does not come back here.
        cache::set(i);
        thread_exit::arm();
        i
    }

    /// The thread-exit hook's part: from here on this thread does not use
    /// its index (the next thread may get it). A later call to [`current`]
    /// (from another key's destructor) allocates again and re-arms.
    pub(crate) fn on_thread_exit() {
        let i = cache::get();
        cache::set(UNSET);
        if i != UNSET {
            free(i);
        }
    }

    /// Whether this thread holds an index (false before its first use and
    /// once the thread-exit hook has handed it back).
    #[cfg(test)]
    pub(crate) fn owns_index() -> bool {
        cache::get() != UNSET
    }

    /// Whether index `i` is free (waiting for the next thread).
    #[cfg(test)]
    pub(crate) fn is_free(i: u32) -> bool {
        let i = i as usize;
        FREE[i / 64].load(Ordering::Relaxed) & (1 << (i % 64)) != 0
    }
}

#[cfg(loom)]
mod imp {
    // A plain (not model-checked) counter, fresh in every execution: loom
    // runs one thread at a time, so it is deterministic for a given
    // schedule, and which thread gets which index is no part of any lock
    // algorithm. A loom atomic here would make loom explore every order in
    // which threads first ask for an index, multiplying the interleavings
    // of every model by that for nothing.
    use std::sync::atomic::{AtomicU32, Ordering};

    loom::lazy_static! {
        static ref NEXT: AtomicU32 = AtomicU32::new(0);
    }
    loom::thread_local! {
        static SLOT: u32 = NEXT.fetch_add(1, Ordering::Relaxed);
    }

    /// This thread's index (under loom: never recycled within one execution).
    pub fn current() -> u32 {
        SLOT.with(|s| *s)
    }
}

pub use imp::current;
#[cfg(not(loom))]
pub(crate) use imp::on_thread_exit;
#[cfg(all(test, not(loom)))]
pub(crate) use imp::{is_free, owns_index};

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_index_handed_back_at_thread_exit_is_not_used_after() {
        // A thread-local destructor that asks for the index late. Whether
        // it runs before or after the hook that hands the index back is up
        // to the platform (glibc runs Rust thread-local destructors first),
        // so the probe looks and checks the matching rule: before, the
        // thread still owns its index; after, the index it gets must be its
        // own again, not one on the free list that the next thread may take.
        // (`thread_exit`'s tests cover a user after the hook for certain.)
        /// (index at start, index in the destructor, still owned, on the free list)
        type Seen = (u32, u32, bool, bool);
        struct Late(core::cell::Cell<Option<std::sync::mpsc::Sender<Seen>>>);
        impl Drop for Late {
            fn drop(&mut self) {
                let Some(tx) = self.0.take() else { return };
                let owned = owns_index();
                let late = current();
                let _ = tx.send((EARLY.get(), late, owned, is_free(late)));
            }
        }
        thread_local! {
            static LATE: Late = const { Late(core::cell::Cell::new(None)) };
            static EARLY: core::cell::Cell<u32> = const { core::cell::Cell::new(0) };
        }
        let (tx, rx) = std::sync::mpsc::channel();
        for _ in 0..4 {
            let tx = tx.clone();
            std::thread::spawn(move || {
                LATE.with(|l| l.0.set(Some(tx)));
                EARLY.set(current());
            })
            .join()
            .unwrap();
        }
        drop(tx);
        let seen: Vec<_> = rx.iter().collect();
        assert_eq!(seen.len(), 4);
        for (early, late, owned, free) in seen {
            assert!(!free, "index {late} used while on the free list");
            if owned {
                assert_eq!(early, late, "the index changed while the thread owned it");
            }
        }
    }

    #[test]
    fn live_threads_have_distinct_indexes() {
        let me = current();
        let (tx, rx) = std::sync::mpsc::channel();
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let tx = tx.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    tx.send(current()).unwrap();
                    barrier.wait(); // all four alive at once
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        drop(tx);
        let mut got: Vec<u32> = rx.iter().collect();
        got.push(me);
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), 5, "live threads shared an index");
    }
}
