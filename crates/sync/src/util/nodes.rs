//! Per-thread arrays of queue nodes, addressed by (thread index, slot).
//!
//! MCS-style locks need one node per acquisition, at an address that stays
//! put while the node is queued. Following Linux's qspinlock (per-CPU arrays
//! of four nodes, one per context that may nest), each thread owns
//! [`DEPTH`] cache-padded nodes in a [`NodeTable`]. A thread claims a free
//! slot in its own row, and gives it back when done with it; the row's
//! occupancy mask is written only by the thread owning the row, so it needs
//! no read-modify-write.
//!
//! Rows are allocated lazily in chunks of [`CHUNK`] threads and never freed
//! while the table lives, so a `&N` handed out stays valid even after its
//! thread exits (an index that is recycled inherits the row, including any
//! slot still marked busy by a leaked guard).
//!
//! A chunk is made by the first thread whose row lies in it, on its way
//! into a lock, and that lock may be one a `malloc` takes (jemalloc's and
//! tcmalloc's pthread mutexes, under the interposer): so in the std build a
//! chunk is an anonymous `mmap` with its rows written in place, never a
//! `Vec` or `Box`, and nothing on these paths allocates. The rows start at
//! a cache colour (`util::colour`) rather than at the page boundary. The
//! chunk is published with a compare-and-exchange (AcqRel on success, so
//! that its rows are visible to whoever loads the pointer with Acquire);
//! the loser of a race unmaps its own, never-shared chunk. Under loom a
//! chunk comes from the heap as before.
//!
//! Declare a table with [`node_table!`](crate::node_table), which makes a
//! `static` normally and a per-execution `lazy_static` under loom.

use super::sync::{AtomicPtr, AtomicU8, Ordering};
use super::thread_index::{self, MAX_THREADS};
use super::CachePadded;

/// Nodes per thread: how many queue-lock acquisitions one thread may have
/// outstanding at once before a lock must fall back to something else.
pub const DEPTH: usize = 4;
/// Threads per lazily allocated chunk.
#[cfg(not(loom))]
pub const CHUNK: usize = 64;
#[cfg(not(loom))]
const CHUNKS: usize = MAX_THREADS.div_ceil(CHUNK);
/// Threads per chunk under loom: thread indexes restart in every execution
/// and never exceed loom's thread limit, so one small chunk covers a model.
/// Every loom atomic costs each execution time, and a full-size table has
/// over a thousand of them.
#[cfg(loom)]
pub const CHUNK: usize = loom::MAX_THREADS;
#[cfg(loom)]
const CHUNKS: usize = 1;

/// One thread's row: its nodes and which of them are in use.
pub struct Row<N> {
    nodes: [CachePadded<N>; DEPTH],
    busy: AtomicU8,
}

type Chunk<N> = [Row<N>; CHUNK];

/// A claimed node: where it is, so it can be encoded and released.
#[derive(Debug)]
pub struct Claim<'a, N> {
    /// The claiming thread's index.
    pub thread: u32,
    /// The slot within the thread's row, `0..DEPTH`.
    pub slot: u8,
    /// The node itself.
    pub node: &'a N,
}

/// A table of per-thread node rows. See the module documentation.
pub struct NodeTable<N> {
    chunks: [AtomicPtr<Chunk<N>>; CHUNKS],
}

// SAFETY: the table hands out `&N` to any thread; `N` must therefore be Sync
// (it is shared between a waiter and its predecessor). Rows are only
// created, never mutated non-atomically.
unsafe impl<N: Sync> Sync for NodeTable<N> {}
// SAFETY: as above; the table owns its chunks.
unsafe impl<N: Send> Send for NodeTable<N> {}

impl<N: Default> NodeTable<N> {
    /// An empty table (std build: usable in a `static`).
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self {
            chunks: [const { AtomicPtr::new(core::ptr::null_mut()) }; CHUNKS],
        }
    }

    /// A table with its one chunk already allocated: under loom a race to
    /// allocate it is no part of any lock algorithm, and exploring it would
    /// only multiply every model's interleavings.
    #[cfg(loom)]
    pub fn new() -> Self {
        let table = Self {
            chunks: core::array::from_fn(|_| AtomicPtr::new(core::ptr::null_mut())),
        };
        table.allocate(0);
        table
    }

    #[cold]
    fn allocate(&self, c: usize) -> *mut Chunk<N> {
        let fresh = Self::make_chunk();
        // AcqRel on success publishes the initialised rows; Acquire on
        // failure sees the winner's.
        match self.chunks[c].compare_exchange(
            core::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => fresh,
            Err(winner) => {
                // SAFETY: `fresh` came from `make_chunk` and was never shared.
                unsafe { Self::free_chunk(fresh) };
                winner
            }
        }
    }

    /// A chunk of fresh rows in its own anonymous mapping (see the module
    /// documentation: no allocator is involved).
    #[cfg(not(loom))]
    fn make_chunk() -> *mut Chunk<N> {
        const {
            assert!(
                core::mem::align_of::<Chunk<N>>() <= 4096,
                "mmap aligns to pages only"
            );
        }
        let size = core::mem::size_of::<Chunk<N>>() + super::COLOUR_SPAN;
        let p = super::map_anon(size, "locklab: cannot map memory for queue nodes\n");
        // The rows start at a cache colour (see there), so that they sit
        // at a different page offset from chunk to chunk.
        let offset = super::colour(core::mem::align_of::<Row<N>>());
        // SAFETY: `offset < COLOUR_SPAN`, within the mapping.
        let rows = unsafe { p.byte_add(offset) }.cast::<Row<N>>();
        for i in 0..CHUNK {
            // SAFETY: the mapping is page-aligned and `offset` a multiple of
            // the rows' alignment (at most a page, as asserted above), the
            // memory writable, and `size - offset` bytes hold `CHUNK` rows;
            // each row is written once, in place.
            unsafe {
                rows.add(i).write(Row {
                    nodes: core::array::from_fn(|_| CachePadded::new(N::default())),
                    busy: AtomicU8::new(0),
                })
            };
        }
        rows.cast()
    }

    /// A chunk of fresh rows, built row by row on the heap: a whole chunk
    /// is tens of kilobytes, too much for a stack (loom's threads have small
    /// ones).
    #[cfg(loom)]
    fn make_chunk() -> *mut Chunk<N> {
        let rows: Vec<Row<N>> = (0..CHUNK)
            .map(|_| Row {
                nodes: core::array::from_fn(|_| CachePadded::new(N::default())),
                busy: AtomicU8::new(0),
            })
            .collect();
        let fresh: Box<Chunk<N>> = match rows.into_boxed_slice().try_into() {
            Ok(chunk) => chunk,
            Err(_) => unreachable!("exactly CHUNK rows"),
        };
        Box::into_raw(fresh)
    }

    #[inline]
    fn row(&self, thread: u32) -> &Row<N> {
        let t = thread as usize;
        debug_assert!(t < MAX_THREADS && t / CHUNK < CHUNKS);
        let c = t / CHUNK;
        let mut p = self.chunks[c].load(Ordering::Acquire);
        if p.is_null() {
            p = self.allocate(c);
        }
        // SAFETY: chunks are never freed while the table lives (only in Drop,
        // which has `&mut self`), and `p` was published with Release.
        unsafe { &(*p)[t % CHUNK] }
    }

    /// The node at (thread, slot). Any thread may look up any node, e.g. to
    /// link itself behind a predecessor whose address came from a lock word.
    #[inline]
    pub fn get(&self, thread: u32, slot: u8) -> &N {
        &self.row(thread).nodes[slot as usize]
    }

    /// Claims a free node of the calling thread, or `None` when all
    /// [`DEPTH`] are in use.
    #[inline]
    pub fn claim(&self) -> Option<Claim<'_, N>> {
        let thread = thread_index::current();
        let row = self.row(thread);
        // Only this thread writes its row's mask, so Relaxed suffices; the
        // node's own fields carry the algorithm's synchronisation.
        let busy = row.busy.load(Ordering::Relaxed);
        let slot = (!busy).trailing_zeros() as usize;
        if slot >= DEPTH {
            return None;
        }
        row.busy.store(busy | (1 << slot), Ordering::Relaxed);
        Some(Claim {
            thread,
            slot: slot as u8,
            node: &row.nodes[slot],
        })
    }

    /// Gives back a node claimed by the calling thread.
    ///
    /// Must be called on the thread that claimed it (queue-lock guards are
    /// `!Send` for this reason), once nothing else will touch the node.
    #[inline]
    pub fn release(&self, thread: u32, slot: u8) {
        let row = self.row(thread);
        let busy = row.busy.load(Ordering::Relaxed);
        debug_assert!(busy & (1 << slot) != 0, "releasing a free node");
        row.busy.store(busy & !(1 << slot), Ordering::Relaxed);
    }
}

impl<N: Default> Default for NodeTable<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<N> NodeTable<N> {
    /// Drops the rows of a chunk from [`make_chunk`](Self::make_chunk) and
    /// gives its memory back.
    ///
    /// # Safety
    /// `p` came from `make_chunk`, is freed once, and no reference into it
    /// is alive or will be used again.
    #[cfg(not(loom))]
    unsafe fn free_chunk(p: *mut Chunk<N>) {
        if core::mem::needs_drop::<N>() {
            // SAFETY: the caller owns the chunk; all `CHUNK` rows were
            // written by `make_chunk`.
            unsafe { core::ptr::drop_in_place(p) };
        }
        // The mapping starts at a page boundary below `p`, less than
        // `COLOUR_SPAN` (at most a page) before it.
        let colour = p as usize % super::COLOUR_SPAN;
        let size = core::mem::size_of::<Chunk<N>>() + super::COLOUR_SPAN;
        // SAFETY: `p - colour` is the start of the mapping `make_chunk`
        // made, of exactly `size` bytes; a failed unmap only leaks it.
        unsafe { libc::munmap(p.byte_sub(colour).cast(), size) };
    }

    /// Frees a chunk from [`make_chunk`](Self::make_chunk).
    ///
    /// # Safety
    /// As for the std build: `p` came from `make_chunk`, freed once, unused.
    #[cfg(loom)]
    unsafe fn free_chunk(p: *mut Chunk<N>) {
        // SAFETY: the chunk came from Box::into_raw and the caller owns it.
        drop(unsafe { Box::from_raw(p) });
    }
}

impl<N> Drop for NodeTable<N> {
    fn drop(&mut self) {
        for c in &mut self.chunks {
            let p = c.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: we own the chunk (it came from `make_chunk`) and
                // `&mut self` means no node reference is alive.
                unsafe { Self::free_chunk(p) };
            }
        }
    }
}

/// Declares a node table: `node_table!(static MCS_NODES: McsNode);`.
///
/// A plain `static` normally; under loom a `lazy_static`, since loom's
/// atomics cannot be built in a const and must be fresh in every execution.
#[macro_export]
macro_rules! node_table {
    // `loom::lazy_static!` matches `pub` as a literal token and rejects a
    // captured `$vis:vis`, so the visibility travels as plain tokens.
    (static $name:ident : $node:ty) => {
        $crate::node_table!(@ () $name $node);
    };
    (pub $(($($restrict:tt)+))? static $name:ident : $node:ty) => {
        $crate::node_table!(@ (pub $(($($restrict)+))?) $name $node);
    };
    (@ ($($vis:tt)*) $name:ident $node:ty) => {
        #[cfg(not(loom))]
        $($vis)* static $name: $crate::util::nodes::NodeTable<$node> =
            $crate::util::nodes::NodeTable::new();
        #[cfg(loom)]
        loom::lazy_static! {
            $($vis)* static ref $name: $crate::util::nodes::NodeTable<$node> =
                $crate::util::nodes::NodeTable::new();
        }
    };
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::util::sync::AtomicU32;

    #[derive(Default)]
    struct Probe(AtomicU32);

    node_table!(static T: Probe);

    #[test]
    fn claims_distinct_slots_up_to_depth_then_none_and_release_in_any_order() {
        let claims: Vec<_> = (0..DEPTH).map(|_| T.claim().expect("free slot")).collect();
        let mut slots: Vec<u8> = claims.iter().map(|c| c.slot).collect();
        slots.sort_unstable();
        assert_eq!(slots, (0..DEPTH as u8).collect::<Vec<_>>());
        assert!(T.claim().is_none(), "a full row must refuse");
        // Release the middle one first: the next claim gets exactly it.
        let mid = &claims[1];
        T.release(mid.thread, mid.slot);
        let again = T.claim().expect("released slot");
        assert_eq!(again.slot, mid.slot);
        assert!(core::ptr::eq(again.node, mid.node), "stable address");
        for c in &claims {
            T.release(c.thread, c.slot);
        }
    }

    #[test]
    fn a_dropped_table_drops_every_node_of_every_chunk_once() {
        static DROPS: AtomicU32 = AtomicU32::new(0);
        #[derive(Default)]
        struct Counted(AtomicU32);
        impl Drop for Counted {
            fn drop(&mut self) {
                DROPS.fetch_add(1, Ordering::Relaxed);
            }
        }
        let table = NodeTable::<Counted>::new();
        // Rows in chunks 0 and 2; chunk 1 is never made.
        table.get(0, 0).0.store(1, Ordering::Relaxed);
        let far = table.get(2 * CHUNK as u32 + 3, DEPTH as u8 - 1);
        assert_eq!(far.0.load(Ordering::Relaxed), 0, "fresh nodes are default");
        assert!(core::ptr::eq(
            far,
            table.get(2 * CHUNK as u32 + 3, DEPTH as u8 - 1)
        ));
        drop(table);
        assert_eq!(DROPS.load(Ordering::Relaxed) as usize, 2 * CHUNK * DEPTH);
    }

    #[test]
    fn other_threads_see_the_same_node_address() {
        let c = T.claim().unwrap();
        c.node.0.store(7, Ordering::Relaxed);
        let (thread, slot) = (c.thread, c.slot);
        let addr = c.node as *const Probe as usize;
        let seen = std::thread::spawn(move || {
            let n = T.get(thread, slot);
            (n as *const Probe as usize, n.0.load(Ordering::Relaxed))
        })
        .join()
        .unwrap();
        assert_eq!(seen, (addr, 7));
        T.release(thread, slot);
    }
}
