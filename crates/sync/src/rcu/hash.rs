//! `RcuHashMap`: a chained hash table with lock-free lookups and per-bucket
//! locks for updates; removed and replaced entries are freed after a grace
//! period.
//!
//! This is the table of seed 003's lookup benchmark, under RCU: a reader
//! hashes the key, walks its bucket's chain with `Acquire` loads and
//! compares keys, all without a store. An updater takes the bucket's lock
//! (the hybrid mutex of [`crate::block::mutex`]), so updates of different
//! buckets run in parallel; insertion links a finished node at the head of
//! the chain, replacement swaps a new node into the old one's place (values
//! are never changed in place: readers see the old value or the new one),
//! removal unlinks. Unlinked nodes go to [`Domain::defer_drop`], so memory
//! awaiting a grace period shows in the domain's backlog.
//!
//! The number of buckets is fixed at construction; a key's bucket is its
//! hash modulo the number of buckets (a mask when that is a power of two),
//! so a hasher must mix its low bits, as std's `RandomState` does. Lookups
//! return
//! references that live no longer than both the guard and the map borrow.
//!
//! ```
//! use locklab::rcu::{Rcu, RcuHashMap};
//!
//! let rcu = Rcu::new();
//! let map = RcuHashMap::with_buckets(&rcu, 1024);
//! map.insert(7u64, "seven");
//! let reader = rcu.register(); // once per thread
//! {
//!     let g = reader.read();
//!     assert_eq!(map.get(&7, &g), Some(&"seven"));
//! }
//! map.remove(&7); // freed after a grace period
//! rcu.synchronize();
//! ```

use super::list::{free_chain, Node};
use super::{check_guard, Domain, Flavor, General, ReadGuard};
use crate::block::mutex::HybridMutex;
use crossbeam_utils::CachePadded;
use std::borrow::Borrow;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hash};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

type Head<K, V> = AtomicPtr<Node<(K, V)>>;

/// A hash map for read-mostly use; see the module docs.
pub struct RcuHashMap<K, V, F: Flavor = General, S = RandomState>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
{
    /// Chain heads, all readers touch; apart from the locks, so a reader's
    /// working set is as small as an unsynchronized table's and updaters'
    /// lock writes do not evict it.
    heads: Box<[Head<K, V>]>,
    /// One lock per chain, for updaters.
    locks: Box<[HybridMutex<()>]>,
    hasher: S,
    /// Apart from the fields lookups read: updaters write it, and a map
    /// whose own fields never change lets a loop of lookups load them once.
    len: Box<CachePadded<AtomicUsize>>,
    domain: Domain<F>,
    /// `domain.id()`, kept here so a lookup checks its guard with one compare.
    domain_id: usize,
}

// SAFETY: readers on any thread get `&K`/`&V` (so `Sync`); nodes are dropped
// on the reclaimer thread or where the map is dropped (so `Send`).
unsafe impl<K, V, F, S> Send for RcuHashMap<K, V, F, S>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
    F: Flavor,
    S: Send,
{
}
// SAFETY: as above.
unsafe impl<K, V, F, S> Sync for RcuHashMap<K, V, F, S>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
    F: Flavor,
    S: Sync,
{
}

impl<K, V, F> RcuHashMap<K, V, F, RandomState>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Send + Sync + 'static,
    F: Flavor,
{
    /// An empty map with `buckets` chains (at least one).
    pub fn with_buckets(domain: &Domain<F>, buckets: usize) -> Self {
        Self::with_buckets_and_hasher(domain, buckets, RandomState::new())
    }
}

impl<K, V, F, S> RcuHashMap<K, V, F, S>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Send + Sync + 'static,
    F: Flavor,
    S: BuildHasher,
{
    /// An empty map with `buckets` chains (at least one) and the given
    /// hasher.
    pub fn with_buckets_and_hasher(domain: &Domain<F>, buckets: usize, hasher: S) -> Self {
        let n = buckets.max(1);
        RcuHashMap {
            heads: (0..n)
                .map(|_| AtomicPtr::new(core::ptr::null_mut()))
                .collect(),
            locks: (0..n).map(|_| HybridMutex::new(())).collect(),
            hasher,
            len: Box::new(CachePadded::new(AtomicUsize::new(0))),
            domain: domain.clone(),
            domain_id: domain.id(),
        }
    }

    /// The number of chains.
    pub fn bucket_count(&self) -> usize {
        self.heads.len()
    }

    /// The number of entries (exact between updates).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The domain whose grace periods protect the map.
    pub fn domain(&self) -> &Domain<F> {
        &self.domain
    }

    #[inline(always)]
    fn bucket<Q: Hash + ?Sized>(&self, key: &Q) -> usize {
        let h = self.hasher.hash_one(key);
        let n = self.heads.len();
        if n & (n - 1) == 0 {
            h as usize & (n - 1)
        } else {
            (h % n as u64) as usize
        }
    }

    /// The value of `key`, as a reader sees it under `guard`.
    ///
    /// # Panics
    /// If `guard` belongs to another domain.
    #[inline(always)]
    pub fn get<'a, Q, G>(&'a self, key: &Q, guard: &'a G) -> Option<&'a V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        G: ReadGuard,
    {
        check_guard(guard, self.domain_id, "map");
        // SAFETY: just checked.
        unsafe { self.get_unchecked(key, guard) }
    }

    /// [`get`](Self::get) without the check of the guard's domain, for a
    /// loop of lookups whose reader was checked once (with
    /// [`Domain::id`] and [`ReadGuard::domain`]): the check is a compare
    /// and a branch on every lookup, about 5 % of a lookup in a small
    /// table.
    ///
    /// # Safety
    /// `guard` must belong to this map's domain (`guard.domain() ==
    /// map.domain().id()`); another domain's grace periods do not wait for
    /// it, so the entry could be freed while the reference lives.
    #[inline(always)]
    pub unsafe fn get_unchecked<'a, Q, G>(&'a self, key: &Q, guard: &'a G) -> Option<&'a V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        G: ReadGuard,
    {
        debug_assert_eq!(guard.domain(), self.domain_id, "a guard of another domain");
        let mut cur = self.heads[self.bucket(key)].load(Ordering::Acquire);
        // SAFETY: nodes reachable under the guard, which the caller vouches
        // is of this map's domain, are freed only after a grace period,
        // which waits for the guard (`'a` borrows it).
        while let Some(node) = unsafe { cur.as_ref() } {
            if node.value.0.borrow() == key {
                return Some(&node.value.1);
            }
            cur = node.next.load(Ordering::Acquire);
        }
        None
    }

    /// Whether `key` is present.
    #[inline]
    pub fn contains_key<Q, G>(&self, key: &Q, guard: &G) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        G: ReadGuard,
    {
        self.get(key, guard).is_some()
    }

    /// Every entry, bucket by bucket, as a reader sees the map under
    /// `guard`: entries inserted or removed meanwhile may or may not show;
    /// a replaced entry shows once, old or new.
    ///
    /// # Panics
    /// If `guard` belongs to another domain.
    pub fn iter<'a, G: ReadGuard>(&'a self, guard: &'a G) -> Iter<'a, K, V> {
        check_guard(guard, self.domain_id, "map");
        Iter {
            heads: self.heads.iter(),
            node: core::ptr::null(),
        }
    }

    /// Inserts or replaces. Returns whether `key` was present (its old
    /// value is dropped after a grace period).
    pub fn insert(&self, key: K, value: V) -> bool {
        let i = self.bucket(&key);
        let head = &self.heads[i];
        let _w = self.locks[i].lock();
        let mut link = head;
        loop {
            let cur = link.load(Ordering::Relaxed);
            // SAFETY: chain nodes are live; updates hold the bucket lock.
            let Some(node) = (unsafe { cur.as_ref() }) else {
                break;
            };
            if node.value.0 == key {
                let new = Box::into_raw(Box::new(Node {
                    value: (key, value),
                    next: AtomicPtr::new(node.next.load(Ordering::Relaxed)),
                }));
                link.store(new, Ordering::Release);
                // SAFETY: unlinked under the bucket lock.
                self.domain.defer_drop(unsafe { Box::from_raw(cur) });
                return true;
            }
            link = &node.next;
        }
        let new = Box::into_raw(Box::new(Node {
            value: (key, value),
            next: AtomicPtr::new(head.load(Ordering::Relaxed)),
        }));
        head.store(new, Ordering::Release);
        self.len.fetch_add(1, Ordering::Relaxed);
        false
    }

    /// Removes `key`; its entry is dropped after a grace period. Returns
    /// whether it was present.
    pub fn remove<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.bucket(key);
        let _w = self.locks[i].lock();
        let mut link = &self.heads[i];
        loop {
            let cur = link.load(Ordering::Relaxed);
            // SAFETY: as in `insert`.
            let Some(node) = (unsafe { cur.as_ref() }) else {
                return false;
            };
            if node.value.0.borrow() == key {
                link.store(node.next.load(Ordering::Relaxed), Ordering::Release);
                self.len.fetch_sub(1, Ordering::Relaxed);
                // SAFETY: as in `insert`.
                self.domain.defer_drop(unsafe { Box::from_raw(cur) });
                return true;
            }
            link = &node.next;
        }
    }
}

/// Iterator over an [`RcuHashMap`] under a read-side guard.
pub struct Iter<'a, K, V> {
    heads: core::slice::Iter<'a, Head<K, V>>,
    node: *const Node<(K, V)>,
}

impl<'a, K: 'a, V: 'a> Iterator for Iter<'a, K, V> {
    type Item = (&'a K, &'a V);

    fn next(&mut self) -> Option<(&'a K, &'a V)> {
        while self.node.is_null() {
            self.node = self.heads.next()?.load(Ordering::Acquire);
        }
        // SAFETY: reached under the guard `'a` borrows; freed only after a
        // grace period that waits for it.
        let node = unsafe { &*self.node };
        self.node = node.next.load(Ordering::Acquire);
        Some((&node.value.0, &node.value.1))
    }
}

impl<K, V, F, S> Drop for RcuHashMap<K, V, F, S>
where
    K: Send + Sync + 'static,
    V: Send + Sync + 'static,
    F: Flavor,
{
    fn drop(&mut self) {
        for head in self.heads.iter_mut() {
            // SAFETY: readers borrow the map, so none is left; we own
            // every node still linked.
            unsafe { free_chain(*head.get_mut()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rcu::{Qsbr, Rcu};

    #[test]
    fn insert_get_replace_remove() {
        let rcu = Rcu::new();
        let map = RcuHashMap::with_buckets(&rcu, 8);
        for k in 0..100u64 {
            assert!(!map.insert(k, k * 10));
        }
        assert!(map.insert(7, 71));
        let r = rcu.register();
        {
            let g = r.read();
            assert_eq!(map.get(&7, &g), Some(&71));
            assert_eq!(map.get(&8, &g), Some(&80));
            assert_eq!(map.get(&1000, &g), None);
        }
        assert!(map.remove(&8));
        assert!(!map.remove(&8));
        assert_eq!(map.len(), 99);
        let g = r.read();
        assert!(!map.contains_key(&8, &g));
        assert!((0..100)
            .filter(|&k| k != 8)
            .all(|k| map.contains_key(&k, &g)));
    }

    #[test]
    fn removed_entries_are_reclaimed_after_a_grace_period() {
        let rcu = Qsbr::new();
        let map = RcuHashMap::with_buckets(&rcu, 4);
        for k in 0..64u64 {
            map.insert(k, [0u64; 4]);
        }
        for k in 0..64u64 {
            map.remove(&k);
        }
        assert!(rcu.backlog_bytes() > 0 || rcu.stats().completed_callbacks > 0);
        rcu.barrier();
        assert_eq!(rcu.backlog_bytes(), 0);
        assert_eq!(rcu.stats().completed_callbacks, 64);
    }
}
