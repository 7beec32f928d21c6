//! The hash tables built on locklab's locks: unsynchronized (`none`), one
//! lock for the whole table (`global-spin`, `global-rw(L)`, `brlock`), a
//! lock per bucket (`bucket-spin`, `bucket-rw(L)`), the spinlock with
//! reference counts of seed 003 (`refcnt`), a sequence count per bucket
//! (`seqlock`), and the whole table behind one flat-combining mutex
//! (`combining`).
//!
//! The lock-based tables share one chain type, a singly linked list of
//! boxed elements like the seed's `list_head` chains; an update unlinks the
//! element, links a new allocation in its place and frees the old one, all
//! inside the write-side critical section, so nothing awaits reclamation.

use super::runner::{bucket_of, tag, HashTable};
use crate::core::lablock::{Exclusive, LabRwLock, Raw};
use crossbeam_utils::CachePadded;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Arc;

/// The spin lock of `global-spin`, `bucket-spin`, `refcnt` and the writers
/// of `seqlock`: test-and-test-and-set, the shape of Linux 2.5's x86
/// spinlock (`lock; decb`, then spin reading), the kernel of seed 003's
/// measurements (the seed does not show its spinlock's code).
pub type SpinLock = Exclusive<Raw<locklab::RawTtas>>;

struct Node {
    key: u64,
    value: u64,
    next: Option<Box<Node>>,
}

/// One bucket's chain.
#[derive(Default)]
struct Chain(Option<Box<Node>>);

impl Chain {
    fn push(&mut self, key: u64, value: u64) {
        let next = self.0.take();
        self.0 = Some(Box::new(Node { key, value, next }));
    }

    #[inline]
    fn find(&self, key: u64) -> Option<u64> {
        let mut cur = self.0.as_deref();
        while let Some(n) = cur {
            if n.key == key {
                return Some(n.value);
            }
            cur = n.next.as_deref();
        }
        None
    }

    /// Replaces the element of `key` by a new allocation; false if absent.
    #[inline]
    fn replace(&mut self, key: u64, value: u64) -> bool {
        let mut link = &mut self.0;
        loop {
            match link {
                None => return false,
                Some(n) if n.key == key => {
                    let next = n.next.take();
                    // The old element is freed here, inside the critical
                    // section: no reader can hold it while the lock is held.
                    *link = Some(Box::new(Node { key, value, next }));
                    return true;
                }
                Some(n) => link = &mut n.next,
            }
        }
    }

    fn visit(&self, bucket: usize, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        let mut cur = self.0.as_deref();
        while let Some(n) = cur {
            f(Some(bucket), n.key, n.value);
            cur = n.next.as_deref();
        }
    }
}

impl Drop for Chain {
    fn drop(&mut self) {
        // Iteratively: a recursive drop of a long chain overflows the stack.
        let mut cur = self.0.take();
        while let Some(mut n) = cur {
            cur = n.next.take();
        }
    }
}

fn chains(buckets: usize, keys: u64) -> Vec<Chain> {
    let mut v: Vec<Chain> = (0..buckets).map(|_| Chain::default()).collect();
    for key in (0..keys).rev() {
        v[bucket_of(key, buckets)].push(key, tag(key, 0));
    }
    v
}

/// `none`: no synchronization at all; only ever read.
pub struct Unsync {
    chains: Box<[Chain]>,
}

impl HashTable for Unsync {
    type Reader<'t> = ();
    const READ_ONLY: bool = true;

    fn build(buckets: usize, keys: u64) -> Self {
        Unsync {
            chains: chains(buckets, keys).into_boxed_slice(),
        }
    }

    fn reader(&self) {}

    #[inline]
    unsafe fn lookup(&self, _: &mut (), key: u64) -> Option<u64> {
        self.chains[bucket_of(key, self.chains.len())].find(key)
    }

    fn update(&self, _: &mut (), _: u64, _: u64) {
        // `run_rep` refuses a READ_ONLY table any update before it starts a
        // thread, and the table has no `&mut` path a shared reference could
        // reach: reaching this is a bug of the harness.
        unreachable!("the unsynchronized table never takes updates")
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        for (b, c) in self.chains.iter().enumerate() {
            c.visit(b, f);
        }
    }
}

/// One lock `L` for the whole table: `global-spin` (a [`SpinLock`]),
/// `global-rw(L)` and `brlock`. Lookups take it shared, updates exclusive.
pub struct Global<L> {
    lock: CachePadded<L>,
    chains: Box<[UnsafeCell<Chain>]>,
}

// SAFETY: the chains are read only under the lock held shared and written
// only under it held exclusive.
unsafe impl<L: LabRwLock> Sync for Global<L> {}
// SAFETY: the chains own their elements; nothing is tied to a thread.
unsafe impl<L: LabRwLock> Send for Global<L> {}

impl<L: LabRwLock> HashTable for Global<L> {
    type Reader<'t> = ();

    fn build(buckets: usize, keys: u64) -> Self {
        Global {
            lock: CachePadded::new(L::new()),
            chains: chains(buckets, keys)
                .into_iter()
                .map(UnsafeCell::new)
                .collect(),
        }
    }

    fn reader(&self) {}

    #[inline]
    unsafe fn lookup(&self, _: &mut (), key: u64) -> Option<u64> {
        let c = &self.chains[bucket_of(key, self.chains.len())];
        // SAFETY: shared access under the lock held shared.
        self.lock.read(|| unsafe { &*c.get() }.find(key))
    }

    #[inline]
    fn update(&self, _: &mut (), key: u64, value: u64) {
        let c = &self.chains[bucket_of(key, self.chains.len())];
        // SAFETY: exclusive access under the lock held exclusive.
        self.lock
            .write(|| unsafe { &mut *c.get() }.replace(key, value));
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        for (b, c) in self.chains.iter_mut().enumerate() {
            c.get_mut().visit(b, f);
        }
    }
}

/// `combining`: the whole table inside one `locklab::CombiningMutex`, each
/// lookup and update a request that the combiner runs on the table (so
/// lookups exclude each other, as under `global-spin`, the lock it is to be
/// compared with). The closures carry the key and the value, nothing of
/// their caller's thread.
pub struct Combined {
    table: locklab::CombiningMutex<Box<[Chain]>>,
}

impl HashTable for Combined {
    type Reader<'t> = ();

    fn build(buckets: usize, keys: u64) -> Self {
        Combined {
            table: locklab::CombiningMutex::new(chains(buckets, keys).into_boxed_slice()),
        }
    }

    fn reader(&self) {}

    #[inline]
    unsafe fn lookup(&self, _: &mut (), key: u64) -> Option<u64> {
        self.table
            .apply(move |chains| chains[bucket_of(key, chains.len())].find(key))
    }

    #[inline]
    fn update(&self, _: &mut (), key: u64, value: u64) {
        self.table.apply(move |chains| {
            chains[bucket_of(key, chains.len())].replace(key, value);
        });
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        for (b, c) in self.table.get_mut().iter().enumerate() {
            c.visit(b, f);
        }
    }
}

/// A bucket with its own lock, on cache lines of its own (so that two
/// threads in neighbouring buckets do not share a lock's line).
struct LockedBucket<L, C> {
    lock: L,
    chain: UnsafeCell<C>,
}

/// A lock `L` per bucket: `bucket-spin` (a [`SpinLock`]) and
/// `bucket-rw(L)`. Lookups take their bucket's lock shared, updates
/// exclusive.
pub struct PerBucket<L> {
    buckets: Box<[CachePadded<LockedBucket<L, Chain>>]>,
}

// SAFETY: a chain is read only under its bucket's lock held shared and
// written only under it held exclusive.
unsafe impl<L: LabRwLock> Sync for PerBucket<L> {}
// SAFETY: the chains own their elements; nothing is tied to a thread.
unsafe impl<L: LabRwLock> Send for PerBucket<L> {}

impl<L: LabRwLock> HashTable for PerBucket<L> {
    type Reader<'t> = ();

    fn build(buckets: usize, keys: u64) -> Self {
        PerBucket {
            buckets: chains(buckets, keys)
                .into_iter()
                .map(|c| {
                    CachePadded::new(LockedBucket {
                        lock: L::new(),
                        chain: UnsafeCell::new(c),
                    })
                })
                .collect(),
        }
    }

    fn reader(&self) {}

    #[inline]
    unsafe fn lookup(&self, _: &mut (), key: u64) -> Option<u64> {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        // SAFETY: shared access under the bucket's lock held shared.
        b.lock.read(|| unsafe { &*b.chain.get() }.find(key))
    }

    #[inline]
    fn update(&self, _: &mut (), key: u64, value: u64) {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        // SAFETY: exclusive access under the bucket's lock held exclusive.
        b.lock
            .write(|| unsafe { &mut *b.chain.get() }.replace(key, value));
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        for (i, b) in self.buckets.iter_mut().enumerate() {
            b.chain.get_mut().visit(i, f);
        }
    }
}

/// An element of `refcnt`: reference-counted by its `Arc`. The chain's
/// links (`next`) belong to the chain and are only touched under the
/// bucket's lock; a reader holding a reference reads `value` only.
struct RcNode {
    key: u64,
    value: u64,
    next: UnsafeCell<Option<Arc<RcNode>>>,
}

// SAFETY: `next` is read and written only under the lock of the bucket the
// node is (or was) linked in; `key` and `value` never change.
unsafe impl Sync for RcNode {}
// SAFETY: as above; the node holds no thread-bound state.
unsafe impl Send for RcNode {}

/// `refcnt`, seed 003's "spinlock and reference counter": a lookup takes
/// its bucket's spin lock, finds the element and takes a reference to it
/// (an atomic increment), releases the lock, reads the element, and drops
/// the reference (an atomic decrement; the last one frees the element). An
/// update unlinks the element under the lock and drops the chain's
/// reference, so an element a reader still holds outlives its removal.
pub struct Refcnt {
    buckets: Box<[CachePadded<RcBucket>]>,
}

/// A `refcnt` bucket: its spin lock and the head of its chain.
type RcBucket = LockedBucket<SpinLock, Option<Arc<RcNode>>>;

// SAFETY: chains (heads and links) are touched only under their bucket's
// lock; elements are shared through `Arc`.
unsafe impl Sync for Refcnt {}
// SAFETY: as above.
unsafe impl Send for Refcnt {}

impl HashTable for Refcnt {
    type Reader<'t> = ();

    fn build(buckets: usize, keys: u64) -> Self {
        let mut heads: Vec<Option<Arc<RcNode>>> = (0..buckets).map(|_| None).collect();
        for key in (0..keys).rev() {
            let head = &mut heads[bucket_of(key, buckets)];
            *head = Some(Arc::new(RcNode {
                key,
                value: tag(key, 0),
                next: UnsafeCell::new(head.take()),
            }));
        }
        Refcnt {
            buckets: heads
                .into_iter()
                .map(|h| {
                    CachePadded::new(LockedBucket {
                        lock: SpinLock::new(),
                        chain: UnsafeCell::new(h),
                    })
                })
                .collect(),
        }
    }

    fn reader(&self) {}

    #[inline]
    unsafe fn lookup(&self, _: &mut (), key: u64) -> Option<u64> {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        let found = b.lock.write(|| {
            // SAFETY: links are read under the bucket's lock.
            let mut cur = unsafe { &*b.chain.get() }.as_ref();
            while let Some(n) = cur {
                if n.key == key {
                    return Some(Arc::clone(n));
                }
                // SAFETY: as above.
                cur = unsafe { &*n.next.get() }.as_ref();
            }
            None
        })?;
        // Read outside the lock, under the reference; dropping it may free.
        Some(found.value)
    }

    #[inline]
    fn update(&self, _: &mut (), key: u64, value: u64) {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        b.lock.write(|| {
            let mut link: *mut Option<Arc<RcNode>> = b.chain.get();
            // SAFETY: every link (the head, then each node's `next`) is
            // read and written under the bucket's lock, which is held; the
            // nodes the links live in are kept alive by the chain.
            unsafe {
                while let Some(n) = &*link {
                    if n.key == key {
                        let old = (*link).take().expect("matched a node");
                        let next = (*old.next.get()).take();
                        *link = Some(Arc::new(RcNode {
                            key,
                            value,
                            next: UnsafeCell::new(next),
                        }));
                        // The chain's reference; a reader's may remain.
                        drop(old);
                        return;
                    }
                    link = n.next.get();
                }
            }
        });
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        for (i, b) in self.buckets.iter_mut().enumerate() {
            let mut cur = b.chain.get_mut().as_ref();
            while let Some(n) = cur {
                f(Some(i), n.key, n.value);
                // SAFETY: `&mut self`: no other thread touches the links.
                cur = unsafe { &*n.next.get() }.as_ref();
            }
        }
    }
}

impl Drop for Refcnt {
    fn drop(&mut self) {
        // Iteratively, as for `Chain`.
        for b in self.buckets.iter_mut() {
            let mut cur = b.chain.get_mut().take();
            while let Some(n) = cur {
                // SAFETY: `&mut self`: no reader holds a reference any more.
                cur = unsafe { (*n.next.get()).take() };
            }
        }
    }
}

/// An element of `seqlock`: every field atomic, since readers read it
/// while a writer may rewrite it (a plain racing read is undefined
/// behaviour even when the reader then retries).
struct SeqNode {
    key: AtomicU64,
    value: AtomicU64,
    next: AtomicPtr<SeqNode>,
}

struct SeqBucket {
    seq: locklab::SeqCount,
    /// Serializes the bucket's writers (SeqCount needs that).
    lock: SpinLock,
    head: AtomicPtr<SeqNode>,
    /// Elements unlinked from this bucket, ready for reuse; touched only
    /// under `lock`.
    spare: UnsafeCell<Vec<*mut SeqNode>>,
}

/// `seqlock`: a sequence count per bucket (`locklab::SeqCount`). A lookup
/// reads the count, walks the chain and reads the value, and retries if the
/// count moved; an update takes the bucket's spin lock and, with the count
/// odd, links a new element in place of the old one.
///
/// Readers take no lock, so an element may be unlinked while a reader
/// stands on it: it must not be freed then. Elements are therefore
/// **type-stable**: an unlinked element goes to its bucket's spare list and
/// is reused by the bucket's next update, and elements are freed only when
/// the table is dropped. A reader on an element that was unlinked (or
/// reused) reads stale but valid memory, through atomics, and its bucket's
/// count has moved, so it retries. It checks the count every
/// [`SEQ_CHECK_EVERY`] steps as well, because a walk through reused
/// elements need not end. Nothing waits for a grace period: the backlog is
/// zero, and the table keeps at most one spare element per bucket.
pub struct SeqTable {
    buckets: Box<[CachePadded<SeqBucket>]>,
}

/// Steps of a `seqlock` walk between checks of the count.
pub const SEQ_CHECK_EVERY: u32 = 64;

// SAFETY: elements are read through atomics only and never freed while
// the table is shared; heads and spare lists are written under the
// bucket's lock.
unsafe impl Sync for SeqTable {}
// SAFETY: the table owns its elements (raw pointers from `Box`).
unsafe impl Send for SeqTable {}

impl HashTable for SeqTable {
    type Reader<'t> = ();

    fn build(buckets: usize, keys: u64) -> Self {
        let table = SeqTable {
            buckets: (0..buckets)
                .map(|_| {
                    CachePadded::new(SeqBucket {
                        seq: locklab::SeqCount::new(),
                        lock: SpinLock::new(),
                        head: AtomicPtr::new(std::ptr::null_mut()),
                        spare: UnsafeCell::new(Vec::new()),
                    })
                })
                .collect(),
        };
        for key in (0..keys).rev() {
            let b = &table.buckets[bucket_of(key, buckets)];
            let n = Box::into_raw(Box::new(SeqNode {
                key: AtomicU64::new(key),
                value: AtomicU64::new(tag(key, 0)),
                next: AtomicPtr::new(b.head.load(Ordering::Relaxed)),
            }));
            b.head.store(n, Ordering::Relaxed);
        }
        table
    }

    fn reader(&self) {}

    #[inline]
    unsafe fn lookup(&self, _: &mut (), key: u64) -> Option<u64> {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        'retry: loop {
            let s = b.seq.read_begin();
            // Pointers are loaded with Acquire so that an element's
            // initialisation (by `Box::new`) happens before a reader
            // dereferences it; the count's protocol (SeqCount) covers the
            // Relaxed loads of the fields.
            let mut p = b.head.load(Ordering::Acquire);
            let mut found = None;
            let mut steps = 0u32;
            while !p.is_null() {
                // SAFETY: elements are freed only when the table is dropped
                // (`&mut self`), so `p` points to a live element.
                let n = unsafe { &*p };
                if n.key.load(Ordering::Relaxed) == key {
                    found = Some(n.value.load(Ordering::Relaxed));
                    break;
                }
                p = n.next.load(Ordering::Acquire);
                steps += 1;
                if steps % SEQ_CHECK_EVERY == 0 && b.seq.read_retry(s) {
                    continue 'retry;
                }
            }
            if !b.seq.read_retry(s) {
                return found;
            }
        }
    }

    #[inline]
    fn update(&self, _: &mut (), key: u64, value: u64) {
        let b = &self.buckets[bucket_of(key, self.buckets.len())];
        b.lock.write(|| {
            // SAFETY: the spare list is touched only under the lock.
            let spare = unsafe { &mut *b.spare.get() };
            // Find the link to the element first (writers are serialized,
            // so the chain holds still), then change it with the count odd.
            let mut link = &b.head;
            let old = loop {
                let p = link.load(Ordering::Relaxed);
                if p.is_null() {
                    return;
                }
                // SAFETY: a linked element, alive while the table is.
                let n = unsafe { &*p };
                if n.key.load(Ordering::Relaxed) == key {
                    break p;
                }
                link = &n.next;
            };
            // SAFETY: as above.
            let next = unsafe { &*old }.next.load(Ordering::Relaxed);
            b.seq.write_begin();
            let new = match spare.pop() {
                Some(p) => {
                    // SAFETY: a spare element of this table, alive; readers
                    // may read it concurrently, through atomics only.
                    let n = unsafe { &*p };
                    n.key.store(key, Ordering::Relaxed);
                    n.value.store(value, Ordering::Relaxed);
                    n.next.store(next, Ordering::Relaxed);
                    p
                }
                None => Box::into_raw(Box::new(SeqNode {
                    key: AtomicU64::new(key),
                    value: AtomicU64::new(value),
                    next: AtomicPtr::new(next),
                })),
            };
            link.store(new, Ordering::Release);
            b.seq.write_end();
            spare.push(old);
        });
    }

    fn visit(&mut self, f: &mut dyn FnMut(Option<usize>, u64, u64)) {
        for (i, b) in self.buckets.iter_mut().enumerate() {
            let mut p = *b.head.get_mut();
            while !p.is_null() {
                // SAFETY: `&mut self`: linked elements, nobody else reading.
                let n = unsafe { &*p };
                f(
                    Some(i),
                    n.key.load(Ordering::Relaxed),
                    n.value.load(Ordering::Relaxed),
                );
                p = n.next.load(Ordering::Relaxed);
            }
        }
    }
}

impl Drop for SeqTable {
    fn drop(&mut self) {
        for b in self.buckets.iter_mut() {
            let mut p = *b.head.get_mut();
            while !p.is_null() {
                // SAFETY: `&mut self`: every element was made by
                // `Box::into_raw`, is linked once or spare once, and nobody
                // else can reach it now.
                let n = unsafe { Box::from_raw(p) };
                p = n.next.load(Ordering::Relaxed);
            }
            for p in b.spare.get_mut().drain(..) {
                // SAFETY: as above.
                drop(unsafe { Box::from_raw(p) });
            }
        }
    }
}
