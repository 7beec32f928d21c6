//! Compact thread indexes: small integers, unique among live threads, handed
//! back when a thread exits and reused by the next one.
//!
//! Queue locks address a waiter's node by (thread index, nesting slot), the
//! way Linux's qspinlock addresses per-CPU nodes by (CPU number, index). A
//! compact index keeps that address small enough to pack into a lock word
//! (14 bits in `qspin`), and recycling keeps the node tables small however
//! many short-lived threads a program spawns.

/// The largest number of threads that may use locklab's queue locks at once.
/// Indexes are `0..MAX_THREADS`, so `index + 1` fits the 14-bit thread field
/// of the `qspin` tail (where 0 means "no tail").
pub const MAX_THREADS: usize = (1 << 14) - 1;

#[cfg(not(loom))]
mod imp {
    use super::MAX_THREADS;
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    static NEXT: AtomicU32 = AtomicU32::new(0);
    static FREE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

    /// `CACHE` holds no index yet (or no longer).
    const UNSET: u32 = u32::MAX;

    fn allocate() -> u32 {
        // Lowest free index first keeps the node tables dense.
        if let Some(i) = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return i;
        }
        let i = NEXT.fetch_add(1, Ordering::Relaxed);
        if i as usize >= MAX_THREADS {
            // Not a recoverable condition for a lock: there is no node to
            // queue with. Abort with a message rather than corrupt a queue.
            eprintln!("locklab: more than {MAX_THREADS} live threads use queue locks");
            std::process::abort();
        }
        i
    }

    /// Owns the index and hands it back when the thread exits.
    struct Slot(u32);

    impl Drop for Slot {
        fn drop(&mut self) {
            // From here on this thread must not use the index: the next
            // thread may get it. Later calls (from other thread-local
            // destructors) take the slow path and get an index of their own.
            CACHE.set(UNSET);
            // The Mutex orders this thread's last use of its nodes before the
            // next owner's first use of them.
            let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
            free.push(self.0);
            // Hand out low indexes first.
            free.sort_unstable_by(|a, b| b.cmp(a));
        }
    }

    thread_local! {
        // The hot path reads only this: a const-initialised `Cell` with no
        // destructor compiles to one thread-pointer-relative load, with no
        // "initialised yet?" state to check (a thread-local that needs
        // `Drop` carries such a state, which queue locks would pay for on
        // every acquisition).
        static CACHE: Cell<u32> = const { Cell::new(UNSET) };
        static SLOT: Slot = Slot(allocate());
    }

    /// This thread's index, allocated on first use.
    #[inline]
    pub fn current() -> u32 {
        let i = CACHE.get();
        if i != UNSET {
            return i;
        }
        first_use()
    }

    /// Whether this thread still owns the index it was given (false once
    /// the thread-local that hands it back has been destroyed).
    #[cfg(test)]
    pub(super) fn owns_index() -> bool {
        SLOT.try_with(|_| ()).is_ok()
    }

    /// Whether index `i` is on the free list.
    #[cfg(test)]
    pub(super) fn is_free(i: u32) -> bool {
        FREE.lock().unwrap_or_else(|e| e.into_inner()).contains(&i)
    }

    #[cold]
    #[inline(never)]
    fn first_use() -> u32 {
        let i = SLOT.try_with(|s| s.0).unwrap_or_else(|_| {
            // Called from a thread-local destructor after ours ran: take an
            // index that is never handed back (the thread is ending; one
            // index per such thread is the whole leak), rather than fail.
            allocate()
        });
        // `SLOT`'s destructor clears the cache if it has yet to run.
        CACHE.set(i);
        i
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn an_index_handed_back_at_thread_exit_is_not_used_after() {
        // A thread-local destructor that asks for the index late. Whether
        // it runs before or after the one that hands the index back is up
        // to the platform, so the probe looks and checks the matching rule:
        // before, the thread still owns its index; after, the index it gets
        // must be its own again, not one on the free list that the next
        // thread may take.
        /// (index at start, index in the destructor, still owned, on the free list)
        type Seen = (u32, u32, bool, bool);
        struct Late(core::cell::Cell<Option<std::sync::mpsc::Sender<Seen>>>);
        impl Drop for Late {
            fn drop(&mut self) {
                let Some(tx) = self.0.take() else { return };
                let owned = imp::owns_index();
                let late = current();
                let _ = tx.send((EARLY.get(), late, owned, imp::is_free(late)));
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
