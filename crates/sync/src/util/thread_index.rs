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
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;

    static NEXT: AtomicU32 = AtomicU32::new(0);
    static FREE: Mutex<Vec<u32>> = Mutex::new(Vec::new());

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

    struct Slot(u32);

    impl Drop for Slot {
        fn drop(&mut self) {
            // The Mutex orders this thread's last use of its nodes before the
            // next owner's first use of them.
            let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
            free.push(self.0);
            // Hand out low indexes first.
            free.sort_unstable_by(|a, b| b.cmp(a));
        }
    }

    thread_local! {
        static SLOT: Slot = Slot(allocate());
    }

    /// This thread's index, allocated on first use.
    #[inline]
    pub fn current() -> u32 {
        SLOT.try_with(|s| s.0).unwrap_or_else(|_| {
            // Called from a thread-local destructor after ours ran: take an
            // index that is never handed back, rather than fail.
            allocate()
        })
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
