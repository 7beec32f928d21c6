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
//! global free list, which makes a node when it is empty too; when the stack
//! overflows, and when the thread exits, nodes go back to the global list. A
//! CLH acquisition takes one node and gets its predecessor's back, so in
//! steady state a thread never leaves its cache: the global list is touched
//! when a thread meets a fresh lock (no predecessor, one node fewer), when a
//! lock is dropped (it gives back the nodes still in its queue) and when
//! threads come and go.
//!
//! In the std build nothing here allocates. A thread's first CLH
//! acquisition may be of a lock that `malloc` itself takes (under the
//! interposer jemalloc's and tcmalloc's pthread mutexes are locklab locks),
//! and an allocation there would re-enter the allocator inside its own
//! mutex. So:
//! - Nodes are carved, by bumping a pointer under the pool's lock, from an
//!   arena of anonymous `mmap` chunks of 64 KiB, never unmapped, starting
//!   at a cache colour (`util::colour`) rather than at the page boundary.
//! - The global free list is intrusive: a stack linked through a second
//!   word, `link`, that each node keeps beside its lock word `state` in the
//!   padding of its cache line. `link` means something only while the pool
//!   owns the node. The pool never writes `state`, so a lock that peeks at
//!   a node which has meanwhile gone back to the pool (see below) reads
//!   whatever a lock last wrote there, never a list pointer it would take
//!   for a predecessor to follow.
//! - The list and the arena sit behind a small test-and-test-and-set spin
//!   lock that yields the processor after 64 spins; it is held for at most
//!   `BATCH` (half a cache) pointer moves or one `mmap`.
//! - The per-thread cache is a const-initialised thread-local with no
//!   destructor (registering one `calloc`s); the thread-exit hook (module
//!   `thread_exit`) flushes it instead. A cache goes from empty to holding
//!   nodes only by a refill or by a node given to an empty cache, and both
//!   arm the hook first unless the cache's own `armed` flag says it is
//!   armed already; the hook clears that flag before it flushes. So a cache
//!   that holds nodes always has a flush to come, also when a thread uses a
//!   CLH lock again from another key's destructor after its hook ran.
//!
//! Under loom the global list is a `Vec` behind loom's `Mutex` in a
//! per-execution `lazy_static`, nodes come from `Box`, and the caches are
//! `loom::thread_local!`s that flush when dropped. Loom drops lazy statics
//! before the main thread's thread-locals, so each cache holds the pool
//! through an `Arc`; the pool goes with its last cache, and then checks that
//! every node it ever made came back exactly once.
//!
//! Why this is sound:
//! - Nodes are never freed in the std build (under loom a pool lives for one
//!   execution and frees its nodes after the last thread is gone). A pointer
//!   to a node, however stale, stays dereferenceable. CLH relies on that: its
//!   `try_acquire` and `is_held` peek at the tail node, which may meanwhile
//!   have been recycled by another thread. Every field of a node is atomic,
//!   so such a peek is a harmless race, never a use after free, and what it
//!   reads is a value a lock wrote into `state` (or the null a fresh node
//!   starts with), never pool bookkeeping.
//! - Ownership is exclusive and handed on, never shared: [`take`] returns a
//!   node nobody else owns; [`give`] requires that the caller owns the node
//!   and will not touch it again. When a node becomes owned is the lock's
//!   business (in CLH: when its successor has seen it released or
//!   abandoned, or when the lock is dropped).
//! - Ordering: a node that moves between threads through the global list
//!   does so under the pool's lock, taken with an Acquire swap and let go
//!   with a Release store (under loom: its `Mutex`). That orders the old
//!   owner's last write to the node before the new owner's first, and every
//!   write of a `link` (and of the list head and the arena) before every
//!   later read of it, so `link` itself can be Relaxed. A node that moves
//!   through a lock's queue is ordered by the lock's own Release/Acquire
//!   pair. A cache is touched only by its own thread (the exit hook runs on
//!   the exiting thread).

use super::sync::{AtomicPtr, Ordering};
use super::CachePadded;
use core::cell::Cell;
use core::ptr::{self, NonNull};

/// A CLH queue node: the lock's pointer-sized word, and the pool's list
/// link beside it, alone on their cache line. What `state` means is up to
/// the lock.
#[derive(Debug)]
pub struct ClhNode {
    words: CachePadded<Words>,
}

#[derive(Debug)]
struct Words {
    /// The lock's word; the pool never writes it after making the node.
    state: AtomicPtr<ClhNode>,
    /// The next node on the global free list, while the pool owns this one
    /// (read and written only under the pool's lock). Under loom the list
    /// is a `Vec` and needs no link.
    #[cfg(not(loom))]
    link: AtomicPtr<ClhNode>,
}

impl ClhNode {
    fn new() -> Self {
        Self {
            words: CachePadded::new(Words {
                state: AtomicPtr::new(ptr::null_mut()),
                #[cfg(not(loom))]
                link: AtomicPtr::new(ptr::null_mut()),
            }),
        }
    }

    /// The node's word.
    #[inline]
    pub fn state(&self) -> &AtomicPtr<ClhNode> {
        &self.words.state
    }
}

// Locks may use the values 0 and 1 as markers in a word that otherwise
// holds node pointers.
const _: () = assert!(core::mem::align_of::<ClhNode>() >= 2);

/// How many free nodes a thread keeps for itself.
pub const CACHE: usize = 16;
/// How many nodes move between a cache and the global list at once.
const BATCH: usize = CACHE / 2;

/// The global free list of the std build: intrusive, behind a spin lock,
/// fed by an `mmap` arena (see the module documentation).
#[cfg(not(loom))]
mod arena {
    use super::{ClhNode, Ordering};
    use crate::util::sync::AtomicBool;
    use core::cell::{Cell, UnsafeCell};
    use core::mem::{align_of, size_of};
    use core::ptr;

    /// Bytes the arena maps at a time.
    const ARENA: usize = 64 * 1024;
    /// Spins on a held pool lock before each further try yields the
    /// processor (its holder may have been preempted).
    const SPINS: u32 = 64;

    const NODE: usize = size_of::<ClhNode>();
    // A mapping is page-aligned, and nodes are carved at multiples of their
    // size (itself a multiple of their alignment) from a colour offset (a
    // multiple of their alignment below `COLOUR_SPAN`) into it.
    const _: () =
        assert!(align_of::<ClhNode>() <= 4096 && NODE + crate::util::COLOUR_SPAN <= ARENA);

    /// What the pool's lock protects.
    pub(super) struct Free {
        /// Top of the stack of free nodes, linked through `link`.
        head: *mut ClhNode,
        /// Nodes on the stack.
        pub(super) len: usize,
        /// Nodes ever made by this pool.
        pub(super) made: usize,
        /// The unused rest of the newest arena chunk: `next..end`.
        next: *mut u8,
        end: *mut u8,
    }

    /// The global free list.
    pub(super) struct Pool {
        locked: AtomicBool,
        free: UnsafeCell<Free>,
    }

    // SAFETY: `free` is only reached through `with`, under the lock; the
    // nodes it points to hold only atomics and are owned by the list.
    unsafe impl Sync for Pool {}

    /// Lets the pool's lock go when dropped.
    struct Unlock<'a>(&'a AtomicBool);

    impl Drop for Unlock<'_> {
        fn drop(&mut self) {
            // Release: everything done under the lock happens before the
            // next holder's Acquire swap.
            self.0.store(false, Ordering::Release);
        }
    }

    impl Pool {
        pub(super) const fn new() -> Self {
            Self {
                locked: AtomicBool::new(false),
                free: UnsafeCell::new(Free {
                    head: ptr::null_mut(),
                    len: 0,
                    made: 0,
                    next: ptr::null_mut(),
                    end: ptr::null_mut(),
                }),
            }
        }

        /// Runs `f` on the list, under the lock.
        pub(super) fn with<R>(&self, f: impl FnOnce(&mut Free) -> R) -> R {
            let mut spins = 0u32;
            // Test and test-and-set: wait with plain loads (no cache-line
            // ping-pong), swap only when it looks free. Acquire on the
            // winning swap pairs with the last holder's Release.
            while self.locked.load(Ordering::Relaxed) || self.locked.swap(true, Ordering::Acquire) {
                if spins < SPINS {
                    spins += 1;
                    core::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            let _unlock = Unlock(&self.locked);
            // SAFETY: the lock is ours until `_unlock` drops, so this is the
            // only reference to the list.
            f(unsafe { &mut *self.free.get() })
        }

        /// Fills a prefix of `slots` with owned nodes and says how long it
        /// is (at least one: a node is made if the list is empty).
        #[cold]
        pub(super) fn refill(&self, slots: &[Cell<*mut ClhNode>]) -> usize {
            self.with(|free| {
                let mut n = 0;
                while n < slots.len() && !free.head.is_null() {
                    let p = free.head;
                    // SAFETY: nodes on the list are live (never freed).
                    free.head = unsafe { &*p }.words.link.load(Ordering::Relaxed);
                    free.len -= 1;
                    slots[n].set(p);
                    n += 1;
                }
                if n == 0 {
                    slots[0].set(free.make());
                    n = 1;
                }
                n
            })
        }

        /// Takes back the nodes in `slots`, all owned by the caller.
        #[cold]
        pub(super) fn put(&self, slots: &[Cell<*mut ClhNode>]) {
            self.with(|free| {
                for s in slots {
                    let p = s.replace(ptr::null_mut());
                    assert!(!p.is_null(), "a cached node");
                    // SAFETY: the caller owns the live node and hands it to
                    // the list; only `link`, the list's word, is written.
                    unsafe { &*p }
                        .words
                        .link
                        .store(free.head, Ordering::Relaxed);
                    free.head = p;
                    free.len += 1;
                }
            })
        }

        /// The addresses on the free list, checking its length (tests).
        #[cfg(test)]
        pub(super) fn free_list(&self) -> Vec<usize> {
            self.with(|free| {
                let mut seen = Vec::with_capacity(free.len);
                let mut p = free.head;
                while !p.is_null() {
                    assert!(
                        seen.len() < free.len,
                        "the free list is longer than its count (a cycle?)"
                    );
                    seen.push(p as usize);
                    // SAFETY: nodes on the list are live.
                    p = unsafe { &*p }.words.link.load(Ordering::Relaxed);
                }
                assert_eq!(
                    seen.len(),
                    free.len,
                    "the free list is shorter than its count"
                );
                seen
            })
        }
    }

    impl Free {
        /// A new node from the arena, mapping another chunk when the current
        /// one is used up (the rest of the old one, less than a node, is
        /// left over).
        fn make(&mut self) -> *mut ClhNode {
            if (self.end as usize) - (self.next as usize) < NODE {
                let p = crate::util::map_anon(ARENA, "locklab: cannot map memory for CLH nodes\n");
                // Nodes start at a cache colour (see there), not at the
                // page boundary; the rest of the chunk is carved as usual.
                let colour = crate::util::colour(align_of::<ClhNode>());
                // SAFETY: `colour < COLOUR_SPAN <= ARENA`: inside the mapping,
                // and `end` is one past its end.
                unsafe {
                    self.next = p.cast::<u8>().add(colour);
                    self.end = p.cast::<u8>().add(ARENA);
                }
            }
            let node = self.next.cast::<ClhNode>();
            // SAFETY: `next..end` is unused mapped memory holding at least a
            // node, aligned for one (see the assertion on NODE above).
            unsafe {
                node.write(ClhNode::new());
                self.next = self.next.add(NODE);
            }
            self.made += 1;
            node
        }
    }
}

#[cfg(not(loom))]
use arena::Pool;

/// The only handle to a free node.
#[cfg(loom)]
struct Owned(NonNull<ClhNode>);

// SAFETY: an `Owned` is the sole handle to its node (see the module
// documentation), and the node holds only atomics, so the handle may move to
// another thread.
#[cfg(loom)]
unsafe impl Send for Owned {}

#[cfg(loom)]
struct Free {
    nodes: Vec<Owned>,
    /// Nodes ever allocated by this pool.
    made: usize,
}

/// The global free list (loom build).
#[cfg(loom)]
struct Pool {
    free: super::sync::Mutex<Free>,
}

#[cfg(loom)]
impl Pool {
    fn new() -> Self {
        Self {
            free: super::sync::Mutex::new(Free {
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

/// One thread's stack of free nodes. No `Drop` in the std build (the
/// thread-exit hook flushes it; see the module documentation).
struct Cache {
    pool: PoolRef,
    len: Cell<usize>,
    /// Whether this cache has armed the thread-exit hook since the hook
    /// last flushed it (std build). Kept here, beside `len`, rather than
    /// asked of `thread_exit` each time: in steady state a CLH acquisition
    /// gives a node to an empty cache, and this flag is on a cache line the
    /// caller has just touched, where another thread-local would cost a
    /// `__tls_get_addr` call in a shared library.
    #[cfg(not(loom))]
    armed: Cell<bool>,
    /// `nodes[..len]` are owned by this cache; the rest are null.
    nodes: [Cell<*mut ClhNode>; CACHE],
}

impl Cache {
    #[cfg(not(loom))]
    const fn new(pool: PoolRef) -> Self {
        Self {
            pool,
            len: Cell::new(0),
            armed: Cell::new(false),
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
            // The cache is about to hold nodes: make sure they are flushed
            // at thread exit.
            self.arm();
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
        } else if len == 0 {
            // As in `take`: an empty cache is about to hold a node.
            self.arm();
        }
        self.nodes[len].set(node.as_ptr());
        self.len.set(len + 1);
    }

    /// Makes sure the thread-exit hook will flush this cache (std build;
    /// under loom the cache's `Drop` does).
    #[inline(always)]
    fn arm(&self) {
        #[cfg(not(loom))]
        if !self.armed.get() {
            self.arm_slow();
        }
    }

    #[cfg(not(loom))]
    #[cold]
    #[inline(never)]
    fn arm_slow(&self) {
        // Set first: a lock taken inside `thread_exit::arm` finds it set.
        self.armed.set(true);
        super::thread_exit::arm();
    }

    /// Gives every cached node back to the global list.
    fn flush(&self) {
        let len = self.len.replace(0);
        if len > 0 {
            self.pool.put(&self.nodes[..len]);
        }
    }
}

#[cfg(loom)]
impl Drop for Cache {
    fn drop(&mut self) {
        self.flush();
    }
}

#[cfg(not(loom))]
static POOL: Pool = Pool::new();

#[cfg(not(loom))]
std::thread_local! {
    // Const-initialised and without a destructor: always accessible, even
    // from key destructors at thread exit, and nothing to register.
    static CACHE_TLS: Cache = const { Cache::new(&POOL) };
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
#[cfg(not(loom))]
#[inline]
pub fn take() -> NonNull<ClhNode> {
    CACHE_TLS.with(Cache::take)
}

/// A node owned by the caller, its word in no particular state.
#[cfg(loom)]
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
    #[cfg(not(loom))]
    CACHE_TLS.with(|c| c.give(node));
    #[cfg(loom)]
    if CACHE_TLS.try_with(|c| c.give(node)).is_err() {
        pool().put_one(node);
    }
}

/// The thread-exit hook's part: this thread's cached nodes go back to the
/// global list. Nodes cached later (from another key's destructor) re-arm
/// the hook, which flushes them in its next run.
#[cfg(not(loom))]
pub(crate) fn on_thread_exit() {
    CACHE_TLS.with(|c| {
        // The hook has just disarmed; so does the cache, then it empties.
        c.armed.set(false);
        c.flush();
    });
}

/// How many nodes this thread's cache holds (tests only).
#[cfg(all(test, not(loom)))]
pub(crate) fn cached() -> usize {
    CACHE_TLS.with(|c| c.len.get())
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

    /// A pool of the test's own. A pool must outlive every cache that
    /// points to it, as the library's static one does; this one is kept
    /// for the process too, listed in a static so that it stays reachable
    /// (Miri's leak check reports only memory nothing can reach).
    fn local_pool() -> &'static Pool {
        static KEPT: std::sync::Mutex<Vec<&'static Pool>> = std::sync::Mutex::new(Vec::new());
        let pool: &'static Pool = Box::leak(Box::new(Pool::new()));
        KEPT.lock().unwrap().push(pool);
        pool
    }

    /// A node handed to another thread (with its ownership), keeping the
    /// pointer's provenance, which a round trip through `usize` would lose.
    struct Sent(NonNull<ClhNode>);
    // SAFETY: a `Sent` carries ownership of a pool node from one thread to
    // another; nodes are plain atomics, usable from any thread.
    unsafe impl Send for Sent {}

    impl Sent {
        /// The node (a method, so that a closure captures the whole `Sent`).
        fn node(self) -> NonNull<ClhNode> {
            self.0
        }
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
        cache.flush();
        pool.with(|f| {
            assert_eq!(f.made, 2);
            assert_eq!(f.len, 2, "a flushed cache (thread exit) returns its nodes");
        });
        let mut listed = pool.free_list();
        listed.sort_unstable();
        let mut want = [a.as_ptr() as usize, b.as_ptr() as usize];
        want.sort_unstable();
        assert_eq!(listed, want);
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
        let (made, spilled) = pool.with(|f| (f.made, f.len));
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
        // Every node is in exactly one place: a cache or the list.
        other.flush();
        cache.flush();
        let mut listed = pool.free_list();
        listed.sort_unstable();
        let mut want: Vec<usize> = many.iter().map(|n| n.as_ptr() as usize).collect();
        want.sort_unstable();
        assert_eq!(listed, want, "nodes lost or listed twice");
    }

    #[test]
    fn the_arena_hands_out_distinct_aligned_nodes_across_chunks() {
        // More nodes than one arena chunk holds, all live at once.
        let pool = local_pool();
        let n = 64 * 1024 / core::mem::size_of::<ClhNode>() * 2 + 5;
        let slot = [Cell::new(ptr::null_mut())];
        let nodes: Vec<usize> = (0..n)
            .map(|_| {
                assert_eq!(pool.refill(&slot), 1);
                let p = slot[0].replace(ptr::null_mut());
                // SAFETY: a fresh node from the pool.
                assert!(unsafe { &*p }.state().load(Ordering::Relaxed).is_null());
                p as usize
            })
            .collect();
        assert!(nodes
            .iter()
            .all(|&p| p % core::mem::align_of::<ClhNode>() == 0));
        assert_eq!(nodes.iter().collect::<HashSet<_>>().len(), n);
        assert_eq!(pool.with(|f| f.made), n);
    }

    #[test]
    fn the_pool_never_touches_the_lock_word() {
        // A stale peek must see what a lock last wrote, even while the
        // node sits on the free list or moves to another cache.
        let pool = local_pool();
        let cache = Cache::new(pool);
        let marker = ptr::without_provenance_mut::<ClhNode>(0x40);
        let nodes: Vec<_> = (0..CACHE * 2).map(|_| cache.take()).collect();
        for &n in &nodes {
            // SAFETY: ours.
            unsafe { n.as_ref() }
                .state()
                .store(marker, Ordering::Relaxed);
        }
        for &n in &nodes {
            cache.give(n);
        }
        cache.flush();
        let other = Cache::new(pool);
        for &n in &nodes {
            // SAFETY: nodes are never freed.
            assert_eq!(unsafe { peek(n, Ordering::Relaxed) }, marker);
        }
        let again = other.take();
        // SAFETY: as above.
        assert_eq!(unsafe { peek(again, Ordering::Relaxed) }, marker);
        other.give(again);
    }

    #[test]
    fn a_node_given_to_an_empty_cache_arms_the_exit_flush() {
        // A thread whose first use of the pool is a give (it drops a CLH
        // lock, say) must still have its cache flushed when it exits.
        let p = Sent(take());
        std::thread::spawn(move || {
            use crate::util::thread_exit::armed;
            assert!(!armed(), "a fresh thread starts disarmed");
            // SAFETY: the spawning thread passed its node on.
            unsafe { give(p.node()) };
            assert_eq!(cached(), 1);
            assert!(armed(), "a cache holding a node must have a flush to come");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn nodes_are_never_owned_twice_while_threads_trade_them() {
        // Each thread takes nodes, stamps them with its own marker, passes
        // some to the next thread (as CLH does), checks the stamp is intact
        // before giving nodes back, and exits (spilling its cache).
        use crate::util::testing::{iters, threads};
        use std::sync::mpsc;
        const THREADS: usize = threads(4);
        const ROUNDS: u64 = iters(2_000);
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..THREADS).map(|_| mpsc::channel::<Sent>()).unzip();
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
                            tx.send(Sent(n)).unwrap();
                        } else {
                            std::hint::spin_loop();
                            assert_eq!(node.state().load(Ordering::Relaxed), stamp, "shared node");
                            // SAFETY: ours, and we are done with it.
                            unsafe { give(n) };
                        }
                        while let Ok(p) = rx.try_recv() {
                            // SAFETY: the sender passed ownership on.
                            unsafe { give(p.node()) };
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
            unsafe { give(p.node()) };
        }
        // The threads' caches were flushed by the thread-exit hook into the
        // global list, which other tests share: it must still list each node
        // once (`free_list` also checks it against its count).
        let listed = POOL.free_list();
        assert_eq!(
            listed.iter().collect::<HashSet<_>>().len(),
            listed.len(),
            "a node is on the free list twice"
        );
    }
}
