//! `RcuList`: a singly linked list that readers walk with no lock while
//! updaters insert, replace and remove under a mutex; removed nodes are
//! freed after a grace period.
//!
//! The list is Linux's `list_add_rcu`/`list_del_rcu` discipline (seed 003,
//! Listing 2) for a singly linked list:
//! - publish: a node is fully built, then linked with a `Release` store, so
//!   a reader that loads the link (`Acquire`) sees its contents;
//! - remove: the predecessor's link skips the node (`Release`); the node
//!   keeps its own `next`, so a reader standing on it still finds the rest
//!   of the list; it is handed to [`Domain::defer_drop`] and freed once
//!   every reader that could stand on it has left;
//! - replace: a copy takes the old node's place in one store, so readers
//!   see either the old element or the new one, never a mix.
//!
//! Readers' references live no longer than both their guard and the list
//! borrow, so neither a grace period nor dropping the list can pull an
//! element from under them.

use super::{check_guard, Domain, Flavor, General, ReadGuard};
use crate::block::mutex::HybridMutex;
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

pub(crate) struct Node<T> {
    pub(crate) value: T,
    pub(crate) next: AtomicPtr<Node<T>>,
}

/// A list of `T` for read-mostly use; see the module docs.
pub struct RcuList<T: Send + Sync + 'static, F: Flavor = General> {
    head: AtomicPtr<Node<T>>,
    len: AtomicUsize,
    writer: HybridMutex<()>,
    domain: Domain<F>,
    /// `domain.id()`, kept here so a lookup checks its guard with one compare.
    domain_id: usize,
}

// SAFETY: readers on any thread get `&T` (so `T: Sync`); nodes are dropped
// on the reclaimer thread or wherever the list is dropped (so `T: Send`).
unsafe impl<T: Send + Sync, F: Flavor> Send for RcuList<T, F> {}
// SAFETY: as above.
unsafe impl<T: Send + Sync, F: Flavor> Sync for RcuList<T, F> {}

impl<T: Send + Sync + 'static, F: Flavor> RcuList<T, F> {
    /// An empty list whose removed nodes wait for `domain`'s grace periods.
    pub fn new(domain: &Domain<F>) -> Self {
        RcuList {
            head: AtomicPtr::new(core::ptr::null_mut()),
            len: AtomicUsize::new(0),
            writer: HybridMutex::new(()),
            domain: domain.clone(),
            domain_id: domain.id(),
        }
    }

    /// The number of elements (exact between updates).
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Inserts `value` at the front.
    pub fn push_front(&self, value: T) {
        let _w = self.writer.lock();
        let node = Box::into_raw(Box::new(Node {
            value,
            next: AtomicPtr::new(self.head.load(Ordering::Relaxed)),
        }));
        self.head.store(node, Ordering::Release);
        self.len.fetch_add(1, Ordering::Relaxed);
    }

    /// Removes the first element for which `pred` holds; its memory is
    /// reclaimed after a grace period. Returns whether one was found.
    pub fn remove_first(&self, mut pred: impl FnMut(&T) -> bool) -> bool {
        let _w = self.writer.lock();
        let mut link = &self.head;
        loop {
            let cur = link.load(Ordering::Relaxed);
            if cur.is_null() {
                return false;
            }
            // SAFETY: nodes reachable from the head are live; updates are
            // serialized by `writer`, which we hold.
            let node = unsafe { &*cur };
            if pred(&node.value) {
                link.store(node.next.load(Ordering::Relaxed), Ordering::Release);
                self.len.fetch_sub(1, Ordering::Relaxed);
                // SAFETY: unlinked under the writer lock; readers that may
                // stand on it are waited for by the grace period.
                self.domain.defer_drop(unsafe { Box::from_raw(cur) });
                return true;
            }
            link = &node.next;
        }
    }

    /// Replaces the first element for which `pred` holds by `value` (a new
    /// node in the old one's place). Returns `value` back if none matched.
    pub fn replace_first(&self, mut pred: impl FnMut(&T) -> bool, value: T) -> Result<(), T> {
        let _w = self.writer.lock();
        let mut link = &self.head;
        loop {
            let cur = link.load(Ordering::Relaxed);
            if cur.is_null() {
                return Err(value);
            }
            // SAFETY: as in `remove_first`.
            let node = unsafe { &*cur };
            if pred(&node.value) {
                let new = Box::into_raw(Box::new(Node {
                    value,
                    next: AtomicPtr::new(node.next.load(Ordering::Relaxed)),
                }));
                link.store(new, Ordering::Release);
                // SAFETY: as in `remove_first`.
                self.domain.defer_drop(unsafe { Box::from_raw(cur) });
                return Ok(());
            }
            link = &node.next;
        }
    }

    /// The elements, front to back, as a reader sees them under `guard`.
    ///
    /// # Panics
    /// If `guard` belongs to another domain.
    pub fn iter<'a, G: ReadGuard>(&'a self, guard: &'a G) -> Iter<'a, T> {
        check_guard(guard, self.domain_id, "list");
        Iter {
            next: self.head.load(Ordering::Acquire),
            _list: core::marker::PhantomData,
        }
    }
}

/// Iterator over an [`RcuList`] under a read-side guard.
pub struct Iter<'a, T> {
    next: *const Node<T>,
    _list: core::marker::PhantomData<&'a T>,
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    #[inline]
    fn next(&mut self) -> Option<&'a T> {
        // SAFETY: the node was reachable when loaded under the guard, and
        // it is freed only after a grace period, which waits for the guard
        // that `'a` borrows.
        let node = unsafe { self.next.as_ref()? };
        self.next = node.next.load(Ordering::Acquire);
        Some(&node.value)
    }
}

/// Frees a chain of nodes, iteratively (a recursive drop of a long chain
/// would overflow the stack).
///
/// # Safety
/// The caller owns every node of the chain and no reader can reach them.
pub(crate) unsafe fn free_chain<T>(mut cur: *mut Node<T>) {
    while !cur.is_null() {
        // SAFETY: the caller owns the chain.
        let node = unsafe { Box::from_raw(cur) };
        cur = node.next.load(Ordering::Relaxed);
    }
}

impl<T: Send + Sync + 'static, F: Flavor> Drop for RcuList<T, F> {
    fn drop(&mut self) {
        // SAFETY: readers borrow the list, so none is left; we own every
        // node still linked.
        unsafe { free_chain(*self.head.get_mut()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rcu::Rcu;

    #[test]
    fn insert_replace_remove_iterate() {
        let rcu = Rcu::new();
        let list = RcuList::new(&rcu);
        for i in 0..5u32 {
            list.push_front(i);
        }
        let r = rcu.register();
        let g = r.read();
        assert_eq!(list.iter(&g).copied().collect::<Vec<_>>(), [4, 3, 2, 1, 0]);
        drop(g);
        assert!(list.remove_first(|&v| v == 2));
        assert!(!list.remove_first(|&v| v == 7));
        assert_eq!(list.replace_first(|&v| v == 0, 10), Ok(()));
        assert_eq!(list.replace_first(|&v| v == 99, 11), Err(11));
        let g = r.read();
        assert_eq!(list.iter(&g).copied().collect::<Vec<_>>(), [4, 3, 1, 10]);
        assert_eq!(list.len(), 4);
    }

    #[test]
    #[should_panic(expected = "another domain")]
    fn guard_of_another_domain_is_refused() {
        let (a, b) = (Rcu::new(), Rcu::new());
        let list: RcuList<u32> = RcuList::new(&a);
        let r = b.register();
        let g = r.read();
        let _ = list.iter(&g).count();
    }
}
