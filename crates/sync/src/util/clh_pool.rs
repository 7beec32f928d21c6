//! The supply of CLH queue nodes.
//!
//! In a CLH lock a node does not stay with the thread that enqueued it:
//! releasing leaves the releaser's node in the queue for its successor to
//! read, and the successor takes over its predecessor's node instead (see
//! `spin::clh`). Nodes therefore wander from thread to thread and cannot live
//! in the fixed per-thread rows of [`super::nodes::NodeTable`]; they come
//! from here.
//!
//! Design: each thread keeps a small stack of free nodes ([`CACHE`] at
//! most, thread-local, no atomics). When it runs dry it refills from one
//! global free list behind a mutex, which allocates a node when it is empty
//! too; when the stack overflows, and when the thread exits, nodes go back to
//! the global list. A CLH acquisition takes one node and gets its
//! predecessor's back, so in steady state a thread never leaves its cache:
//! the global list is touched when a thread meets a fresh lock (no
//! predecessor, one node fewer), when a lock is dropped (it gives back the
//! nodes still in its queue) and when threads come and go.
//!
//! Why this is sound:
//! - Nodes are never freed in the std build (under loom a pool lives for one
//!   execution and frees its nodes after the last thread is gone). A pointer
//!   to a node, however stale, stays dereferenceable. CLH relies on that: its
//!   `try_acquire` and `is_held` peek at the tail node, which may meanwhile
//!   have been recycled by another thread. Every field of a node is atomic,
//!   so such a peek is a harmless race, never a use after free.
//! - Ownership is exclusive and handed on, never shared: [`take`] returns a
//!   node nobody else owns; [`give`] requires that the caller owns the node
//!   and will not touch it again. When a node becomes owned is the lock's
//!   business (in CLH: when its successor has seen it released or
//!   abandoned, or when the lock is dropped).
//! - Ordering: a node that moves between threads through the global list
//!   does so under its mutex, which orders the old owner's last write before
//!   the new owner's first; one that moves through a lock's queue is ordered
//!   by the lock's own Release/Acquire pair. A cache is touched only by its
//!   own thread.
//!
//! Under loom the global list is a per-execution `lazy_static` and the
//! caches are `loom::thread_local!`s. Loom drops lazy statics before the
//! main thread's thread-locals, so each cache holds the pool through an
//! `Arc`; the pool goes with its last cache, and then checks that every node
//! it ever made came back exactly once.

use super::sync::{AtomicPtr, Mutex, Ordering};
use super::CachePadded;
use core::cell::Cell;
use core::ptr::{self, NonNull};

/// A CLH queue node: one pointer-sized word alone on its cache line. What
/// the word means is up to the lock.
#[derive(Debug)]
pub struct ClhNode {
    state: CachePadded<AtomicPtr<ClhNode>>,
}

impl ClhNode {
    fn new() -> Self {
        Self {
            state: CachePadded::new(AtomicPtr::new(ptr::null_mut())),
        }
    }

    /// The node's word.
    #[inline]
    pub fn state(&self) -> &AtomicPtr<ClhNode> {
        &self.state
    }
}

// Locks may use the values 0 and 1 as markers in a word that otherwise
// holds node pointers.
const _: () = assert!(core::mem::align_of::<ClhNode>() >= 2);

/// How many free nodes a thread keeps for itself.
pub const CACHE: usize = 16;
/// How many nodes move between a cache and the global list at once.
const BATCH: usize = CACHE / 2;

/// The only handle to a free node.
struct Owned(NonNull<ClhNode>);

// SAFETY: an `Owned` is the sole handle to its node (see the module
// documentation), and the node holds only atomics, so the handle may move to
// another thread.
unsafe impl Send for Owned {}

struct Free {
    nodes: Vec<Owned>,
    /// Nodes ever allocated by this pool.
    made: usize,
}

/// The global free list.
struct Pool {
    free: Mutex<Free>,
}

impl Pool {
    #[cfg(not(loom))]
    const fn new() -> Self {
        Self {
            free: Mutex::new(Free {
                nodes: Vec::new(),
                made: 0,
            }),
        }
    }

    #[cfg(loom)]
    fn new() -> Self {
        Self {
            free: Mutex::new(Free {
                nodes: Vec::new(),
                made: 0,
            }),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Free) -> R) -> R {
        // Nothing panics while the list is locked except allocation failure,
        // which aborts; a poisoned list is still consistent.
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut free)
    }

    /// Fills a prefix of `slots` with owned nodes and says how long it is
    /// (at least one: a node is allocated if the list is empty).
    #[cold]
    fn refill(&self, slots: &[Cell<*mut ClhNode>]) -> usize {
        self.with(|free| {
            let mut n = 0;
            while n < slots.len() {
                let Some(Owned(p)) = free.nodes.pop() else {
                    break;
                };
                slots[n].set(p.as_ptr());
                n += 1;
            }
            if n == 0 {
                free.made += 1;
                slots[0].set(Box::into_raw(Box::new(ClhNode::new())));
                n = 1;
            }
            n
        })
    }

    /// Takes back the nodes in `slots`, all owned by the caller.
    #[cold]
    fn put(&self, slots: &[Cell<*mut ClhNode>]) {
        self.with(|free| {
            for s in slots {
                let p = NonNull::new(s.replace(ptr::null_mut())).expect("a cached node");
                free.nodes.push(Owned(p));
            }
        })
    }

    #[cold]
    fn take_one(&self) -> NonNull<ClhNode> {
        let slot = [Cell::new(ptr::null_mut())];
        self.refill(&slot);
        NonNull::new(slot[0].get()).expect("refill yields a node")
    }

    #[cold]
    fn put_one(&self, node: NonNull<ClhNode>) {
        self.put(&[Cell::new(node.as_ptr())]);
    }
}

#[cfg(loom)]
impl Drop for Pool {
    fn drop(&mut self) {
        // The last cache is gone, so no thread can reach a node any more.
        let (nodes, made) = self.with(|f| (core::mem::take(&mut f.nodes), f.made));
        let mut addrs: Vec<usize> = nodes.iter().map(|o| o.0.as_ptr() as usize).collect();
        addrs.sort_unstable();
        addrs.dedup();
        if !std::thread::panicking() {
            assert_eq!(addrs.len(), nodes.len(), "a CLH node was given back twice");
            assert_eq!(nodes.len(), made, "a CLH node was lost");
        }
        for Owned(p) in nodes {
            // SAFETY: the node came from Box::into_raw in `refill`, and with
            // every thread gone this list was its only handle.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
    }
}

#[cfg(not(loom))]
type PoolRef = &'static Pool;
#[cfg(loom)]
type PoolRef = std::sync::Arc<Pool>;

/// One thread's stack of free nodes.
struct Cache {
    pool: PoolRef,
    len: Cell<usize>,
    /// `nodes[..len]` are owned by this cache; the rest are null.
    nodes: [Cell<*mut ClhNode>; CACHE],
}

impl Cache {
    #[cfg(not(loom))]
    const fn new(pool: PoolRef) -> Self {
        Self {
            pool,
            len: Cell::new(0),
            nodes: [const { Cell::new(ptr::null_mut()) }; CACHE],
        }
    }

    #[cfg(loom)]
    fn new(pool: PoolRef) -> Self {
        Self {
            pool,
            len: Cell::new(0),
            nodes: core::array::from_fn(|_| Cell::new(ptr::null_mut())),
        }
    }

    #[inline]
    fn take(&self) -> NonNull<ClhNode> {
        let mut len = self.len.get();
        if len == 0 {
            len = self.pool.refill(&self.nodes[..BATCH]);
        }
        len -= 1;
        self.len.set(len);
        let p = self.nodes[len].replace(ptr::null_mut());
        debug_assert!(!p.is_null());
        // SAFETY: slots below the old `len` hold node pointers.
        unsafe { NonNull::new_unchecked(p) }
    }

    #[inline]
    fn give(&self, node: NonNull<ClhNode>) {
        let mut len = self.len.get();
        if len == CACHE {
            self.pool.put(&self.nodes[CACHE - BATCH..]);
            len -= BATCH;
        }
        self.nodes[len].set(node.as_ptr());
        self.len.set(len + 1);
    }
}

impl Drop for Cache {
    fn drop(&mut self) {
        let len = self.len.replace(0);
        if len > 0 {
            self.pool.put(&self.nodes[..len]);
        }
    }
}

#[cfg(not(loom))]
static POOL: Pool = Pool::new();

#[cfg(not(loom))]
std::thread_local! {
    static CACHE_TLS: Cache = const { Cache::new(&POOL) };
}

#[cfg(not(loom))]
fn pool() -> &'static Pool {
    &POOL
}

#[cfg(loom)]
loom::lazy_static! {
    static ref POOL: std::sync::Arc<Pool> = std::sync::Arc::new(Pool::new());
}

#[cfg(loom)]
loom::thread_local! {
    static CACHE_TLS: Cache = Cache::new(POOL.clone());
}

#[cfg(loom)]
fn pool() -> &'static Pool {
    &POOL
}

/// A node owned by the caller, its word in no particular state.
#[inline]
pub fn take() -> NonNull<ClhNode> {
    // During thread teardown, after this thread's cache is gone, go to the
    // global list directly.
    CACHE_TLS
        .try_with(Cache::take)
        .unwrap_or_else(|_| pool().take_one())
}

/// Hands a node back.
///
/// # Safety
/// `node` came from [`take`], the caller owns it (nobody else will write it
/// or hand it back), and the caller will not touch it again.
#[inline]
pub unsafe fn give(node: NonNull<ClhNode>) {
    if CACHE_TLS.try_with(|c| c.give(node)).is_err() {
        pool().put_one(node);
    }
}

/// Reads a node's word with `order`: for locks that peek at a node they do
/// not own (it may be anywhere by now; see the module documentation).
///
/// # Safety
/// `node` came from [`take`] at some point.
#[inline]
pub unsafe fn peek(node: NonNull<ClhNode>, order: Ordering) -> *mut ClhNode {
    // SAFETY: nodes are never freed while a thread can reach them, and the
    // word is atomic.
    unsafe { node.as_ref() }.state().load(order)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn local_pool() -> &'static Pool {
        Box::leak(Box::new(Pool::new()))
    }

    #[test]
    fn cache_hands_out_distinct_nodes_and_reuses_what_it_gets_back() {
        let pool = local_pool();
        let cache = Cache::new(pool);
        let a = cache.take();
        let b = cache.take();
        assert_ne!(a, b);
        cache.give(a);
        assert_eq!(cache.take(), a, "the cache is a stack");
        cache.give(a);
        cache.give(b);
        drop(cache);
        pool.with(|f| {
            assert_eq!(f.made, 2);
            assert_eq!(
                f.nodes.len(),
                2,
                "a dropped cache (thread exit) returns its nodes"
            );
        });
    }

    #[test]
    fn overflow_spills_to_the_pool_and_an_empty_cache_refills_from_it() {
        let pool = local_pool();
        let cache = Cache::new(pool);
        let many: Vec<_> = (0..CACHE + 3).map(|_| cache.take()).collect();
        assert_eq!(many.iter().collect::<HashSet<_>>().len(), many.len());
        for &n in &many {
            cache.give(n);
        }
        let (made, spilled) = pool.with(|f| (f.made, f.nodes.len()));
        assert_eq!(made, CACHE + 3);
        assert_eq!(spilled + cache.len.get(), CACHE + 3);
        assert!(cache.len.get() <= CACHE);
        // A second cache (another thread) is served from the spilled nodes
        // before anything new is allocated.
        let other = Cache::new(pool);
        let got = other.take();
        assert!(many.contains(&got));
        assert_eq!(pool.with(|f| f.made), CACHE + 3);
        other.give(got);
    }

    #[test]
    fn nodes_are_never_owned_twice_while_threads_trade_them() {
        // Each thread takes nodes, stamps them with its own marker, passes
        // some to the next thread (as CLH does), checks the stamp is intact
        // before giving nodes back, and exits (spilling its cache).
        use std::sync::mpsc;
        const THREADS: usize = 4;
        const ROUNDS: usize = 2_000;
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..THREADS).map(|_| mpsc::channel::<usize>()).unzip();
        let mut rxs: Vec<_> = rxs.into_iter().map(Some).collect();
        let hs: Vec<_> = (0..THREADS)
            .map(|i| {
                let tx = txs[(i + 1) % THREADS].clone();
                let rx = rxs[i].take().unwrap();
                std::thread::spawn(move || {
                    let stamp = ptr::without_provenance_mut::<ClhNode>(0x1000 * (i + 1));
                    for r in 0..ROUNDS {
                        let n = take();
                        // SAFETY: `take` hands out live nodes.
                        let node = unsafe { n.as_ref() };
                        node.state().store(stamp, Ordering::Relaxed);
                        if r % 3 == 0 {
                            tx.send(n.as_ptr() as usize).unwrap();
                        } else {
                            std::hint::spin_loop();
                            assert_eq!(node.state().load(Ordering::Relaxed), stamp, "shared node");
                            // SAFETY: ours, and we are done with it.
                            unsafe { give(n) };
                        }
                        while let Ok(p) = rx.try_recv() {
                            // SAFETY: the sender passed ownership on.
                            unsafe { give(NonNull::new(p as *mut ClhNode).unwrap()) };
                        }
                    }
                    rx
                })
            })
            .collect();
        drop(txs);
        let rxs: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
        for p in rxs.iter().flat_map(|rx| rx.try_iter()) {
            // SAFETY: the sender passed ownership on, and every thread is gone.
            unsafe { give(NonNull::new(p as *mut ClhNode).unwrap()) };
        }
    }
}
