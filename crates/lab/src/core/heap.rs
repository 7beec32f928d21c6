//! The lab's heap meter: a global allocator that counts the bytes in use,
//! so a benchmark can report how much memory a strategy holds at its peak
//! (its reclamation backlog, garbage not yet freed, anything else it
//! allocates) exactly and without the kernel's page granularity.
//!
//! Every allocation of the `locklab` binary (and of the liburcu shim, which
//! allocates through [`locklab_shim_alloc`]) goes to the system allocator
//! and adds its size to one of [`SLOTS`] padded counters; a deallocation
//! subtracts it from the freeing thread's counter, wherever the block was
//! allocated. The sum of the counters is the heap in use. Each thread
//! takes a counter round-robin on its first allocation, so the few threads
//! a benchmark runs add to different cache lines: one atomic add on a line
//! no other thread writes, per allocation, which every strategy pays alike.

use crossbeam_utils::CachePadded;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering::Relaxed};

/// Counters threads spread over.
pub const SLOTS: usize = 32;

#[allow(clippy::declare_interior_mutable_const)] // an array initialiser
const ZERO: CachePadded<AtomicI64> = CachePadded::new(AtomicI64::new(0));
static COUNTS: [CachePadded<AtomicI64>; SLOTS] = [ZERO; SLOTS];
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's counter, or `SLOTS` before its first allocation.
    /// Constant-initialised and without a destructor, so the allocator may
    /// use it at any point of a thread's life without allocating.
    static SLOT: Cell<usize> = const { Cell::new(SLOTS) };
}

#[inline]
fn count(delta: i64) {
    let i = SLOT
        .try_with(|s| {
            let mut i = s.get();
            if i == SLOTS {
                i = NEXT.fetch_add(1, Relaxed) % SLOTS;
                s.set(i);
            }
            i
        })
        .unwrap_or(0);
    COUNTS[i].fetch_add(delta, Relaxed);
}

/// The counting allocator; see the module documentation.
pub struct Counting;

// SAFETY: every method forwards to `System` with the same arguments and
// only adds bookkeeping that neither allocates nor touches the blocks.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            count(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) };
        count(-(layout.size() as i64));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            count(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// Bytes of heap in use now, as far as the counters have seen (allocations
/// before the counting began would make it low; the lab counts from its
/// first allocation). Reads every counter once: cheap enough to sample
/// every millisecond.
pub fn in_use() -> u64 {
    COUNTS.iter().map(|c| c.load(Relaxed)).sum::<i64>().max(0) as u64
}

/// Allocation for the liburcu shim (`csrc/`), counted like the rest:
/// `size` bytes aligned for any C object, or null.
#[no_mangle]
pub extern "C" fn locklab_shim_alloc(size: usize) -> *mut core::ffi::c_void {
    match Layout::from_size_align(size.max(1), 16) {
        // SAFETY: the layout has a nonzero size.
        Ok(l) => unsafe { std::alloc::alloc(l) }.cast(),
        Err(_) => core::ptr::null_mut(),
    }
}

/// Frees what [`locklab_shim_alloc`] returned for the same `size`.
///
/// # Safety
/// `ptr` came from `locklab_shim_alloc(size)` and is freed once.
#[no_mangle]
pub unsafe extern "C" fn locklab_shim_free(ptr: *mut core::ffi::c_void, size: usize) {
    if ptr.is_null() {
        return;
    }
    let l = Layout::from_size_align(size.max(1), 16).expect("the layout it was allocated with");
    // SAFETY: the caller's contract.
    unsafe { std::alloc::dealloc(ptr.cast(), l) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Each of these tests moves the global count by 64 MiB and checks it
    /// moved: two of them at once would cancel out. Other tests allocate
    /// and free concurrently too, within the bounds' 16 MiB of room.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    fn alone() -> std::sync::MutexGuard<'static, ()> {
        ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn allocating_and_freeing_moves_the_count() {
        let _alone = alone();
        // Other tests allocate and free concurrently: only bounds with
        // room (16 MiB) around the 64 MiB allocated here.
        let before = in_use();
        let small: Vec<Box<[u8; 256]>> = (0..131_072).map(|_| Box::new([1u8; 256])).collect();
        let large = vec![1u8; 32 << 20];
        std::hint::black_box((&small, &large));
        let during = in_use();
        assert!(during >= before + (48 << 20), "{before} → {during}");
        drop((small, large));
        let after = in_use();
        assert!(after + (48 << 20) <= during, "{during} → {after}");
    }

    #[test]
    fn frees_on_another_thread_count_where_they_happen() {
        let _alone = alone();
        let before = in_use();
        let block = vec![7u8; 64 << 20];
        let during = in_use();
        assert!(during >= before + (48 << 20), "{before} → {during}");
        std::thread::spawn(move || drop(block)).join().unwrap();
        let after = in_use();
        assert!(after + (48 << 20) <= during, "{during} → {after}");
    }

    #[test]
    fn the_shim_allocations_are_counted() {
        let _alone = alone();
        let before = in_use();
        // black_box: the optimizer may drop an allocation whose pointer
        // nothing uses (it did, in one build of this test).
        let p = std::hint::black_box(locklab_shim_alloc(64 << 20));
        assert!(!p.is_null());
        let during = in_use();
        assert!(during >= before + (48 << 20), "{before} → {during}");
        // SAFETY: allocated just above with this size.
        unsafe { locklab_shim_free(p, 64 << 20) };
        assert!(in_use() + (48 << 20) <= during);
    }
}
