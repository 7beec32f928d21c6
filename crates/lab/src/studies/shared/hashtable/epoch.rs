//! `crossbeam-epoch`: the RCU-style table built on crossbeam's epoch-based
//! reclamation, the Rust peer of seed 003's RCU table. Lookups pin the
//! epoch and walk the chain with no lock and no write to shared memory but
//! the pin itself; an update takes its bucket's spin lock, links a new
//! element in place of the old one with one pointer store, and defers the
//! old one's destruction until every thread pinned at that time has
//! unpinned.
//!
//! The table has a `Collector` of its own (not the global one), so that its
//! garbage is its own and is all freed when the table is dropped; each
//! thread registers a `LocalHandle` with it. Bytes awaiting reclamation are
//! counted on the way in (the update) and on the way out (the deferred
//! closure, which frees the element and subtracts its size).

use super::runner::{bucket_of, tag, HashTable};
use super::tables::SpinLock;
use crate::core::lablock::LabRwLock;
use crossbeam_epoch::{Atomic, Collector, Guard, LocalHandle, Owned, Shared};
use crossbeam_utils::CachePadded;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicU64, Ordering};

struct ENode {
    key: u64,
    value: u64,
    next: Atomic<ENode>,
}

struct EBucket {
    lock: SpinLock,
    head: Atomic<ENode>,
}

/// The `crossbeam-epoch` strategy.
pub struct EpochTable {
    buckets: Box<[CachePadded<EBucket>]>,
    /// Dropped by hand in `Drop`, after the live elements and before
    /// `backlog`, which its deferred closures update.
    collector: ManuallyDrop<Collector>,
    backlog: Box<CachePadded<AtomicU64>>,
}

/// A pointer the deferred closures carry to the backlog counter.
struct BacklogPtr(*const AtomicU64);

// SAFETY: points to an atomic that outlives every deferred closure (the
// table drops its collector, which runs the closures left, before the
// counter).
unsafe impl Send for BacklogPtr {}

const NODE_BYTES: u64 = std::mem::size_of::<ENode>() as u64;

impl EpochTable {
    fn find<'g>(&self, key: u64, g: &'g Guard) -> Option<&'g ENode> {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        let mut p = b.head.load(Ordering::Acquire, g);
        // SAFETY: elements reachable from the table are freed only after
        // every guard pinned when they were unlinked is gone; `g` is such a
        // guard for anything this walk reaches.
        while let Some(n) = unsafe { p.as_ref() } {
            if n.key == key {
                return Some(n);
            }
            p = n.next.load(Ordering::Acquire, g);
        }
        None
    }
}

// SAFETY: buckets are shared through atomics and per-bucket locks; the
// collector is `Sync`.
unsafe impl Sync for EpochTable {}
// SAFETY: the table owns its elements.
unsafe impl Send for EpochTable {}

impl HashTable for EpochTable {
    type Reader<'t> = LocalHandle;

    fn build(buckets: usize, keys: u64) -> Self {
        let table = EpochTable {
            buckets: (0..buckets)
                .map(|_| {
                    CachePadded::new(EBucket {
                        lock: SpinLock::new(),
                        head: Atomic::null(),
                    })
                })
                .collect(),
            collector: ManuallyDrop::new(Collector::new()),
            backlog: Box::new(CachePadded::new(AtomicU64::new(0))),
        };
        // SAFETY: the table is not shared yet.
        let g = unsafe { crossbeam_epoch::unprotected() };
        for key in (0..keys).rev() {
            let b = &table.buckets[bucket_of(key, buckets)];
            let n = Owned::new(ENode {
                key,
                value: tag(key, 0),
                next: Atomic::from(b.head.load(Ordering::Relaxed, g)),
            });
            b.head.store(n, Ordering::Relaxed);
        }
        table
    }

    fn reader(&self) -> LocalHandle {
        self.collector.register()
    }

    #[inline]
    unsafe fn lookup(&self, r: &mut LocalHandle, key: u64) -> Option<u64> {
        let g = r.pin();
        self.find(key, &g).map(|n| n.value)
    }

    #[inline]
    fn update(&self, r: &mut LocalHandle, key: u64, value: u64) {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        let g = r.pin();
        let backlog = BacklogPtr(&**self.backlog);
        b.lock.write(|| {
            let mut link = &b.head;
            loop {
                let p = link.load(Ordering::Relaxed, &g);
                // SAFETY: as in `find`; the lock keeps the chain still.
                let Some(n) = (unsafe { p.as_ref() }) else {
                    return;
                };
                if n.key == key {
                    let next = n.next.load(Ordering::Relaxed, &g);
                    let new = Owned::new(ENode {
                        key,
                        value,
                        next: Atomic::from(next),
                    });
                    // Release: a reader that loads the new pointer sees the
                    // element initialised.
                    link.store(new, Ordering::Release);
                    self.backlog.fetch_add(NODE_BYTES, Ordering::Relaxed);
                    let old: Shared<'_, ENode> = p;
                    // SAFETY: `old` is unlinked and reachable only by
                    // readers pinned now, so it may be freed once they
                    // unpin; the closure's counter outlives it (BacklogPtr).
                    unsafe {
                        g.defer_unchecked(move || {
                            let backlog = backlog;
                            drop(old.into_owned());
                            (*backlog.0).fetch_sub(NODE_BYTES, Ordering::Relaxed);
                        });
                    }
                    return;
                }
                link = &n.next;
            }
        });
    }

    fn backlog_bytes(&self) -> u64 {
        self.backlog.load(Ordering::Relaxed)
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        // SAFETY: `&mut self`: nobody else reads or frees elements.
        let g = unsafe { crossbeam_epoch::unprotected() };
        for (i, b) in self.buckets.iter().enumerate() {
            let mut p = b.head.load(Ordering::Relaxed, g);
            // SAFETY: as above.
            while let Some(n) = unsafe { p.as_ref() } {
                f(Some(i), n.key, n.value);
                p = n.next.load(Ordering::Relaxed, g);
            }
        }
    }
}

impl Drop for EpochTable {
    fn drop(&mut self) {
        // SAFETY: `&mut self`: no thread is pinned on this table's
        // collector (readers' handles die with their threads), so the live
        // elements are freed at once.
        unsafe {
            let g = crossbeam_epoch::unprotected();
            for b in self.buckets.iter() {
                let mut p = b.head.load(Ordering::Relaxed, g);
                while !p.is_null() {
                    let next = p.deref().next.load(Ordering::Relaxed, g);
                    drop(p.into_owned());
                    p = next;
                }
            }
            // The last reference to the collector's global state: dropping
            // it runs every deferred closure left, while `backlog` lives.
            ManuallyDrop::drop(&mut self.collector);
        }
    }
}
